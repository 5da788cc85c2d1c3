// What the popup does with the page in the current tab: read it, turn it into a source (the app's
// own HTML → markdown module, Decision 2); what the wiki already says about it is the core's
// `recall`.
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

/**
 * What the wiki already says about a page: the core's `recall` (the pages matching its title and
 * main text by BM25, with their one-line summaries, and the ledger's open contradictions on them;
 * a page that shares only common words with the article is left out).
 */
export function recall(wiki, converted) {
  return wiki.recall(converted.title, converted.markdown);
}

/** Bytes of images kept per clip; past it, the rest stay links and the source says so. */
export const MAX_CLIP_IMAGE_BYTES = 20 * 1024 * 1024;
/** Images kept per clip, likewise. */
export const MAX_CLIP_IMAGES = 100;
/** Milliseconds one image may take to arrive. */
const IMAGE_TIMEOUT_MS = 10_000;
/** Images fetched at once. */
const IMAGE_FETCHES = 4;

// Raster types only: an SVG attachment is a document that can carry script.
const IMAGE_EXT = { "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "image/avif": "avif" };

/**
 * The remote images of `markdown`: `![alt](http…)` outside code, the destination allowed to hold
 * balanced parentheses (`Foo_(bar).jpg`). Returns [{ start, end, alt, url }] in order.
 */
export function remoteImages(markdown) {
  const code = [];
  for (const m of markdown.matchAll(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[ \t]*$|`[^`\n]+`/gm)) code.push([m.index, m.index + m[0].length]);
  const re = /!\[([^\]]*)\]\((https?:\/\/(?:[^()\s]|\([^()\s]*\))+)\)/g;
  const out = [];
  for (const m of markdown.matchAll(re)) {
    if (code.some(([a, b]) => m.index >= a && m.index < b)) continue;
    out.push({ start: m.index, end: m.index + m[0].length, alt: m[1], url: m[2] });
  }
  return out;
}

/**
 * The clip's remote images kept as attachments (issue #26): each `![alt](http…)` in `markdown`
 * is fetched and replaced by `![alt](clip-<sha256 prefix>.<ext>)`, a relative link the wiki
 * resolves to the attachment, so the page renders with no remote load. Images on other sites
 * than the page (most live on a CDN) need an optional host permission, asked once for those
 * sites through `permissions` (call this in the click: Chrome asks only then); the page's own
 * site is read under the popup's `activeTab` grant. At most `MAX_CLIP_IMAGES` images and
 * `MAX_CLIP_IMAGE_BYTES` in all, each within `IMAGE_TIMEOUT_MS` (a body is read as it comes and
 * dropped once over the budget), `IMAGE_FETCHES` at a time. Never throws: an image that cannot
 * be kept stays a link, and the markdown ends with a line saying why.
 * Resolves to `{ markdown, attachments: [{ name, mime, bytes }], kept, left }`.
 * @param {string} markdown the clip's markdown
 * @param {string} pageUrl the page's URL
 * @param {{ contains(o): Promise<boolean>, request(o): Promise<boolean> }} permissions
 *   `chrome.permissions`
 * @param {(url: string, init: object) => Promise<Response>} [get] fetch
 */
export async function keepImages(markdown, pageUrl, permissions, get = fetch) {
  const found = remoteImages(markdown);
  const urls = [...new Set(found.map((f) => f.url))];
  if (!urls.length) return { markdown, attachments: [], kept: 0, left: 0 };
  const own = new URL(pageUrl).origin;
  const origins = [...new Set(urls.map((u) => new URL(u).origin))].filter((o) => o !== own).map((o) => `${o}/*`);
  let granted = true;
  if (origins.length) {
    granted = await permissions.contains({ origins }).catch(() => false);
    if (!granted) granted = await permissions.request({ origins }).catch(() => false);
  }
  const names = new Map();
  const attachments = [];
  const why = new Set();
  let budget = MAX_CLIP_IMAGE_BYTES;
  const queue = urls.filter((u) => {
    if (granted || new URL(u).origin === own) return true;
    why.add("permission");
    return false;
  });
  const fetchOne = async (url) => {
    if (attachments.length >= MAX_CLIP_IMAGES) { why.add("cap"); return; }
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), IMAGE_TIMEOUT_MS);
    try {
      const response = await get(url, { credentials: "omit", signal: abort.signal });
      const mime = (response.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
      if (!response.ok || !IMAGE_EXT[mime]) { why.add("fetch"); return; }
      if (Number(response.headers.get("content-length") || 0) > budget) { why.add("cap"); abort.abort(); return; }
      const parts = [];
      let size = 0;
      const reader = response.body.getReader();
      for (;;) {
        const { done, value } = await reader.read();
        if (done) break;
        size += value.length;
        if (size > budget) { why.add("cap"); abort.abort(); return; }
        parts.push(value);
      }
      if (attachments.length >= MAX_CLIP_IMAGES) { why.add("cap"); return; }
      budget -= size;
      const data = new Uint8Array(size);
      let at = 0;
      for (const p of parts) { data.set(p, at); at += p.length; }
      const sha = [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))].map((b) => b.toString(16).padStart(2, "0")).join("");
      const name = `clip-${sha.slice(0, 16)}.${IMAGE_EXT[mime]}`;
      if (!attachments.some((a) => a.name === name)) attachments.push({ name, mime, bytes: data });
      names.set(url, name);
    } catch {
      why.add("fetch"); // refused, unreachable, timed out
    } finally {
      clearTimeout(timer);
    }
  };
  const workers = Array.from({ length: IMAGE_FETCHES }, async () => {
    while (queue.length) await fetchOne(queue.shift());
  });
  await Promise.all(workers);
  let out = "";
  let at = 0;
  for (const f of found) {
    out += markdown.slice(at, f.start) + (names.has(f.url) ? `![${f.alt}](${names.get(f.url)})` : markdown.slice(f.start, f.end));
    at = f.end;
  }
  out += markdown.slice(at);
  const left = urls.filter((u) => !names.has(u)).length;
  if (left) {
    const reasons = [...why].map((w) => ({
      permission: `no permission to fetch from ${origins.map((o) => o.slice(0, -2)).join(", ")}`,
      cap: `over ${MAX_CLIP_IMAGES} images or ${MAX_CLIP_IMAGE_BYTES / 1048576} MB`,
      fetch: "not fetched as an image",
    })[w]);
    out = `${out.trimEnd()}\n\n*${left} image(s) stay links to their site (${reasons.join("; ")}).*\n`;
  }
  return { markdown: out, attachments, kept: names.size, left };
}
