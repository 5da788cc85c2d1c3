// HTML → markdown, shared by the app and the clipper extension (Decision 2): DOMParser +
// Readability (article extraction) + Turndown (markdown). Runs in any page or extension context
// with a DOM. Bundled by esbuild into www/build/convert.js (scripts/build.sh).
import { Readability } from "@mozilla/readability";
import TurndownService from "turndown";
// Only these two of the GFM plugin: its tables rule keeps every table without a header row as raw
// HTML and lets pipes and block content break rows (F40), and its code rule knows one wrapper
// shape (F41); both are replaced below.
import { strikethrough, taskListItems } from "turndown-plugin-gfm";
import { normaliseCode, normaliseImages, normaliseMath } from "./convert-dom.js";
import { tableRule, tableFragments } from "./convert-tables.js";

/** Never text a reader sees: removed before anything else. */
const NON_CONTENT = "script, style, noscript, template, iframe";
/** Page chrome by its element or role: navigation, footers, banners, search. */
const SEMANTIC_CHROME = ["nav", "footer", "header[role=banner]", "[role=navigation]", "[role=contentinfo]", "[role=search]"];
/** Dialogs by their role. */
const DIALOGS = ["[role=dialog]", "[aria-modal=true]"];
/** Consent banners by their names. */
const CONSENT = ["[id*=cookie i]", "[class*=cookie i]", "[id*=consent i]", "[class*=consent i]", "[id*=gdpr i]", "[class*=gdpr i]"];
/**
 * Overlays over the article (consent banners, dialogs): removed unless they hold the page's main
 * heading. Not by their share of the text: a banner can be longer than a short article (F23).
 */
const OVERLAY_SELECTORS = [...DIALOGS, ...CONSENT, "[id*=popup i]", "[class*=popup i]", "[id*=modal i]", "[class*=modal i]"];
/**
 * Chrome around the article (navigation, footers, sidebars) and hidden elements: removed unless
 * they hold the page's main heading or most of its text. A content wrapper's name often mentions
 * the chrome beside it (`contentWithSidebar`, `l-sidebar-fixed l-article-body-segment`), and a
 * page behind a consent dialog is often marked hidden while the dialog shows.
 */
const LAYOUT_SELECTORS = [...SEMANTIC_CHROME, "[id*=sidebar i]", "[class*=sidebar i]", "[hidden]", "[aria-hidden=true]", "[class~=hidden]"];
/**
 * What is chrome by its role or its purpose, not by a guess from a class name: navigation,
 * footers, dialogs and consent banners. Text of these never belongs in the article.
 */
const CERTAIN_CHROME = [...SEMANTIC_CHROME, ...DIALOGS, ...CONSENT].join(",");

/** Hidden elements: removed as above; never counted as an overlay that hid the article. */
const HIDDEN = "[hidden], [aria-hidden=true], [class~=hidden]";
/**
 * Elements that are text, not a region of the page: a name matching the selectors above
 * (`<a class="popup">`, a comment form's `<p class="comment-form-cookies-consent">`) does not make
 * them chrome. Hidden ones are still removed.
 */
const NOT_A_REGION = [
  "a, abbr, b, bdi, cite, code, em, i, kbd, mark, q, s, small, span, strong, sub, sup, time, u",
  "p, li, dd, dt, td, th, label, input, button, select, textarea, option",
].join(", ");

const squash = (text) => (text || "").replace(/\s+/g, " ").trim();

/** The words of `text`, lower-cased: runs of letters and digits, each CJK character one word. */
const WORD = /[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}\p{Script=Hangul}]|[\p{L}\p{N}]+/gu;

/** The share of `want`'s distinct words that `got` also holds (1 when `want` has none). */
function wordRecall(want, got) {
  const words = new Set(want.toLowerCase().match(WORD) || []);
  if (!words.size) return 1;
  const have = new Set(got.toLowerCase().match(WORD) || []);
  let hit = 0;
  for (const w of words) if (have.has(w)) hit++;
  return hit / words.size;
}

function textLength(node) {
  return squash(node.textContent).length;
}

