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

test("vector graph: a failing worker leaves the exact scan serving and the wiki writable; a later build in the same page recovers", { timeout: 300_000 }, async () => {
  const context = await browser.newContext();
  // While `test.workerFailure` is set when the app starts a Worker, the worker runs a script that
  // fails: "throw" at start (the worker's error event), "message" with the `{ error }` reply a
  // failed build posts, "bytes" with a graph that is not one (installing it fails under the
  // write lock).
  await context.addInitScript(() => {
    const Real = window.Worker;
    const code = {
      throw: "throw new Error('graph worker broke at start');",
      message: "self.onmessage = () => self.postMessage({ error: 'graph build broke' });",
      bytes: "self.onmessage = () => self.postMessage({ bytes: new Uint8Array([1, 2, 3]), verdict: 'kept', efSearch: 16, recall: 1, evaluations: 1, rows: 80 });",
    };
    window.Worker = class extends Real {
      constructor(url, options) {
        const mode = localStorage.getItem("test.workerFailure");
        super(mode ? URL.createObjectURL(new Blob([code[mode]], { type: "text/javascript" })) : url, options);
      }
    };
  });
  const page = await context.newPage();
  const log = watch(page);
  const warnings = [];
  page.on("console", (m) => { if (m.type() === "warning") warnings.push(m.text()); });
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  const wiki = "vector-graph-failure";
  await api(page, wiki, "for (const p of arg) await w.putPage(p); return null;", pages);
  const exact = await api(page, wiki, SEARCH, queries);
  const lowered = { minRows: 40, requireCheaper: false };
  // Status and the due job as the app sees them (the lowered threshold).
  const appView = () => page.evaluate(async ({ wiki, lowered }) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open(wiki, { vectorIndex: lowered });
    try { return { status: await w.vectorIndexStatus(), due: (await w.vectorRebuildJob()) !== null }; } finally { w.close(); }
  }, { wiki, lowered });
  const failed = /vector graph rebuild failed; the exact scan keeps serving/;

  for (const [mode, error] of [["throw", /graph worker broke at start/], ["message", /graph build broke/], ["bytes", /./]]) {
    const before = warnings.length;
    await page.evaluate(({ wiki, lowered, mode }) => {
      localStorage.setItem("llm-wiki.current", wiki);
      localStorage.setItem("llm-wiki.vectorIndex", JSON.stringify(lowered));
      localStorage.setItem("test.workerFailure", mode);
    }, { wiki, lowered, mode });
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
    const deadline = Date.now() + 60_000;
    const warned = () => warnings.slice(before).find((w) => failed.test(w));
    while (!warned() && Date.now() < deadline) await page.waitForTimeout(200);
    assert.ok(warned(), `${mode}: no failure warning; warnings: ${warnings.slice(before).join("\n")}`);
    assert.match(warned(), error, mode);
    // Nothing installed, the rebuild still due, vector search as exact as before.
    const { status, due } = await appView();
    assert.equal(status.graph, false, mode);
    assert.equal(due, true, mode);
    assert.deepEqual(await api(page, wiki, SEARCH, queries), exact, mode);
    // The write lock is free (a held one would time this out): the app still writes, and search
    // finds the new page.
    const title = `After ${mode}`;
    const key = await page.evaluate(async ({ wiki, title }) => {
      const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
      await init();
      const { withWriteLock } = await import("/writer.js");
      const w = await Wiki.open(wiki);
      const locked = withWriteLock(wiki, () => w.putPage({ title, body: `quartz falcon ${title}` }));
      const timeout = new Promise((_, reject) => setTimeout(() => reject(new Error("the write lock was not released")), 20_000));
      try { return (await Promise.race([locked, timeout])).key; } finally { w.close(); }
    }, { wiki, title });
    const found = await api(page, wiki, `return (await w.search(arg, { k: 3, mode: "bm25", explain: false })).hits.map((h) => h.key);`, title);
    assert.ok(found.includes(key), `${mode}: the page written after the failure is found (${found})`);
    await api(page, wiki, "await w.deletePage(arg); return null;", key);
  }

  // In the same page (no reload: the module's state carries over), with a working worker again,
  // the next rebuild builds and installs the graph.
  const outcome = await page.evaluate(async ({ wiki, lowered }) => {
    localStorage.removeItem("test.workerFailure");
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const { withWriteLock } = await import("/writer.js");
    const { rebuildVectorIndex } = await import("/vector-index.js");
    const w = await Wiki.open(wiki, { vectorIndex: lowered });
    try { return await rebuildVectorIndex(w, (fn) => withWriteLock(wiki, fn)); } finally { w.close(); }
  }, { wiki, lowered });
  assert.equal(outcome?.outcome, "installed", JSON.stringify(outcome));
  const view = await appView();
  assert.equal(view.status.graph, true, JSON.stringify(view));
  assert.deepEqual(await api(page, wiki, SEARCH, queries), exact);
  const unexpected = log.errors.filter((e) => !/graph worker broke at start|graph build broke/.test(e));
  assert.deepEqual(unexpected, []);
  await context.close();
});
