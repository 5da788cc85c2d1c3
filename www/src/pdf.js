// PDF → text with pdf.js (Decision 2: PDFs are converted in the JS layer; the core stores the text
// and keeps the PDF bytes as the raw artifact). Bundled by scripts/build.sh into www/build/pdf.js;
// pdf.js's worker, CMaps (CJK fonts) and standard font data are copied beside it into
// www/build/pdfjs/ and loaded from this origin only: no CDN.
import { getDocument, GlobalWorkerOptions } from "pdfjs-dist";
import { pageText } from "./pdf-text.js";

const base = new URL("./pdfjs/", import.meta.url);
GlobalWorkerOptions.workerSrc = new URL("pdf.worker.mjs", base).href;

/**
 * A loading task for the PDF `bytes` (copied: pdf.js transfers the buffer to its worker), with
 * its CMaps (CJK text), standard fonts and image decoders (JBIG2, CCITT, JPEG 2000) from this
 * origin; `extra` adds options.
 */
function load(bytes, extra = {}) {
  return getDocument({
    data: new Uint8Array(bytes),
    cMapUrl: new URL("cmaps/", base).href,
    cMapPacked: true,
    standardFontDataUrl: new URL("standard_fonts/", base).href,
    wasmUrl: new URL("wasm/", base).href,
    isEvalSupported: false,
    ...extra,
  });
}

/**
 * The text of a PDF: `{ title, text, pages, emptyPages, pageTexts }`. `title` is the document's
 * Title metadata when it has one; `text` joins the pages with a blank line and ends with a line
 * break; `pageTexts` holds each page's text ("" for a page without a text layer, a scan: see
 * `openForDrawing` for OCR).
 */
export async function pdfToText(bytes) {
  const task = load(bytes, { disableFontFace: true, useSystemFonts: false });
  const doc = await task.promise;
  try {
    const meta = await doc.getMetadata().catch(() => null);
    const title = ((meta && meta.info && meta.info.Title) || "").trim();
    const pages = [];
    const pageTexts = [];
    let emptyPages = 0;
    for (let i = 1; i <= doc.numPages; i++) {
      const page = await doc.getPage(i);
      const content = await page.getTextContent();
      const text = pageText(content.items);
      pageTexts.push(text);
      if (text) pages.push(text); else emptyPages++;
      page.cleanup();
    }
    const text = pages.length ? `${pages.join("\n\n")}\n` : "";
    return { title, text, pages: doc.numPages, emptyPages, pageTexts };
  } finally {
    await task.destroy(); // ends the worker's document (pdf.js 6: on the loading task)
  }
}

/**
 * A PDF opened for drawing its pages, for OCR: `{ page(n, scale), close() }`. `page` draws page
 * `n` (1-based) on a canvas at `scale` (300 / 72: 300 dpi, what OCR reads best); draw, read and
 * drop one page at a time, so a long scan never holds more than one page. `close` ends the
 * document. Scans kept as JBIG2, CCITT fax or JPEG 2000 are decoded by pdf.js's wasm decoders,
 * served from `pdfjs/wasm/`.
 */
export async function openForDrawing(bytes) {
  const task = load(bytes);
  const doc = await task.promise;
  return {
    async page(n, scale = 300 / 72) {
      const page = await doc.getPage(n);
      // At most about 4,000 px on a side, whatever the page's size.
      const size = page.getViewport({ scale: 1 });
      const fit = Math.min(scale, 4000 / Math.max(size.width, size.height));
      const viewport = page.getViewport({ scale: fit });
      const canvas = document.createElement("canvas");
      canvas.width = Math.ceil(viewport.width);
      canvas.height = Math.ceil(viewport.height);
      const ctx = canvas.getContext("2d");
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      await page.render({ canvasContext: ctx, canvas, viewport }).promise;
      page.cleanup();
      return canvas;
    },
    close: () => task.destroy(),
  };
}