/**
 * The media type and decoded size in bytes of a `data:` URI, or `null` when it holds next to
 * nothing (a lazy-loading placeholder of a few bytes, which stands for no image at all).
 */
function dataUri(uri) {
  const comma = uri.indexOf(",");
  if (comma < 0) return null;
  const head = uri.slice(5, comma);
  const payload = uri.length - comma - 1;
  const mime = (head.split(";")[0] || "application/octet-stream").toLowerCase();
  const bytes = /;base64$/i.test(head)
    ? Math.floor((payload * 3) / 4) - (uri.endsWith("==") ? 2 : uri.endsWith("=") ? 1 : 0)
    : payload;
  return bytes < 256 ? null : { mime, bytes };
}

function formatBytes(n) {
  return n < 1024 ? `${n} B` : n < 1024 * 1024 ? `${(n / 1024).toFixed(1)} KB` : `${(n / 1048576).toFixed(1)} MB`;
}

function turndown() {
  const td = new TurndownService({
    headingStyle: "atx", codeBlockStyle: "fenced", bulletListMarker: "-", emDelimiter: "*",
  });
  td.use([strikethrough, taskListItems]);
  td.addRule("table", tableRule(td));
  td.addRule("tableFragment", tableFragments);
  // Math marked by normaliseMath: its TeX verbatim, `$…$` inline, `$$…$$` on its own lines (F42).
  td.addRule("math", {
    filter: (node) => node.nodeName === "SPAN" && /\bllm-wiki-math-(inline|display)\b/.test(node.className),
    replacement: (_content, node) => {
      const tex = node.textContent.replace(/\s+/g, " ").trim().replace(/(?<!\\)\$/g, "\\$");
      if (!tex) return "";
      return node.classList.contains("llm-wiki-math-display") ? `\n\n$$${tex}$$\n\n` : `$${tex}$`;
    },
  });
  // Footnote references (<sup><a href="#fn1">1</a></sup>) become markdown footnotes [^fn1].
  td.addRule("footnoteRef", {
    filter: (node) => node.nodeName === "SUP" && node.querySelector("a[href^='#']") && textLength(node) < 8,
    replacement: (_content, node) => `[^${node.querySelector("a").getAttribute("href").slice(1)}]`,
  });
  // Their definitions (<li id="fn1">…</li> in a list of footnotes) become [^fn1]: text.
  td.addRule("footnoteDef", {
    filter: (node) => node.nodeName === "LI" && node.id && node.ownerDocument.querySelector(`a[href="#${CSS.escape(node.id)}"]`),
    replacement: (content, node) => `\n[^${node.id}]: ${content.trim().replace(/\n+/g, " ")}\n`,
  });
  // In-page anchors (heading self-links, "Listing 8-1" references) are plain text in markdown.
  td.addRule("inPageAnchor", {
    filter: (node) => node.nodeName === "A" && (node.getAttribute("href") || "").startsWith("#"),
    replacement: (content) => content,
  });
  // Images: keep alt text and the URL as a link; the renderer never fetches remote images itself.
  // An image inlined as a `data:` URI becomes a placeholder with its alt text, type and size: its
  // base64 would reach the model, the estimate and the search index as text (F43).
  td.addRule("image", {
    filter: "img",
    replacement: (_c, node) => {
      const src = node.getAttribute("src") || "";
      const alt = (node.getAttribute("alt") || "").replace(/[\[\]]/g, "");
      if (/^data:/i.test(src)) {
        const data = dataUri(src);
        return data ? `[image: ${td.escape(alt.replace(/\s+/g, " ").trim()) || "untitled"} (${data.mime}, ${formatBytes(data.bytes)}, inline data not kept)]` : alt;
      }
      return src ? `![${alt}](${src})` : alt;
    },
  });
  return td;
}

/**
 * Converts an HTML document to markdown.
 * @param {string} html the page's HTML
 * @param {{url?: string}} [options] the page URL (resolves relative links; becomes the source key)
 * @returns {{title: string, markdown: string, byline?: string, excerpt?: string, warnings: string[]}}
 */
