// The in-page side of the benchmark (bundled by esbuild into bench/build/page.js with the peer
// libraries; our wasm is loaded from /bench-pkg/, the `--features bench` build). Every entry point
// runs one library on one corpus in a fresh page and returns plain numbers and ids; bench/run.mjs
// drives the pages and compares them.
import MiniSearch from "minisearch";
import { create as oramaCreate, insertMultiple as oramaInsertMultiple, insert as oramaInsert, search as oramaSearch, save as oramaSave, load as oramaLoad } from "@orama/orama";
import FlexSearch from "flexsearch";
import lunr from "lunr";
import { loadHnswlib } from "hnswlib-wasm";
import edgevecInit, { EdgeVec, EdgeVecConfig } from "edgevec";
import * as voyBg from "voy-search/voy_search_bg.js";
import { htmlToMarkdown } from "../www/src/convert.js";
import { zipfPages, zipfSources, queriesFrom, vectors, percentile } from "./corpora.js";

const now = () => performance.now();
const K = 10;

async function ours() {
  const glue = await import(/* @vite-ignore */ `${location.origin}/bench-pkg/llm_wiki.js`);
  const exports = await glue.default({ module_or_path: `${location.origin}/bench-pkg/llm_wiki_bg.wasm` });
  return { ...glue, memory: exports.memory };
}

function gc() {
  if (typeof window.gc === "function") { window.gc(); window.gc(); }
}

/** JS heap (precise with --enable-precise-memory-info) and, for our wasm, linear memory. */
function heap() {
  gc();
  return performance.memory ? performance.memory.usedJSHeapSize : 0;
}

function stats(times) {
  return { p50: percentile(times, 0.5), p95: percentile(times, 0.95), mean: times.reduce((a, b) => a + b, 0) / times.length, n: times.length };
}

/** One warm-up pass, then one timed pass with each call timed alone. */
function timeEach(items, fn) {
  for (const x of items) fn(x);
  const times = [];
  const results = [];
  for (const x of items) {
    const t = now();
    const r = fn(x);
    times.push(now() - t);
    results.push(r);
  }
  return { ...stats(times), results };
}

async function timeEachAsync(items, fn) {
  for (const x of items) await fn(x);
  const times = [];
  const results = [];
  for (const x of items) {
    const t = now();
    const r = await fn(x);
    times.push(now() - t);
    results.push(r);
  }
  return { ...stats(times), results };
}

// ---------------------------------------------------------------- IndexedDB helpers

function idbOpen(name) {
  return new Promise((resolve, reject) => {
    const req = indexedDB.open(name, 1);
    req.onupgradeneeded = () => req.result.createObjectStore("records");
    req.onsuccess = () => resolve(req.result);
    req.onerror = () => reject(req.error);
  });
}

async function idbWrite(name, entries) {
  await new Promise((resolve, reject) => {
    const del = indexedDB.deleteDatabase(name);
    del.onsuccess = resolve; del.onerror = () => reject(del.error); del.onblocked = resolve;
  });
  const db = await idbOpen(name);
  await new Promise((resolve, reject) => {
    const tx = db.transaction("records", "readwrite");
    const store = tx.objectStore("records");
    for (const [k, v] of entries) store.put(v, k);
    tx.oncomplete = resolve; tx.onerror = () => reject(tx.error); tx.onabort = () => reject(tx.error);
  });
  db.close();
}

async function idbReadAll(name) {
  const db = await idbOpen(name);
  const out = await new Promise((resolve, reject) => {
    const tx = db.transaction("records", "readonly");
    const store = tx.objectStore("records");
    const keys = store.getAllKeys();
    const values = store.getAll();
    tx.oncomplete = () => resolve({ keys: keys.result, values: values.result });
    tx.onerror = () => reject(tx.error);
  });
  db.close();
  return out;
}

const utf8 = (s) => new TextEncoder().encode(s).length;

// ---------------------------------------------------------------- text libraries

function flexMerge(res) {
  // FlexSearch's Document index answers per field; merge in field order, deduplicated.
  const seen = new Set();
  const out = [];
  for (const field of res) for (const id of field.result) if (!seen.has(id) && out.length < K) { seen.add(id); out.push(id); }
  return out;
}

const lunrSafe = (q) => q.replace(/[:*~^+\-]/g, " ");

/**
 * The text libraries behind one interface: build(docs, passages), add(doc), query(q) → ids,
 * save() → [[key, value]], open(entries) (in a fresh page). A library with `queryPassages` also
 * indexes source passages: `build` is given them (ours: the sources, which it cuts and indexes
 * as the product does; the others: the passages our cutter made of them, `sourcePassages`), and
 * `queryPassages(q)` returns the top-10 pages followed by the top-10 passages, each collection
 * ranked with its own statistics (the product's `passages: true`).
 */
