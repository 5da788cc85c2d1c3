// HTML → markdown in the browser (www/src/convert.js), field case F23 and the Rust Book fixtures.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { startServer, launch, root } from "./harness.mjs";

let server, browser, page;
before(async () => {
  server = await startServer();
  browser = await launch();
  page = await browser.newPage();
  await page.goto(server.url);
});
after(async () => { await browser?.close(); server?.stop(); });

const convert = (html, url) => page.evaluate(async ({ html, url }) => {
  const { htmlToMarkdown } = await import("/build/convert.js");
  return htmlToMarkdown(html, { url });
}, { html, url });

const F23 = `<!doctype html><html><head><title>Understanding Backpressure | Example Blog</title></head><body>
<nav>Home | Pricing | Login</nav>
<div id="cookie-consent" role="dialog"><h2>We value your privacy</h2><p>We and our 842 partners use cookies… Accept all · Reject all</p></div>
<script>trackEverything()</script>
<main><article><h1>Understanding Backpressure</h1>
<p>Backpressure is how a slow consumer tells a fast producer to wait. Without it, queues grow until memory runs out and the whole system falls over under load.</p>
<p>Streams in most runtimes implement it with a bounded buffer: when the buffer is full, the producer's write call blocks or returns a signal to pause until the consumer catches up.</p>
<p>Reactive libraries make the demand explicit: the consumer requests n items and the producer never sends more than were requested, so memory stays bounded.</p>
<p>Claim.<sup><a href="#fn1">1</a></sup></p><ol><li id="fn1">Footnote text.</li></ol></article></main>
<footer>© 2025 Example Corp · Terms</footer></body></html>`;

test("F23: the article, not the cookie banner, navigation or footer", async () => {
  const r = await convert(F23, "https://blog.example.test/backpressure");
  assert.equal(r.title, "Understanding Backpressure");
  assert.ok(r.markdown.startsWith("# Understanding Backpressure\n"), r.markdown);
  for (const p of ["Backpressure is how a slow consumer", "Streams in most runtimes", "Reactive libraries make the demand explicit"]) {
    assert.ok(r.markdown.includes(p), `missing paragraph: ${p}`);
  }
  assert.match(r.markdown, /Claim\.\[\^fn1\]/);
  assert.match(r.markdown, /\[\^fn1\]: Footnote text\./);
  for (const bad of ["cookies", "Accept all", "Pricing", "©", "trackEverything", "privacy"]) {
    assert.ok(!r.markdown.includes(bad), `contains ${bad}:\n${r.markdown}`);
  }
  assert.deepEqual(r.warnings, []);
});

test("F23: a page whose text is shorter than its banner warns instead of compiling silently", async () => {
  const html = `<html><body><div class="cookie-banner"><p>${"We use cookies for many purposes. ".repeat(20)}</p></div><article><h1>Tiny</h1><p>Short.</p></article></body></html>`;
  const r = await convert(html);
  assert.ok(r.warnings.some((w) => w.startsWith("low-confidence")), JSON.stringify(r.warnings));
  assert.ok(!r.markdown.includes("cookies"));
});

/** An article of four paragraphs about one topic (each over 150 characters). */
const ARTICLE = [
  "Rust's borrow checker tracks how long every reference lives, and refuses a program in which a reference could outlive the value it points to.",
  "A mutable reference is exclusive: while it exists no other reference to the same value may be used, which rules out data races at compile time.",
  "Shared references may be many at once, because none of them can change the value; interior mutability types relax this with checks at run time.",
  "Lifetimes in function signatures name the relationships between references, so the checker can verify each function on its own, without its callers.",
].map((p) => `<p>${p}</p>`).join("\n");
const COMMENTS = Array.from({ length: 12 }, (_, i) => `<div class="comment"><p>Comment ${i}: thanks for the write-up, I had been wondering why my code would not compile after I stored a reference in a struct and returned it from a function.</p></div>`).join("\n");

