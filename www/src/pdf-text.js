// The text of one PDF page from pdf.js text items (F47), without pdf.js itself: www/src/pdf.js
// hands it `page.getTextContent().items`, tests hand it items directly.

/** Ligature code points U+FB00–U+FB06 and what they stand for. */
const LIGATURES = { "\uFB00": "ff", "\uFB01": "fi", "\uFB02": "fl", "\uFB03": "ffi", "\uFB04": "ffl", "\uFB05": "st", "\uFB06": "st" };
/**
 * Ligatures that (almost) never end a word: a space right after one, before a lowercase letter,
 * is a broken glyph mapping ("ﬁ eld"), not a word break. ﬀ and ﬅ/ﬆ do end words ("staﬀ",
 * "beﬆ"), so a space after them stays.
 */
const WORD_INNER_LIGATURE = /[\uFB01-\uFB04]$/;
/** A gap wider than this fraction of the font size between two items is a word space. */
const SPACE_GAP_EM = 0.2;
/** Scripts written without spaces between words: Han, kana, CJK punctuation, full-width forms. */
const CJK = /[\u2E80-\u2FFF\u3000-\u30FF\u3400-\u4DBF\u4E00-\u9FFF\uF900-\uFAFF\uFF00-\uFFEF\u{20000}-\u{3FFFF}]/u;

const expand = (s) => s.replace(/[\uFB00-\uFB06]/g, (c) => LIGATURES[c]);
const lastChar = (s) => [...s].pop() || "";
const firstChar = (s) => [...s][0] || "";

/** The font size of an item: its text matrix's vertical scale, else its height. */
function fontSize(it) {
  const t = it.transform;
  const fromMatrix = t ? Math.hypot(t[2], t[3]) : 0;
  return fromMatrix || it.height || 0;
}

/**
 * Joins the items of one line. Between two items a space goes in when neither side has one and
 * the horizontal gap exceeds `SPACE_GAP_EM` of the font size, except between two CJK characters.
 * A space that a broken ligature put in ("ﬁ" + " eld") is taken out. Ligatures are expanded.
 */
function joinLine(items) {
  let text = "";
  let prev = null;
  for (const it of items) {
    let str = it.str;
    if (prev && text) {
      const before = lastChar(text);
      const raw = prev.str;
      if (/^\s+\p{Ll}/u.test(str) && WORD_INNER_LIGATURE.test(raw)) str = str.replace(/^\s+/, "");
      else if (!/\s$/.test(text) && !/^\s/.test(str) && str) {
        const size = Math.max(fontSize(prev), fontSize(it), 1);
        const end = prev.transform && prev.width ? prev.transform[4] + prev.width : null;
        const start = it.transform ? it.transform[4] : null;
        const gap = end !== null && start !== null ? start - end : 0;
        const cjk = CJK.test(before) && CJK.test(firstChar(str));
        if (!cjk && (gap > SPACE_GAP_EM * size || gap < -2 * size)) text += " ";
      }
    }
    text += str;
    if (it.str) prev = it;
  }
  // The same broken space inside one item: "The ﬁ eld".
  return expand(text.replace(/([\uFB01-\uFB04]) +(?=\p{Ll})/gu, "$1"));
}

/**
 * The text of one page, line by line: an item ending a line (`hasEOL`) or a move to another
 * baseline ends the line; a vertical gap clearly wider than the line height starts a paragraph
 * (a blank line). A line ending in a letter and a hyphen is joined with the next: the hyphen is
 * dropped before a lowercase continuation ("neu-" "tral" → "neutral") and kept otherwise
 * ("Jean-" "Paul" → "Jean-Paul").
 * @param {Array<{str?: string, transform?: number[], width?: number, height?: number, hasEOL?: boolean}>} items
 *   pdf.js text items (`transform` = [a, b, c, d, x, y] in points; marked-content items have no `str`)
 * @returns {string} the page's text, lines separated by "\n", no trailing line break
 */
export function pageText(items) {
  const lines = []; // { text } or null for a paragraph break
  let line = [];
  let lastY = null;
  let lastH = 0;
  const flush = () => {
    const text = joinLine(line).replace(/[ \t\u00a0]+/g, " ").trim();
    line = [];
    if (text) lines.push(text);
  };
  for (const it of items) {
    if (typeof it.str !== "string") continue; // marked-content markers
    const y = it.transform ? it.transform[5] : null;
    const h = it.height || lastH;
    if (lastY !== null && y !== null && line.length && Math.abs(y - lastY) > Math.max(h, lastH) * 0.5) flush();
    if (lastY !== null && y !== null && Math.abs(y - lastY) > Math.max(h, lastH, 1) * 1.8 && lines.length && lines[lines.length - 1] !== null) {
      lines.push(null);
    }
    line.push(it);
    if (y !== null) { lastY = y; lastH = h || lastH; }
    if (it.hasEOL) flush();
  }
  if (line.length) flush();
  // Line-end hyphens.
  const out = [];
  for (const l of lines) {
    const prev = out.length ? out[out.length - 1] : null;
    if (l !== null && prev && /\p{L}[-\u2010\u00ad]$/u.test(prev)) {
      const keep = !/^\p{Ll}/u.test(l) && !prev.endsWith("\u00ad");
      out[out.length - 1] = prev.slice(0, keep ? prev.length : -1) + l;
    } else out.push(l);
  }
  return out.map((l) => (l === null ? "" : l)).join("\n").replace(/\n{3,}/g, "\n\n").trim();
}
