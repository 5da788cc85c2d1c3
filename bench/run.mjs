// Drives the browser benchmark (scripts/bench.sh builds what it needs first): serves bench/, the
// `--features bench` wasm build (target/bench-pkg) and node_modules to headless Chromium, runs one
// library on one corpus per fresh page, prints tables and writes JSON. Settings: environment
// variables (see BENCHMARKS.md, "Reproduce"); nothing here knows the goals' thresholds except the
// summary that compares against them.
import { createServer } from "node:http";
import { readFileSync, readdirSync, statSync, writeFileSync, existsSync, mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, extname, normalize, resolve, dirname } from "node:path";
import { fileURLToPath } from "node:url";
import { execFileSync } from "node:child_process";
import { gzipSync, brotliCompressSync, constants as zc } from "node:zlib";
import os from "node:os";
import { chromium } from "playwright-core";
// The scripted LLM endpoint (LLM_WIKI_TEST_ENDPOINT, else target/debug/examples/scripted-llm-server)
// and the Chromium flags, as the web app tests start them.
import { scriptedEndpoint, CHROMIUM_ARGS } from "../tests/e2e/harness.mjs";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const env = (k, d) => process.env[k] ?? d;
const list = (k, d) => env(k, d).split(",").map((s) => s.trim()).filter(Boolean);
const CFG = {
  phases: list("BENCH_PHASES", "size,text,hybrid,vectors,tokens"),
  seed: Number(env("BENCH_SEED", "42")),
  queries: Number(env("BENCH_QUERIES", "250")),
  textSizes: list("BENCH_TEXT_SIZES", "1000,10000").map(Number),
  textLibs: list("BENCH_TEXT_LIBS", "llm-wiki,minisearch,orama,flexsearch,lunr"),
  // T1 page counts that also run with source passages: one synthetic source of ~1000 words per
  // 10 pages (corpus `T1-n+passages`), for the libraries that index passages (PASSAGE_LIBS).
  textPassages: list("BENCH_TEXT_PASSAGES", "10000").map(Number),
  vecKinds: list("BENCH_VEC_KINDS", "V1,V2"),
  vecSizes: list("BENCH_VEC_SIZES", "10000,50000,100000").map(Number),
  vecLibs: list("BENCH_VEC_LIBS", "js-exact,llm-wiki-exact,llm-wiki-product,hnswlib-wasm,edgevec,voy"),
  // Libraries skipped above a size (building them there takes longer than this machine allows):
  // "lib:maxRows" pairs. The product path builds an instant-distance graph from HNSW_MIN_ROWS on.
  vecMax: Object.fromEntries(list("BENCH_VEC_MAX", "voy:10000,edgevec:10000,hnswlib-wasm:10000,llm-wiki-product:100000").map((s) => s.split(":")).map(([k, v]) => [k, Number(v)])),
  graphSizes: list("BENCH_GRAPH_SIZES", "1000,2000").map(Number),
  dim: Number(env("BENCH_DIM", "384")),
  tokenSources: Number(env("BENCH_TOKEN_SOURCES", "24")),
  contextWindow: Number(env("BENCH_CONTEXT", "16384")),
  askVariants: JSON.parse(env("BENCH_ASK", "[{}]")),
  out: env("BENCH_OUT", join(root, "target/bench-results.json")),
  pageTimeoutMs: Number(env("BENCH_PAGE_TIMEOUT_S", "3600")) * 1000,
  t2: env("BENCH_T2", "1") !== "0",
  // The real-size phase (BENCH_PHASES=scale; not in the default phases: a full run takes tens of
  // minutes). Sources: the first n of target/scale-corpus (0: all listed).
  scaleSources: Number(env("BENCH_SCALE_SOURCES", "0")),
  scaleModes: list("BENCH_SCALE_MODES", "offline,scripted"),
  scaleCheckpoints: list("BENCH_SCALE_CHECKPOINTS", "100,200,400").map(Number),
  scaleCorpus: env("BENCH_SCALE_CORPUS", join(root, "target/scale-corpus")),
  scaleSvg: env("BENCH_SCALE_SVG", join(root, "bench/results/scale.svg")),
};

const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);

// ---------------------------------------------------------------- static server