const TEXT = {
  async "llm-wiki"() {
    const w = await ours();
    let idx;
    return {
      w,
      wasmBytes: () => w.memory.buffer.byteLength,
      build(docs, sources) {
        // As the product builds the index of a wiki that has none stored (Wiki::search_index):
        // two passes over the pages, read rebuildBatch() (256) at a time, then the passages of
        // the sources, syncSourcesBatch() (64) sources per step, cut and indexed with one merge
        // each (Wiki::sync_passages), then a first save.
        idx = new w.BenchIndex();
        const n = w.rebuildBatch();
        for (const pass of ["buildCount", "buildFill"]) {
          for (let i = 0; i < docs.length; i += n) {
            const b = docs.slice(i, i + n);
            idx[pass](b.map((d) => d.id), b.map((d) => d.title), b.map((d) => d.body));
          }
        }
        idx.buildFinish();
        if (sources) {
          const m = w.syncSourcesBatch();
          for (let i = 0; i < sources.length; i += m) {
            const b = sources.slice(i, i + m);
            idx.addSources(b.map((x) => x.key), b.map((x) => x.version), b.map((x) => x.text));
          }
        }
        idx.commitDirty(); // the records a first save writes are what persisted bytes counts
      },
      units: () => ({ pages: idx.len(), passages: idx.passageCount() }),
      add(doc) { idx.upsert(doc.id, doc.title, doc.body, "", undefined); },
      afterAdds() { return idx.commitDirty(); },
      query(q) { return idx.search(q, K, "bm25", "", undefined, 50); },
      queryPassages(q) { return idx.search(q, K, "bm25", "", undefined, 50, true); },
      queryExplained(q) { return idx.searchExplained(q, K, "bm25", "", undefined, 50); },
      save() {
        return idx.toRecords().map(([k, v]) => [k, v]);
      },
      open({ keys, values }) { idx = w.BenchIndex.fromRecords(keys, values); return idx.len(); },
      index: () => idx,
    };
  },
  async minisearch() {
    // With passages, a second index over them (as ours keeps its passages apart, so each
    // collection has its own statistics), saved as a second JSON record.
    let ms, msp = null;
    const options = { fields: ["title", "body"], idField: "id" };
    const top = (index, q) => index.search(q).slice(0, K).map((r) => r.id);
    return {
      build(docs, passages) {
        ms = new MiniSearch(options); ms.addAll(docs);
        if (passages) { msp = new MiniSearch(options); msp.addAll(passages); }
      },
      units: () => ({ pages: ms.documentCount, passages: msp ? msp.documentCount : 0 }),
      add(doc) { ms.add(doc); },
      afterAdds() { return utf8(JSON.stringify(ms)); }, // MiniSearch persists by rewriting its JSON
      query(q) { return top(ms, q); },
      queryPassages(q) { return [...top(ms, q), ...top(msp, q)]; },
      save() { return [["index", JSON.stringify(ms)], ...(msp ? [["passages", JSON.stringify(msp)]] : [])]; },
      open({ keys, values }) {
        const at = (k) => values[keys.indexOf(k)];
        ms = MiniSearch.loadJSON(at("index"), options);
        if (keys.includes("passages")) msp = MiniSearch.loadJSON(at("passages"), options);
        return ms.documentCount;
      },
    };
  },
  async orama() {
    let db;
    const schema = { id: "string", title: "string", body: "string" };
    return {
      async build(docs) { db = create(); await oramaInsertMultiple(db, docs.map((d) => ({ ...d })), 1000); },
      async add(doc) { await oramaInsert(db, { ...doc }); },
      afterAdds() { return utf8(JSON.stringify(oramaSave(db))); },
      async query(q) { const r = await oramaSearch(db, { term: q, properties: ["title", "body"], limit: K }); return r.hits.map((h) => h.document.id); },
      save() { return [["index", JSON.stringify(oramaSave(db))]]; },
      open({ values }) { db = create(); oramaLoad(db, JSON.parse(values[0])); return true; },
    };
    function create() { return oramaCreate({ schema }); }
  },
  async flexsearch() {
    let idx;
    const make = () => new FlexSearch.Document({ document: { id: "id", index: ["title", "body"] }, tokenize: "strict" });
    return {
      build(docs) { idx = make(); for (const d of docs) idx.add(d); },
      add(doc) { idx.add(doc); },
      afterAdds() { return null; },
      query(q) { return flexMerge(idx.search(q, { limit: K })); },
      save: null, // export() is callback-per-key async; not measured
      open: null,
    };
  },
  async lunr() {
    let idx;
    return {
      build(docs) {
        idx = lunr(function () {
          this.ref("id"); this.field("title"); this.field("body");
          for (const d of docs) this.add(d);
        });
      },
      add: null, // lunr indexes are immutable: an add is a rebuild
      afterAdds() { return null; },
      query(q) { return idx.search(lunrSafe(q)).slice(0, K).map((r) => r.ref); },
      save() { return [["index", JSON.stringify(idx)]]; },
      open({ values }) { idx = lunr.Index.load(JSON.parse(values[0])); return true; },
    };
  },
};