export function htmlToMarkdown(html, options = {}) {
  const warnings = [];
  const doc = new DOMParser().parseFromString(html, "text/html");
  // Lazy-loaded images get their real URL from data-src / srcset (F43); code blocks become one
  // <pre><code> shape (F41); math is read from its TeX or MathML before scripts and hidden copies
  // are dropped (F42).
  normaliseImages(doc);
  normaliseCode(doc);
  normaliseMath(doc);
  // Make links and images absolute against the page's URL (a parsed document's own base is the
  // app's URL, which would be wrong); in-page anchors stay as they are.
  for (const [selector, attr] of [["a[href]", "href"], ["img[src]", "src"]]) {
    for (const el of doc.querySelectorAll(selector)) {
      const value = el.getAttribute(attr);
      if (value.startsWith("#")) continue;
      // Inline data: kept on images (the image rule turns it into a placeholder), never as a link.
      if (/^data:/i.test(value.trim())) {
        if (attr === "href") el.removeAttribute(attr);
        continue;
      }
      try {
        if (options.url) el.setAttribute(attr, new URL(value, options.url).href);
        else if (!/^[a-z][a-z0-9+.-]*:/i.test(value)) el.removeAttribute(attr);
      } catch {
        el.removeAttribute(attr);
      }
    }
  }
  const pageTitle = (doc.querySelector("title")?.textContent || "").trim();
  for (const el of doc.querySelectorAll(NON_CONTENT)) el.remove();
  // The page as it is now, for plain Readability's opinion below.
  const untouched = doc.cloneNode(true);
  const overlay = OVERLAY_SELECTORS.join(",");
  // The article's heading: the first h1 of an article or main element, else the page's first,
  // never one inside an overlay (a consent dialog's "We value your privacy").
  const headingEl = ["article h1", "main h1", "[role=main] h1", "h1"]
    .map((sel) => [...doc.querySelectorAll(sel)].find((h) => !h.closest(overlay))).find(Boolean);
  const mainHeading = squash(headingEl?.textContent);
  const pageText = doc.body ? textLength(doc.body) : 0;
  // Remove chrome, remembering how much visible text the overlays held. An element stays when it is or
  // holds the article: its main heading, a main or article element, or (for page chrome) most of
  // the page's text. The page itself (a `<body class="category-cookies">`) is never chrome.
  let chromeText = 0;
  let removed = 0;
  const certain = []; // the text of removed chrome that is chrome by its role, not by a guess at its name
  for (const el of doc.querySelectorAll([...OVERLAY_SELECTORS, ...LAYOUT_SELECTORS].join(","))) {
    if (!el.isConnected || el === doc.body || el === doc.documentElement) continue;
    if (el.matches(NOT_A_REGION) && !el.matches(HIDDEN)) continue;
    if (el.matches("main, article") || el.querySelector("main, article")) continue;
    if (headingEl && el.contains(headingEl)) continue;
    const text = textLength(el);
    if (!el.matches(overlay) && text > pageText / 2) continue;
    // A long overlay over a short extract is a sign the page was mostly banner (F23); a long
    // menu or footer is common around any article, and hidden text was never in the way.
    if (el.matches(overlay) && !el.matches(HIDDEN)) chromeText = Math.max(chromeText, text);
    if (el.matches(CERTAIN_CHROME) && text >= 30) certain.push(squash(el.textContent).slice(0, 60));
    el.remove();
    removed++;
  }
  // keepClasses keeps `language-*` on code for fenced-code info strings. The default character
  // threshold (500): below it Readability tries again with fewer rules and keeps its longest
  // attempt, where a lower one takes a newsletter box over the article.
  let article = new Readability(doc, { keepClasses: true }).parse();
  // A safety net for the removal above, which goes partly by names: when plain Readability, on
  // the page with nothing removed, finds an article of which ours misses more than a tenth of
  // the words, and that holds none of the chrome removed for its role (menus, footers, dialogs,
  // consent banners), its article is the article: a content wrapper was taken for chrome by
  // its name (and ours may be the comments below it). Nothing removed: both are the same page.
  const plain = removed ? new Readability(untouched, { keepClasses: true }).parse() : null;
  if (plain && plain.textContent && wordRecall(plain.textContent, article?.textContent || "") < 0.9) {
    const plainText = squash(plain.textContent);
    if (!certain.some((c) => plainText.includes(c))) article = plain;
  }
  let contentHtml, title;
  if (article && article.content) {
    contentHtml = article.content;
    title = (article.title || pageTitle || "").trim();
  } else {
    contentHtml = doc.body ? doc.body.innerHTML : "";
    title = pageTitle;
    warnings.push("low-confidence: no article found; the whole page body was used");
  }
  const contentDoc = new DOMParser().parseFromString(`<body>${contentHtml}</body>`, "text/html");
  // The article's own first heading is its title when the page title contains it (page titles
  // often carry a " - Site name" suffix); it then goes in front once, not twice.
  const first = contentDoc.querySelector("h1, h2");
  const firstText = first ? first.textContent.replace(/\s+/g, " ").trim() : "";
  if (firstText && (!title || title.toLowerCase().includes(firstText.toLowerCase()))) {
    title = firstText;
    first.remove();
  } else if (mainHeading && title.toLowerCase().includes(mainHeading.toLowerCase())) {
    title = mainHeading; // Readability already dropped the heading from the content
  }
  let markdown = turndown().turndown(contentDoc.body).replace(/\n{3,}/g, "\n\n").trim();
  const bodyLength = markdown.replace(/\s+/g, " ").length;
  if (bodyLength < 200 || (chromeText > 0 && bodyLength < chromeText)) {
    warnings.push(`low-confidence: the extracted text (${bodyLength} characters) is short${chromeText > bodyLength ? " — shorter than a removed banner or dialog" : ""}; check it before compiling`);
  }
  if (title) markdown = `# ${title}\n\n${markdown}`;
  return {
    title: title || "Untitled",
    markdown: markdown + "\n",
    byline: article?.byline || undefined,
    excerpt: article?.excerpt || undefined,
    warnings,
  };
}