const TYPES = { ".html": "text/html; charset=utf-8", ".svg": "image/svg+xml", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8", ".wasm": "application/wasm", ".json": "application/json" };
function serve() {
  const mounts = [["/bench-pkg/", join(root, "target/bench-pkg")], ["/bench/", join(root, "bench")], ["/nm/", join(root, "node_modules")]];
  const server = createServer(async (req, res) => {
    const path = decodeURIComponent(req.url.split("?")[0]);
    const m = mounts.find(([p]) => path.startsWith(p));
    const file = m && normalize(join(m[1], path.slice(m[0].length) || "index.html"));
    if (!m || !file.startsWith(m[1])) { res.writeHead(404); res.end(); return; }
    try {
      const body = await readFile(file);
      // Cross-origin isolation: performance.now() at 5 µs instead of 100 µs.
      res.writeHead(200, { "content-type": TYPES[extname(file)] || "application/octet-stream", "cross-origin-opener-policy": "same-origin", "cross-origin-embedder-policy": "require-corp", "cache-control": "no-store" });
      res.end(body);
    } catch { res.writeHead(404); res.end(); }
  });
  return new Promise((ok) => server.listen(0, "127.0.0.1", () => ok({ url: `http://127.0.0.1:${server.address().port}`, close: () => server.close() })));
}

// ---------------------------------------------------------------- browser

// The test harness's flags (closed network, root, headless) plus precise heap figures and gc().
const ARGS = [...CHROMIUM_ARGS, "--enable-precise-memory-info", "--js-flags=--expose-gc"];

let browser, site;
async function inPage(context, fn, arg) {
  const page = await context.newPage();
  page.setDefaultTimeout(CFG.pageTimeoutMs);
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
  try {
    await page.goto(`${site.url}/bench/index.html`);
    await page.waitForFunction(() => window.B_READY === true, null, { timeout: 60_000 });
    return await page.evaluate(([f, a]) => window.B[f](a), [fn, arg]);
  } catch (e) {
    throw new Error(`${fn}: ${e.message.split("\n")[0]}${errors.length ? ` (page: ${errors.join("; ")})` : ""}`);
  } finally {
    await page.close();
  }
}

async function fresh(fn, arg) {
  const context = await browser.newContext();
  try { return await inPage(context, fn, arg); } finally { await context.close(); }
}

// ---------------------------------------------------------------- phases

const sysroot = () => execFileSync("rustc", ["--print", "sysroot"], { encoding: "utf8" }).trim();
const rustVersion = () => execFileSync("rustc", ["--version"], { encoding: "utf8" }).trim();

function t2Files() {
  const html = join(sysroot(), "share/doc/rust/html");
  const book = readdirSync(join(html, "book")).filter((f) => /^(ch\d|appendix-)\S*\.html$/.test(f)).sort().map((f) => ({ path: join(html, "book", f), url: `https://doc.rust-lang.org/book/${f}` }));
  const cargo = [];
  const walk = (dir, rel) => {
    for (const f of readdirSync(dir).sort()) {
      const p = join(dir, f);
      if (statSync(p).isDirectory()) { if (!["css", "fonts", "images", "theme"].includes(f)) walk(p, `${rel}${f}/`); } else if (f.endsWith(".html") && !["print.html", "toc.html", "404.html", "CHANGELOG.html"].includes(f)) cargo.push({ path: p, url: `https://doc.rust-lang.org/cargo/${rel}${f}` });
    }
  };
  walk(join(html, "cargo"), "");
  return { book, cargo };
}

async function convertT2() {
  const { book, cargo } = t2Files();
  const files = [...book, ...cargo].map((f) => ({ url: f.url, html: readFileSync(f.path, "utf8") }));
  log(`T2: converting ${book.length} Rust Book + ${cargo.length} Cargo book pages (www/src/convert.js)`);
  const docs = await fresh("convertAll", files);
  return { docs, book: book.length, cargo: cargo.length, htmlBytes: files.reduce((s, f) => s + Buffer.byteLength(f.html), 0) };
}

function sizes() {
  const out = {};
  for (const [name, dir] of [["product", "pkg"], ["bench", "target/bench-pkg"]]) {
    const wasm = join(root, dir, "llm_wiki_bg.wasm");
    const glue = join(root, dir, "llm_wiki.js");
    if (!existsSync(wasm)) continue;
    const w = readFileSync(wasm), g = readFileSync(glue);
    const br = (b) => brotliCompressSync(b, { params: { [zc.BROTLI_PARAM_QUALITY]: 11 } }).length;
    out[name] = { wasmRaw: w.length, wasmGzip: gzipSync(w, { level: 9 }).length, wasmBrotli: br(w), glueRaw: g.length, glueGzip: gzipSync(g, { level: 9 }).length, glueBrotli: br(g) };
  }
  return out;
}

// The text libraries that index source passages in bench/page.js (`queryPassages`).
const PASSAGE_LIBS = ["llm-wiki", "minisearch"];

async function textPhase(corpora) {
  const results = {};
  for (const [name, corpus] of corpora) {
    results[name] = {};
    for (const lib of CFG.textLibs) {
      if (corpus.sources && !PASSAGE_LIBS.includes(lib)) continue;
      log(`text ${name}: ${lib}`);
      const dbName = `bench-${name}-${lib}`;
      const arg = { lib, corpus, nQueries: CFG.queries, querySeed: CFG.seed + 1, dbName };
      const context = await browser.newContext();
      try {
        const r = await inPage(context, "textBench", arg);
        r.loadavg = os.loadavg()[0];
        if (r.persistedBytes !== undefined) Object.assign(r, await inPage(context, "textOpen", arg));
        results[name][lib] = r;
      } catch (e) {
        log(`  failed: ${e.message}`);
        results[name][lib] = { lib, error: e.message };
      } finally { await context.close(); }
    }
    // Agreement with MiniSearch's top 10 (same queries): how alike the rankings are.
    const ref = results[name].minisearch?.queryIds;
    const refP = results[name].minisearch?.passageIds;
    for (const r of Object.values(results[name])) {
      if (ref && r.queryIds) r.overlapWithMiniSearch = mean(r.queryIds.map((ids, i) => overlap(ids, ref[i]) / Math.max(1, Math.min(10, ref[i].length))));
      if (refP && r.passageIds) r.passageOverlapWithMiniSearch = mean(r.passageIds.map((ids, i) => overlap(ids, refP[i]) / Math.max(1, Math.min(10, refP[i].length))));
      delete r.queryIds;
      delete r.passageIds;
    }
    // Both libraries must have indexed the same units.
    const units = Object.values(results[name]).filter((r) => r.units).map((r) => `${r.lib} ${r.units.pages}+${r.units.passages}`);
    if (corpus.sources) log(`  units (pages + passages): ${units.join(", ")}`);
  }
  return results;
}

const mean = (a) => a.reduce((x, y) => x + y, 0) / a.length;
const overlap = (a, b) => { const s = new Set(b.map(String)); return a.filter((x) => s.has(String(x))).length; };

async function vectorPhase() {
  const results = [];
  const runs = [];
  for (const kind of CFG.vecKinds) {
    for (const n of CFG.vecSizes) for (const lib of CFG.vecLibs) runs.push({ kind, n, lib });
    for (const n of CFG.graphSizes) { runs.push({ kind, n, lib: "js-exact" }, { kind, n, lib: "llm-wiki-exact" }, { kind, n, lib: "llm-wiki-graph" }); }
  }
  const truth = new Map();
  const seen = new Set();
  for (const { kind, n, lib } of runs) {
    const key = `${kind}/${n}/${lib}`;
    if (seen.has(key)) continue;
    seen.add(key);
    if (CFG.vecMax[lib] !== undefined && n > CFG.vecMax[lib]) {
      results.push({ kind, n, lib, skipped: `not run above ${CFG.vecMax[lib]} rows (BENCH_VEC_MAX)` });
      continue;
    }
    log(`vectors ${kind} ${n}: ${lib}`);
    const t = Date.now();
    try {
      const r = await fresh("vectorBench", { lib, kind, n, nq: CFG.queries, dim: CFG.dim, seed: CFG.seed });
      if (lib === "js-exact") truth.set(`${kind}/${n}`, r.ids);
      const gt = truth.get(`${kind}/${n}`);
      if (gt) r.recall10 = mean(r.ids.map((ids, i) => overlap(ids, gt[i]) / 10));
      delete r.ids;
      r.wallS = (Date.now() - t) / 1000;
      r.loadavg = os.loadavg()[0];
      results.push(r);
      log(`  build ${fmtMs(r.buildMs)}, p50 ${fmtMs(r.query.p50)}, recall ${r.recall10?.toFixed(3)}`);
    } catch (e) {
      log(`  failed: ${e.message}`);
      results.push({ kind, n, lib, error: e.message });
    }
  }
  return results;
}

// The questions of the token phase, each with phrases of the sources that answer it (any one,
// compared after `normAnswer`): whether the text a query or the RAG baseline hands the model
// holds one is the "answer context recall" printed beside the tokens. The phrases were checked
// against the phase's 24 sources, and are specific to the answer (not "src/main.rs", which labels
// code in 11 of them); a question none of the sources answers has none and is not counted.
const QUESTIONS = [
  ["What is ownership in Rust?", ["set of rules that govern how a Rust program manages memory"]],
  ["How do references and borrowing work?", ["We call the action of creating a reference borrowing"]],
  ["What is a slice?", ["contiguous sequence of elements"]],
  ["How do you install Rust with rustup?", ["sh.rustup.rs"]],
  ["How do you write and run a Hello, world! program?", ["rustc main.rs"]],
  ["What does cargo build do and where does the binary go?", ["target/debug/hello_cargo"]],
  ["How do you declare a mutable variable?", ["adding mut in front of the variable name"]],
  ["What is shadowing?", ["shadowed by the second"]],
  ["What are Rust's scalar types?", ["four primary scalar types"]],
  ["How do tuples and arrays differ?", ["every element of an array must have the same type"]],
  ["How do you define a function with parameters?", ["you must declare the type of each parameter"]],
  ["What is the difference between statements and expressions?", ["Statements are instructions that perform some action"]],
  ["How does an if expression work?", ["All if expressions start with the keyword if"]],
  ["What loops does Rust have?", ["three kinds of loops"]],
  ["How does the guessing game read user input?", ["io::stdin", "read_line"]],
  ["How do you add a dependency to Cargo.toml?", ["[dependencies]"]],
  ["What is the difference between Cargo.toml and Cargo.lock?", ["Cargo.lock contains exact information"]],
  ["How do you create a new Cargo project?", ["cargo new hello_cargo"]],
  ["Where does Cargo put build output?", ["target/debug"]],
  // Cargo's guide to tests is not among the sources; `cargo test` is only mentioned in passing.
  ["How do you run tests with Cargo?", []],
  ["What is the standard Cargo project layout?", ["Cargo expects your source files to live inside the src directory"]],
  ["Why does Cargo exist?", ["Cargo is Rust’s build system and package manager", "Cargo handles a lot of tasks for you"]],
].map(([question, expect]) => ({ question, expect }));

/** Text as compared for answer phrases: lower case, straight quotes, no markdown escapes, code
 * ticks, emphasis stars or underscores (the scripted endpoint's pages drop the `_` of
 * `hello\_cargo`), whitespace collapsed. */
const normAnswer = (s) => s.toLowerCase().replace(/[‘’]/g, "'").replace(/[\\`*_]/g, "").replace(/\s+/g, " ");
const holdsAnswer = (text, expect) => { const t = normAnswer(text); return expect.some((p) => t.includes(normAnswer(p))); };

async function tokenPhase(t2) {
  const endpoint = await scriptedEndpoint();
  try {
    // The first sources of each book in reading order: the Rust Book's chapters, then the Cargo book.
    const book = t2.docs.filter((d) => d.id.includes("/book/ch"));
    const cargo = t2.docs.filter((d) => /\/cargo\/(getting-started|guide)\//.test(d.id));
    const nb = Math.ceil(CFG.tokenSources * 2 / 3);
    const sources = [...book.slice(0, nb), ...cargo.slice(0, CFG.tokenSources - nb)];
    log(`tokens: ${sources.length} sources, ${QUESTIONS.length} questions, scripted endpoint ${endpoint.url}`);
    const result = await fresh("tokenBench", { endpoint: endpoint.url, sources, questions: QUESTIONS.map((q) => q.question), contextWindow: CFG.contextWindow, chunkTokens: 512, ragK: 8, askVariants: CFG.askVariants });
    // Every request the endpoint received (system prompt, messages, schema name).
    const requests = await (await fetch(`${endpoint.url}/__requests`)).json();
    if (process.env.BENCH_REQUESTS) {
      writeFileSync(process.env.BENCH_REQUESTS, JSON.stringify(requests));
      log(`tokens: requests written to ${process.env.BENCH_REQUESTS}`);
    }
    answerRecall(result, requests);
    return result;
  } finally { endpoint.stop(); }
}

/**
 * Answer context recall: per question, whether the text handed to the model holds one of the
 * question's answer phrases — for each ask variant the answer call's user message (read back
 * from the scripted endpoint's recorded requests: the k-th answer call for a question is the
 * k-th variant's), for the baseline its top-8 chunks, and whether the compiled wiki holds the
 * phrase at all (the ceiling for any routing). Sets `answerHit` on each variant's rows and
 * `ragHit`, `wikiHit` on the question rows.
 */
function answerRecall(result, requests) {
  const userText = (r) => ((r.body || r).messages || []).filter((m) => m.role === "user").map((m) => typeof m.content === "string" ? m.content : (m.content || []).map((c) => c.text || "").join("")).pop() || "";
  const texts = requests.map(userText);
  const answers = texts.filter((t) => /\n\nQuestion: /.test(t));
  const routes = texts.filter((t) => t.includes('<source key="index.md">'));
  const blockKeys = (t) => [...t.matchAll(/<source key="([^"]*)">/g)].map((m) => m[1]);
  for (const [i, { question, expect }] of QUESTIONS.entries()) {
    // One answer call and one route call per ask, in variant order; when a question has another
    // count (an ask that routed without a call), its rows are not measured rather than shifted.
    const given = answers.filter((t) => t.endsWith(`Question: ${question}`));
    const routed = routes.filter((t) => t.endsWith(`: ${question}`));
    const measured = expect.length > 0 && given.length === result.variants.length;
    const ranked = measured && routed.length === result.variants.length;
    // Pages holding an answer phrase (their text with footnote definitions, which quote sources).
    const answerPages = result.wikiPages.filter((p) => holdsAnswer(p.text, expect)).map((p) => p.key);
    for (const [k, v] of result.variants.entries()) {
      const row = v.perQuestion[i];
      row.answerHit = measured ? holdsAnswer(given[k], expect) : null;
      row.givenKeys = given[k] === undefined ? [] : blockKeys(given[k]);
      // Rank (0-based) of the first answer page among the index lines the router read; -1: none.
      const lines = (routed[k] || "").split("\n").filter((l) => l.startsWith("- [["));
      row.answerRank = ranked && answerPages.length ? lines.findIndex((l) => answerPages.some((p) => l.startsWith(`- [[${p}]]`) || l.startsWith(`- [[${p}|`))) : null;
      row.ragHit = expect.length ? holdsAnswer(row.ragText, expect) : null;
      row.wikiHit = expect.length ? answerPages.length > 0 : null;
      row.answerPages = answerPages;
      delete row.ragText;
    }
  }
  delete result.wikiPages;
}


// ---------------------------------------------------------------- real size (scale)

// Words left out of the frequent-word queries (English function words of five letters or more).
const STOP = new Set("about above after again against because before being below between could doesn't during every first further having other their there these those through under until where which while would should might shall since still such than that them then they this with your yours using without within also into only some very will what when from have does each many more most much must need same here just like make made want".split(" "));

/**
 * The checkpoint's queries, from the sources compiled so far: 35 titles spread over them and the
 * 15 words found in most of them (five letters or more, function words left out); and 20
 * questions made of titles spread over them.
 */
function scaleQueries(sources, texts) {
  const spread = (items, k) => (items.length <= k ? items : Array.from({ length: k }, (_, i) => items[Math.floor((i * items.length) / k)]));
  const titles = [...new Set(sources.map((s) => s.title).filter((t) => t && t.length <= 80))];
  const df = new Map();
  for (const s of sources) for (const w of new Set(texts.get(s.n).toLowerCase().match(/[a-z][a-z_]{4,}/g) || [])) if (!STOP.has(w)) df.set(w, (df.get(w) || 0) + 1);
  const words = [...df].sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1)).slice(0, 15).map(([w]) => w);
  const queries = [...spread(titles, 50 - words.length), ...words];
  const forms = ["What is {}?", "How does {} work?", "What should I know about {}?", "Explain {}."];
  const questions = spread(titles, 20).map((t, i) => forms[i % forms.length].replace("{}", t));
  return { queries, questions };
}

/**
 * The cold open: a new page load (bench/scale-open.html) in the same context, to a first search.
 * With `index` ("pages" or "all"): the search index alone, without or with the source passages'
 * records, in the new page (`benchOpenIndex`).
 */
async function coldOpen(context, name, query, index) {
  const page = await context.newPage();
  try {
    await page.goto(`${site.url}/bench/scale-open.html?name=${encodeURIComponent(name)}&q=${encodeURIComponent(query)}${index ? `&index=${index}` : ""}`);
    await page.waitForFunction(() => window.COLD !== undefined, null, { timeout: 120_000 });
    const r = await page.evaluate(() => window.COLD);
    if (r.error) throw new Error(`cold open: ${r.error}`);
    return r;
  } finally { await page.close(); }
}

async function scalePhase() {
  const manifestFile = join(CFG.scaleCorpus, "manifest.json");
  if (!existsSync(manifestFile)) throw new Error(`${manifestFile} is missing: run node scripts/scale-corpus.mjs (scripts/bench.sh does)`);
  const manifest = JSON.parse(readFileSync(manifestFile, "utf8"));
  const n = CFG.scaleSources > 0 ? Math.min(CFG.scaleSources, manifest.sources.length) : manifest.sources.length;
  const sources = manifest.sources.slice(0, n);
  const texts = new Map(sources.map((s) => [s.n, readFileSync(join(CFG.scaleCorpus, s.file), "utf8")]));
  const checkpoints = [...new Set(CFG.scaleCheckpoints.map((c) => Math.min(c, n)))].sort((a, b) => a - b);
  const out = { sources: n, listed: manifest.sources.length, missing: manifest.missing, corpusBytes: sources.reduce((a, s) => a + s.bytes, 0), checkpoints, modes: {} };
  const endpoint = CFG.scaleModes.includes("scripted") ? await scriptedEndpoint() : null;
  try {
    for (const mode of CFG.scaleModes) {
      log(`scale ${mode}: ${n} sources (${fmtB(out.corpusBytes)} of markdown), checkpoints ${checkpoints.join(", ")}`);
      const context = await browser.newContext();
      const page = await context.newPage();
      page.setDefaultTimeout(CFG.pageTimeoutMs);
      const errors = [];
      page.on("pageerror", (e) => errors.push(String(e)));
      page.on("console", (m) => { if (m.type() === "error") errors.push(m.text()); });
      const call = async (fn, arg) => {
        try { return await page.evaluate(([f, a]) => window.B[f](a), [fn, arg]); } catch (e) {
          throw new Error(`scale ${mode} ${fn}: ${e.message.split("\n")[0]}${errors.length ? ` (page: ${errors.slice(-3).join("; ")})` : ""}`);
        }
      };
      const M = { mode, steps: [], checkpoints: [] };
      out.modes[mode] = M;
      const t0 = Date.now();
      try {
        await page.goto(`${site.url}/bench/index.html`);
        await page.waitForFunction(() => window.B_READY === true, null, { timeout: 60_000 });
        M.opened = await call("scaleOpen", { name: `bench-scale-${mode}`, mode, endpoint: endpoint?.url, contextWindow: CFG.contextWindow });
        let lastLog = Date.now();
        for (const s of sources) {
          const r = await call("scaleStep", { n: s.n, key: s.key, title: s.title, content: texts.get(s.n) });
          r.path = s.path;
          r.loadavg = os.loadavg()[0];
          M.steps.push(r);
          if (r.failed) log(`  source ${s.n} ${s.path}: ${r.failed} failed: ${r.failures.map((f) => `${f.code} ${f.message}`).join("; ")}`);
          if (Date.now() - lastLog > 30_000 || s.n === n) {
            lastLog = Date.now();
            log(`  ${s.n}/${n}: compile ${fmtMs(r.compileMs)}, ${r.pages} pages, ${fmtB(r.totalPageBytes)} of pages, largest ${fmtB(r.largestBytes)}, wasm ${fmtB(r.wasmBytes)}, ${((Date.now() - t0) / 1000).toFixed(0)} s`);
          }
          if (checkpoints.includes(s.n)) {
            const tc = Date.now();
            const { queries, questions } = scaleQueries(sources.slice(0, s.n), texts);
            const cp = await call("scaleCheckpoint", { queries, questions: mode === "offline" ? questions : [] });
            cp.cold = await coldOpen(context, `bench-scale-${mode}`, queries[0]);
            // The index's share with and without the passages, each in a new page.
            cp.coldIndex = {};
            for (const index of ["pages", "all"]) cp.coldIndex[index] = await coldOpen(context, `bench-scale-${mode}`, queries[0], index);
            cp.n = s.n;
            cp.queries = queries.length;
            cp.questions = mode === "offline" ? questions.length : 0;
            cp.wallMs = Date.now() - tc;
            cp.loadavg = os.loadavg()[0];
            M.checkpoints.push(cp);
            log(`  checkpoint ${s.n}: search p50 ${fmtMs(cp.search.p50)} (core ${fmtMs(cp.searchCore.core.p50)}; passages: true ${fmtMs(cp.searchPassages.p50)}), ${cp.coldIndex.all.passages} passages, index ${fmtB(cp.coldIndex.pages.bytes)} / ${fmtB(cp.coldIndex.all.bytes)} with them, ask p50 ${fmtMs(cp.ask?.p50)}, lint ${fmtMs(cp.lint.ms)}, cold open ${fmtMs(cp.cold.fromNavigationMs)}, export ${fmtMs(cp.export.ms)} (${fmtB(cp.export.bytes)}), import ${fmtMs(cp.import.ms)}; ${fmtMs(cp.wallMs)} in all`);
          }
        }
        M.closed = await call("scaleClose");
      } catch (e) {
        M.error = e.message;
        log(`  failed: ${e.message}`);
      } finally {
        M.wallMs = Date.now() - t0;
        M.errors = errors;
        await context.close();
      }
      M.compileWallMs = M.steps.reduce((a, x) => a + x.addMs + x.compileMs, 0);
      M.checkpointWallMs = M.checkpoints.reduce((a, x) => a + x.wallMs, 0);
      const loads = M.steps.map((x) => x.loadavg);
      M.loadavg = loads.length ? { mean: mean(loads), max: Math.max(...loads) } : undefined;
      log(`scale ${mode}: whole mode ${fmtMs(M.wallMs)} (addSource + compile ${fmtMs(M.compileWallMs)}, checkpoints ${fmtMs(M.checkpointWallMs)}); 1-minute load average ${M.loadavg ? `${M.loadavg.mean.toFixed(1)} mean, ${M.loadavg.max.toFixed(1)} max` : "—"}`);
    }
  } finally { endpoint?.stop(); }
  return out;
}

const median = (a) => { if (!a.length) return undefined; const v = [...a].sort((x, y) => x - y); const m = v.length >> 1; return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2; };
const pct = (a, p) => { if (!a.length) return undefined; const v = [...a].sort((x, y) => x - y); return v[Math.round((v.length - 1) * p)]; };
/** Steps numbered from..to (inclusive, 1-based source numbers). */
const stepsIn = (steps, from, to) => steps.filter((s) => s.n >= from && s.n <= to);
/** Sources of similar size, for the growth figures: 4–12 kB of markdown. */
const MATCHED = [4000, 12000];
/**
 * Medians of `f` over sources 21–40 and 281–320: raw, per KiB of source, and over the sources of
 * similar size only (`MATCHED`; the goal's measure, since a compile has fixed costs that a per-KiB
 * figure charges to small sources), with their ratios.
 */
function growth(steps, f) {
  const a = stepsIn(steps, 21, 40), b = stepsIn(steps, 281, 320);
  if (a.length < 20 || b.length < 40) return undefined;
  const raw = (xs) => median(xs.map(f)), perKb = (xs) => median(xs.map((s) => f(s) / (s.sourceBytes / 1024)));
  const matched = (xs) => xs.filter((s) => s.sourceBytes >= MATCHED[0] && s.sourceBytes <= MATCHED[1]);
  const ma = matched(a), mb = matched(b);
  return {
    early: raw(a), late: raw(b), ratio: raw(b) / raw(a), earlyPerKb: perKb(a), latePerKb: perKb(b), ratioPerKb: perKb(b) / perKb(a),
    matchedN: [ma.length, mb.length], earlyMatched: raw(ma), lateMatched: raw(mb), ratioMatched: ma.length && mb.length ? raw(mb) / raw(ma) : undefined,
  };
}
/** Page records read and written by the compiles: totals, per-commit ratios. */
function commitIo(steps) {
  const c = steps.filter((s) => s.compiled > 0);
  const reads = c.reduce((a, s) => a + s.io.pages.reads, 0), writes = c.reduce((a, s) => a + s.io.pages.writes, 0);
  const ratios = c.map((s) => s.io.pages.reads / Math.max(1, s.io.pages.writes));
  return { commits: c.length, reads, writes, ratio: reads / Math.max(1, writes), medianRatio: median(ratios), maxRatio: ratios.length ? Math.max(...ratios) : undefined, over3: ratios.filter((r) => r > 3).length, readBytes: c.reduce((a, s) => a + s.io.pages.readBytes, 0), writtenBytes: c.reduce((a, s) => a + s.io.pages.writtenBytes, 0) };
}
function peakWasm(M) { return Math.max(0, ...M.steps.map((s) => s.wasmBytes), ...M.checkpoints.map((c) => c.wasmBytesAfter)); }

/** The scale phase's plot: compile ms per source, largest page, total pages, wasm memory vs source number, one line per mode. */
function scaleSvg(S) {
  const colors = { offline: "#1f77b4", scripted: "#d62728" };
  const panels = [
    ["compile ms per source (log scale)", (s) => s.compileMs, true],
    ["largest page (KiB)", (s) => s.largestBytes / 1024, false],
    ["total page bytes (MB)", (s) => s.totalPageBytes / 1e6, false],
    ["wasm memory after each compile (MiB)", (s) => s.wasmBytes / 2 ** 20, false],
  ];
  const W = 560, H = 300, m = { l: 60, r: 16, t: 28, b: 36 };
  const modes = Object.values(S.modes).filter((M) => M.steps.length);
  const esc = (t) => String(t).replace(/&/g, "&amp;").replace(/</g, "&lt;");
  const nice = (v) => { const e = 10 ** Math.floor(Math.log10(v)); return [1, 2, 2.5, 5, 10].map((k) => k * e).find((x) => x >= v); };
  const parts = [];
  panels.forEach(([title, f, log], i) => {
    const ox = (i % 2) * W, oy = Math.floor(i / 2) * H;
    const pw = W - m.l - m.r, ph = H - m.t - m.b;
    const xmax = Math.max(1, ...modes.map((M) => M.steps.length));
    const vals = modes.flatMap((M) => M.steps.map(f)).filter((v) => Number.isFinite(v));
    const vmax = Math.max(...vals, 1e-9), vmin = Math.max(Math.min(...vals.filter((v) => v > 0)), 1e-3);
    let y, ticks;
    if (log) {
      const lo = Math.floor(Math.log10(vmin)), hi = Math.ceil(Math.log10(vmax));
      y = (v) => oy + m.t + ph - ((Math.log10(Math.max(v, 10 ** lo)) - lo) / Math.max(1, hi - lo)) * ph;
      ticks = Array.from({ length: hi - lo + 1 }, (_, k) => 10 ** (lo + k));
    } else {
      const top = nice(vmax), step = top / 5;
      y = (v) => oy + m.t + ph - (v / top) * ph;
      ticks = Array.from({ length: 6 }, (_, k) => k * step);
    }
    const x = (n) => ox + m.l + ((n - 1) / Math.max(1, xmax - 1)) * pw;
    parts.push(`<g><text x="${ox + m.l}" y="${oy + 18}" font-weight="bold">${esc(title)}</text>`);
    parts.push(`<rect x="${ox + m.l}" y="${oy + m.t}" width="${pw}" height="${ph}" fill="none" stroke="#999"/>`);
    for (const t of ticks) {
      const yy = y(t).toFixed(1);
      parts.push(`<line x1="${ox + m.l}" x2="${ox + m.l + pw}" y1="${yy}" y2="${yy}" stroke="#eee"/><text x="${ox + m.l - 6}" y="${yy}" text-anchor="end" dominant-baseline="middle">${esc(+t.toPrecision(3))}</text>`);
    }
    const xstep = nice(xmax / 6);
    for (let t = 0; t <= xmax; t += xstep) {
      const xx = x(Math.max(1, t)).toFixed(1);
      parts.push(`<line x1="${xx}" x2="${xx}" y1="${oy + m.t + ph}" y2="${oy + m.t + ph + 4}" stroke="#999"/><text x="${xx}" y="${oy + m.t + ph + 16}" text-anchor="middle">${Math.max(1, t)}</text>`);
    }
    for (const c of S.checkpoints) { const xx = x(c).toFixed(1); parts.push(`<line x1="${xx}" x2="${xx}" y1="${oy + m.t}" y2="${oy + m.t + ph}" stroke="#bbb" stroke-dasharray="3,3"/>`); }
    parts.push(`<text x="${ox + m.l + pw / 2}" y="${oy + H - 4}" text-anchor="middle">source number</text>`);
    for (const M of modes) {
      const pts = M.steps.map((s) => [x(s.n), y(f(s))]).filter(([, v]) => Number.isFinite(v)).map(([a, b]) => `${a.toFixed(1)},${b.toFixed(1)}`).join(" ");
      parts.push(`<polyline fill="none" stroke="${colors[M.mode] || "#333"}" stroke-width="1.3" points="${pts}"/>`);
    }
    modes.forEach((M, k) => parts.push(`<rect x="${ox + m.l + 8}" y="${oy + m.t + 8 + k * 16}" width="12" height="3" fill="${colors[M.mode] || "#333"}"/><text x="${ox + m.l + 24}" y="${oy + m.t + 12 + k * 16}" dominant-baseline="middle">${esc(M.mode)}</text>`));
    parts.push("</g>");
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${2 * W}" height="${2 * H + 24}" font-family="sans-serif" font-size="11">
<rect width="100%" height="100%" fill="#fff"/>
${parts.join("\n")}
<text x="8" y="${2 * H + 16}" fill="#555">llm-wiki real-size benchmark: ${S.sources} sources (${fmtB(S.corpusBytes)} of markdown), one compile per source; dashed lines: checkpoints ${S.checkpoints.join(", ")} (their export and import grow the wasm memory the later compiles start from)</text>
</svg>
`;
}

// ---------------------------------------------------------------- report

const fmtMs = (v) => (v === undefined || v === null ? "—" : v >= 1000 ? `${(v / 1000).toFixed(2)} s` : v >= 10 ? `${v.toFixed(0)} ms` : v >= 1 ? `${v.toFixed(2)} ms` : `${(v * 1000).toFixed(0)} µs`);
const fmtB = (v) => (v === undefined || v === null ? "—" : v >= 1e6 ? `${(v / 1e6).toFixed(1)} MB` : `${(v / 1e3).toFixed(1)} KB`);
/** `hits/asked` of rows whose `field` is true (rows where it is null were not measured). */
const hits = (rows, field) => { const m = rows.filter((x) => x[field] !== null && x[field] !== undefined); return m.length ? `${m.filter((x) => x[field]).length}/${m.length}` : "—"; };
const fmtX = (v) => (v === undefined || v === null || !Number.isFinite(v) ? "—" : `${v.toFixed(2)}×`);

function table(head, rows) {
  const w = head.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
  const line = (r) => `| ${r.map((c, i) => String(c).padEnd(w[i])).join(" | ")} |`;
  return [line(head), `|${w.map((x) => "-".repeat(x + 2)).join("|")}|`, ...rows.map(line)].join("\n");
}

function report(R) {
  const out = [];
  if (R.sizes) {
    out.push("\n### Bundle size\n");
    out.push(table(["build", "wasm raw", "wasm gzip", "wasm brotli", "glue gzip", "glue brotli"], Object.entries(R.sizes).map(([k, s]) => [k, fmtB(s.wasmRaw), fmtB(s.wasmGzip), fmtB(s.wasmBrotli), fmtB(s.glueGzip), fmtB(s.glueBrotli)])));
  }
  for (const [name, libs] of Object.entries(R.text || {})) {
    if (name.endsWith("+passages")) { out.push(passageTextReport(name, libs, R.text[name.slice(0, -"+passages".length)])); continue; }
    out.push(`\n### Text: ${name}\n`);
    out.push(table(["library", "build", "add 1", "add 100", "top-10 p50", "p95", "memory", "persisted", "cold open", "top-10 overlap w/ MiniSearch"],
      Object.values(libs).map((r) => r.error ? [r.lib, `error: ${r.error.slice(0, 60)}`, "", "", "", "", "", "", "", ""] : [r.lib, fmtMs(r.buildMs), fmtMs(r.add1Ms), fmtMs(r.add100Ms), fmtMs(r.query.p50), fmtMs(r.query.p95), fmtB(r.memoryBytes), fmtB(r.persistedBytes), fmtMs(r.coldOpenMs), r.overlapWithMiniSearch?.toFixed(2) ?? "—"])));
  }
  if (R.hybrid) {
    out.push("\n### llm-wiki BM25 / vector / hybrid (offline embedding, same index)\n");
    out.push(table(["corpus", "embed pages", "bm25 p50", "vector p50", "hybrid p50", "fusion overhead"], Object.entries(R.hybrid).map(([k, h]) => h.error ? [k, h.error, "", "", "", ""] : [k, fmtMs(h.embedPagesMs), fmtMs(h.bm25.p50), fmtMs(h.vector.p50), fmtMs(h.hybrid.p50), `${(h.fusionOverhead * 100).toFixed(0)} %`])));
  }
  if (R.vectors) {
    out.push("\n### Vectors (384-d, top-10, recall against the exact f64 scan)\n");
    out.push(table(["set", "rows", "library", "build", "p50", "p95", "recall@10", "memory Δ", "wasm memory", "note"], R.vectors.map((r) => r.skipped || r.error ? [r.kind, r.n, r.lib, "", "", "", "", "", "", r.skipped || `error: ${r.error.slice(0, 80)}`] : [r.kind, r.n, r.lib, fmtMs(r.buildMs), fmtMs(r.query.p50), fmtMs(r.query.p95), r.recall10?.toFixed(3) ?? "—", fmtB(r.jsHeapBytes + r.wasmMemoryBytes), r.wasmMemoryTotal ? fmtB(r.wasmMemoryTotal) : "—", r.vsExact !== undefined ? `${r.hasGraph ? `graph, ef ${r.efSearch}` : "exact scan"}; ${fmtX(r.vsExact)} our exact (same page)` : ""])));
  }
  if (R.tokens) {
    const T = R.tokens;
    const s = T.perSource, q = T.perQuestion;
    out.push("\n### Token cost (T2, scripted endpoint, estimated tokens)\n");
    out.push(table(["measure", "value"], [
      ["sources compiled", s.length],
      ["compile input tokens / source (mean)", mean(s.map((x) => x.input)).toFixed(0)],
      ["compile output tokens / source (mean)", mean(s.map((x) => x.output)).toFixed(0)],
      ["compile input ÷ (source + index slice): mean / max", `${fmtX(mean(s.map((x) => x.ratio)))} / ${fmtX(Math.max(...s.map((x) => x.ratio)))}`],
      ...(s[0]?.estimate ? [["compile estimate ÷ actual (input / output / calls), mean", ["input", "output", "calls"].map((f) => fmtX(mean(s.map((x) => x.estimate[f] / x[f])))).join(" / ")]] : []),
      ["re-adding unchanged sources: tokens", T.reAdd.input + T.reAdd.output],
      ["query input tokens (mean)", mean(q.map((x) => x.input)).toFixed(0)],
      ["top-8-chunk RAG input tokens (mean)", mean(q.map((x) => x.ragInput)).toFixed(0)],
      ["query ÷ RAG: mean / max", `${fmtX(mean(q.map((x) => x.ratio)))} / ${fmtX(Math.max(...q.map((x) => x.ratio)))}`],
      ...(q[0]?.ragHit === undefined ? [] : [
        ["answer context recall: query (defaults) / RAG / in the wiki at all", `${hits(q, "answerHit")} / ${hits(q, "ragHit")} / ${hits(q, "wikiHit")}`],
      ]),
    ]));
    if (T.variants && q[0]?.routeInput !== undefined) {
      out.push(`\nQuery input by ask options (index.md: ${T.indexTokens} tokens, ${T.pages} pages; first row: the defaults):\n`);
      out.push(table(["ask options", "route input", "answer input", "query input", "query ÷ RAG: mean / max", "routes (index / shortlist / search)", "pages cited", "best answer page among the router's lines", "answer context recall"], T.variants.map((v) => {
        const p = v.perQuestion;
        const routes = ["index", "shortlist", "search"].map((m) => p.filter((x) => x.route === m).length).join(" / ");
        const ranked = p.filter((x) => x.answerRank !== null && x.answerRank !== undefined);
        const inList = ranked.length ? `${ranked.filter((x) => x.answerRank >= 0).length}/${ranked.length} (at rank ≤ ${Math.max(...ranked.map((x) => x.answerRank)) + 1})` : "—";
        return [JSON.stringify(v.options), mean(p.map((x) => x.routeInput)).toFixed(0), mean(p.map((x) => x.answerInput)).toFixed(0), mean(p.map((x) => x.input)).toFixed(0), `${fmtX(mean(p.map((x) => x.ratio)))} / ${fmtX(Math.max(...p.map((x) => x.ratio)))}`, routes, mean(p.map((x) => x.cited)).toFixed(1), inList, hits(p, "answerHit")];
      })));
    }
  }
  if (R.scale) out.push(scaleReport(R.scale));
  out.push("\n### Goals\n");
  out.push(table(["goal", "measured", "met"], goals(R).map((g) => [g.goal, g.measured, g.met === null ? "not measured" : typeof g.met === "string" ? g.met : g.met ? "yes" : "NO"])));
  return out.join("\n");
}

/**
 * A `T1-n+passages` corpus beside the same libraries' rows of `T1-n` (no passages) from the same
 * run: units, build, BM25 top-10 for pages only and with passages, memory, persisted bytes, cold
 * open (IndexedDB read + decode) and the first query after it (with passages where indexed).
 */
function passageTextReport(name, libs, plain) {
  const first = Object.values(libs).find((r) => r.sources);
  const head = first ? `${first.sources} sources of ${first.sourceWords.toFixed(0)} words on average (${fmtB(first.sourceBytes)} of markdown)` : "";
  const out = [`\n### Text: ${name} — ${head}; top-10 = BM25, k 10; with passages: the top 10 of each collection\n`];
  const rows = [];
  for (const [lib, r] of Object.entries(libs)) {
    const p = plain?.[lib];
    for (const [label, x] of [["pages only", p], ["+ passages", r]]) {
      if (!x) continue;
      if (x.error) { rows.push([lib, label, `error: ${x.error.slice(0, 60)}`, "", "", "", "", "", "", "", ""]); continue; }
      const units = x.units ? `${x.units.pages} + ${x.units.passages}` : `${x.pages} + 0`;
      rows.push([lib, label, units, fmtMs(x.buildMs), `${fmtMs(x.query.p50)} / ${fmtMs(x.query.p95)}`, x.queryPassages ? `${fmtMs(x.queryPassages.p50)} / ${fmtMs(x.queryPassages.p95)}` : "—", fmtB(x.memoryBytes), fmtB(x.persistedBytes),
        x.coldOpenMs === undefined || x.coldOpenMs === null ? "—" : `${fmtMs(x.coldOpenMs)} (${fmtMs(x.idbReadMs)} + ${fmtMs(x.decodeMs)})`, fmtMs(x.firstQueryMs),
        `${x.overlapWithMiniSearch?.toFixed(2) ?? "—"} / ${x.passageOverlapWithMiniSearch?.toFixed(2) ?? "—"}`, (x.loadavg ?? NaN).toFixed(1)]);
    }
  }
  out.push(table(["library", "index", "units (pages + passages)", "build", "top-10 p50 / p95, pages", "top-10 p50 / p95, with passages", "memory", "persisted", "cold open (IDB read + decode)", "first query", "top-10 overlap w/ MiniSearch: pages / passages", "load"], rows));
  return out.join("\n");
}

function scaleReport(S) {
  const out = [];
  const modes = Object.values(S.modes);
  const fmtS = (ms) => (ms === undefined ? "—" : ms >= 60_000 ? `${Math.floor(ms / 60_000)} min ${((ms % 60_000) / 1000).toFixed(0)} s` : fmtMs(ms));
  const fmtMiB = (b) => (b === undefined ? "—" : `${(b / 2 ** 20).toFixed(1)} MiB`);
  out.push(`\n### Real size: ${S.sources} sources one at a time (${fmtB(S.corpusBytes)} of markdown; ${S.listed} listed)\n`);
  out.push(table(["mode", "sources done", "pages", "whole mode", "addSource + compile", "checkpoints", "compile p50 / p95 / max", "failed", "peak wasm", "total pages", "largest page", "pages > 64 KiB", "storage usage", "page reads ÷ writes per commit: all / median / max (commits > 3×)", "load mean / max"],
    modes.map((M) => {
      const st = M.steps, last = st[st.length - 1] || {};
      const c = st.map((s) => s.compileMs), io = commitIo(st);
      return [M.mode + (M.error ? " (ERROR)" : ""), st.length, last.pages ?? "—", fmtS(M.wallMs), fmtS(M.compileWallMs), fmtS(M.checkpointWallMs),
        `${fmtMs(median(c))} / ${fmtMs(pct(c, 0.95))} / ${fmtMs(Math.max(...c))}`, st.reduce((a, s) => a + s.failed, 0), fmtMiB(peakWasm(M)),
        fmtB(last.totalPageBytes), fmtB(Math.max(0, ...st.map((s) => s.largestBytes))), Math.max(0, ...st.map((s) => s.over64k)), fmtB(last.storageUsage),
        `${fmtX(io.ratio)} / ${fmtX(io.medianRatio)} / ${fmtX(io.maxRatio)} (${io.over3}/${io.commits})`, M.loadavg ? `${M.loadavg.mean.toFixed(1)} / ${M.loadavg.max.toFixed(1)}` : "—"];
    })));
  for (const M of modes) {
    if (!M.checkpoints.length) continue;
    out.push(`\nCheckpoints, ${M.mode} (search: ${M.checkpoints[0].queries} queries, k 10, bm25; JS = wiki.search, core = the same call inside wasm, index = the cached index alone; cold open: a new page load to the first search result, from navigation start / from before init()):\n`);
    out.push(table(["sources", "pages", "total pages", "largest page", "wasm", "1st search", "search JS p50 / p95", "core p50", "index p50", "ask p50 / p95", "lint", "cold open nav / init", "export", "vault", "import", "page reads: search / ask / lint"],
      M.checkpoints.map((c) => {
        const s = M.steps.find((x) => x.n === c.n) || {};
        return [c.n, s.pages, fmtB(s.totalPageBytes), fmtB(s.largestBytes), fmtMiB(c.wasmBytesAfter), fmtMs(c.firstSearchMs), `${fmtMs(c.search.p50)} / ${fmtMs(c.search.p95)}`, fmtMs(c.searchCore.core.p50), fmtMs(c.searchCore.index.p50),
          c.ask ? `${fmtMs(c.ask.p50)} / ${fmtMs(c.ask.p95)}` : "—", fmtMs(c.lint.ms), `${fmtMs(c.cold.fromNavigationMs)} / ${fmtMs(c.cold.fromInitMs)}`, fmtMs(c.export.ms), fmtB(c.export.bytes), fmtMs(c.import.ms),
          `${c.search.io.pageReadsPerCall.toFixed(1)} / ${c.ask ? c.ask.io.pageReadsPerCall.toFixed(1) : "—"} / ${c.lint.io.pageReads}`];
      })));
  }
  const passageRows = modes.flatMap((M) => M.checkpoints.filter((c) => c.coldIndex && c.searchPassages).map((c) => {
    const P = c.coldIndex.pages, A = c.coldIndex.all;
    const ro = (x) => x.readMs + x.decodeMs;
    return [M.mode, c.n, A.pages, A.passages, `${fmtB(P.bytes)} / ${fmtB(A.bytes)}`, `${fmtMs(P.readMs)} / ${fmtMs(A.readMs)}`, `${fmtMs(P.decodeMs)} / ${fmtMs(A.decodeMs)}`, `${fmtMs(ro(P))} / ${fmtMs(ro(A))}`,
      `${fmtMs(c.search.p50)} / ${fmtMs(c.searchPassages.p50)}`, `${fmtMs(c.searchCore.core.p50)} / ${fmtMs(c.searchCorePassages.core.p50)}`, `${fmtMs(c.searchCore.index.p50)} / ${fmtMs(c.searchCorePassages.index.p50)}`, c.searchPassages.passageHitsMean.toFixed(1), fmtMs(c.cold.fromNavigationMs), c.loadavg?.toFixed(1) ?? "—"];
  }));
  if (passageRows.length) {
    out.push("\nThe search index without / with the source passages (bytes: the `search` store's records; read, decode: the index opened alone in a new page, inside wasm; search: the checkpoint's queries, k 10, bm25, pages only / `passages: true`; the product's cold open, last column, opens both):\n");
    out.push(table(["mode", "sources", "pages", "passages", "index bytes", "IDB read", "decode", "read + decode", "search JS p50", "core p50", "index p50", "passage hits / query", "product cold open (nav)", "load"], passageRows));
  }
  // Records one commit reads, per store: the median over the 10 sources up to each checkpoint.
  const storeRows = [];
  const storeNames = ["pages", "claims", "sources", "revisions", "search", "meta", "documents"];
  for (const M of modes) for (const c of M.checkpoints) {
    const w = stepsIn(M.steps, c.n - 9, c.n);
    const med = (f) => median(w.map(f));
    storeRows.push([M.mode, `${Math.max(1, c.n - 9)}–${c.n}`, ...storeNames.map((k) => `${med((s) => s.io.stores[k]?.reads || 0)} (${fmtB(med((s) => s.io.stores[k]?.readBytes || 0))})`), `${med((s) => s.io.all.reads)} (${fmtB(med((s) => s.io.all.readBytes))})`, `${med((s) => s.io.all.writes)} (${fmtB(med((s) => s.io.all.writtenBytes))})`]);
  }
  if (storeRows.length) {
    out.push("\nRecords (bytes) one compile reads, per store: medians over the 10 sources up to each checkpoint:\n");
    out.push(table(["mode", "sources", ...storeNames, "all stores", "all writes"], storeRows));
  }
  const memRows = modes.flatMap((M) => M.checkpoints.map((c) => [M.mode, c.n, fmtMiB(c.wasmBytesBefore), ...["search", "ask", "lint", "export", "import"].map((k) => fmtMiB(c.wasmBytesAfterOp?.[k]))]));
  if (memRows.length) {
    out.push("\nWasm memory through each checkpoint's operations (after each; it never shrinks):\n");
    out.push(table(["mode", "sources", "before", "search", "ask", "lint", "export", "import"], memRows));
  }
  const rows = [];
  for (const M of modes) {
    const g = growth(M.steps, (s) => s.compileMs);
    const m = (x) => `${x.earlyMatched === undefined ? "—" : x.earlyMatched.toFixed(0)} / ${x.lateMatched === undefined ? "—" : x.lateMatched.toFixed(0)} (${x.matchedN.join(" / ")} sources)`;
    if (g) rows.push([M.mode, "compile ms", fmtMs(g.early), fmtMs(g.late), fmtX(g.ratio), `${fmtMs(g.earlyPerKb)} / ${fmtMs(g.latePerKb)}`, fmtX(g.ratioPerKb), m(g), fmtX(g.ratioMatched)]);
    const t = M.mode === "scripted" && growth(M.steps, (s) => s.inputTokens);
    if (t) rows.push([M.mode, "input tokens", t.early.toFixed(0), t.late.toFixed(0), fmtX(t.ratio), `${t.earlyPerKb.toFixed(0)} / ${t.latePerKb.toFixed(0)}`, fmtX(t.ratioPerKb), m(t), fmtX(t.ratioMatched)]);
    const r = growth(M.steps, (s) => s.io.pages.reads);
    if (r) rows.push([M.mode, "page records read", r.early.toFixed(0), r.late.toFixed(0), fmtX(r.ratio), "", "", "", ""]);
  }
  if (rows.length) {
    out.push(`\nGrowth: medians of sources 21–40 against 281–320 (raw; per KiB of source; and over the sources of similar size, ${MATCHED[0] / 1000}–${MATCHED[1] / 1000} kB, the goals' measure):\n`);
    out.push(table(["mode", "measure", "21–40", "281–320", "ratio", "per KiB: 21–40 / 281–320", "ratio per KiB", "similar size: 21–40 / 281–320", "ratio, similar size"], rows));
  }
  const failed = modes.flatMap((M) => M.steps.filter((s) => s.failed).flatMap((s) => s.failures.map((f) => [M.mode, s.n, s.path, f.code, f.message.slice(0, 100)])));
  if (failed.length) {
    out.push("\nFailed compiles:\n");
    out.push(table(["mode", "source", "path", "code", "message"], failed));
  }
  const errors = modes.filter((M) => M.error).map((M) => [M.mode, M.error.slice(0, 200)]);
  if (errors.length) { out.push("\nErrors:\n"); out.push(table(["mode", "error"], errors)); }
  return out.join("\n");
}

function scaleGoals(S, add, g) {
  const off = S.modes.offline, scr = S.modes.scripted;
  const lastCp = (M) => M?.checkpoints[M.checkpoints.length - 1];
  const modes = Object.values(S.modes);
  if (off?.steps.length) {
    const n = off.steps.length;
    add(`real size: ${n} offline sources (addSource + compile, one at a time) ≤ 5 min${n < 400 ? ` (goal at 400; ${n} run)` : ""}`, off.compileWallMs, 300_000, fmtMs);
  }
  for (const M of modes) {
    const gr = growth(M.steps, (s) => s.compileMs);
    g.push({ goal: `real size, ${M.mode}: compile of the 300th source ≤ 1.5× the 30th, similar sizes (median 281–320 ÷ 21–40 of sources of ${MATCHED[0] / 1000}–${MATCHED[1] / 1000} kB; per KiB and raw beside)`, measured: gr ? `${fmtX(gr.ratioMatched)} similar size; ${fmtX(gr.ratioPerKb)} per KiB; ${fmtX(gr.ratio)} raw` : "—", met: gr && gr.ratioMatched !== undefined ? gr.ratioMatched <= 1.5 : null });
  }
  for (const M of modes) add(`real size, ${M.mode}: peak wasm memory ≤ 256 MB`, M.steps.length ? peakWasm(M) : undefined, 256e6, (b) => `${(b / 1e6).toFixed(1)} MB (${(b / 2 ** 20).toFixed(1)} MiB)`);
  const cp = lastCp(off);
  add(`real size: offline ask p50 ≤ 250 ms (${cp ? `${cp.n} sources` : "—"})`, cp?.ask?.p50, 250, fmtMs);
  for (const M of modes) { const c = lastCp(M); g.push({ goal: `real size, ${M.mode}: search JS p50 ≤ 2 ms (${c ? `${c.n} sources` : "—"}; core inside wasm beside it; passages: true after)`, measured: c ? `${fmtMs(c.search.p50)} (core ${fmtMs(c.searchCore.core.p50)}, index ${fmtMs(c.searchCore.index.p50)})${c.searchPassages ? `; passages: true ${fmtMs(c.searchPassages.p50)}` : ""}` : "—", met: c ? c.search.p50 <= 2 && (!c.searchPassages || c.searchPassages.p50 <= 2) : null }); }
  for (const M of modes) { const c = lastCp(M); add(`real size, ${M.mode}: structural lint ≤ 3 s${c ? ` (${c.n} sources)` : ""}`, c?.lint.ms, 3000, fmtMs); }
  for (const M of modes) { const c = lastCp(M); g.push({ goal: `real size, ${M.mode}: cold open to a first search ≤ 500 ms (from navigation start; from before init() beside it; the index alone without / with passages after)`, measured: c ? `${fmtMs(c.cold.fromNavigationMs)} (init: ${fmtMs(c.cold.fromInitMs)})${c.coldIndex ? `; index read + decode ${fmtMs(c.coldIndex.pages.readMs + c.coldIndex.pages.decodeMs)} / ${fmtMs(c.coldIndex.all.readMs + c.coldIndex.all.decodeMs)} (${c.coldIndex.all.passages} passages)` : ""}` : "—", met: c ? c.cold.fromNavigationMs <= 500 : null }); }
  for (const M of modes) { const c = lastCp(M); add(`real size, ${M.mode}: exportVault ≤ 10 s${c ? ` (${c.n} sources, ${fmtB(c.export.bytes)})` : ""}`, c?.export.ms, 10_000, fmtMs); }
  const t = scr && growth(scr.steps, (s) => s.inputTokens);
  g.push({ goal: `real size, scripted: compile input tokens per source flat (300th ≤ 1.3× the 30th, similar sizes: median 281–320 ÷ 21–40 of sources of ${MATCHED[0] / 1000}–${MATCHED[1] / 1000} kB)`, measured: t ? `${fmtX(t.ratioMatched)} similar size; ${fmtX(t.ratioPerKb)} per KiB; ${fmtX(t.ratio)} raw` : "—", met: t && t.ratioMatched !== undefined ? t.ratioMatched <= 1.3 : null });
  for (const M of modes) {
    const io = M.steps.length ? commitIo(M.steps) : undefined;
    g.push({ goal: `real size, ${M.mode}: page bodies read per commit ≤ 3× written`, measured: io ? `${fmtX(io.ratio)} over all commits (median ${fmtX(io.medianRatio)}, max ${fmtX(io.maxRatio)}; ${io.over3} of ${io.commits} commits above 3×)` : "—", met: io ? io.over3 === 0 : null });
  }
}

function goals(R) {
  const g = [];
  const t10 = R.text?.["T1-10000"];
  const ours = t10?.["llm-wiki"], ms = t10?.minisearch;
  const ratio = (a, b) => (a !== undefined && b ? a / b : undefined);
  const add = (goal, value, limit, fmt = fmtX) => g.push({ goal, value, measured: value === undefined ? "—" : fmt(value), met: value === undefined ? null : value <= limit });
  add("BM25 top-10 p50 at 10k ≤ 0.25× MiniSearch", ratio(ours?.query?.p50, ms?.query?.p50), 0.25);
  add("build at 10k ≤ 0.5× MiniSearch", ratio(ours?.buildMs, ms?.buildMs), 0.5);
  add("memory at 10k ≤ 0.5× MiniSearch", ratio(ours?.memoryBytes, ms?.memoryBytes), 0.5);
  add("cold open at 10k ≤ 0.25× MiniSearch loadJSON", ratio(ours?.coldOpenMs, ms?.coldOpenMs), 0.25);
  add("cold open at 10k ≤ 300 ms", ours?.coldOpenMs, 300, fmtMs);
  // The same goals with source passages indexed (T1-10000+passages: one source per 10 pages).
  const p10 = R.text?.["T1-10000+passages"];
  const oursP = p10?.["llm-wiki"], msP = p10?.minisearch;
  const np = oursP?.units ? ` (${oursP.units.pages} pages + ${oursP.units.passages} passages)` : "";
  add(`BM25 top-10 p50 at 10k ≤ 0.25× MiniSearch, passages indexed${np}: pages-only queries`, ratio(oursP?.query?.p50, msP?.query?.p50), 0.25);
  add("BM25 top-10 p50 at 10k ≤ 0.25× MiniSearch, passages indexed: passages: true (both lists)", ratio(oursP?.queryPassages?.p50, msP?.queryPassages?.p50), 0.25);
  add("cold open at 10k ≤ 0.25× MiniSearch loadJSON, passages indexed", ratio(oursP?.coldOpenMs, msP?.coldOpenMs), 0.25);
  add("cold open at 10k ≤ 300 ms, passages indexed", oursP?.coldOpenMs, 300, fmtMs);
  for (const kind of CFG.vecKinds) for (const n of CFG.vecSizes) {
    const find = (lib) => R.vectors?.find((r) => r.kind === kind && r.n === n && r.lib === lib && !r.skipped && !r.error);
    const p = find("llm-wiki-product");
    g.push({ goal: `${kind} ${n}: product path recall@10 ≥ 0.95 and p50 ≤ 1× our exact scan`, measured: p ? `recall ${p.recall10.toFixed(3)}, ${fmtX(p.vsExact)} (${p.hasGraph ? "graph" : "exact scan"})` : "—", met: p ? p.recall10 >= 0.95 && (p.hasGraph ? p.vsExact <= 1.0 : "yes (is the exact scan)") : null });
  }
  const h = R.hybrid?.["T1-10000"];
  add("fusion overhead (T1 10k) ≤ 20 %", h?.fusionOverhead, 0.2, (v) => `${(v * 100).toFixed(0)} %`);
  add("wasm ≤ 400 KB gzipped (product build)", R.sizes?.product?.wasmGzip, 400 * 1024, fmtB);
  const T = R.tokens;
  add("compile input tokens per new source ≤ 1.5× (source + index slice), mean", T ? mean(T.perSource.map((x) => x.ratio)) : undefined, 1.5);
  add("re-adding unchanged sources = 0 tokens", T ? T.reAdd.input + T.reAdd.output : undefined, 0, String);
  add("query input tokens ≤ 0.5× top-8-chunk RAG, mean", T ? mean(T.perQuestion.map((x) => x.ratio)) : undefined, 0.5);
  if (R.scale) scaleGoals(R.scale, add, g);
  return g;
}

// ---------------------------------------------------------------- main

function versions() {
  const pkg = (n) => { try { return JSON.parse(readFileSync(join(root, "node_modules", n, "package.json"), "utf8")).version; } catch { return null; } };
  return {
    rustc: rustVersion(), node: process.version, chromium: browser.version(),
    packages: Object.fromEntries(["minisearch", "@orama/orama", "flexsearch", "lunr", "hnswlib-wasm", "edgevec", "voy-search", "playwright-core", "binaryen", "@mozilla/readability", "turndown"].map((n) => [n, pkg(n)])),
    commit: execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim(),
    // Uncommitted changes to the sources at run time (the build may be of an earlier state).
    dirtySources: execFileSync("git", ["status", "--porcelain", "--", "src", "Cargo.toml", "Cargo.lock"], { cwd: root, encoding: "utf8" }).split("\n").filter(Boolean).length,
  };
}

async function main() {
  site = await serve();
  browser = await chromium.launch({ executablePath: env("CHROMIUM", "/usr/bin/chromium"), headless: true, args: ARGS });
  // BENCH_MERGE=1: keep the other phases' results already in BENCH_OUT (run phases separately).
  const prev = env("BENCH_MERGE", "0") === "1" && existsSync(CFG.out) ? JSON.parse(readFileSync(CFG.out, "utf8")) : {};
  const R = { ...prev, config: CFG, machine: { cpus: os.cpus().length, cpu: os.cpus()[0]?.model, memGB: +(os.totalmem() / 2 ** 30).toFixed(1), loadavg: os.loadavg(), platform: `${os.type()} ${os.release()}` }, versions: versions(), started: new Date().toISOString() };
  const save = () => writeFileSync(CFG.out, JSON.stringify(R, null, 1));
  try {
    if (CFG.phases.includes("size")) R.sizes = sizes();
    let t2;
    if (CFG.t2 && CFG.phases.some((p) => ["text", "hybrid", "tokens"].includes(p))) {
      t2 = await convertT2();
      R.t2 = { pages: t2.docs.length, book: t2.book, cargo: t2.cargo, htmlBytes: t2.htmlBytes, markdownBytes: t2.docs.reduce((s, d) => s + Buffer.byteLength(d.body), 0), lowConfidence: t2.docs.filter((d) => d.warnings.length).length };
    }
    // T2's incremental adds are copies of its first 101 pages under new keys (real text; the
    // corpus is too small to hold 101 pages back from the build).
    const t2Corpus = t2 && { kind: "docs", docs: [...t2.docs.map(({ id, title, body }) => ({ id, title, body })), ...t2.docs.slice(0, 101).map(({ id, title, body }) => ({ id: `${id}#copy`, title, body }))] };
    const corpora = [...CFG.textSizes.map((n) => [`T1-${n}`, { kind: "zipf", n, seed: CFG.seed }]), ...(t2Corpus ? [["T2", t2Corpus]] : [])];
    // The text phase also runs each T1 size of BENCH_TEXT_PASSAGES with sources (after its
    // plain run, so the two rows of a library come from one run).
    const textCorpora = corpora.flatMap(([name, c]) => [[name, c], ...(c.kind === "zipf" && CFG.textPassages.includes(c.n) ? [[`${name}+passages`, { ...c, sources: Math.round(c.n / 10) }]] : [])]);
    if (CFG.phases.includes("text")) { R.text = await textPhase(textCorpora); save(); }
    if (CFG.phases.includes("hybrid")) {
      R.hybrid = {};
      for (const [name, corpus] of corpora) {
        log(`hybrid ${name}`);
        try { R.hybrid[name] = await fresh("hybridBench", { corpus, nQueries: CFG.queries, querySeed: CFG.seed + 1 }); } catch (e) { R.hybrid[name] = { error: e.message }; }
      }
      save();
    }
    if (CFG.phases.includes("vectors")) {
      // With BENCH_MERGE, new rows replace the same (set, rows, library) and keep the others.
      const fresh = await vectorPhase();
      const id = (r) => `${r.kind}/${r.n}/${r.lib}`;
      const keep = (R.vectors || []).filter((r) => !fresh.some((f) => id(f) === id(r)));
      const order = ["js-exact", "llm-wiki-exact", "llm-wiki-product", "llm-wiki-graph", "hnswlib-wasm", "edgevec", "voy"];
      R.vectors = [...keep, ...fresh].sort((a, b) => a.kind.localeCompare(b.kind) || a.n - b.n || order.indexOf(a.lib) - order.indexOf(b.lib));
      save();
    }
    if (CFG.phases.includes("tokens") && t2) { R.tokens = await tokenPhase(t2); save(); }
    if (CFG.phases.includes("scale")) {
      R.scale = await scalePhase();
      save();
      mkdirSync(dirname(CFG.scaleSvg), { recursive: true });
      writeFileSync(CFG.scaleSvg, scaleSvg(R.scale));
      log(`scale: plot written to ${CFG.scaleSvg}`);
    }
  } finally {
    R.finished = new Date().toISOString();
    R.goals = goals(R);
    save();
    await browser.close();
    site.close();
  }
  console.log(report(R));
  console.log(`\nJSON: ${CFG.out}`);
}

if (env("BENCH_REPORT_ONLY", "0") === "1") {
  // Prints the tables of an existing BENCH_OUT without running anything.
  const R = JSON.parse(readFileSync(CFG.out, "utf8"));
  Object.assign(CFG, { vecKinds: R.config.vecKinds, vecSizes: R.config.vecSizes });
  console.log(report(R));
} else {
  main().catch((e) => { console.error(e); process.exit(1); });
}
