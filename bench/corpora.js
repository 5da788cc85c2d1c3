// Corpora and queries with fixed seeds, generated identically in every page (no data is passed
// between pages, so each library runs in a fresh page on the same bytes).

/** sfc32 (Small Fast Counter, 128-bit state), seeded from one integer; fast enough for 38M floats. */
export class Rng {
  constructor(seed) {
    this.a = 0x9e3779b9; this.b = 0x243f6a88; this.c = 0xb7e15162; this.d = seed >>> 0;
    for (let i = 0; i < 15; i++) this.u32();
  }
  u32() {
    const t = (((this.a + this.b) | 0) + this.d) | 0;
    this.d = (this.d + 1) | 0;
    this.a = this.b ^ (this.b >>> 9);
    this.b = (this.c + (this.c << 3)) | 0;
    this.c = (this.c << 21) | (this.c >>> 11);
    this.c = (this.c + t) | 0;
    return t >>> 0;
  }
  /** Uniform in [0, 1). */
  unit() { return this.u32() / 4294967296; }
  /** Uniform integer in [0, n). */
  int(n) { return Math.floor(this.unit() * n); }
  /** Zipf(s = 1) over n ranks by inverse CDF on the harmonic approximation. */
  zipf(n) {
    const h = Math.log(n) + 0.5772;
    const r = Math.exp(this.unit() * h - 0.5772);
    return Math.min(Math.floor(r), n - 1);
  }
  /** Standard normal (Box–Muller). */
  normal() {
    const u = 1 - this.unit(), v = this.unit();
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * v);
  }
}

const SYL = ["ka", "to", "ri", "mu", "se", "na", "lo", "pe", "di", "ga", "vo", "zu", "be", "xi", "ho", "ne"];
/** A pseudo-word for rank r: short for frequent ranks, like natural language. */
export function word(r) {
  let s = "", x = r + 1;
  while (x > 0) { s += SYL[x % 16]; x = Math.floor(x / 16); }
  return s;
}

export const ZIPF_VOCAB = 20000;
export const ZIPF_WORDS = 300;

/**
 * T1: n synthetic pages, titles of 3 Zipf words, bodies of 150–449 Zipf words (mean ~300) over a
 * 20k-word vocabulary. `extra` more pages (for the incremental adds) follow the first n.
 */
export function zipfPages(n, seed, extra = 0) {
  const rng = new Rng(seed ^ n);
  const pages = [];
  for (let i = 0; i < n + extra; i++) {
    const title = [0, 1, 2].map(() => word(rng.zipf(ZIPF_VOCAB))).join(" ");
    const len = ZIPF_WORDS / 2 + rng.int(ZIPF_WORDS);
    const words = new Array(len);
    for (let j = 0; j < len; j++) words[j] = word(rng.zipf(ZIPF_VOCAB));
    pages.push({ id: `page-${i}`, title, body: words.join(" ") });
  }
  return pages;
}

export const SOURCE_WORDS = 1000;

/**
 * Synthetic sources for the passage index: `count` markdown texts of 500–1499 Zipf words (mean
 * ~1000) over the pages' vocabulary, seeded. Each: a `#` title of 3 words, then sections under
 * `##` headings of 2 words, each of 2–4 paragraphs of 2–5 sentences of 8–20 words (a capital
 * first letter, a full stop), so the product's passage cutter groups paragraphs under headings
 * as it does in real notes.
 */
export function zipfSources(count, seed) {
  const rng = new Rng((seed ^ count) + 0x50c5);
  const w = () => word(rng.zipf(ZIPF_VOCAB));
  const out = [];
  for (let i = 0; i < count; i++) {
    const title = [w(), w(), w()].join(" ");
    const target = SOURCE_WORDS / 2 + rng.int(SOURCE_WORDS);
    const lines = [`# ${title}`];
    let words = 0;
    while (words < target) {
      lines.push("", `## ${w()} ${w()}`);
      const paragraphs = 2 + rng.int(3);
      for (let p = 0; p < paragraphs && words < target; p++) {
        const sentences = [];
        const ns = 2 + rng.int(4);
        for (let j = 0; j < ns; j++) {
          const len = 8 + rng.int(13);
          const ws = Array.from({ length: len }, w);
          ws[0] = ws[0][0].toUpperCase() + ws[0].slice(1);
          sentences.push(`${ws.join(" ")}.`);
          words += len;
        }
        lines.push("", sentences.join(" "));
      }
    }
    out.push({ key: `source-${i}`, title, text: `${lines.join("\n")}\n`, words });
  }
  return out;
}

/**
 * Queries: 1–3 words taken from a random page of the corpus (so every query has matches and
 * follows the corpus' word distribution), seeded.
 */
export function queriesFrom(pages, count, seed) {
  const rng = new Rng(seed);
  const out = [];
  while (out.length < count) {
    const p = pages[rng.int(pages.length)];
    const words = p.body.toLowerCase().match(/[\p{L}\p{N}]{3,}/gu) || [];
    if (words.length === 0) continue;
    const k = 1 + rng.int(3);
    const q = [];
    for (let j = 0; j < k; j++) q.push(words[rng.int(words.length)]);
    out.push(q.join(" "));
  }
  return out;
}

/**
 * V1 (random) / V2 (clustered) unit vectors, `n` base rows and `nq` queries, `dim`-dimensional,
 * as one Float32Array each. V1: i.i.d. normal components, normalised (uniform on the sphere).
 * V2: n/100 centres (at least 10) uniform on the sphere; a row is a centre plus normal noise
 * (σ = 0.6/√dim per component, so noise norm ≈ 0.6), normalised; queries drawn the same way.
 */
export function vectors(kind, n, nq, dim, seed) {
  const rng = new Rng(seed ^ n ^ (kind === "V2" ? 0x5a5a : 0));
  const unitRow = (out, off) => {
    let s = 0;
    for (let j = 0; j < dim; j++) s += out[off + j] * out[off + j];
    const inv = 1 / Math.sqrt(s);
    for (let j = 0; j < dim; j++) out[off + j] *= inv;
  };
  let centres = null;
  if (kind === "V2") {
    const c = Math.max(10, Math.floor(n / 100));
    centres = new Float32Array(c * dim);
    for (let i = 0; i < c * dim; i++) centres[i] = rng.normal();
    for (let i = 0; i < c; i++) unitRow(centres, i * dim);
  }
  const sigma = 0.6 / Math.sqrt(dim);
  const fill = (count) => {
    const out = new Float32Array(count * dim);
    for (let i = 0; i < count; i++) {
      const off = i * dim;
      if (centres) {
        const c = rng.int(centres.length / dim) * dim;
        for (let j = 0; j < dim; j++) out[off + j] = centres[c + j] + sigma * rng.normal();
      } else {
        for (let j = 0; j < dim; j++) out[off + j] = rng.normal();
      }
      unitRow(out, off);
    }
    return out;
  };
  const base = fill(n);
  const queries = fill(nq);
  return { base, queries, dim, n, nq };
}

export function percentile(values, p) {
  const v = [...values].sort((a, b) => a - b);
  return v[Math.round((v.length - 1) * p)];
}
