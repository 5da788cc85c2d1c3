// Mozilla Readability's own test pages (`test/test-pages/<name>/{source,expected}.html` in
// mozilla/readability), run through the app's HTML → markdown converter (www/build/convert.js)
// and through plain Readability, in a page of headless Chromium. Each is scored by the recall of
// the expected article's words: the share of its word occurrences (each CJK character a word)
// that the output also holds, counted with multiplicity (and by precision, the other way round). Used by tests/e2e/readability.test.mjs
// (the vendored pages) and bench/readability.mjs (any checkout of the full set).
import { readFileSync, readdirSync, existsSync } from "node:fs";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const READABILITY_JS = require.resolve("@mozilla/readability/Readability.js");

/** The page names under `dir` that hold both `source.html` and `expected.html`, sorted. */
export function pageNames(dir) {
  return readdirSync(dir)
    .filter((n) => existsSync(`${dir}/${n}/source.html`) && existsSync(`${dir}/${n}/expected.html`))
    .sort();
}

/**
 * Scores every page of `names` under `dir` in `page` (a page of the app's origin, which serves
 * /build/convert.js). Resolves to [{ name, ours, plain, oursPrecision, plainPrecision,
 * oursWarned }]: the recall of our converter's markdown and of plain Readability's text (0–1),
 * their precision, and whether ours warned of low confidence.
 */
export async function scorePages(page, dir, names) {
  await page.addScriptTag({ content: `${readFileSync(READABILITY_JS, "utf8")}\nwindow.PlainReadability = Readability;` });
  const out = [];
  for (const name of names) {
    const source = readFileSync(`${dir}/${name}/source.html`, "utf8");
    const expected = readFileSync(`${dir}/${name}/expected.html`, "utf8");
    out.push({ name, ...(await page.evaluate(scoreInPage, { source, expected })) });
  }
  return out;
}

async function scoreInPage({ source, expected }) {
  const { htmlToMarkdown } = await import("/build/convert.js");
  const url = "http://fakehost/test/page.html";
  const words = (text) => {
    const counts = new Map();
    const re = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{N}]+/gu;
    for (const [w] of text.toLowerCase().matchAll(re)) counts.set(w, (counts.get(w) || 0) + 1);
    return counts;
  };
  const want = words(new DOMParser().parseFromString(expected, "text/html").body.textContent);
  // Recall: the share of the expected words the output holds; precision: the share of the
  // output's words the expected article holds (what came along with it: chrome, comments).
  const score = (text) => {
    const got = words(text);
    let total = 0, hit = 0, size = 0;
    for (const [w, n] of want) { total += n; hit += Math.min(n, got.get(w) || 0); }
    for (const n of got.values()) size += n;
    return { recall: total ? hit / total : 1, precision: size ? hit / size : 1 };
  };
  const ours = htmlToMarkdown(source, { url });
  // Link and image targets are not text: leave them out so a URL's words do not count.
  const oursText = ours.markdown.replace(/\]\([^)\s]*(\s+"[^"]*")?\)/g, "]");
  const doc = new DOMParser().parseFromString(source, "text/html");
  const plain = new window.PlainReadability(doc).parse();
  const a = score(oursText), b = score(plain?.textContent || "");
  return {
    ours: a.recall, plain: b.recall, oursPrecision: a.precision, plainPrecision: b.precision,
    oursWarned: ours.warnings.some((w) => w.startsWith("low-confidence")),
  };
}