function textCorpus(spec) {
  if (spec.kind === "zipf") {
    const all = zipfPages(spec.n, spec.seed, 101);
    // With `sources`: that many synthetic sources (~1000 words each) beside the pages.
    const sources = spec.sources ? zipfSources(spec.sources, spec.seed) : null;
    return { docs: all.slice(0, spec.n), extra: all.slice(spec.n), sources };
  }
  // T2: the converted pages, passed in by the runner; the last 101 are the incremental adds.
  const all = spec.docs;
  return { docs: all.slice(0, all.length - 101), extra: all.slice(all.length - 101) };
}

/** Build, incremental adds, queries, memory and persisted bytes for one library. */
async function textBench({ lib, corpus, nQueries, querySeed, dbName }) {
  const { docs, extra, sources } = textCorpus(corpus);
  const queries = queriesFrom(docs, nQueries, querySeed);
  const L = await TEXT[lib]();
  const out = { lib, pages: docs.length, textBytes: docs.reduce((s, d) => s + utf8(d.title) + utf8(d.body), 0) };
  let given = null;
  if (sources) {
    if (!L.queryPassages) throw new Error(`${lib} has no passage index in this benchmark`);
    out.sources = sources.length;
    out.sourceBytes = sources.reduce((s, x) => s + utf8(x.text), 0);
    out.sourceWords = sources.reduce((s, x) => s + x.words, 0) / sources.length;
    // Ours reads each source back as the product stored it at addSource (normalised, with its
    // version): that is done before the clock starts, as an index build does not do it.
    if (lib === "llm-wiki") given = sources.map((x) => { const [text, version] = L.w.storedSource(x.text); return { key: x.key, text, version }; });
    else {
      // The units ours indexes, cut by the product's cutter before the clock starts.
      const w = await ours();
      given = sources.flatMap((x) => Array.from(w.sourcePassages(x.key, x.text), ([id, title, body]) => ({ id, title, body })));
      out.passageTextBytes = given.reduce((s, u) => s + utf8(u.title) + utf8(u.body), 0);
    }
  }
  const heap0 = heap();
  const wasm0 = L.wasmBytes ? L.wasmBytes() : 0;
  let t = now();
  await L.build(docs, given);
  out.buildMs = now() - t;
  if (L.units) out.units = L.units();
  const heap1 = heap();
  out.jsHeapBytes = heap1 - heap0;
  out.wasmMemoryBytes = L.wasmBytes ? L.wasmBytes() - wasm0 : 0;
  out.memoryBytes = out.jsHeapBytes + out.wasmMemoryBytes;
  if (L.index) out.rustHeapBytes = L.index().heapBytes();

  const q = await timeEachAsync(queries, (x) => L.query(x));
  out.query = { p50: q.p50, p95: q.p95, mean: q.mean, n: q.n };
  out.queryIds = q.results;
  if (sources) {
    // The same queries with passages: true (pages, then passages); the passage hits are kept
    // for the agreement with MiniSearch.
    const qp = await timeEachAsync(queries, (x) => L.queryPassages(x));
    out.queryPassages = { p50: qp.p50, p95: qp.p95, mean: qp.mean, n: qp.n };
    out.passageIds = qp.results.map((ids) => ids.filter((id) => id.includes("#L")));
    out.passageHitsMean = out.passageIds.reduce((s, x) => s + x.length, 0) / out.passageIds.length;
  }
  if (L.queryExplained) {
    const qe = timeEach(queries, (x) => L.queryExplained(x));
    out.queryExplained = { p50: qe.p50, p95: qe.p95 };
  }

  if (L.save) {
    t = now();
    const entries = L.save();
    out.serializeMs = now() - t;
    out.persistedBytes = entries.reduce((s, [, v]) => s + (typeof v === "string" ? utf8(v) : v.byteLength), 0);
    t = now();
    await idbWrite(dbName, entries);
    out.saveMs = now() - t + out.serializeMs;
  }

  if (L.add) {
    t = now();
    await L.add(extra[0]);
    out.add1Ms = now() - t;
    t = now();
    out.add1PersistBytes = L.afterAdds();
    out.add1PersistMs = now() - t;
    t = now();
    for (const d of extra.slice(1, 101)) await L.add(d);
    out.add100Ms = now() - t;
    t = now();
    out.add100PersistBytes = L.afterAdds();
    out.add100PersistMs = now() - t;
  }
  return out;
}

