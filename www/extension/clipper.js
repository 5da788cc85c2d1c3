// What the popup does with the page in the current tab: read it, turn it into a source (the app's
// own HTML → markdown module, Decision 2), and find what the wiki already says about it.
import { htmlToMarkdown } from "./app/build/convert.js";

/**
 * The page in tab `tabId`: its live DOM as HTML (what the reader sees, after scripts ran), URL and
 * title. Needs the `activeTab` grant (opening the popup gives it) or a host permission.
 */
export async function readTab(tabId) {
  const [result] = await chrome.scripting.executeScript({
    target: { tabId },
    func: () => ({
      html: `${document.doctype ? "<!DOCTYPE html>\n" : ""}${document.documentElement.outerHTML}`,
      url: location.href,
      title: document.title,
    }),
  });
  if (!result || !result.result) throw new Error("the page returned nothing");
  return result.result;
}

/**
 * The source key of a page: its URL without the fragment and without `utm_*` tracking
 * parameters, so the same article read from a link with `#section` or `?utm_source=…` is the same
 * source (Decision 1: the URL is the key).
 */
export function sourceKey(url) {
  const u = new URL(url);
  u.hash = "";
  for (const name of [...u.searchParams.keys()]) {
    if (/^utm_/i.test(name)) u.searchParams.delete(name);
  }
  return u.href;
}

/**
 * The page as an `addSource` input: markdown of the main content, the original HTML as the raw
 * artifact, the URL as the key and the capture time. `warnings` are the converter's
 * (low-confidence extraction, field case F23): such a clip is stored but not compiled unasked.
 */
export function toSource(page, capturedAt = Date.now()) {
  const converted = htmlToMarkdown(page.html, { url: page.url });
  const key = sourceKey(page.url);
  return {
    converted,
    input: {
      title: converted.title,
      key,
      url: key,
      mime: "text/markdown",
      content: converted.markdown,
      original: new TextEncoder().encode(page.html),
      originalMime: "text/html",
      capturedAt,
    },
  };
}

/** Plain text of markdown, roughly: no link targets, images, emphasis marks or footnote markers. */
function plainText(markdown) {
  return markdown
    .replace(/```[\s\S]*?```/g, " ")
    .replace(/!\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[([^\]]*)\]\([^)]*\)/g, "$1")
    .replace(/\[\^[^\]]+\]:?/g, " ")
    .replace(/[#>*_`|~-]+/g, " ")
    .replace(/\s+/g, " ")
    .trim();
}

/** The search query for a page: its title and the start of its main text (about 600 characters). */
export function recallQuery(converted, chars = 600) {
  const body = plainText(converted.markdown.replace(/^# .*\n/, ""));
  return `${converted.title} ${[...body].slice(0, chars).join("")}`.trim();
}

/** A side of a contradiction callout as plain text: links as their titles, no footnote marks. */
function plainSide(line) {
  return line
    .replace(/^\s*-\s+/, "")
    .replace(/\[\[([^\]|]+)(?:\\?\|([^\]]+))?\]\]/g, (_m, key, shown) => (shown || key).trim())
    .replace(/\[\^[^\]]+\]/g, "")
    .replace(/\*\*/g, "")
    .trim();
}

/**
 * The open contradictions on a page: its `> [!contradiction] … (id)` callouts (Decision 4: the
 * app renders every open ledger record into both pages), as `{ id, description }`.
 */
export function contradictionsIn(body) {
  const found = [];
  const lines = body.split("\n");
  for (let i = 0; i < lines.length; i++) {
    const head = lines[i].match(/^>\s*\[!contradiction\][-+]?\s*(.*)$/i);
    if (!head) continue;
    const id = (head[1].match(/\(([^()]+)\)\s*$/) || [])[1] || head[1];
    const text = [], sides = [];
    for (let j = i + 1; j < lines.length && /^>/.test(lines[j]); j++) {
      const line = lines[j].replace(/^>\s?/, "");
      // After the description, one list item per side: "- [[Page]]: the claim. [^c1]".
      if (/^\s*-\s/.test(line)) sides.push(plainSide(line));
      else if (line.trim() && !sides.length) text.push(line.trim());
    }
    found.push({ id, description: text.join(" ") || head[1], sides });
  }
  return found;
}

/**
 * Words too common to show that a page is about the same thing (after NFKC + case folding, as the
 * search tokenizer gives them): English function words and Chinese single-character particles.
 * CJK bigrams are never in it.
 */
const COMMON = new Set([
  ..."a an the and or but if of to in on at by for with from as into onto over under than then so not no nor is are was were be been being am do does did done has have had having it its this that these those there here which who whom whose what when where why how all any both each few more most other some such only own same too very can will just should would could may might must shall about above after again against before below between during further once out off up down through until while because i you he she we they me him her us them my your his our their also".split(" "),
  ..."的了是在和与及也就都而但或一个这那有为以于之其中上下不到对等着把被从很还又再更已所吧吗呢啊".split(""),
]);

/**
 * What the wiki already says about a page: the pages that match its title and main text (BM25
 * over the wiki's search index), with their one-line summaries, and the open contradictions on
 * them. A page counts when it matches at least `minTerms` distinct query terms that are not
 * common words and — in a wiki large enough to tell — not in every page, and scores at least
 * `minShare` of the best hit; a page that only shares common words with the article is left out.
 */
export async function recall(wiki, converted, { k = 6, minShare = 0.3, minTerms = 3 } = {}) {
  const query = recallQuery(converted);
  const [results, infos] = await Promise.all([
    wiki.search(query, { k: k * 2, mode: "bm25", explain: true }),
    wiki.pages(),
  ]);
  const byKey = new Map(infos.map((p) => [p.key, p]));
  const best = results.hits.length ? results.hits[0].score : 0;
  const hits = results.hits.filter((h) => {
    const bm25 = h.explain && h.explain.bm25;
    const n = bm25 ? bm25.docCount : infos.length;
    const informative = (bm25 ? bm25.terms : []).filter((x) =>
      x.contribution > 0 && !COMMON.has(x.term) && (n < 4 || x.docFreq < n));
    return byKey.has(h.key) && informative.length >= minTerms && h.score >= minShare * best;
  }).slice(0, k);
  const pages = hits.map((h) => {
    const p = byKey.get(h.key);
    return { key: p.key, title: p.title, kind: p.kind, summary: p.summary, score: h.score };
  });
  const contradictions = new Map();
  for (const p of pages) {
    const page = await wiki.page(p.key);
    for (const c of contradictionsIn(page ? page.body : "")) {
      const seen = contradictions.get(c.id);
      if (seen) seen.pages.push(p);
      else contradictions.set(c.id, { ...c, pages: [p] });
    }
  }
  return { query, pages, contradictions: [...contradictions.values()] };
}
