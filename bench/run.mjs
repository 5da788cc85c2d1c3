// Drives the browser benchmark (scripts/bench.sh builds what it needs first): serves bench/, the
// `--features bench` wasm build (target/bench-pkg) and node_modules to headless Chromium, runs one
// library on one corpus per fresh page, prints tables and writes JSON. Settings: environment
// variables (see BENCHMARKS.md, "Reproduce"); nothing here knows the goals' thresholds except the
// summary that compares against them.
import { createServer } from "node:http";
import { readFileSync, readdirSync, statSync, writeFileSync, existsSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { join, extname, normalize, resolve } from "node:path";
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
};

const log = (...a) => console.error(new Date().toISOString().slice(11, 19), ...a);

// ---------------------------------------------------------------- static server

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript; charset=utf-8", ".mjs": "text/javascript; charset=utf-8", ".wasm": "application/wasm", ".json": "application/json" };
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

async function textPhase(corpora) {
  const results = {};
  for (const [name, corpus] of corpora) {
    results[name] = {};
    for (const lib of CFG.textLibs) {
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
    for (const r of Object.values(results[name])) {
      if (ref && r.queryIds) r.overlapWithMiniSearch = mean(r.queryIds.map((ids, i) => overlap(ids, ref[i]) / Math.max(1, Math.min(10, ref[i].length))));
      delete r.queryIds;
    }
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
  out.push("\n### Goals\n");
  out.push(table(["goal", "measured", "met"], goals(R).map((g) => [g.goal, g.measured, g.met === null ? "not measured" : typeof g.met === "string" ? g.met : g.met ? "yes" : "NO"])));
  return out.join("\n");
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
  return g;
}

// ---------------------------------------------------------------- main

function versions() {
  const pkg = (n) => { try { return JSON.parse(readFileSync(join(root, "node_modules", n, "package.json"), "utf8")).version; } catch { return null; } };
  return {
    rustc: rustVersion(), node: process.version, chromium: browser.version(),
    packages: Object.fromEntries(["minisearch", "@orama/orama", "flexsearch", "lunr", "hnswlib-wasm", "edgevec", "voy-search", "playwright-core", "binaryen", "@mozilla/readability", "turndown"].map((n) => [n, pkg(n)])),
    commit: execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: root, encoding: "utf8" }).trim(),
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
    if (CFG.phases.includes("text")) { R.text = await textPhase(corpora); save(); }
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