/** Cold open in a fresh page: read the saved entries from IndexedDB and load them. */
async function textOpen({ lib, dbName, corpus, nQueries, querySeed }) {
  const L = await TEXT[lib]();
  if (!L.open) return { lib, coldOpenMs: null };
  const { docs } = zipfOrDocs(corpus);
  const q = queriesFrom(docs, nQueries, querySeed)[0];
  const t0 = now();
  const read = await idbReadAll(dbName);
  const t1 = now();
  L.open(read);
  const t2 = now();
  // The first query after opening (what a user waits for).
  await (corpus.sources ? L.queryPassages(q) : L.query(q));
  const t3 = now();
  return { lib, coldOpenMs: t2 - t0, idbReadMs: t1 - t0, decodeMs: t2 - t1, firstQueryMs: t3 - t2, openedUnits: L.units ? L.units() : undefined };
}

/** The pages of a corpus (its queries' source) without generating its sources. */
function zipfOrDocs(corpus) {
  return textCorpus({ ...corpus, sources: 0 });
}

/** Our index with the offline embedding: BM25, vector and hybrid on the same queries. */
async function hybridBench({ corpus, nQueries, querySeed }) {
  const { docs } = textCorpus(corpus);
  const queries = queriesFrom(docs, nQueries, querySeed);
  const w = await ours();
  const [model, dim] = w.offlineModel();
  const idx = new w.BenchIndex();
  idx.addPages(docs.map((d) => d.id), docs.map((d) => d.title), docs.map((d) => d.body));
  let t = now();
  const flat = new Float32Array(docs.length * dim);
  docs.forEach((d, i) => flat.set(w.offlineEmbed(`${d.title}\n\n${d.body}`), i * dim));
  const embedMs = now() - t;
  t = now();
  idx.putEmbeddings(model, docs.map((d) => d.id), flat, dim);
  const putMs = now() - t;
  const qv = queries.map((q) => w.offlineEmbed(q));
  const items = queries.map((q, i) => [q, qv[i]]);
  const bm25 = timeEach(items, ([q]) => idx.search(q, K, "bm25", model, undefined, 50));
  const vector = timeEach(items, ([q, v]) => idx.search(q, K, "vector", model, v, 50));
  const hybrid = timeEach(items, ([q, v]) => idx.search(q, K, "hybrid", model, v, 50));
  const tq = timeEach(queries, (q) => w.offlineEmbed(q));
  const strip = (s) => ({ p50: s.p50, p95: s.p95, mean: s.mean });
  return {
    pages: docs.length, model, dim, embedPagesMs: embedMs, putEmbeddingsMs: putMs,
    bm25: strip(bm25), vector: strip(vector), hybrid: strip(hybrid), embedQuery: strip(tq),
    fusionOverhead: hybrid.p50 / (bm25.p50 + vector.p50) - 1,
  };
}

// ---------------------------------------------------------------- vectors

function jsExactTopK(base, dim, n, q, k) {
  const ids = new Int32Array(k).fill(-1);
  const scores = new Float64Array(k).fill(-Infinity);
  for (let i = 0; i < n; i++) {
    let s = 0;
    const off = i * dim;
    for (let j = 0; j < dim; j++) s += base[off + j] * q[j];
    if (s > scores[k - 1]) {
      let p = k - 1;
      while (p > 0 && scores[p - 1] < s) { scores[p] = scores[p - 1]; ids[p] = ids[p - 1]; p--; }
      scores[p] = s; ids[p] = i;
    }
  }
  return Array.from(ids);
}

async function voy() {
  const res = await fetch(`${location.origin}/nm/voy-search/voy_search_bg.wasm`);
  const { instance } = await WebAssembly.instantiate(await res.arrayBuffer(), { "./voy_search_bg.js": voyBg });
  voyBg.__wbg_set_wasm(instance.exports);
  return { memory: instance.exports.memory };
}

/**
 * One vector library on one data set: build time, memory, query p50/p95 and the ids (recall is
 * computed by the runner against the plain-JS exact scan, which is exact in f64).
 */
