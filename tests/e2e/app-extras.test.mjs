// The web app's graph view, PDF import, per-operation and embedding settings, and the offer to
// recompile offline pages once an endpoint is configured (issues #8 and #10), in headless Chromium.
// Screenshots go to test-results/extras-*.png.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { startServer, launch, artifacts, scriptedEndpoint, configure, api, openApp as openAppAt } from "./harness.mjs";
import { pdfFile } from "./pdf-file.mjs";

let server, browser, endpoint;
before(async () => {
  server = await startServer();
  endpoint = await scriptedEndpoint();
  browser = await launch();
});
after(async () => { await browser?.close(); server?.stop(); endpoint?.stop(); });

/** The app in a new page of `context`, with `wiki` opened when given. */
const openApp = (context, wiki) => openAppAt(context, server.url, wiki);

/** Writes pages through the JS API (a second connection) before the app opens that wiki. */
async function seed(page, wiki, pages) {
  await page.evaluate(async ({ wiki, pages }) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open(wiki);
    for (const p of pages) await w.putPage(p);
    w.close();
  }, { wiki, pages });
}

/** Adds `[key, content]` sources through the app's form, waiting for each row to be listed. */
async function addSources(page, notes) {
  for (const [key, content] of notes) {
    await page.fill("#source-key", key);
    await page.fill("#source-content", content);
    await page.click("#add-source button[type=submit]");
    await page.waitForFunction((k) => [...document.querySelectorAll("#sources-table tbody tr")].some((r) => r.dataset.key === k), key);
  }
}

