// The figure behind `vectors::GRAPH_EVAL_COST` in V8's wasm (Node 20 runs Chromium's engine):
// graph search time per distance evaluation ÷ simd128 exact-scan time per row, with the
// `--features bench` build's BenchVectors (a graph kept by the product's calibration).
//   CARGO_PROFILE_RELEASE_LTO=false CARGO_PROFILE_RELEASE_OPT_LEVEL=3 \
//     cargo build --release --lib --target wasm32-unknown-unknown --features bench
//   wasm-bindgen --target nodejs --out-dir target/eval-cost-pkg \
//     target/wasm32-unknown-unknown/release/llm_wiki.wasm
//   node bench/eval-cost.mjs [rows=10000] [dim=384] [clustered|random]
import { createRequire } from "node:module";
import { writeFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
const require = createRequire(import.meta.url);
const pkg = fileURLToPath(new URL("../target/eval-cost-pkg/", import.meta.url));
writeFileSync(`${pkg}package.json`, '{ "type": "commonjs" }\n'); // wasm-bindgen's nodejs glue is CommonJS
const m = require(`${pkg}llm_wiki.js`);
const [n, dim, kind] = [Number(process.argv[2] || 10000), Number(process.argv[3] || 384), process.argv[4] || "clustered"];
const mask = (1n << 64n) - 1n;
let x = 88172645463325252n;
const r = () => { x ^= (x << 13n) & mask; x ^= x >> 7n; x ^= (x << 17n) & mask; return Number(x >> 11n) / 2 ** 53 * 2 - 1; };
const centres = Array.from({ length: Math.max(10, n / 100) }, () => Float32Array.from({ length: dim }, r));
const row = () => { if (kind === "random") return Float32Array.from({ length: dim }, r); const c = centres[Math.floor((r() + 1) / 2 * centres.length) % centres.length]; return c.map((v) => v + 0.4 * r()); };
const v = new m.BenchVectors(dim);
const flat = new Float32Array(n * dim);
for (let i = 0; i < n; i++) flat.set(row(), i * dim);
v.append(flat);
const qs = Array.from({ length: 200 }, row);
const exact = [];
const te = [];
for (const q of qs) { const a = performance.now(); exact.push(v.searchExact(q, 10)); te.push(performance.now() - a); }
const t = performance.now();
v.rebuildGraph();
const build = (performance.now() - t) / 1000;
console.log(`n=${n} dim=${dim} ${kind} graph=${v.hasGraph()} ef=${v.efSearch()} build+calibrate ${build.toFixed(1)} s`);
if (!v.hasGraph()) process.exit(0);
const th = [];
let found = 0;
const e0 = m.distanceEvaluations();
for (const [i, q] of qs.entries()) { const a = performance.now(); const h = v.search(q, 10); th.push(performance.now() - a); found += h.filter((d) => exact[i].includes(d)).length; }
const evals = (m.distanceEvaluations() - e0) / qs.length;
const p50 = (a) => a.slice().sort((x, y) => x - y)[a.length >> 1];
const [e50, h50] = [p50(te), p50(th)];
console.log(`exact p50 ${e50.toFixed(3)} ms, graph p50 ${h50.toFixed(3)} ms (${(h50 / e50).toFixed(2)}x), recall@10 ${(found / 2000).toFixed(3)}, ${evals.toFixed(0)} evals/query, cost/eval ÷ cost/row ${((h50 / evals) / (e50 / n)).toFixed(2)}`);