async function vectorBench({ lib, kind, n, nq, dim, seed }) {
  const data = vectors(kind, n, nq, dim, seed);
  const queries = [];
  for (let i = 0; i < nq; i++) queries.push(data.queries.subarray(i * dim, (i + 1) * dim));
  const out = { lib, kind, n };
  let wasmMem = () => 0;
  let build, search;
  if (lib === "js-exact") {
    build = () => {};
    search = (q) => jsExactTopK(data.base, dim, n, q, K);
  } else if (lib.startsWith("llm-wiki")) {
    const w = await ours();
    wasmMem = () => w.memory.buffer.byteLength;
    out.hnswMinRows = w.BenchVectors.hnswMinRows();
    let store;
    build = () => {
      store = new w.BenchVectors(dim);
      store.append(data.base);
      if (lib === "llm-wiki-product") store.rebuildProduct();
      if (lib === "llm-wiki-graph") store.rebuildGraph();
    };
    search = lib === "llm-wiki-exact" ? (q) => Array.from(store.searchExact(q, K)) : (q) => Array.from(store.search(q, K));
    out.afterBuild = () => ({ hasGraph: store.hasGraph(), efSearch: store.efSearch(), rustHeapBytes: store.heapBytes() });
    // The exact scan timed again in this page, on the same store: the ratio the goal asks for
    // without the noise between two pages.
    if (lib !== "llm-wiki-exact") out.sameStoreExact = (qs) => timeEach(qs, (q) => store.searchExact(q, K));
  } else if (lib === "hnswlib-wasm") {
    const h = await loadHnswlib();
    wasmMem = () => (h.HEAPU8 ? h.HEAPU8.buffer.byteLength : 0);
    let idx;
    build = () => {
      idx = new h.HierarchicalNSW("ip", dim, "");
      idx.initIndex(n, 16, 200, 100); // M 16, efConstruction 200 (its defaults), seed 100
      const rows = [];
      for (let i = 0; i < n; i++) rows.push(data.base.subarray(i * dim, (i + 1) * dim));
      idx.addPoints(rows, rows.map((_, i) => i), false);
      idx.setEfSearch(100); // our default ef_search
    };
    search = (q) => idx.searchKnn(q, K, undefined).neighbors;
    out.params = { M: 16, efConstruction: 200, efSearch: 100, space: "ip" };
  } else if (lib === "edgevec") {
    const mod = await edgevecInit({ module_or_path: `${location.origin}/nm/edgevec/edgevec_bg.wasm` });
    wasmMem = () => mod.memory.buffer.byteLength;
    let idx, ids;
    build = () => {
      const cfg = new EdgeVecConfig(dim);
      idx = new EdgeVec(cfg);
      ids = idx.insertBatchFlat(data.base, n);
    };
    let row;
    search = (q) => idx.search(q, K).map((h) => row.get(h.id));
    out.afterBuild = () => { row = new Map(Array.from(ids, (id, i) => [id, i])); return { firstId: ids[0] }; };
    out.params = "defaults (HNSW, L2 on unit vectors = cosine order)";
  } else if (lib === "voy") {
    const m = await voy();
    wasmMem = () => m.memory.buffer.byteLength;
    let idx;
    build = () => {
      const embeddings = [];
      for (let i = 0; i < n; i++) embeddings.push({ id: String(i), title: "", url: "", embeddings: Array.from(data.base.subarray(i * dim, (i + 1) * dim)) });
      idx = new voyBg.Voy({ embeddings });
    };
    search = (q) => idx.search(q, K).neighbors.map((x) => Number(x.id));
    out.params = "kd-tree (its only index)";
  } else {
    throw new Error(`unknown vector library ${lib}`);
  }
  const heap0 = heap();
  const wasm0 = wasmMem();
  const t = now();
  build();
  out.buildMs = now() - t;
  out.jsHeapBytes = heap() - heap0;
  out.wasmMemoryBytes = wasmMem() - wasm0;
  out.wasmMemoryTotal = wasmMem();
  if (out.afterBuild) Object.assign(out, out.afterBuild());
  delete out.afterBuild;
  const r = timeEach(queries, search);
  out.query = { p50: r.p50, p95: r.p95, mean: r.mean };
  out.ids = r.results;
  if (out.sameStoreExact) {
    const e = out.sameStoreExact(queries);
    out.exactSamePage = { p50: e.p50, p95: e.p95, mean: e.mean };
    out.vsExact = r.p50 / e.p50;
  }
  delete out.sameStoreExact;
  return out;
}

// ---------------------------------------------------------------- HTML → markdown, tokens

function convertAll(files) {
  return files.map((f) => {
    const c = htmlToMarkdown(f.html, { url: f.url });
    return { id: f.url, title: c.title, body: c.markdown, warnings: c.warnings };
  });
}

/** Splits text into chunks of about `tokens` estimated tokens at paragraph boundaries. */
function chunk(text, tokens, estimate) {
  const paras = text.split(/\n{2,}/);
  const out = [];
  let cur = "";
  for (const p of paras) {
    const next = cur ? `${cur}\n\n${p}` : p;
    if (cur && estimate(next) > tokens) { out.push(cur); cur = p; } else cur = next;
  }
  if (cur) out.push(cur);
  return out;
}

/**
 * Token cost on T2 with the scripted endpoint: compile each source alone (input/output tokens
 * against the source's own tokens + the index slice it can get), the questions' input tokens
 * against a plain top-8-chunk RAG baseline over the same sources, and re-adding unchanged sources.
 */
