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
