// PDF page text from pdf.js text items (www/src/pdf-text.js), field case F47: the items are
// handed straight to the page-text function; the last test stores the text in a wiki in headless
// Chromium and searches it.
import { test, after } from "node:test";
import assert from "node:assert/strict";
import { pageText } from "../../www/src/pdf-text.js";
import { startServer, launch } from "./harness.mjs";

const SIZE = 10;
/** A pdf.js text item at (x, y) in points, font size 10, of the given width. */
const item = (str, x, y, width, { eol = false } = {}) => ({ str, dir: "ltr", transform: [SIZE, 0, 0, SIZE, x, y], width, height: SIZE, fontName: "g_d0_f1", hasEOL: eol });
/** Items of one word each, abutting (gap 0), from x 72, 5 pt per character. */
const abutting = (strs, y) => {
  let x = 72;
  return strs.map((s) => { const it = item(s, x, y, 5 * [...s].length); x += it.width; return it; });
};

/** The field case's ten lines, 14 pt apart. */
function f47Items() {
  const y = (n) => 800 - 14 * n;
  return [
    item("Open", 72, y(1), 22), item("Sans", 97, y(1), 22), item("is", 122, y(1), 8, { eol: true }),
    item("a neu-", 72, y(2), 28, { eol: true }),
    item("tral typeface.", 72, y(3), 60, { eol: true }),
    item("The \uFB01eld \uFB02ows", 72, y(4), 62, { eol: true }),
    item("The \uFB01", 72, y(5), 14), item(" eld", 86, y(5), 16, { eol: true }),
    // Digits are about 0.56 em wide: 256 ends at 316.7, 36 at 341.1.
    item("256", 300, y(6), 16.7), item("36", 330, y(6), 11.1), item("30", 350, y(6), 11.1, { eol: true }),
    ...abutting(["H", "e", "l", "l", "o"], y(7)),
    ...abutting(["机器", "学习"], y(8)),
    item("Jean-", 72, y(9), 24, { eol: true }),
    item("Paul wrote it.", 72, y(10), 60, { eol: true }),
  ];
}

test("F47: gaps become spaces, zero gaps and CJK stay joined, numbers stay apart", () => {
  const lines = pageText(f47Items()).split("\n");
  assert.ok(lines.includes("Open Sans is"), JSON.stringify(lines));
  assert.ok(lines.includes("256 36 30"), JSON.stringify(lines));
  assert.ok(lines.includes("Hello"), JSON.stringify(lines));
  assert.ok(lines.includes("机器学习"), JSON.stringify(lines));
});

test("F47: a line-end hyphen before a lowercase continuation is joined; Jean-Paul keeps its hyphen", () => {
  const text = pageText(f47Items());
  assert.ok(text.split("\n").includes("a neutral typeface."), text);
  assert.ok(text.includes("Jean-Paul wrote it."), text);
  assert.ok(!/neu-|neu tral/.test(text), text);
});

test("F47: ligatures are expanded and the space a broken ligature leaves is removed", () => {
  const lines = pageText(f47Items()).split("\n");
  assert.ok(lines.includes("The field flows"), JSON.stringify(lines));
  assert.ok(lines.includes("The field"), JSON.stringify(lines));
  assert.doesNotMatch(lines.join("\n"), /[\uFB00-\uFB06]/);
  // Inside one item too, and for ﬃ/ﬄ; a word ending in ﬀ keeps the space before the next word.
  assert.equal(pageText([item("a \uFB01 eld of e\uFB03 cient o\uFB04 ine sta\uFB00 meeting", 72, 700, 200)]), "a field of efficient offline staff meeting");
});

test("F47: the words a search looks for are in the text as a reader sees them, quotes in one run", () => {
  const text = pageText(f47Items());
  for (const needle of ["field", "neutral", "Open Sans", "flows", "Jean-Paul"]) assert.ok(text.includes(needle), `${needle} not in ${text}`);
  // A quote taken across the joined line end is in the text as one run.
  assert.ok(text.includes("a neutral typeface."));
});

test("F47: a wide gap without a space character inside one baseline still separates words; tight kerning does not", () => {
  // 0.1 em apart: kerning inside a word; 0.3 em: a word space drawn as a move.
  assert.equal(pageText([item("Ker", 72, 700, 15), item("ning", 88, 700, 20)]), "Kerning");
  assert.equal(pageText([item("two", 72, 700, 15), item("words", 90, 700, 25)]), "two words");
  // Items that already carry their spaces get no second one.
  assert.equal(pageText([item("two ", 72, 700, 18), item("words", 95, 700, 25)]), "two words");
});

test("pageText keeps the line and paragraph structure of the old joiner", () => {
  const items = [
    item("First line", 72, 700, 50, { eol: true }), { str: "", transform: [SIZE, 0, 0, SIZE, 122, 700], width: 0, height: 0, hasEOL: true },
    item("second line", 72, 686, 55, { eol: true }),
    { type: "beginMarkedContent" },
    item("New paragraph", 72, 640, 65, { eol: true }),
  ];
  assert.equal(pageText(items), "First line\nsecond line\n\nNew paragraph");
});

let server, browser;
after(async () => { await browser?.close(); server?.stop(); });

test("F47: the page text stored as a source is found by searching field, neutral and Open Sans, and compiles offline", { timeout: 120_000 }, async () => {
  server = await startServer();
  browser = await launch();
  const page = await browser.newPage();
  await page.goto(`${server.url}build/convert.js`);
  const text = `${pageText(f47Items())}\n`;
  const r = await page.evaluate(async (text) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    await Wiki.delete("f47-search").catch(() => {});
    const w = await Wiki.open("f47-search");
    try {
      await w.addSource({ key: "file:typefaces.pdf", title: "Typefaces", mime: "text/plain", content: text });
      const report = await w.compile();
      const hits = {};
      for (const q of ["field", "neutral", "Open Sans", "Jean-Paul"]) hits[q] = (await w.search(q, { k: 5, mode: "bm25" })).hits.map((h) => h.key);
      return { stored: (await w.source("file:typefaces.pdf")).text, compiled: report.compiled.length, hits };
    } finally { w.close(); await Wiki.delete("f47-search"); }
  }, text);
  assert.equal(r.stored, text);
  assert.equal(r.compiled, 1);
  for (const [q, keys] of Object.entries(r.hits)) assert.ok(keys.length > 0, `no hit for ${q}: ${JSON.stringify(r.hits)}`);
});