test("articles whose wrappers are named like chrome, or whose page holds a dialog heading, are kept", async () => {
  const pages = {
    "a consent dialog holds the page's first h1": `<html><body><div class="cookie-notice"><h1>We value your privacy</h1><p>We and our partners store cookies on your device to measure the audience and show advertising. Accept all or manage your choices.</p></div>
<div class="post"><h1>Borrowing, explained</h1>${ARTICLE}</div></body></html>`,
    "a sidebar-named wrapper, the title above it, long comments": `<html><body><header><h1>Borrowing, explained</h1></header>
<div class="content-with-sidebar">${ARTICLE}</div><section class="comments">${COMMENTS}</section></body></html>`,
    "a popup-named wrapper": `<html><body><h1>Borrowing, explained</h1><div class="entry-content popup-gallery">${ARTICLE}</div>
<div class="related"><p>Related: Ownership in ten minutes.</p></div></body></html>`,
    "a body named like a consent banner": `<html><body class="archive category-cookies"><h2>Borrowing, explained</h2>${ARTICLE}</body></html>`,
  };
  for (const [what, html] of Object.entries(pages)) {
    const r = await convert(html, "https://blog.example.test/borrowing");
    for (const p of ["borrow checker tracks", "mutable reference is exclusive", "Shared references may be many", "Lifetimes in function signatures"]) {
      assert.ok(r.markdown.includes(p), `${what}: missing "${p}":\n${r.markdown}`);
    }
    assert.ok(!/privacy|store cookies|Comment 3/.test(r.markdown), `${what}: chrome kept:\n${r.markdown}`);
  }
});

test("the Rust Book fixtures are what the app's converter makes of the toolchain's HTML", async () => {
  const dir = `${root}/tests/fixtures/rust-book`;
  const { chapters } = JSON.parse(readFileSync(`${dir}/chapters.json`, "utf8"));
  const sysroot = execFileSync("rustc", ["--print", "sysroot"], { encoding: "utf8" }).trim();
  for (const name of chapters) {
    const html = readFileSync(`${sysroot}/share/doc/rust/html/book/${name}.html`, "utf8");
    const r = await convert(html, `https://doc.rust-lang.org/book/${name}.html`);
    assert.equal(r.markdown, readFileSync(`${dir}/${name}.md`, "utf8"), `${name}: regenerate with node scripts/make-fixtures.mjs`);
    assert.ok(!r.markdown.includes("Keyboard shortcuts"), name);
  }
});

// ---------------------------------------------------------------- F40–F43 (issue #21)

/** Two paragraphs of prose, so that Readability takes the article (the cases sit inside it). */
const PROSE = `<p>Rust crates are published to the registry, and each one carries a version that follows the rules of semantic versioning so that users can upgrade safely.</p>
<p>This guide lists the crates the project depends on, what each one costs in build time and how to check their versions before a release, one step at a time.</p>`;
const article = (title, body, { after = "" } = {}) => `<!doctype html><html><head><title>${title}</title></head><body><article><h1>${title}</h1>${PROSE}${body}</article>${after}</body></html>`;

/** The GFM tables of a markdown text: each as { header, rows }, cells unescaped and trimmed. */
function tables(markdown) {
  const split = (line) => line.trim().replace(/^\|/, "").replace(/\|$/, "").split(/(?<!\\)\|/).map((c) => c.trim().replace(/\\\|/g, "|"));
  const out = [];
  const lines = markdown.split("\n");
  for (let i = 0; i + 1 < lines.length; i++) {
    if (!lines[i].startsWith("|") || !/^\|( *:?-{3,}:? *\|)+$/.test(lines[i + 1])) continue;
    const t = { header: split(lines[i]), rows: [] };
    for (i += 2; i < lines.length && lines[i].startsWith("|"); i++) t.rows.push(split(lines[i]));
    out.push(t);
  }
  return out;
}

const T1 = "<table><tr><td>Crate</td><td>Version</td></tr><tr><td>tokio</td><td>1.38</td></tr></table>";
const T2 = `<table><tr><th scope="row">Prerequisites</th><td>Basic HTML</td></tr><tr><th scope="row">Outcomes</th><td><ul><li>Tables</li><li>Spans</li></ul></td></tr></table>`;
const T3 = `<table><thead><tr><th>Param</th><th>Type</th></tr></thead><tbody><tr><td>mode</td><td><code>"bm25" | "vector"</code></td></tr><tr><td>k</td><td><p>Top hits</p><p>default 10</p></td></tr><tr><td>x</td></tr></tbody></table>`;

