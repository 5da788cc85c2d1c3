// The main job at real size (issue 20), in the web app's browser: the first 100 sources of the
// real-size corpus (target/scale-corpus, which scripts/scale-corpus.mjs converts from the toolchain
// docs listed in bench/scale-sources.txt; scripts/test.sh converts it before `cargo test`) added
// and compiled offline one at a time through the JS API of the product build (pkg/, served by
// scripts/serve.mjs), in one page and one Wiki. After EVERY source: the wasm memory is at most
// 128 MB, no compile failed, and no page's body is over the hard limit (64 KiB). Prints what it
// measured. The full 383-source run, with timings, is the benchmark's `scale` phase
// (BENCH_PHASES=scale scripts/bench.sh).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, launch, watch, root } from "./harness.mjs";

// LLM_WIKI_SCALE_CORPUS: another corpus directory (the default is what scripts/scale-corpus.mjs writes).
const CORPUS = process.env.LLM_WIKI_SCALE_CORPUS || join(root, "target/scale-corpus");
const SOURCES = 100;
const MEMORY_LIMIT = 128e6; // 128 MB, as the issue bounds it
const PAGE_HARD_LIMIT = 65536;

let server, browser;
before(async () => {
  server = await startServer();
  browser = await launch();
});
after(async () => { await browser?.close(); server?.stop(); });

/** The corpus's first `n` sources, or a failure saying how to make it (never a silent pass). */
function corpus(n) {
  const manifest = join(CORPUS, "manifest.json");
  assert.ok(existsSync(manifest), `the real-size corpus is missing (${manifest}): run \`node scripts/scale-corpus.mjs\` first (it needs www/build/convert.js from scripts/build.sh; scripts/test.sh runs both)`);
  const { sources } = JSON.parse(readFileSync(manifest, "utf8"));
  assert.ok(sources.length >= n, `the real-size corpus has ${sources.length} sources, this test needs ${n}: run \`node scripts/scale-corpus.mjs\` again`);
  return sources.slice(0, n).map((s) => {
    const file = join(CORPUS, s.file);
    assert.ok(existsSync(file), `${file} (source ${s.n}, ${s.path}) is missing: run \`node scripts/scale-corpus.mjs\` again`);
    return { ...s, content: readFileSync(file, "utf8") };
  });
}

test(`real size: ${SOURCES} toolchain docs compiled offline one at a time — wasm memory ≤ 128 MB, no failure, no page over 64 KiB after every source`, { timeout: 480_000 }, async () => {
  const sources = corpus(SOURCES);
  const context = await browser.newContext();
  const page = await context.newPage();
  const log = watch(page);
  // A blank document of the app's origin (not the app, whose own work would share the wasm
  // instance), importing the product package.
  await page.route(`${server.url}scale-test.html`, (r) => r.fulfill({ contentType: "text/html", body: "<!doctype html><meta charset=utf-8><title>scale</title>" }));
  await page.goto(`${server.url}scale-test.html`);
  const opened = await page.evaluate(async () => {
    const glue = await import("/pkg/llm_wiki.js");
    const exports = await glue.default();
    try { await glue.Wiki.delete("scale"); } catch { /* none yet */ }
    window.T = { memory: exports.memory, wiki: await glue.Wiki.open("scale") };
    return { memory: exports.memory.buffer.byteLength };
  });
  const t0 = Date.now();
  const steps = [];
  for (const s of sources) {
    const r = await page.evaluate(async ({ key, title, content }) => {
      const { wiki, memory } = window.T;
      await wiki.addSource({ key, title, mime: "text/markdown", content });
      const t = performance.now();
      const report = await wiki.compile();
      const ms = performance.now() - t;
      const pages = await wiki.pages();
      let largest = { key: null, bytes: 0 };
      for (const p of pages) if (p.bytes > largest.bytes) largest = { key: p.key, bytes: p.bytes };
      return {
        ms, compiled: report.compiled.length, failed: report.failed.map((f) => `${f.key}: ${f.code} ${f.message}`),
        pages: pages.length, largest, memory: memory.buffer.byteLength,
      };
    }, { key: s.key, title: s.title, content: s.content });
    steps.push({ n: s.n, ...r });
    const at = `after source ${s.n} (${s.path}, ${s.bytes} bytes)`;
    assert.deepEqual(r.failed, [], `${at}: no compile failed`);
    assert.ok(r.memory <= MEMORY_LIMIT, `${at}: wasm memory ${(r.memory / 1e6).toFixed(1)} MB is over 128 MB`);
    assert.ok(r.largest.bytes <= PAGE_HARD_LIMIT, `${at}: page ${JSON.stringify(r.largest.key)} is ${r.largest.bytes} bytes, over the hard limit of ${PAGE_HARD_LIMIT}`);
  }
  const ms = Date.now() - t0;
  const states = await page.evaluate(async () => (await window.T.wiki.sources()).map((s) => s.status.state));
  assert.equal(states.length, SOURCES);
  assert.ok(states.every((s) => s === "compiled"), `every source compiled: ${JSON.stringify(states.filter((s) => s !== "compiled"))}`);
  await page.evaluate(() => window.T.wiki.close());
  assert.equal(log.errors.filter((e) => !/favicon/.test(e)).length, 0, log.errors.join("\n"));
  const times = steps.map((s) => s.ms).sort((a, b) => a - b);
  const last = steps[steps.length - 1];
  console.log(JSON.stringify({
    scale: {
      sources: SOURCES, pages: last.pages, ms, compileMs: { p50: Math.round(times[times.length >> 1]), max: Math.round(times[times.length - 1]), total: Math.round(times.reduce((a, b) => a + b, 0)) },
      wasmMemory: { start: opened.memory, peak: Math.max(...steps.map((s) => s.memory)) }, largestPage: steps.reduce((m, s) => (s.largest.bytes > m.bytes ? s.largest : m), { bytes: 0 }),
    },
  }));
  await context.close();
});
