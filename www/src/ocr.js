// OCR (issue #26): images and scanned PDF pages → text with tesseract.js 7, in its own Worker.
// Everything loads from this origin on first use (www/build/ocr/: the worker, the LSTM cores and
// the 4.0.0_best_int models of English, Simplified and Traditional Chinese), never from a CDN,
// and the worker is a file, not a blob: the extension's CSP forbids blob workers.
// Bundled by scripts/build.sh into www/build/ocr.js.
import { createWorker, OEM } from "tesseract.js";

const base = new URL("./ocr/", import.meta.url);

/** Below this mean confidence (0–100) a recognised page is flagged for checking. */
export const LOW_CONFIDENCE = 60;

/** Milliseconds the engine and its models may take to load before OCR gives up. */
const LOAD_TIMEOUT_MS = 60_000;

/**
 * Recognises each of `images` in `langs` ("eng", "chi_sim+eng"…). An image is a Blob, canvas or
 * ImageBitmap, or a function that makes one when its turn comes (so a long scan is drawn one page
 * at a time). `onProgress({ page, pages, progress })` reports each page's progress (0–1);
 * `signal` cancels (the worker is ended at once, also while it loads). Resolves to
 * `[{ text, confidence, low }]`, one per image, `confidence` the mean word confidence (0–100),
 * `low` whether it is under `LOW_CONFIDENCE`.
 * Throws a DOMException `AbortError` when cancelled, an `Error` when the engine or a model does
 * not load within a minute (offline on first use, say), or the engine's error.
 */
export async function recognise(images, { langs = "eng", onProgress, signal } = {}) {
  if (signal?.aborted) throw new DOMException("OCR cancelled", "AbortError");
  let current = 0;
  let cancelled = false;
  // A worker that fails to load a model, or is terminated, leaves its promises unsettled: the
  // cancel, the load timeout and the engine's error handler settle them instead.
  let settle;
  const stopped = new Promise((_, reject) => { settle = reject; });
  stopped.catch(() => {});
  let worker = null;
  const stop = () => { cancelled = true; worker?.terminate(); settle(new DOMException("OCR cancelled", "AbortError")); };
  signal?.addEventListener("abort", stop);
  const timer = setTimeout(() => settle(new Error("the OCR engine or its language model did not load (offline?)")), LOAD_TIMEOUT_MS);
  try {
    worker = await Promise.race([createWorker(langs, OEM.LSTM_ONLY, {
      workerPath: new URL("worker.min.js", base).href,
      corePath: base.href,
      langPath: new URL("lang", base).href,
      workerBlobURL: false,
      gzip: true,
      cacheMethod: "none", // not tesseract's own IndexedDB store: the browser's cache keeps the files
      errorHandler: (e) => settle(e instanceof Error ? e : new Error(String(e))),
      logger: (m) => {
        if (m.status === "recognizing text") onProgress?.({ page: current + 1, pages: images.length, progress: m.progress });
      },
    }), stopped]);
    clearTimeout(timer);
    if (cancelled) worker.terminate();
    const out = [];
    for (current = 0; current < images.length && !cancelled; current++) {
      const image = typeof images[current] === "function" ? await images[current]() : images[current];
      const { data } = await Promise.race([worker.recognize(image), stopped]);
      const confidence = Math.round(data.confidence);
      out.push({ text: tidy(data.text), confidence, low: confidence < LOW_CONFIDENCE });
    }
    if (cancelled) throw new DOMException("OCR cancelled", "AbortError");
    return out;
  } catch (e) {
    if (cancelled) throw new DOMException("OCR cancelled", "AbortError");
    throw e;
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", stop);
    if (worker && !cancelled) await worker.terminate().catch(() => {});
  }
}

/**
 * Recognised text as a source holds it: no spaces before line ends, and none between two CJK
 * characters (the engine separates its "words" by spaces; Chinese and Japanese text has none, and
 * a claim's quote must match the text as written).
 */
function tidy(text) {
  return text
    .replace(/[ \t]+\n/g, "\n")
    .replace(/(?<=[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}，。；：、！？（）])[ \t]+(?=[\p{Script=Han}\p{Script=Hiragana}\p{Script=Katakana}，。；：、！？（）])/gu, "")
    .trim();
}