async function tokenBench({ endpoint, sources, questions, contextWindow, chunkTokens, ragK, askVariants = [{}] }) {
  const w = await ours();
  const est = (s) => w.estimateTokens(s);
  const name = "bench-tokens";
  try { await w.Wiki.delete(name); } catch { /* none yet */ }
  const wiki = await w.Wiki.open(name);
  const preset = w.Wiki.presets().find((p) => p.id === "openai");
  await wiki.setConfig({ ...preset.config, preset: "openai", baseUrl: `${endpoint}/v1`, model: "scripted-chat", apiKey: "sk-bench-not-a-real-key", contextWindow });
  const perSource = [];
  const addTimes = [];
  for (const s of sources) {
    const t = now();
    const rep = await wiki.addSource({ title: s.title, key: s.id, url: s.id, mime: "text/markdown", content: s.body, capturedAt: 0 });
    addTimes.push(now() - t);
    const indexText = (await wiki.index()) || "";
    // What the app shows before a compile (the learned reply lengths of this connection included).
    const estimate = await wiki.estimate({ sources: [rep.key] });
    const t1 = now();
    const report = await wiki.compile({ sources: [rep.key] });
    const ms = now() - t1;
    if (report.failed.length) throw new Error(`compile failed: ${JSON.stringify(report.failed)}`);
    const c = report.compiled[0];
    const sourceTokens = est(s.body);
    const indexTokens = est(indexText);
    const slice = Math.min(indexTokens, Math.floor(contextWindow * 0.2));
    perSource.push({
      key: rep.key, sourceTokens, indexTokens, indexSliceCap: slice,
      input: c.usage.input, output: c.usage.output, calls: c.usage.calls, ms,
      estimate: { input: estimate.total.input, output: estimate.total.output, calls: estimate.total.calls },
      created: c.created.length, updated: c.updated.length,
      ratio: c.usage.input / (sourceTokens + slice),
    });
  }
  // Re-adding the same sources: nothing to compile, no tokens.
  let reAdded = 0;
  for (const s of sources) {
    const rep = await wiki.addSource({ title: s.title, key: s.id, url: s.id, mime: "text/markdown", content: s.body, capturedAt: 1 });
    if (rep.outcome === "added") reAdded++;
  }
  const again = await wiki.compile({});
  const reAdd = { addedAgain: reAdded, compiled: again.compiled.length, input: again.usage.input, output: again.usage.output };

  // Questions: the product's ask against top-8 chunks of the same sources (BM25, our index).
  const rag = new w.BenchIndex();
  const chunks = [];
  for (const s of sources) for (const c of chunk(s.body, chunkTokens, est)) chunks.push(c);
  rag.addPages(chunks.map((_, i) => `c${i}`), chunks.map(() => ""), chunks);
  // Each question is asked once per option set (the first: the product defaults, `{}`), so
  // settings are compared on one compiled wiki.
  const variants = askVariants.map((options) => ({ options, perQuestion: [] }));
  for (const q of questions) {
    const top = rag.search(q, ragK, "bm25", "", undefined, 50);
    const ragText = top.map((k) => chunks[Number(k.slice(1))]).join("\n\n");
    const ragInput = est(q) + top.reduce((sum, k) => sum + est(chunks[Number(k.slice(1))]), 0);
    for (const v of variants) {
      const a = await wiki.ask(q, v.options);
      v.perQuestion.push({
        question: q, input: a.usage.input, output: a.usage.output, calls: a.usage.calls,
        routeInput: a.routeUsage.input, answerInput: a.answerUsage.input, route: a.route,
        routed: a.routed.length, hopped: a.hopped.length, cited: a.citations.length, routedKeys: a.routed, hoppedKeys: a.hopped,
        ragInput, ragChunks: top.length, ratio: a.usage.input / ragInput, ragText,
      });
    }
  }
  const list = await wiki.pages();
  const pages = list.length;
  // Every page's text, for the answer-recall ceiling (bench/run.mjs `answerRecall`).
  const wikiPages = await Promise.all(list.map(async (p) => { const page = await wiki.page(p.key); return { key: p.key, text: page ? `${page.title}\n${page.body}` : "" }; }));
  const indexTokens = est((await wiki.index()) || "");
  wiki.close();
  return { perSource, reAdd, perQuestion: variants[0].perQuestion, variants, indexTokens, chunks: chunks.length, chunkTokens, ragK, contextWindow, pages, wikiPages };
}


// ---------------------------------------------------------------- real size (scale)

/**
 * The scale phase's wiki in this page (one per mode): bench/run.mjs opens it (`scaleOpen`), feeds
 * it one source at a time (`scaleStep`: addSource, then compile) and measures it at checkpoints
 * (`scaleCheckpoint`). Everything goes through the product's JS API, as an app would call it.
 */
