// The vector graph in the product (issue #6): after the app opens a wiki with enough vectors, the
// HNSW graph is built in a module Web Worker (www/hnsw-worker.js), installed under the write lock
// and saved; a reload reads it back from IndexedDB, and vector search answers as the exact scan
// did. The size threshold is lowered through the test-only `llm-wiki.vectorIndex` setting
// (`Wiki.open(name, { vectorIndex })`), so 80 pages stand in for 10 000.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, watch, api } from "./harness.mjs";

let server, browser;
before(async () => {
  server = await startServer();
  browser = await launch();
});
after(async () => { await browser?.close(); server?.stop(); });

const WORDS = ["harbour", "lantern", "granite", "meadow", "copper", "violin", "glacier", "orchard",
  "saffron", "quartz", "falcon", "tundra", "mandolin", "zeppelin", "cobalt", "juniper"];
const pages = Array.from({ length: 80 }, (_, i) => ({
  title: `Note ${i}`,
  body: Array.from({ length: 14 }, (_, j) => WORDS[(i * 7 + j * j * 3 + (i >> 2)) % WORDS.length]).join(" ") + ` item${i}`,
}));
const queries = ["harbour lantern", "glacier falcon tundra", "item7 copper", "violin orchard", "cobalt juniper zeppelin"];
const SEARCH = `const out = [];
  for (const q of arg) out.push((await w.search(q, { k: 10, mode: "vector", explain: false })).hits.map((h) => h.key));
  return out;`;

test("vector graph: built in a worker, installed, read back after a reload; search equals the exact scan", { timeout: 300_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const log = watch(page);
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  const wiki = "vector-graph";
  await api(page, wiki, "for (const p of arg) await w.putPage(p); return null;", pages);
  let status = await api(page, wiki, "return await w.vectorIndexStatus();");
  assert.equal(status.rows, 80);
  assert.equal(status.graph, false);
  assert.equal(status.minRows, 10000, "the default threshold");
  assert.equal(status.needsRebuild, false);
  const exact = await api(page, wiki, SEARCH, queries);
  assert.ok(exact.every((hits) => hits.length === 10));

  // The app on that wiki, with the threshold lowered: it starts the worker after opening.
  await page.evaluate((wiki) => {
    localStorage.setItem("llm-wiki.current", wiki);
    localStorage.setItem("llm-wiki.vectorIndex", JSON.stringify({ minRows: 40, requireCheaper: false }));
  }, wiki);
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  const deadline = Date.now() + 120_000;
  while (!status.graph && Date.now() < deadline) {
    await page.waitForTimeout(300);
    status = await api(page, wiki, "return await w.vectorIndexStatus();");
  }
  assert.equal(status.graph, true, `no graph was installed: ${JSON.stringify(status)} ${log.errors.join("\n")}`);
  assert.ok(status.efSearch >= 16, JSON.stringify(status));
  assert.deepEqual([status.delta, status.dead], [0, 0]);
  assert.ok(log.requests.some((u) => u.endsWith("/hnsw-worker.js")), "the graph was built in the worker");

  // A reload: the graph comes back from IndexedDB (no second build is due), and vector search
  // through it answers as the exact scan did.
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  const job = await page.evaluate(async () => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("vector-graph", { vectorIndex: { minRows: 40, requireCheaper: false } });
    try { return await w.vectorRebuildJob(); } finally { w.close(); }
  });
  assert.equal(job, null, "a current graph needs no rebuild");
  status = await api(page, wiki, "return await w.vectorIndexStatus();");
  assert.equal(status.graph, true);
  assert.deepEqual(await api(page, wiki, SEARCH, queries), exact);
  assert.deepEqual(log.errors, []);
  await context.close();
});
