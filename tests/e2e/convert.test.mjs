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