test("F40: tables without header cells, with row headers, pipes, paragraphs and ragged rows become GFM tables", async () => {
  const r = await convert(article("Crates", `<h2>Versions</h2>${T1}<h2>Course</h2>${T2}<h2>Parameters</h2>${T3}`), "https://docs.example.test/crates");
  assert.doesNotMatch(r.markdown, /<\/?(table|tr|td|th)\b/i, r.markdown);
  const [t1, t2, t3] = tables(r.markdown);
  assert.ok(t1 && t2 && t3, `three tables expected:\n${r.markdown}`);
  // T1: two columns, all four cell texts (no header cells: an empty header row).
  assert.equal(t1.header.length, 2);
  assert.deepEqual([t1.header, ...t1.rows].flat().filter(Boolean), ["Crate", "Version", "tokio", "1.38"]);
  // T2: two columns; the list is inline cell content.
  assert.deepEqual(t2.rows, [["Prerequisites", "Basic HTML"], ["Outcomes", "Tables; Spans"]]);
  // T3: header, three body rows of two cells; the pipe escaped, both paragraphs in one cell, padding.
  assert.deepEqual(t3.header, ["Param", "Type"]);
  assert.deepEqual(t3.rows, [["mode", '`"bm25" | "vector"`'], ["k", "Top hits; default 10"], ["x", ""]]);
  assert.match(r.markdown, /`"bm25" \\\| "vector"`/);
});

test("F40: a layout table is unwrapped into its heading and paragraphs, on the article path and the whole-body fallback", async () => {
  const wrapped = `<table><tr><td><h2>Usage</h2><p>Run it.</p>${PROSE}</td></tr></table>`;
  for (const html of [article("Crates", wrapped), `<html><body>${wrapped}</body></html>`]) {
    const r = await convert(html);
    assert.doesNotMatch(r.markdown, /<\/?(table|tr|td|th)\b/i);
    assert.equal(tables(r.markdown).length, 0, r.markdown);
    assert.match(r.markdown, /^#{1,2} Usage$/m); // without a page title, the first heading is the title
    assert.match(r.markdown, /^Run it\.$/m);
  }
  // A layout table around a data table: the inner one stays a table, the outer goes.
  const nested = await convert(article("Crates", `<table><tr><td>${T1}</td><td><p>Side note.</p></td></tr></table>`));
  assert.equal(tables(nested.markdown).length, 1, nested.markdown);
  assert.match(nested.markdown, /^Side note\.$/m);
});

test("F40: the page view renders the converted tables as table elements with every cell's text", async () => {
  const r = await convert(article("Crates", `${T1}${T2}${T3}`));
  const rendered = await page.evaluate(async (markdown) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    await Wiki.delete("f40-render").catch(() => {});
    const w = await Wiki.open("f40-render");
    try {
      const p = await w.putPage({ title: "Crates table", kind: "concept", summary: "tables", body: markdown });
      const view = await w.pageView(p.key);
      const doc = new DOMParser().parseFromString(view.html, "text/html");
      return [...doc.querySelectorAll("table")].map((t) => [...t.querySelectorAll("tr")].map((tr) => [...tr.children].map((c) => c.textContent.trim())));
    } finally { w.close(); await Wiki.delete("f40-render"); }
  }, r.markdown);
  assert.equal(rendered.length, 3);
  const texts = rendered.flat(2).filter(Boolean);
  for (const cell of ["Crate", "Version", "tokio", "1.38", "Prerequisites", "Basic HTML", "Outcomes", "Tables; Spans", "Param", "Type", "mode", '"bm25" | "vector"', "k", "Top hits; default 10", "x"]) {
    assert.ok(texts.includes(cell), `no cell ${JSON.stringify(cell)} in ${JSON.stringify(rendered)}`);
  }
  assert.equal(rendered[2].length, 4, "T3: header and three rows");
  assert.ok(rendered[2].every((row) => row.length === 2), JSON.stringify(rendered[2]));
});