const S = {};

/** `after - before` of two `ioStats().stores`, per store; `all` sums the stores. */
function ioDelta(before, after) {
  const out = {};
  const all = { reads: 0, readBytes: 0, writes: 0, writtenBytes: 0, deletes: 0 };
  for (const [k, v] of Object.entries(after)) {
    const b = before[k] || {};
    const d = {};
    for (const f of Object.keys(all)) { d[f] = (v[f] || 0) - (b[f] || 0); all[f] += d[f]; }
    if (Object.values(d).some((x) => x !== 0)) out[k] = d;
  }
  out.all = all;
  return out;
}
const ioZero = { reads: 0, readBytes: 0, writes: 0, writtenBytes: 0, deletes: 0 };
const ioStores = (wiki) => wiki.ioStats().stores;

async function scaleOpen({ name, mode, endpoint, contextWindow }) {
  const w = await ours();
  try { await w.Wiki.delete(name); } catch { /* none yet */ }
  const wiki = await w.Wiki.open(name);
  if (mode === "scripted") {
    // As tokenBench: the OpenAI-compatible preset against the scripted endpoint.
    const preset = w.Wiki.presets().find((p) => p.id === "openai");
    await wiki.setConfig({ ...preset.config, preset: "openai", baseUrl: `${endpoint}/v1`, model: "scripted-chat", apiKey: "sk-bench-not-a-real-key", contextWindow });
  } else if (mode !== "offline") {
    throw new Error(`unknown scale mode ${mode}`);
  }
  Object.assign(S, { w, wiki, name, mode, sizes: new Map(), largest: 0 });
  return { wasmBytes: w.memory.buffer.byteLength, crossOriginIsolated: self.crossOriginIsolated };
}

/** One source: addSource, then compile() (everything pending), then the wiki's figures. */
async function scaleStep({ n, key, title, content }) {
  const { w, wiki } = S;
  let t = now();
  const added = await wiki.addSource({ key, title, mime: "text/markdown", content });
  const addMs = now() - t;
  const io0 = ioStores(wiki);
  t = now();
  const report = await wiki.compile();
  const compileMs = now() - t;
  const io = ioDelta(io0, ioStores(wiki));
  const io1 = ioStores(wiki);
  t = now();
  const pages = await wiki.pages();
  const pagesMs = now() - t;
  const pagesIo = ioDelta(io1, ioStores(wiki));
  let largestBytes = 0, largestKey = null, totalPageBytes = 0, maxGrowth = 0, maxGrowthKey = null, over64k = 0;
  for (const p of pages) {
    totalPageBytes += p.bytes;
    if (p.bytes > largestBytes) { largestBytes = p.bytes; largestKey = p.key; }
    if (p.bytes > 65536) over64k++;
    const grew = p.bytes - (S.sizes.get(p.key) ?? 0);
    if (grew > maxGrowth) { maxGrowth = grew; maxGrowthKey = p.key; }
  }
  S.sizes = new Map(pages.map((p) => [p.key, p.bytes]));
  const largestGrowth = largestBytes - S.largest;
  S.largest = largestBytes;
  const est = await navigator.storage.estimate();
  const sum = (f) => report.compiled.reduce((a, c) => a + (c.usage?.[f] || 0), 0);
  return {
    n, key, sourceBytes: utf8(content), outcome: added.outcome, addMs, compileMs,
    compiled: report.compiled.length, failed: report.failed.length,
    failures: report.failed.map((f) => ({ key: f.key, code: f.code, message: String(f.message).slice(0, 300) })),
    created: report.compiled.reduce((a, c) => a + c.created.length, 0),
    updated: report.compiled.reduce((a, c) => a + c.updated.length, 0),
    inputTokens: report.usage?.input ?? sum("input"), outputTokens: report.usage?.output ?? sum("output"), calls: report.usage?.calls ?? sum("calls"),
    pages: pages.length, largestBytes, largestKey, largestGrowth, maxPageGrowth: maxGrowth, maxPageGrowthKey: maxGrowthKey, over64k,
    totalPageBytes, wasmBytes: w.memory.buffer.byteLength, storageUsage: est.usage,
    io: { pages: io.pages || ioZero, all: io.all, stores: io }, pagesMs, pagesCallPageReads: (pagesIo.pages || ioZero).reads,
  };
}