/** Distinct (from, to) pairs of the links in `pages`, without self-links, as the graph counts them. */
function expectedEdges(pages) {
  const keys = new Set(pages.map((p) => p.title));
  const pairs = new Set();
  for (const p of pages) {
    for (const m of p.body.matchAll(/\[\[([^\]|#]+)/g)) {
      if (keys.has(m[1]) && m[1] !== p.title) pairs.add(`${p.title}\u0000${m[1]}`);
    }
  }
  return pairs;
}

/** Clicks the graph node `key` where the canvas draws it (centred and zoomed in first). */
async function clickNode(page, key) {
  // The node is centred, then clicked where it is drawn; on a loaded machine the canvas may
  // not have drawn it there yet, so the click is made again (at most three times) until the
  // page it opens is on screen.
  for (let attempt = 1; ; attempt++) {
    const box = await page.locator("#graph").boundingBox();
    const pos = await page.evaluate((key) => {
      const cy = document.querySelector("#graph").cy;
      const node = cy.getElementById(key);
      cy.zoom(1.5);
      cy.center(node);
      return node.renderedPosition();
    }, key);
    await page.mouse.click(box.x + pos.x, box.y + pos.y);
    const opened = await page.waitForFunction((t) => document.querySelector("#pv-title").textContent === t, key, { timeout: 10_000 })
      .then(() => true, () => false);
    if (opened || attempt === 3) return;
  }
}

test("graph view: pages as nodes, links as edges, CJK titles; a click opens the page; 300 pages stay usable", { timeout: 240_000 }, async () => {
  const context = await browser.newContext({ locale: "zh-CN" });
  const { page: boot } = await openApp(context);
  const small = [
    { title: "所有权", kind: "concept", body: "[[借用]] 与 [[切片]]。参见 [[Rust]]。\n" },
    { title: "借用", kind: "concept", body: "[[所有权]] 的一部分。[[不存在的页面]] 不是一条边。\n" },
    { title: "切片", kind: "concept", body: "切片是一种 [[借用]]，也链接自己：[[切片]]。\n" },
    { title: "Rust", kind: "entity", body: "[[所有权]]\n" },
    { title: "概览", kind: "overview", body: "[[所有权]] [[借用]] [[切片]] [[Rust]] [[rust]]\n" },
    { title: "孤立", kind: "analysis", body: "没有链接。\n" },
  ];
  await seed(boot, "graph-cjk", small);
  const { page, log } = await openApp(context, "graph-cjk");
  await page.click("#tabs button[data-tab=graph]");
  await page.waitForSelector("#graph[data-nodes]");
  // 10 distinct links between existing pages; the missing target, the self-link and the repeat
  // (case-insensitive [[rust]]) are not edges.
  const want = expectedEdges(small);
  assert.equal(want.size, 10);
  assert.equal(await page.getAttribute("#graph", "data-nodes"), "6");
  assert.equal(Number(await page.getAttribute("#graph", "data-edges")), want.size);
  assert.equal(await page.textContent("#graph-summary"), `6 个页面，${want.size} 条链接`);
  const graph = await api(page, "graph-cjk", "return await w.graph();");
  assert.deepEqual(new Set(graph.edges.map((e) => `${e.from}\u0000${e.to}`)), want);
  assert.deepEqual(graph.nodes.map((n) => n.title).sort(), small.map((p) => p.title).sort());
  const rendered = await page.evaluate(() => document.querySelector("#graph").cy.nodes().map((n) => n.data("label")).sort());
  assert.deepEqual(rendered, small.map((p) => p.title).sort(), "labels are the CJK titles");
  assert.equal(await page.locator("#graph-legend li").count(), 4, "one legend entry per kind present (concept, entity, overview, analysis)");
  await page.screenshot({ path: `${artifacts}/extras-graph.png`, fullPage: true });

  await clickNode(page, "切片");
  await page.waitForFunction(() => document.querySelector("#pv-title").textContent === "切片" && !document.querySelector("#page-view").hidden);
  assert.equal(decodeURIComponent(new URL(page.url()).hash), "#/page/切片");
  assert.equal(await page.getAttribute("#tabs button[data-tab=pages]", "class"), "active");
  await page.click("#tabs button[data-tab=graph]");
  await page.waitForSelector("#graph[data-nodes]");
  await clickNode(page, "Rust");
  await page.waitForFunction(() => document.querySelector("#pv-title").textContent === "Rust");

  // A few hundred pages: 300 nodes, two links each, laid out in seconds and still clickable.
  const n = 300;
  const name = (i) => `节点 ${String(i).padStart(3, "0")}`;
  const kinds = ["concept", "entity", "overview", "analysis", "comparison"];
  const large = Array.from({ length: n }, (_, i) => ({
    title: name(i), kind: kinds[i % kinds.length],
    body: `见 [[${name((i + 1) % n)}]] 和 [[${name((i * 7 + 3) % n)}]]。\n`,
  }));
  const t0 = Date.now();
  await seed(page, "graph-large", large);
  const seeded = Date.now() - t0;
  await page.evaluate(() => localStorage.setItem("llm-wiki.current", "graph-large"));
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  await page.click("#tabs button[data-tab=graph]");
  await page.waitForSelector("#graph[data-nodes]", { timeout: 60_000 });
  assert.equal(await page.getAttribute("#graph", "data-nodes"), String(n));
  assert.equal(Number(await page.getAttribute("#graph", "data-edges")), expectedEdges(large).size);
  const layoutMs = Number(await page.getAttribute("#graph", "data-layout-ms"));
  assert.ok(layoutMs < 20_000, `layout of ${n} pages took ${layoutMs} ms`);
  await page.screenshot({ path: `${artifacts}/extras-graph-large.png`, fullPage: true });
  await clickNode(page, name(123));
  await page.waitForFunction((t) => document.querySelector("#pv-title").textContent === t, name(123));
  console.log(JSON.stringify({ graph: { nodes: n, edges: expectedEdges(large).size, seedMs: seeded, layoutMs } }));

  const elsewhere = log.requests.filter((u) => !u.startsWith(new URL(server.url).origin) && !/^(data|blob):/.test(u));
  assert.deepEqual(elsewhere, []);
  assert.deepEqual(log.errors, []);
  await context.close();
});

// ------------------------------------------------------------------ PDF

/** A PDF string literal (ASCII) or, for other text, UTF-16BE hex with a BOM. */
function pdfString(s) {
  if (/^[\x20-\x7e]*$/.test(s)) return `(${s.replace(/[()\\]/g, "\\$&")})`;
  let hex = "FEFF";
  for (const c of s) hex += c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
  return `<${hex}>`;
}

/**
 * A small PDF written here, byte for byte: `pages` is a list of pages, each a list of lines; a line
 * in Latin script uses Helvetica, a CJK line the predefined CMap UniGB-UCS2-H with Adobe-GB1
 * (so pdf.js must load that CMap, from this origin); `null` leaves a line's space empty (a
 * paragraph gap). An empty page has no text at all.
 */
function makePdf(pages, title) {
  const objects = [];
  const add = (body) => { objects.push(body); return objects.length; };
  const catalog = add(null);
  const pagesObj = add(null);
  const helvetica = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  const descriptor = add("<< /Type /FontDescriptor /FontName /STSong-Light /Flags 6 /FontBBox [-25 -254 1000 880] /ItalicAngle 0 /Ascent 880 /Descent -120 /CapHeight 880 /StemV 93 >>");
  const cid = add(`<< /Type /Font /Subtype /CIDFontType0 /BaseFont /STSong-Light /CIDSystemInfo << /Registry (Adobe) /Ordering (GB1) /Supplement 4 >> /FontDescriptor ${descriptor} 0 R /DW 1000 >>`);
  const song = add(`<< /Type /Font /Subtype /Type0 /BaseFont /STSong-Light-UniGB-UCS2-H /Encoding /UniGB-UCS2-H /DescendantFonts [${cid} 0 R] >>`);
  const info = add(`<< /Title ${pdfString(title)} /Producer (llm-wiki test) >>`);
  const kids = [];
  for (const lines of pages) {
    const ops = lines.map((line, i) => {
      const y = 740 - i * 22;
      if (line === null) return null;
      if (/^[\x20-\x7e]*$/.test(line)) return `BT /F1 14 Tf 72 ${y} Td ${pdfString(line)} Tj ET`;
      let hex = "";
      for (const c of line) hex += c.codePointAt(0).toString(16).toUpperCase().padStart(4, "0");
      return `BT /F2 14 Tf 72 ${y} Td <${hex}> Tj ET`;
    }).filter((op) => op !== null).join("\n");
    const content = add(`<< /Length ${ops.length} >>\nstream\n${ops}\nendstream`);
    kids.push(add(`<< /Type /Page /Parent ${pagesObj} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${helvetica} 0 R /F2 ${song} 0 R >> >> /Contents ${content} 0 R >>`));
  }
  objects[catalog - 1] = `<< /Type /Catalog /Pages ${pagesObj} 0 R >>`;
  objects[pagesObj - 1] = `<< /Type /Pages /Kids [${kids.map((k) => `${k} 0 R`).join(" ")}] /Count ${kids.length} >>`;
  return pdfFile(objects, catalog, info);
}

test("PDF import: the text of every page becomes a source, the PDF is kept, CJK included; a scan is refused", { timeout: 180_000 }, async () => {
  const context = await browser.newContext();
  const { page, log } = await openApp(context);
  const pdf = makePdf([
    ["Ownership rules in Rust", null, "Each value in Rust has an owner.", "There can only be one owner at a time."],
    ["所有权规则", "Borrowing lets code use a value without taking ownership."],
  ], "所有权 Ownership");
  await page.setInputFiles("#source-files", [{ name: "ownership.pdf", mimeType: "application/pdf", buffer: pdf }]);
  await page.waitForFunction(() => /Added/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
  // The status line is set before the table refreshes: wait for the row itself.
  await page.waitForFunction(() => /所有权 Ownership/.test(document.querySelector("#sources-table").textContent), null, { timeout: 30_000 });
  const source = await api(page, "default", "const s = await w.sources(); return { list: s, one: await w.source(s[0].key) };");
  assert.equal(source.list.length, 1);
  const s = source.one;
  assert.equal(s.key, "file:ownership.pdf");
  assert.equal(s.mime, "text/plain");
  assert.equal(s.title, "所有权 Ownership");
  assert.deepEqual(s.original, { mime: "application/pdf", sha256: createHash("sha256").update(pdf).digest("hex"), bytes: pdf.length });
  // Lines as lines, a gap as a paragraph break, pages joined by a blank line, CJK through its CMap.
  assert.equal(s.text, "Ownership rules in Rust\n\nEach value in Rust has an owner.\nThere can only be one owner at a time.\n\n所有权规则\nBorrowing lets code use a value without taking ownership.\n");
  await page.click("#sources-table tbody tr a");
  await page.waitForSelector("#source-view:not([hidden])");
  assert.match(await page.textContent("#source-view .meta"), /text\/plain/);
  await page.screenshot({ path: `${artifacts}/extras-pdf-source.png`, fullPage: true });

  // Compiled (offline), its text is found by the search box, in Chinese too.
  await page.click("#compile");
  await page.waitForFunction(() => /Compiled 1 source/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
  const fromPdf = await api(page, "default", "return (await w.graph()).nodes.filter((n) => n.sources.includes('file:ownership.pdf')).map((n) => n.key);");
  assert.ok(fromPdf.length > 0);
  for (const q of ["borrowing", "所有权规则"]) {
    await page.fill("#search", q);
    await page.waitForFunction(() => !document.querySelector("#search-results").hidden && document.querySelector("#search-results li a"));
    const hits = await page.$$eval("#search-results li a", (as) => as.map((a) => decodeURIComponent(a.getAttribute("href").replace("#/page/", ""))));
    assert.ok(hits.some((h) => fromPdf.includes(h)), `"${q}" finds a page of the PDF: ${hits}`);
    await page.fill("#search", "");
    await page.waitForSelector("#search-results", { state: "hidden" }); // the next results are the next query's
  }

  // A PDF without a text layer adds nothing and says why.
  await page.setInputFiles("#source-files", [{ name: "scan.pdf", mimeType: "application/pdf", buffer: makePdf([[]], "Scan") }]);
  await page.waitForFunction(() => /no text layer/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
  assert.equal(await page.locator("#sources-table tbody tr").count(), 1);

  // pdf.js, its worker and the CMap came from this origin.
  const origin = new URL(server.url).origin;
  assert.ok(log.requests.some((u) => u.startsWith(`${origin}/build/pdfjs/pdf.worker.mjs`)), "the worker is served locally");
  assert.ok(log.requests.some((u) => u.startsWith(`${origin}/build/pdfjs/cmaps/UniGB-UCS2-H`)), "the CJK CMap is served locally");
  assert.deepEqual(log.requests.filter((u) => !u.startsWith(origin) && !/^(data|blob):/.test(u)), []);
  assert.deepEqual(log.errors, []);
  await context.close();
});

// ------------------------------------------------------------------ settings and recompile

test("settings: a model per operation and the embeddings endpoint are saved and come back after a reload", { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const { page, log } = await openApp(context);
  await configure(page, `${endpoint.url}/v1`, {
    compileModel: "scripted-compile", queryModel: "scripted-query",
    embeddings: { provider: "ollama", model: "nomic-embed-text", url: endpoint.url },
  });

  // Another tab changing the wiki refreshes the view, but not over settings being typed.
  await page.fill("#cfg-model-lint", "typed-not-saved");
  const kept = () => page.$eval("#settings-form", (f) => Number(f.dataset.kept || 0));
  const keptBefore = await kept();
  const other = await context.newPage();
  await other.goto(server.url);
  await other.waitForSelector("body[data-ready=true]");
  await other.evaluate(() => import("/writer.js").then((m) => m.announce("default", "changed")));
  await page.waitForFunction(() => /Another tab changed/.test(document.querySelector("#status").textContent));
  // The refresh ran and kept the edits (without the guard it re-fills the form and this waits
  // in vain).
  await page.waitForFunction((n) => Number(document.querySelector("#settings-form").dataset.kept || 0) > n, keptBefore);
  assert.equal(await page.inputValue("#cfg-model-lint"), "typed-not-saved");
  assert.equal(await page.inputValue("#cfg-model-compile"), "scripted-compile");
  await other.close();

  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await page.click("#tabs button[data-tab=settings]");
  await page.waitForFunction(() => document.querySelector("#cfg-model-compile").value !== "");
  assert.equal(await page.inputValue("#cfg-model-compile"), "scripted-compile");
  assert.equal(await page.inputValue("#cfg-model-query"), "scripted-query");
  assert.equal(await page.inputValue("#cfg-model-lint"), "");
  assert.equal(await page.inputValue("#cfg-emb-provider"), "ollama");
  assert.equal(await page.inputValue("#cfg-emb-model"), "nomic-embed-text");
  assert.equal(await page.inputValue("#cfg-emb-url"), endpoint.url);
  const config = await api(page, "default", "return await w.config();");
  assert.equal(config.model, "scripted-chat");
  assert.equal(config.compile.model, "scripted-compile");
  assert.equal(config.query.model, "scripted-query");
  assert.equal(config.lint.model, undefined);
  assert.equal(config.embeddings.provider, "ollama");
  assert.equal(config.embeddings.baseUrl, endpoint.url);
  assert.equal(config.hasApiKey, true);
  await page.screenshot({ path: `${artifacts}/extras-settings.png`, fullPage: true });

  // The connection test checks the embeddings endpoint as configured (Ollama's /api/embed).
  await page.click("#cfg-test");
  await page.waitForFunction(() => /embeddings: /.test(document.querySelector("#cfg-report").textContent), null, { timeout: 30_000 });
  assert.match(await page.textContent("#cfg-report"), /embeddings: ok/);
  assert.ok(log.requests.some((u) => u === `${endpoint.url}/api/embed`), log.requests.join("\n"));

  // Clearing a per-operation model falls back to the main one; switching the provider back is kept too.
  await configure(page, `${endpoint.url}/v1`, { compileModel: "", queryModel: "scripted-query", embeddings: { provider: "offline", model: "", url: "" } });
  const after = await api(page, "default", "return await w.config();");
  assert.equal(after.compile.model, undefined);
  assert.equal(after.query.model, "scripted-query");
  assert.equal(after.embeddings.provider, "offline");
  assert.equal(after.embeddings.baseUrl, undefined);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test("embeddings: a new model waits for the user's go, then re-embeds every page with progress", { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  const { page, log } = await openApp(context);
  // Three pages with the built-in offline vectors.
  await api(page, "default", `
    for (const [title, body] of [["Ownership", "Each value has one owner."], ["借用", "引用借用一个值。"], ["Threads", "Threads run at once."]])
      await w.putPage({ title, body });
    return null;`);
  await configure(page, `${endpoint.url}/v1`, { embeddings: { provider: "ollama", model: "scripted-embed-768", url: endpoint.url } });
  await page.waitForFunction(() => /stored vectors are of offline-hash-v1/.test(document.querySelector("#cfg-emb-status").textContent));
  assert.equal(await page.textContent("#cfg-emb-run"), "Re-embed all pages");
  await page.click("#cfg-emb-run");
  await page.waitForFunction(() => /Every page has a vector of this model/.test(document.querySelector("#cfg-emb-status").textContent), null, { timeout: 60_000 });
  assert.match(await page.textContent("#status"), /Embedded 3 page\(s\) with scripted-embed-768/);
  assert.equal(await page.isHidden("#cfg-emb-run"), true);
  assert.ok(log.requests.filter((u) => u === `${endpoint.url}/api/embed`).length >= 1, log.requests.join("\n"));
  // Search now embeds the query at the endpoint and fuses.
  const r = await api(page, "default", `return await w.search("owner", { mode: "hybrid" });`);
  assert.equal(r.mode, "hybrid");
  assert.equal(r.hits[0].key, "Ownership");

  // A page written in the editor (no compile) gets its endpoint vector right after the save.
  const embedCalls = log.requests.filter((u) => u === `${endpoint.url}/api/embed`).length;
  await page.evaluate(() => { location.hash = "#/pages"; });
  await page.click("#page-new");
  await page.fill("#page-title", "Lifetimes");
  await page.fill("#page-body", "A lifetime is how long a reference stays valid.");
  await page.click("#page-editor button[type=submit]");
  await page.waitForFunction(() => /Saved/.test(document.querySelector("#status").textContent));
  let status;
  for (let i = 0; i < 60; i++) {
    status = await api(page, "default", "return await w.embeddingStatus();");
    if (status.state === "ready" && status.missing === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  assert.deepEqual(status, { state: "ready", missing: 0, skipped: [] });
  assert.ok(log.requests.filter((u) => u === `${endpoint.url}/api/embed`).length > embedCalls, log.requests.join("\n"));
  const v = await api(page, "default", `return await w.search("reference valid", { mode: "vector" });`);
  assert.equal(v.mode, "vector");
  assert.equal(v.hits[0].key, "Lifetimes");
  assert.deepEqual(log.errors, []);
  await context.close();
});

test("offline pages: once an endpoint is configured the app offers to recompile them, cost first, keeping human edits", { timeout: 240_000 }, async () => {
  const context = await browser.newContext();
  const { page, log } = await openApp(context);
  const notes = [
    ["notes/backpressure.md", "# Backpressure\n\nBackpressure lets a slow consumer slow down a fast producer. Without backpressure, queues grow without bound.\n\n## Bounded Queues\n\nA bounded queue blocks the producer when it is full. Bounded queues keep memory use predictable. The Acme Stream Library uses bounded queues.\n"],
    ["notes/流量控制.md", "# 流量控制\n\n流量控制让生产者等待慢的消费者。没有流量控制，队列会无限增长。\n\n## 背压\n\n背压是一种流量控制机制。背压保护队列不溢出。很多系统都用背压。\n"],
  ];
  await addSources(page, notes);
  await page.click("#compile");
  await page.waitForFunction(() => /Compiled 2 source/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
  const offlineBefore = await api(page, "default", "return (await w.graph()).nodes.filter((n) => n.tags.includes('offline'));");
  assert.ok(offlineBefore.length >= 4, `${offlineBefore.length} offline pages`);
  assert.ok(await page.locator("#recompile-offer").isHidden(), "no offer while the wiki runs offline");

  // A human edit on an offline page, in the editor: the recompile must keep it.
  const edited = offlineBefore.find((n) => n.kind !== "source");
  const human = "人工补充：这一段是我自己写的，重新编译后必须保留。";
  await page.evaluate((key) => { location.hash = `#/page/${encodeURIComponent(key)}`; }, edited.key);
  await page.waitForFunction((t) => document.querySelector("#pv-title").textContent === t, edited.title);
  await page.click("#pv-edit");
  const body = await page.inputValue("#page-body");
  await page.fill("#page-body", `${body.trimEnd()}\n\n${human}\n`);
  await page.click("#page-editor button[type=submit]");
  await page.waitForFunction(() => /Saved/.test(document.querySelector("#status").textContent));

  await configure(page, `${endpoint.url}/v1`, { compileModel: "scripted-compile" });
  await page.click("#tabs button[data-tab=sources]");
  await page.waitForSelector("#recompile-offer:not([hidden])");
  assert.match(await page.textContent("#recompile-text"), new RegExp(`${offlineBefore.length} page\\(s\\) .* from 2 source\\(s\\).*scripted-compile`));
  await page.click("#recompile-estimate-btn");
  await page.waitForSelector("#recompile-estimate:not([hidden])");
  const estimate = await api(page, "default", "return await w.estimate({ force: true, sources: arg });", notes.map(([k]) => k).sort());
  assert.ok(estimate.total.input > 0 && estimate.total.calls > 0);
  assert.equal(await page.textContent("#recompile-estimate"),
    `Estimate for 2 source(s): about ${estimate.total.input} tokens in, up to ${estimate.total.output} out, ${estimate.total.calls} call(s).`);
  await page.screenshot({ path: `${artifacts}/extras-recompile-offer.png`, fullPage: true });
  // Nothing was sent to the endpoint to estimate.
  const chat = () => log.requests.filter((u) => u.startsWith(`${endpoint.url}/v1/chat`)).length;
  assert.equal(chat(), 0);

  const models = [];
  page.on("request", (r) => {
    if (r.url().startsWith(`${endpoint.url}/v1/chat`) && r.method() === "POST") models.push(JSON.parse(r.postData()).model);
  });
  await page.click("#recompile-go");
  await page.waitForFunction(() => /Compiled 2 source/.test(document.querySelector("#status").textContent), null, { timeout: 180_000 });
  assert.ok(models.length > 0 && models.every((m) => m === "scripted-compile"), `compile used the compile model: ${[...new Set(models)]}`);

  const after = await api(page, "default", `
    const g = await w.graph();
    return { nodes: g.nodes, edited: await w.page(arg), sources: (await w.sources()).map((s) => s.status.state) };`, edited.key);
  const summaries = after.nodes.filter((n) => n.kind === "source");
  assert.equal(summaries.length, 2);
  for (const n of summaries) assert.ok(!n.tags.includes("offline"), `${n.key} was rewritten by the LLM: no offline tag`);
  const offlineAfter = after.nodes.filter((n) => n.tags.includes("offline"));
  assert.ok(offlineAfter.length < offlineBefore.length, `${offlineAfter.length} offline pages left of ${offlineBefore.length}`);
  assert.ok(after.edited.body.includes(human), "the human paragraph is kept");
  assert.deepEqual(after.sources, ["compiled", "compiled"]);
  await page.waitForSelector("#recompile-offer[hidden]", { state: "attached" });
  assert.deepEqual(log.errors, []);
  console.log(JSON.stringify({ recompile: { offlineBefore: offlineBefore.length, offlineAfter: offlineAfter.length, estimate: estimate.total, chatCalls: models.length } }));
  await context.close();
});

test("removing a source: its row, summary page and citations go; other pages stay and keep working links", { timeout: 120_000 }, async () => {
  const context = await browser.newContext({ locale: "zh-CN" });
  const { page, log } = await openApp(context);
  const notes = [
    ["notes/a.md", "# Backpressure\n\nBackpressure lets a slow consumer slow down a fast producer. Flow control is the general idea behind backpressure.\n\n## Flow Control\n\nTCP uses flow control through its receive window. Flow control keeps queues bounded.\n"],
    ["notes/b.md", "# 流量控制\n\n流量控制让生产者等待慢的消费者。Flow control keeps queues bounded. 很多系统都用流量控制。\n\n## 背压\n\n背压是一种流量控制机制。背压保护队列不溢出。\n"],
  ];
  await addSources(page, notes);
  await page.click("#compile");
  await page.waitForFunction(() => /已编译 2 个资料/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
  const before = await api(page, "default", "return (await w.graph()).nodes;");
  const summaryB = before.find((n) => n.kind === "source" && n.sources.includes("notes/b.md"));
  assert.ok(summaryB, "notes/b.md has a summary page");

  await page.click('#sources-table tbody tr[data-key="notes/b.md"] [data-testid=remove-source]');
  await page.waitForFunction(() => /已移除/.test(document.querySelector("#status").textContent));
  // The status line may come before the table refreshes: wait for the rows themselves.
  await page.waitForFunction(() => document.querySelectorAll("#sources-table tbody tr").length === 1);
  assert.equal(await page.getAttribute("#sources-table tbody tr", "data-key"), "notes/a.md");
  const after = await api(page, "default", `
    const g = await w.graph();
    let missing = 0;
    for (const n of g.nodes) missing += (await w.pageView(n.key)).missing.length;
    return { nodes: g.nodes, missing, sources: (await w.sources()).map((s) => s.key) };`);
  assert.deepEqual(after.sources, ["notes/a.md"]);
  assert.ok(!after.nodes.some((n) => n.key === summaryB.key), "the summary page is gone");
  assert.ok(!after.nodes.some((n) => n.sources.includes("notes/b.md")), "no page names the removed source");
  assert.ok(after.nodes.some((n) => n.kind === "source" && n.sources.includes("notes/a.md")), "the other source's pages stay");
  assert.equal(after.missing, 0, "no link was left dangling");
  await page.screenshot({ path: `${artifacts}/extras-source-removed.png`, fullPage: true });
  assert.deepEqual(log.errors, []);
  await context.close();
});

test("the LLM lint checks wait for another tab's write lock; a question without write-back does not (Decision 9)", { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  const { page, log } = await openApp(context, "locked");
  await api(page, "locked", `
    await w.putPage({ title: "Backpressure", kind: "concept", body: "Backpressure lets a slow consumer slow down a fast producer. See [[Flow control]]." });
    await w.putPage({ title: "Flow control", kind: "concept", body: "Flow control keeps queues bounded, as [[Backpressure]] does." });`);
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await configure(page, `${endpoint.url}/v1`);
  const posts = async () => (await (await fetch(`${endpoint.url}/__requests`)).json()).filter((q) => q.method === "POST").length;

  // Another tab of the same origin holds the wiki's write lock.
  const other = await context.newPage();
  await other.goto(server.url);
  await other.evaluate(() => new Promise((held) => {
    navigator.locks.request("llm-wiki/locked", () => { held(); return new Promise((r) => { window.release = r; }); });
  }));
  const hold = async (action, done) => {
    const calls = await posts();
    await page.evaluate(() => { document.querySelector("#status").textContent = ""; });
    await action();
    await page.waitForFunction(() => /Another tab is writing/.test(document.querySelector("#status").textContent));
    await page.waitForTimeout(300);
    assert.equal(await posts(), calls, "no endpoint call while another tab holds the lock");
    await other.evaluate(() => new Promise((held) => {
      window.release();
      // Take it again for the next action, once this page's write has had it.
      setTimeout(() => navigator.locks.request("llm-wiki/locked", () => { held(); return new Promise((r) => { window.release = r; }); }), 0);
    }));
    await page.waitForFunction(done, null, { timeout: 60_000 });
    assert.ok(await posts() > calls, "the call went out once the lock was free");
  };

  // A question writes no wiki content: answered while the other tab still holds the lock.
  await page.click("#tabs button[data-tab=ask]");
  await page.fill("#question", "What is backpressure?");
  await page.evaluate(() => { document.querySelector("#ask-writeback").checked = false; });
  const before = await posts();
  await page.click("#ask-submit");
  await page.waitForFunction(() => document.querySelector("#ask-cancel").hidden && document.querySelector("#conversation .answer").textContent.length > 0, null, { timeout: 60_000 });
  assert.ok(await posts() > before, "the question went out while another tab held the lock");
  assert.doesNotMatch(await page.textContent("#status"), /Another tab is writing/);

  await page.click("#tabs button[data-tab=lint]");
  await hold(() => page.click("#lint-llm"), () => /findings are listed/.test(document.querySelector("#status").textContent));
  await other.evaluate(() => window.release());
  assert.deepEqual(log.errors, []);
  await context.close();
});

test("source passages: a term only a source holds is found under From sources, answered with a footnote, and opened at its lines", { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  const { page, log } = await openApp(context, "passages-e2e");
  await page.click("#tabs button[data-tab=sources]");
  await addSources(page, [
    ["valves.md", "# Valves of the old pumping station\n\nThe station had three pumps.\n\n## Zephyrine valve\n\nThe Zephyrine valve was patented in 1911 by Ottilie Brandt of Bremen.\n"],
    ["茶馆.md", "# 茶馆\n\n茶馆是城市的客厅。\n\n## 盖碗\n\n盖碗茶由茶盖、茶碗和茶船组成，称为三才碗。\n"],
  ]);
  // Nothing compiled: no page has the term, a source passage does.
  await page.fill("#search", "Zephyrine");
  await page.waitForSelector("#search-results [data-testid=search-sources]");
  const link = page.locator("#search-results [data-testid=source-link]").first();
  assert.match(await link.textContent(), /Valves of the old pumping station/);
  await link.click();
  await page.waitForSelector("#source-view:not([hidden]) mark[data-testid=source-passage]");
  assert.match(await page.textContent("#source-view mark"), /patented in 1911 by Ottilie Brandt/);
  await page.screenshot({ path: `${artifacts}/extras-source-passage.png`, fullPage: true });

  // Asked offline, the answer quotes the passage with a footnote; its link opens the same lines.
  await page.click("#tabs button[data-tab=ask]");
  await page.fill("#question", "Who patented the Zephyrine valve?");
  await page.click("#ask-submit");
  await page.waitForSelector("#conversation .turn [data-testid=source-citations]");
  assert.match(await page.textContent("#conversation .turn .answer"), /Ottilie Brandt/);
  await page.locator("#conversation .turn [data-testid=source-citations] a").first().click();
  await page.waitForSelector("#tab-sources:not([hidden]) #source-view mark[data-testid=source-passage]");
  assert.match(await page.textContent("#source-view mark"), /Ottilie Brandt/);
  assert.equal(log.errors.length, 0, log.errors.join("\n"));
  await context.close();
});