const C1 = `<div class="highlight-python notranslate"><div class="highlight"><pre><span></span><span class="c1"># install</span>
<span class="n">pip</span> install llm_wiki
<span class="nb">print</span>(<span class="s2">"a_b*c"</span>)
</pre></div></div>`;
const C2 = `<div class="highlight highlight-source-rust"><pre><span class="pl-k">fn</span> <span class="pl-en">main</span>() { <span class="pl-c">// start</span> }</pre></div>`;
const C3 = `<table class="highlighttable"><tr><td class="linenos"><div class="linenodiv"><pre>1
2</pre></div></td><td class="code"><div class="highlight"><pre>let x = 1;
let y = x * 2;</pre></div></td></tr></table>`;
const C4 = `<pre class="EnlighterJSRAW" data-enlighter-language="typescript">const foo_bar = "**";</pre>`;
const C5 = `<pre><code class="language-toml">[[outputs.influxdb]]
urls = ["x"]</code></pre>`;

/** The fenced blocks of a markdown text: { info, body }. */
const fences = (markdown) => [...markdown.matchAll(/^(`{3,})([^\n`]*)\n([\s\S]*?)\n\1$/gm)].map((m) => ({ info: m[2].trim(), body: m[3] }));

test("F41: code blocks that are not <pre><code> become one verbatim fenced block each, with their language", async () => {
  const blocks = [C1, C2, C3, C4, C5];
  const r = await convert(article("Install", blocks.map((b, i) => `<p>Step ${i + 1}.</p>${b}`).join("")));
  assert.deepEqual(fences(r.markdown), [
    { info: "python", body: '# install\npip install llm_wiki\nprint("a_b*c")' },
    { info: "rust", body: "fn main() { // start }" },
    { info: "", body: "let x = 1;\nlet y = x * 2;" },
    { info: "typescript", body: 'const foo_bar = "**";' },
    { info: "toml", body: '[[outputs.influxdb]]\nurls = ["x"]' },
  ], r.markdown);
  assert.doesNotMatch(r.markdown, /\\#|\\_|\\\*|<span/, r.markdown);
  const outsideCode = r.markdown.replace(/^```[\s\S]*?^```$/gm, "");
  assert.doesNotMatch(outsideCode, /install|a_b|foo_bar/, "code lines outside their blocks");
  assert.equal(tables(r.markdown).length, 0, "C3 is no table");
});

test("F41: highlighter shapes beyond the field case — line-number spans, <br> lines, lang- and brush: classes", async () => {
  const r = await convert(article("More code", [
    `<p>One.</p><div class="codehilite"><pre><span class="linenos">1</span><span class="k">let</span> a = 1;\n<span class="linenos">2</span>a_b = 2;</pre></div>`,
    `<p>Two.</p><pre class="brush: js">var x_y = 1;<br>x_y *= 2;</pre>`,
    `<p>Three.</p><pre class="prettyprint lang-go">package main</pre>`,
    // highlight.js line numbers: a table of lines inside the <code>, numbers drawn from attributes.
    `<p>Four.</p><pre><code class="language-python hljs"><table class="hljs-ln"><tbody><tr><td class="hljs-ln-line hljs-ln-numbers" data-line-number="1"><div class="hljs-ln-n" data-line-number="1"></div></td><td class="hljs-ln-line hljs-ln-code" data-line-number="1"><span class="hljs-comment"># setup</span></td></tr><tr><td class="hljs-ln-line hljs-ln-numbers" data-line-number="2"><div class="hljs-ln-n" data-line-number="2"></div></td><td class="hljs-ln-line hljs-ln-code" data-line-number="2">run(a_b)</td></tr></tbody></table></code></pre>`,
  ].join("")));
  assert.deepEqual(fences(r.markdown), [
    { info: "", body: "let a = 1;\na_b = 2;" },
    { info: "js", body: "var x_y = 1;\nx_y *= 2;" },
    { info: "go", body: "package main" },
    { info: "python", body: "# setup\nrun(a_b)" },
  ], r.markdown);
});

test("F41: the offline compiler takes no term from a `# install` line inside a code block", { timeout: 120_000 }, async () => {
  const r = await convert(article("Installing llm-wiki", `<p>The package installs with pip.</p>${C1}${C5}`), "https://docs.example.test/install");
  const result = await page.evaluate(async (markdown) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    await Wiki.delete("f41-offline").catch(() => {});
    const w = await Wiki.open("f41-offline");
    try {
      await w.addSource({ key: "https://docs.example.test/install", mime: "text/markdown", content: markdown });
      const report = await w.compile();
      const pages = await w.pages();
      const stored = (await w.source("https://docs.example.test/install")).text;
      return { stored, compiled: report.compiled.length, failed: report.failed, pages: pages.map((p) => ({ key: p.key, title: p.title })) };
    } finally { w.close(); await Wiki.delete("f41-offline"); }
  }, r.markdown);
  assert.equal(result.compiled, 1, JSON.stringify(result));
  // The stored source holds the comment as a line of a fenced block, not as a heading or text.
  assert.ok(result.stored.includes("```python\n# install\npip install llm_wiki\n"), result.stored);
  const names = result.pages.flatMap((p) => [p.key, p.title]).map((s) => s.toLowerCase());
  assert.ok(!names.some((n) => n === "install" || n === "# install"), JSON.stringify(result.pages));
  assert.ok(!names.some((n) => n.includes("outputs.influxdb")), JSON.stringify(result.pages));
});