/** Times `fn` on each item after one warm-up call on the first, with the ioStats delta of the timed calls. */
async function timedWithIo(items, fn, warm = 1) {
  for (const x of items.slice(0, warm)) await fn(x);
  const { wiki } = S;
  const io0 = ioStores(wiki);
  const times = [];
  const results = [];
  for (const x of items) {
    const t = now();
    results.push(await fn(x));
    times.push(now() - t);
  }
  const io = ioDelta(io0, ioStores(wiki));
  const per = (f) => ((io.pages || ioZero)[f]) / items.length;
  return { ...stats(times), max: Math.max(...times), results, io: { pageReadsPerCall: per("reads"), pageReadBytesPerCall: per("readBytes"), allReadsPerCall: io.all.reads / items.length, allReadBytesPerCall: io.all.readBytes / items.length } };
}

/**
 * The checkpoint measurements on the wiki as compiled so far: search through the JS API and inside
 * wasm (`benchSearchCore`), ask (offline only), structural lint, export and import into a new wiki.
 */
async function scaleCheckpoint({ queries, questions, coreRounds = 3 }) {
  const { w, wiki, name } = S;
  const out = { wasmBytesBefore: w.memory.buffer.byteLength, wasmBytesAfterOp: {} };
  const mem = (op) => { out.wasmBytesAfterOp[op] = w.memory.buffer.byteLength; };
  const opts = { k: 10, mode: "bm25" };
  // The first search after the last commit (the index is read again) before the warm ones.
  let t = now();
  await wiki.search(queries[0], opts);
  out.firstSearchMs = now() - t;
  const s = await timedWithIo(queries, (q) => wiki.search(q, opts));
  out.search = { p50: s.p50, p95: s.p95, mean: s.mean, max: s.max, n: s.n, io: s.io, hitsMean: mean(s.results.map((r) => r.hits.length)) };
  const core = await wiki.benchSearchCore(queries, opts, coreRounds);
  out.searchCore = { core: stats(Array.from(core.core)), index: stats(Array.from(core.index)), rounds: coreRounds };
  out.searchCore.boundaryP50 = out.search.p50 - out.searchCore.core.p50;
  // The same queries with `passages: true`: up to k source-passage hits follow the page hits.
  const optsP = { ...opts, passages: true };
  const sp = await timedWithIo(queries, (q) => wiki.search(q, optsP));
  out.searchPassages = { p50: sp.p50, p95: sp.p95, mean: sp.mean, max: sp.max, n: sp.n, io: sp.io, hitsMean: mean(sp.results.map((r) => r.hits.length)), passageHitsMean: mean(sp.results.map((r) => r.hits.filter((h) => h.kind === "passage").length)) };
  const coreP = await wiki.benchSearchCore(queries, optsP, coreRounds);
  out.searchCorePassages = { core: stats(Array.from(coreP.core)), index: stats(Array.from(coreP.index)), rounds: coreRounds };
  mem("search");
  if (S.mode === "offline" && questions.length) {
    const a = await timedWithIo(questions, (q) => wiki.ask(q));
    out.ask = { p50: a.p50, p95: a.p95, mean: a.mean, max: a.max, n: a.n, io: a.io, routes: a.results.map((r) => r.route), cited: mean(a.results.map((r) => r.citations.length)), extractive: a.results.filter((r) => r.extractive).length, timings: a.results[0]?.timings };
    mem("ask");
  }
  const io0 = ioStores(wiki);
  t = now();
  const findings = await wiki.lint();
  out.lint = { ms: now() - t, findings: findings.length, byKind: findings.reduce((m, f) => ({ ...m, [f.kind]: (m[f.kind] || 0) + 1 }), {}) };
  const lio = ioDelta(io0, ioStores(wiki));
  out.lint.io = { pageReads: (lio.pages || ioZero).reads, pageReadBytes: (lio.pages || ioZero).readBytes, allReads: lio.all.reads, allReadBytes: lio.all.readBytes };
  mem("lint");
  t = now();
  const zip = await wiki.exportVault();
  out.export = { ms: now() - t, bytes: zip.byteLength };
  mem("export");
  const copyName = `${name}-import`;
  try { await w.Wiki.delete(copyName); } catch { /* none */ }
  const copy = await w.Wiki.open(copyName);
  t = now();
  const imported = await copy.importVault(zip);
  out.import = { ms: now() - t, pages: (await copy.pages()).length, report: Object.fromEntries(Object.entries(imported || {}).filter(([, v]) => typeof v === "number")) };
  copy.close();
  await w.Wiki.delete(copyName);
  mem("import");
  out.wasmBytesAfter = w.memory.buffer.byteLength;
  out.storageUsage = (await navigator.storage.estimate()).usage;
  return out;
}

function scaleClose() {
  S.wiki?.close();
  return { wasmBytes: S.w.memory.buffer.byteLength };
}

const mean = (a) => (a.length ? a.reduce((x, y) => x + y, 0) / a.length : 0);

window.B = { textBench, textOpen, hybridBench, vectorBench, convertAll, tokenBench, scaleOpen, scaleStep, scaleCheckpoint, scaleClose };
window.B_READY = true;
