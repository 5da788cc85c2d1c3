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

const IMAGE_EXT = { "image/png": "png", "image/jpeg": "jpg", "image/gif": "gif", "image/webp": "webp", "image/avif": "avif", "image/svg+xml": "svg" };

/**
 * The clip's remote images kept as attachments (issue #26): each `![alt](http…)` in `markdown`
 * is fetched (most live on another origin, a CDN: the extension asks once for an optional host
 * permission for those origins, through `permissions`, which must be called in a click) and
 * replaced by `![alt](clip-<sha256 prefix>.<ext>)`, a relative link the wiki resolves to the
 * attachment, so the page renders with no remote load. Resolves to
 * `{ markdown, attachments: [{ name, mime, bytes }], kept, left }`; images that stay links
 * (permission refused, a failed fetch, not an image, over the caps) are counted in `left`, and
 * the markdown ends with a line saying why.
 * @param {string} markdown the clip's markdown
 * @param {{ contains(o): Promise<boolean>, request(o): Promise<boolean> }} permissions
 *   `chrome.permissions`
 * @param {(url: string) => Promise<Response>} [get] fetch
 */
export async function keepImages(markdown, permissions, get = fetch) {
  const re = /!\[([^\]]*)\]\((https?:\/\/[^)\s]+)\)/g;
  const urls = [...new Set([...markdown.matchAll(re)].map((m) => m[2]))];
  if (!urls.length) return { markdown, attachments: [], kept: 0, left: 0 };
  const origins = [...new Set(urls.map((u) => `${new URL(u).origin}/*`))];
  let granted = await permissions.contains({ origins });
  if (!granted) granted = await permissions.request({ origins }).catch(() => false);
  const names = new Map();
  const attachments = [];
  const why = new Set();
  let bytes = 0;
  for (const url of urls) {
    if (!granted) { why.add("permission"); continue; }
    if (attachments.length >= MAX_CLIP_IMAGES) { why.add("cap"); continue; }
    try {
      const response = await get(url, { credentials: "omit" });
      const mime = (response.headers.get("content-type") || "").split(";")[0].trim().toLowerCase();
      if (!response.ok || !IMAGE_EXT[mime]) { why.add("fetch"); continue; }
      const data = new Uint8Array(await response.arrayBuffer());
      if (bytes + data.length > MAX_CLIP_IMAGE_BYTES) { why.add("cap"); continue; }
      bytes += data.length;
      const sha = [...new Uint8Array(await crypto.subtle.digest("SHA-256", data))].map((b) => b.toString(16).padStart(2, "0")).join("");
      const name = `clip-${sha.slice(0, 16)}.${IMAGE_EXT[mime]}`;
      if (!attachments.some((a) => a.name === name)) attachments.push({ name, mime, bytes: data });
      names.set(url, name);
    } catch {
      why.add("fetch");
    }
  }
  let out = markdown.replace(re, (whole, alt, url) => (names.has(url) ? `![${alt}](${names.get(url)})` : whole));
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