const M1 = `<p>Let <span class="katex"><span class="katex-mathml"><math><semantics><mrow><mi>λ</mi><mo>=</mo><mn>2</mn></mrow><annotation encoding="application/x-tex">\\lambda = 2</annotation></semantics></math></span><span class="katex-html" aria-hidden="true"><span class="mord mathnormal">λ</span><span class="mrel">=</span><span class="mord">2</span></span></span> hold.</p>`;
const M2 = `<p>The sum is <span class="katex-display"><span class="katex"><span class="katex-mathml"><math display="block"><semantics><mrow><munderover><mo>∑</mo><mrow><mi>i</mi><mo>=</mo><mn>1</mn></mrow><mi>n</mi></munderover><msub><mi>x</mi><mi>i</mi></msub></mrow><annotation encoding="application/x-tex">\\sum_{i=1}^{n} x_i</annotation></semantics></math></span><span class="katex-html" aria-hidden="true"><span class="mop op-symbol large-op">∑</span><span class="mord">x</span></span></span></span></p>`;
const M3 = `<p>Fit <span class="MathJax_Preview"></span><span class="MathJax" id="MathJax-Element-1-Frame">f(x)=ax2+bx+c</span><script type="math/tex" id="MathJax-Element-1">f(x)=ax^2+bx+c</script> now.</p>`;
const M4 = `<p>Energy: <mjx-container class="MathJax" jax="CHTML"><mjx-math aria-hidden="true"><mjx-mi>E</mjx-mi><mjx-mo>=</mjx-mo><mjx-mi>m</mjx-mi></mjx-math><mjx-assistive-mml><math><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></math></mjx-assistive-mml></mjx-container>.</p>`;
const M5 = `<p>Square: <math><msup><mi>x</mi><mn>2</mn></msup></math>.</p>`;

test("F42: KaTeX, MathJax 2 and 3 and bare MathML each give their formula once, as TeX", async () => {
  const r = await convert(article("Formulas", M1 + M2 + M3 + M4 + M5));
  const md = r.markdown;
  assert.match(md, /^Let \$\\lambda = 2\$ hold\.$/m, md);
  assert.match(md, /^\$\$\\sum_\{i=1\}\^\{n\} x_i\$\$$/m, md);
  assert.match(md, /^Fit \$f\(x\)=ax\^2\+bx\+c\$ now\.$/m, md);
  assert.match(md, /^Energy: \$E=mc\^\{2\}\$\.$/m, md);
  assert.match(md, /^Square: \$x\^\{2\}\$\.$/m, md);
  for (const [needle, times] of [["\\lambda", 1], ["λ", 0], ["ax2", 0], ["\\sum", 1], ["∑", 0], ["E=m", 1], ["x^{2}", 1]]) {
    assert.equal(md.split(needle).length - 1, times, `${needle} ${times}× in:\n${md}`);
  }
});

