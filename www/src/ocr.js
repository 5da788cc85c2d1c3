// OCR (issue #26): images and scanned PDF pages → text with tesseract.js 7, in its own Worker.
// Everything loads from this origin on first use (www/build/ocr/: the worker, the LSTM cores and
// the 4.0.0_best_int models of English, Simplified and Traditional Chinese), never from a CDN,
// and the worker is a file, not a blob: the extension's CSP forbids blob workers.
// Bundled by scripts/build.sh into www/build/ocr.js.
import { createWorker, OEM } from "tesseract.js";

const base = new URL("./ocr/", import.meta.url);

/** Below this mean confidence (0–100) a recognised page is flagged for checking. */
export const LOW_CONFIDENCE = 60;

/** The languages shipped (tesseract codes). Another one: see README, "Scans and pictures". */
export const LANGUAGES = ["eng", "chi_sim", "chi_tra"];

/**
 * Recognises each of `images` (a Blob, canvas or ImageBitmap each) in `langs` ("eng",
 * "chi_sim+eng"…). `onProgress({ page, pages, progress })` reports each page's progress (0–1);
 * `signal` cancels (the worker is ended at once). Resolves to `[{ text, confidence }]`, one per
 * image, `confidence` the mean word confidence (0–100). Throws a DOMException `AbortError` when
 * cancelled, or the engine's error.
 */
export async function recognise(images, { langs = "eng", onProgress, signal } = {}) {
  if (signal?.aborted) throw new DOMException("OCR cancelled", "AbortError");
  let current = 0;
  const worker = await createWorker(langs, OEM.LSTM_ONLY, {
    workerPath: new URL("worker.min.js", base).href,
    corePath: base.href,
    langPath: new URL("lang", base).href,
    workerBlobURL: false,
    gzip: true,
    cacheMethod: "none", // not tesseract's own IndexedDB store: the browser's cache keeps the files
    logger: (m) => {
      if (m.status === "recognizing text") onProgress?.({ page: current + 1, pages: images.length, progress: m.progress });
    },
  });
  let cancelled = false;
  // A terminated worker leaves its pending recognition unsettled: the cancel settles it.
  let settle;
  const aborted = new Promise((_, reject) => { settle = reject; });
  aborted.catch(() => {});
  const stop = () => { cancelled = true; worker.terminate(); settle(new DOMException("OCR cancelled", "AbortError")); };
  signal?.addEventListener("abort", stop);
  if (signal?.aborted) stop(); // cancelled while the engine loaded
  try {
    const out = [];
    for (current = 0; current < images.length && !cancelled; current++) {
      const { data } = await Promise.race([worker.recognize(images[current]), aborted]);
      if (cancelled) break;
      out.push({ text: data.text.replace(/[ \t]+\n/g, "\n").trim(), confidence: Math.round(data.confidence) });
    }
    if (cancelled) throw new DOMException("OCR cancelled", "AbortError");
    return out;
  } catch (e) {
    if (cancelled) throw new DOMException("OCR cancelled", "AbortError");
    throw e;
  } finally {
    signal?.removeEventListener("abort", stop);
    if (!cancelled) await worker.terminate().catch(() => {});
  }
}
