// PDF → text with pdf.js (Decision 2: PDFs are converted in the JS layer; the core stores the text
// and keeps the PDF bytes as the raw artifact). Bundled by scripts/build.sh into www/build/pdf.js;
// pdf.js's worker, CMaps (CJK fonts) and standard font data are copied beside it into
// www/build/pdfjs/ and loaded from this origin only: no CDN.
import { getDocument, GlobalWorkerOptions } from "pdfjs-dist";
import { pageText } from "./pdf-text.js";

const base = new URL("./pdfjs/", import.meta.url);
GlobalWorkerOptions.workerSrc = new URL("pdf.worker.mjs", base).href;

/**
 * The text of a PDF: `{ title, text, pages, emptyPages, pageTexts }`. `title` is the document's
 * Title metadata when it has one; `text` joins the pages with a blank line and ends with a line
 * break; `pageTexts` holds each page's text ("" for a page without a text layer, a scan: see
 * `renderPages` for OCR).
 */
export async function pdfToText(bytes) {
  // pdf.js transfers the buffer to its worker: give it a copy so the caller keeps the original.
  const task = getDocument({
    data: new Uint8Array(bytes),
    cMapUrl: new URL("cmaps/", base).href,
    cMapPacked: true,
    standardFontDataUrl: new URL("standard_fonts/", base).href,
    isEvalSupported: false,
    disableFontFace: true,
    useSystemFonts: false,
  });
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
 * Pages `numbers` (1-based) of a PDF drawn as canvases at `scale` (2: about 150 dpi for a page
 * drawn at 72 dpi), for OCR. Pages are drawn one at a time, so only the ones asked for are held.
 */
export async function renderPages(bytes, numbers, scale = 2) {
  const task = getDocument({
    data: new Uint8Array(bytes),
    cMapUrl: new URL("cmaps/", base).href,
    cMapPacked: true,
    standardFontDataUrl: new URL("standard_fonts/", base).href,
    isEvalSupported: false,
  });
  const doc = await task.promise;
  try {
    const out = [];
    for (const n of numbers) {
      const page = await doc.getPage(n);
      const viewport = page.getViewport({ scale });
      const canvas = document.createElement("canvas");
      canvas.width = Math.ceil(viewport.width);
      canvas.height = Math.ceil(viewport.height);
      const ctx = canvas.getContext("2d");
      ctx.fillStyle = "#fff";
      ctx.fillRect(0, 0, canvas.width, canvas.height);
      await page.render({ canvasContext: ctx, canvas, viewport }).promise;
      page.cleanup();
      out.push(canvas);
    }
    return out;
  } finally {
    await task.destroy();
  }
}