test("F42: MathJax 2 display math, Wikipedia's annotated MathML, and MathML fractions, roots and Greek letters read as TeX", async () => {
  const r = await convert(article("More formulas", [
    `<p>Display:</p><div class="MathJax_Display"><span class="MathJax" id="MathJax-Element-7-Frame">a+b</span></div><script type="math/tex; mode=display" id="MathJax-Element-7">a + b = c</script>`,
    `<p>Ratio <math><mfrac><mi>α</mi><msqrt><mi>β</mi></msqrt></mfrac></math> here.</p>`,
    // Wikipedia: MathML with a {\displaystyle …} annotation and an aria-hidden fallback image.
    `<p>Famous <span class="mwe-math-element"><span class="mwe-math-mathml-inline" style="display: none;"><math alttext="{\\displaystyle E=mc^{2}}"><semantics><mrow><mi>E</mi><mo>=</mo><mi>m</mi><msup><mi>c</mi><mn>2</mn></msup></mrow><annotation encoding="application/x-tex">{\\displaystyle E=mc^{2}}</annotation></semantics></math></span><img src="https://wikimedia.example.test/math/e.svg" class="mwe-math-fallback-image-inline" aria-hidden="true" alt="{\\displaystyle E=mc^{2}}"></span> too.</p>`,
    `<p>Two <math><semantics><mi>a</mi><annotation encoding="application/x-tex">{\\displaystyle a}+{\\displaystyle b}</annotation></semantics></math> kept.</p>`,
  ].join("")));
  assert.match(r.markdown, /^\$\$a \+ b = c\$\$$/m, r.markdown);
  assert.match(r.markdown, /^Famous \$E=mc\^\{2\}\$ too\.$/m, r.markdown);
  assert.match(r.markdown, /^Two \$\{\\displaystyle a\}\+\{\\displaystyle b\}\$ kept\.$/m, r.markdown);
  assert.doesNotMatch(r.markdown, /wikimedia/, "the fallback image of a formula is no image");
  assert.match(r.markdown, /Ratio \$\\frac\{\\alpha\}\{\\sqrt\{\\beta\}\}\$ here\./, r.markdown);
  assert.equal(r.markdown.split("a+b").length, 1, r.markdown);
});

test("F43: a base64 image becomes a placeholder with its alt text and size; the text stays near the article's size", async () => {
  const base64 = Buffer.from(Array.from({ length: 225_000 }, (_, i) => (i * 7919) % 251)).toString("base64").slice(0, 300_000);
  const img = `<p><img alt="Architecture diagram" src="data:image/png;base64,${base64}"></p>`;
  const withImage = await convert(article("Architecture", img), "https://blog.example.test/arch");
  const without = await convert(article("Architecture", ""), "https://blog.example.test/arch");
  assert.ok(!withImage.markdown.includes(base64.slice(0, 64)), "base64 kept");
  assert.doesNotMatch(withImage.markdown, /data:image|base64/);
  assert.match(withImage.markdown, /\[image: Architecture diagram \(image\/png, 219\.7 KB, inline data not kept\)\]/, withImage.markdown);
  assert.ok(withImage.markdown.length < 2 * without.markdown.length, `${withImage.markdown.length} vs ${without.markdown.length}`);
  // A link to inline data goes too (its text stays).
  const link = await convert(article("Download", `<p><a href="data:application/pdf;base64,${base64.slice(0, 4000)}">the report</a></p>`));
  assert.doesNotMatch(link.markdown, /data:/);
  assert.match(link.markdown, /the report/);
});

test("F43: lazy-loaded images take data-src, data-lazy-src and srcset, resolved against the page URL", async () => {
  const imgs = `<p><img src="data:image/gif;base64,R0lGODlhAQABAAAAACw=" data-src="/img/arch.png" alt="Arch"> <img data-lazy-src="img/b.png" alt="B"> <img srcset="c-1x.png 1x, c-2x.png 2x" alt="C"> <img src="../media/d.png" alt="D"></p>
<p><img src="/static/blank.gif" data-original="e.jpg" alt="E"> <picture><source srcset="f-480.webp 480w, f-960.webp 960w"><img alt="F"></picture></p>`;
  const r = await convert(article("Guide", imgs), "https://docs.example.test/guide/intro/");
  const found = [...r.markdown.matchAll(/!\[([^\]]*)\]\(([^)]+)\)/g)].map((m) => [m[1], m[2]]);
  assert.deepEqual(found, [
    ["Arch", "https://docs.example.test/img/arch.png"],
    ["B", "https://docs.example.test/guide/intro/img/b.png"],
    ["C", "https://docs.example.test/guide/intro/c-2x.png"],
    ["D", "https://docs.example.test/guide/media/d.png"],
    ["E", "https://docs.example.test/guide/intro/e.jpg"],
    ["F", "https://docs.example.test/guide/intro/f-960.webp"],
  ], r.markdown);
  assert.doesNotMatch(r.markdown, /data:/);
});