/**
 * Converts an HTML fragment that is all content (a Word document's body, an e-book chapter) to
 * markdown, the same way as an article: code, images, math and tables normalised, then Turndown.
 * No chrome removal and no Readability: nothing in it is page furniture. Relative links and
 * images (to another chapter, to a picture inside the file) keep their text and lose their
 * target.
 * @param {string} html the fragment
 * @param {{headingOffset?: number, dropHeading?: string}} [options] `headingOffset` moves every
 *   heading down that many levels (at most to h6), for a chapter under the book's headings;
 *   `dropHeading` removes the first heading when its text is that (the chapter's own title,
 *   written in front of it by the caller)
 * @returns {string} the markdown, trimmed
 */
export function fragmentToMarkdown(html, options = {}) {
  const doc = new DOMParser().parseFromString(`<!doctype html><body>${html}</body>`, "text/html");
  normaliseImages(doc);
  normaliseCode(doc);
  normaliseMath(doc);
  for (const el of doc.querySelectorAll(NON_CONTENT)) el.remove();
  for (const [selector, attr] of [["a[href]", "href"], ["img[src]", "src"]]) {
    for (const el of doc.querySelectorAll(selector)) {
      const value = el.getAttribute(attr).trim();
      const kept = attr === "href" ? /^(https?|mailto):/i.test(value) || value.startsWith("#") : /^(https?|data):/i.test(value);
      if (!kept) el.removeAttribute(attr);
    }
  }
  const first = doc.body.querySelector("h1, h2, h3, h4, h5, h6");
  if (options.dropHeading && first && squash(first.textContent) === squash(options.dropHeading)) first.remove();
  const offset = options.headingOffset || 0;
  if (offset > 0) {
    for (const h of [...doc.body.querySelectorAll("h1, h2, h3, h4, h5, h6")]) {
      const level = Math.min(6, Number(h.tagName[1]) + offset);
      const moved = doc.createElement(`h${level}`);
      moved.append(...h.childNodes);
      h.replaceWith(moved);
    }
  }
  return turndown().turndown(doc.body).replace(/\n{3,}/g, "\n\n").trim();
}
