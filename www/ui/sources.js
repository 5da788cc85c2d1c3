// The Sources tab: add sources (typed, pasted, dropped or chosen files: markdown, text, HTML,
// PDF, Word, EPUB, PowerPoint, Excel, OpenDocument text, and pictures and scans through OCR), list
// them with their status, view and remove one, and offer to recompile what the offline compiler
// wrote once an endpoint is configured.
import { htmlToMarkdown, fragmentToMarkdown } from "../build/convert.js";
import { setStatus, showError } from "../status.js";
import { $, h } from "./dom.js";
import { app, t, formatTime } from "./session.js";
import { translate } from "../i18n.js";
import { write } from "./writing.js";
import { rememberWiki } from "./eviction.js";
import { renderStorage } from "./footer.js";
import { compile, compiling } from "./compile.js";

// How many sources the open wiki has, once its list was read (undefined before).
let sourceCount;

/** Forgets the source count (another wiki is opening). */
export function sourcesReplaced() { sourceCount = undefined; }

export async function renderSources() {
  const sources = await app.wiki.sources();
  // Sources holding instruction-like text get a badge (compiled as data all the same).
  const flagged = new Map((await app.wiki.sourceFlags()).map((f) => [f.key, f.instructionLike]));
  $("#sources-table tbody").replaceChildren(...sources.map((s) => {
    const title = h("a", { href: "#", onclick: (e) => { e.preventDefault(); viewSource(s.key).catch(showError); } }, s.title);
    const titleCell = h("span", {}, title);
    if (flagged.has(s.key)) {
      titleCell.append(" ", h("span", {
        className: "badge warn", dataset: { testid: "instruction-like" }, title: t("instructionLikeHint", flagged.get(s.key)),
      }, t("instructionLike")));
    }
    const remove = h("button", { className: "danger", dataset: { testid: "remove-source" }, onclick: () => removeSource(s).catch(showError) }, t("remove"));
    const cells = [titleCell, s.key, t(s.status.state) + (s.status.reason ? `: ${s.status.reason}` : ""), formatTime(s.addedAt), remove];
    return h("tr", { dataset: { key: s.key } }, cells.map((c) => h("td", {}, c)));
  }));
  sourceCount = sources.length;
  rememberWiki(app.wiki.name, { sources: sources.length });
  $("#sources-empty").hidden = sources.length > 0;
  $("#sources-table").hidden = sources.length === 0;
  await renderRecompileOffer();
}

/**
 * Sources whose pages the offline compiler wrote (their summary page still carries the `offline`
 * tag), with the number of offline pages in all. An LLM recompile rewrites the summary page and
 * clears the tag (issue #10).
 */
async function offlineCompiled() {
  const graph = await app.wiki.graph();
  const offline = graph.nodes.filter((n) => n.tags.includes("offline"));
  const sources = [...new Set(offline.filter((n) => n.kind === "source").flatMap((n) => n.sources))].sort();
  return { sources, pages: offline.length };
}

/**
 * With an endpoint configured and pages compiled offline, offers to recompile their sources: the
 * cost estimate first, then `compile({ force: true, sources })`. Human edits are kept (or the
 * update held as a proposal) by the compile itself (Decision 5).
 */
async function renderRecompileOffer() {
  const box = $("#recompile-offer");
  const config = await app.wiki.config();
  const { sources, pages } = config.provider === "offline" ? { sources: [], pages: 0 } : await offlineCompiled();
  const dismissed = sessionStorage.getItem(`llm-wiki.recompile-dismissed.${app.wiki.name}`) === sources.join("\n");
  if (!sources.length || dismissed || compiling()) { box.hidden = true; return; }
  const model = config.compile && config.compile.model ? config.compile.model : config.model;
  box.dataset.sources = JSON.stringify(sources);
  $("#recompile-text").textContent = t("recompileOffer", pages, sources.length, model);
  if (box.hidden || box.dataset.shown !== sources.join("\n")) {
    $("#recompile-estimate").hidden = true;
    $("#recompile-go").hidden = true;
    $("#recompile-estimate-btn").hidden = false;
  }
  box.dataset.shown = sources.join("\n");
  box.hidden = false;
}

const offeredSources = () => JSON.parse($("#recompile-offer").dataset.sources || "[]");

async function estimateRecompile() {
  const estimate = await app.wiki.estimate({ force: true, sources: offeredSources() });
  const el = $("#recompile-estimate");
  el.textContent = t("recompileCost", estimate.total, estimate.sources.length);
  el.hidden = false;
  $("#recompile-estimate-btn").hidden = true;
  $("#recompile-go").hidden = false;
}

/**
 * Removes a source after asking: its summary page and claims go (and the lines citing them); other
 * pages stay, without it in their sources; links to its summary page become plain text.
 */
async function removeSource(s) {
  if (!confirm(t("confirmRemoveSource", s.title))) return;
  const r = await write(() => app.wiki.removeSource(s.key));
  setStatus(t("sourceRemoved", s.title, r.updated.length, r.claimsRemoved.length));
  $("#source-view").hidden = true;
  await app.refresh();
}

/**
 * Shows source `key` under the table; with `passage` (`{ lines: [first, last], version }` from a
 * passage hit or a source citation) those lines are marked and scrolled into view. Lines of a
 * version that is no longer current are shown alone, read by the core (`sourceSpan`).
 */
export async function viewSource(key, passage) {
  const s = await app.wiki.source(key);
  const view = $("#source-view");
  if (!s) { view.hidden = true; return; }
  let text = h("pre", {}, s.text);
  let mark = null;
  let note = null;
  if (passage) {
    const span = await app.wiki.sourceSpan(key, passage.version, passage.lines[0], passage.lines[1]);
    if (span) {
      mark = h("mark", { dataset: { testid: "source-passage" } }, span.text);
      if (span.current) {
        // The core gives the lines; the text around them is the same text, split at the same line ends.
        const lines = s.text.split("\n");
        const before = lines.slice(0, span.lines[0] - 1).join("\n");
        const after = lines.slice(span.lines[1]).join("\n");
        text = h("pre", {}, before ? `${before}\n` : "", mark, after ? `\n${after}` : "");
      } else {
        note = h("p", { className: "meta" }, t("sourceChangedSince", span.lines[0], span.lines[1], span.version.slice(0, 12)));
        text = h("pre", {}, mark);
      }
    }
  }
  view.replaceChildren(
    h("h3", {}, s.title),
    h("p", { className: "meta" }, `${s.key} · ${s.mime} · v ${s.version.slice(0, 12)}…`),
    note,
    text,
  );
  view.hidden = false;
  if (mark) mark.scrollIntoView({ block: "center" });
}

async function addSource({ title, key, mime, content, original, originalMime }) {
  const url = /^https?:\/\//.test(key || "") ? key : undefined;
  if (mime === "text/html") {
    // Decision 2: HTML becomes markdown here, in JS; the original HTML is kept as the raw artifact.
    const converted = htmlToMarkdown(content, { url });
    for (const w of converted.warnings) setStatus(t("convertWarning", converted.title, w), "error");
    original = new TextEncoder().encode(content);
    originalMime = "text/html";
    title = title || converted.title;
    content = converted.markdown;
    mime = "text/markdown";
  }
  const report = await write(() => app.wiki.addSource({
    title: title || undefined, key: key || undefined, mime, content, url,
    original, originalMime: original ? originalMime : undefined,
    capturedAt: Date.now(),
  }));
  const shown = title || report.key;
  // The list first, then the message: whoever reads "Added" finds the row there.
  await renderSources();
  setStatus(report.outcome === "added" ? t("sourceAdded", shown)
    : report.outcome === "unchanged" ? t("sourceUnchanged", shown) : t("sourceCorrected", shown));
  return report;
}

const DOCX_MIME = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
const EPUB_MIME = "application/epub+zip";
const PPTX_MIME = "application/vnd.openxmlformats-officedocument.presentationml.presentation";
const XLSX_MIME = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet";
const ODT_MIME = "application/vnd.oasis.opendocument.text";

/**
 * Whether `name` is a file the app converts before adding it (HTML, PDF, Word, EPUB,
 * PowerPoint, Excel, OpenDocument text).
 */
export const convertedHere = (name) => /\.(html?|pdf|docx|epub|pptx|xlsx|odt|png|jpe?g|webp)$/i.test(name);

const IMAGE_MIME = { png: "image/png", jpg: "image/jpeg", jpeg: "image/jpeg", webp: "image/webp" };

/**
 * Adds dropped or chosen files as sources, each converted the way its type needs. Resolves to
 * the keys of the sources added or corrected (a file that could not be read adds none; the
 * status line says why).
 */
export async function addFiles(files) {
  const keys = [];
  for (const f of files) {
    if (/\.pdf$/i.test(f.name) || f.type === "application/pdf") {
      keys.push(...await addPdf(f));
    } else if (/\.docx$/i.test(f.name) || f.type === DOCX_MIME) {
      keys.push(...await addDocument(f, "docx"));
    } else if (/\.epub$/i.test(f.name) || f.type === EPUB_MIME) {
      keys.push(...await addEpub(f, $("#source-epub-chapters").checked));
    } else if (/\.pptx$/i.test(f.name) || f.type === PPTX_MIME) {
      keys.push(...await addDocument(f, "pptx"));
    } else if (/\.xlsx$/i.test(f.name) || f.type === XLSX_MIME) {
      keys.push(...await addDocument(f, "xlsx"));
    } else if (/\.odt$/i.test(f.name) || f.type === ODT_MIME) {
      keys.push(...await addDocument(f, "odt"));
    } else if (/\.(png|jpe?g|webp)$/i.test(f.name) || Object.values(IMAGE_MIME).includes(f.type)) {
      keys.push(...await addImage(f));
    } else if (/\.(md|markdown|txt|html?)$/i.test(f.name) || (f.type.startsWith("text/") && !/\.\w+$/.test(f.name))) {
      const mime = /\.(md|markdown)$/i.test(f.name) ? "text/markdown"
        : /\.html?$/i.test(f.name) ? "text/html" : "text/plain";
      const content = await f.text();
      // A binary file under a text name (or a text one in another encoding): not stored as noise.
      if (content.includes("\u0000")) { setStatus(t("documentFailed", f.name, t("notText")), "error"); continue; }
      keys.push((await addSource({ title: "", key: `file:${f.name}`, mime, content })).key);
    } else {
      // .doc, .xls, .ppt, .ods, images, archives…: said, never stored as text.
      setStatus(t("documentFailed", f.name, t("typeNotRead")), "error");
    }
  }
  await app.refresh();
  return keys;
}

/**
 * A PDF becomes a source: its text (pdf.js, pages joined by a blank line) as `text/plain`, the
 * pages without a text layer (scans) read by OCR, the PDF bytes kept as the raw artifact
 * (Decision 2). A PDF in which neither gives any text is refused with a message.
 */
async function addPdf(file) {
  const read = await convertFile(file, async (bytes) => (await import("../build/pdf.js")).pdfToText(bytes), "pdf");
  if (!read) return [];
  const { bytes, out: pdf } = read;
  let text = pdf.text;
  if (pdf.emptyPages > 0) {
    // Pages without a text layer (scanned) are drawn and recognised; the others keep their text.
    const scanned = pdf.pageTexts.map((t, i) => (t ? 0 : i + 1)).filter(Boolean);
    const { openForDrawing } = await import("../build/pdf.js");
    const drawing = await openForDrawing(bytes);
    let recognised;
    try {
      // Each page drawn when its turn comes: one page's canvas at a time.
      recognised = await ocr(file.name, () => scanned.map((n) => () => drawing.page(n)));
    } finally {
      await drawing.close();
    }
    if (!recognised) return [];
    const texts = [...pdf.pageTexts];
    scanned.forEach((n, i) => { texts[n - 1] = recognised[i].text; });
    const body = texts.filter(Boolean).join("\n\n");
    text = body ? `${body}\n${ocrNote(scanned, recognised)}` : "";
  }
  if (!text.trim()) { setStatus(t("pdfNoText", file.name), "error"); return []; }
  const report = await addSource({
    title: pdf.title || file.name.replace(/\.pdf$/i, ""), key: `file:${file.name}`, mime: "text/plain",
    content: text, original: bytes, originalMime: "application/pdf",
  });
  return [report.key];
}

/**
 * A picture (PNG, JPEG, WebP) becomes a source: its recognised text (OCR), the picture kept as
 * the raw artifact.
 */
async function addImage(file) {
  const ext = file.name.split(".").at(-1).toLowerCase();
  const mime = IMAGE_MIME[ext] || file.type;
  const bytes = new Uint8Array(await file.arrayBuffer());
  const picture = new Blob([bytes], { type: mime });
  // Not a picture the browser can decode: said plainly, before the OCR engine is loaded.
  try { (await createImageBitmap(picture)).close(); } catch {
    setStatus(t("documentFailed", file.name, t("notAPicture")), "error");
    return [];
  }
  const recognised = await ocr(file.name, () => [picture]);
  if (!recognised) return [];
  const text = recognised[0].text;
  // A picture without text is still worth a source when the model will describe it.
  const config = !text && await app.wiki.config();
  const describe = config && config.describeImages && config.provider !== "offline";
  if (!text && !describe) { setStatus(t("ocrNoText", file.name), "error"); return []; }
  // The picture is also an attachment the source shows: the source page displays it, and a
  // compile with describeImages on has the model describe it.
  const asset = await app.wiki.addAttachment(file.name, mime, bytes);
  const shown = `![[${asset.name}]]\n`;
  const report = await addSource({
    title: file.name.replace(/\.\w+$/, ""), key: `file:${file.name}`, mime: "text/markdown",
    content: text ? `${shown}\n${text}\n${ocrNote([1], recognised, "image")}` : shown,
    original: bytes, originalMime: mime,
  });
  return [report.key];
}

/** The OCR languages the person chose (Settings is the select beside the file input). */
const ocrLanguages = () => localStorage.getItem("llm-wiki.ocr") || (app.lang === "zh" ? "chi_sim+eng" : "eng");

/**
 * Recognises the pictures `images()` gives (drawn only once the OCR bundle is there), with
 * progress in the status line and the Cancel button beside it. Resolves to
 * `[{ text, confidence }]`, or null when cancelled or failed (said in the status line).
 */
async function ocr(name, images) {
  const cancel = $("#ocr-cancel");
  const abort = new AbortController();
  cancel.hidden = false;
  cancel.onclick = () => abort.abort();
  try {
    setStatus(t("ocrLoading", name));
    const { recognise } = await import("../build/ocr.js");
    const pictures = await images();
    return await recognise(pictures, {
      langs: ocrLanguages(), signal: abort.signal,
      onProgress: ({ page, pages, progress }) => setStatus(t("ocrProgress", name, page, pages, Math.round(progress * 100))),
    });
  } catch (e) {
    setStatus(e && e.name === "AbortError" ? t("ocrCancelled", name) : t("documentFailed", name, e && e.message ? e.message : String(e)), "error");
    return null;
  } finally {
    cancel.hidden = true;
  }
}

/**
 * The line a recognised source ends with: which pages were read by OCR, at what mean confidence,
 * and which are low (in one language whatever the app's: the same file gives the same text).
 */
function ocrNote(pages, recognised, what = "pdf") {
  const confidence = recognised.map((r, i) => `${what === "pdf" ? `page ${pages[i]}: ` : ""}${r.confidence}%`).join(", ");
  const low = recognised.map((r, i) => (r.low ? pages[i] : 0)).filter(Boolean);
  const lowNote = !low.length ? "" : what === "pdf" ? ` Low confidence on page ${low.join(", ")}: check it against the PDF.` : " Low confidence: check it against the picture.";
  return `\n*Read by OCR (${what === "pdf" ? `${pages.length} page(s) without text; ` : ""}mean confidence ${confidence}).${lowNote}*\n`;
}

/**
 * `file`'s bytes converted by `convert(bytes)`, with the status line saying so: resolves to
 * `{ bytes, out }`, or null when the conversion failed (the reason then shown). `kind` "pdf" words
 * the messages for a PDF.
 */
async function convertFile(file, convert, kind = "document") {
  setStatus(t(kind === "pdf" ? "readingPdf" : "readingDocument", file.name));
  const bytes = new Uint8Array(await file.arrayBuffer());
  try {
    return { bytes, out: await convert(bytes) };
  } catch (e) {
    setStatus(t(kind === "pdf" ? "pdfFailed" : "documentFailed", file.name, e && e.message ? e.message : String(e)), "error");
    return null;
  }
}

/** The first line of `markdown` is a heading reading `title`. */
const headedBy = (markdown, title) => {
  const m = markdown.match(/^#{1,6}\s+(.*)/);
  return !!m && m[1].trim() === title.trim();
};

/**
 * A Word document (mammoth's HTML; pictures become placeholders with their alt text), a slide
 * deck (one section per slide), a spreadsheet (one table per sheet, rows and columns capped,
 * with a note where some were left out) or an OpenDocument text becomes a source, through the
 * app's markdown conversion, under the document's title, the file's bytes kept as the raw
 * artifact (Decision 2). `kind` is its extension.
 */
async function addDocument(file, kind) {
  const read = await convertFile(file, async (bytes) => {
    if (kind !== "xlsx") {
      const { docxToHtml, pptxToHtml, odtToHtml } = await import("../build/documents.js");
      return { docx: docxToHtml, pptx: pptxToHtml, odt: odtToHtml }[kind](bytes);
    }
    const { xlsxToTables, MAX_ROWS, MAX_COLUMNS } = await import("../build/sheets.js");
    const book = await xlsxToTables(bytes);
    const html = book.sheets.map((s) => {
      // In one language whatever the app's: the same file gives the same source text.
      const note = s.cut ? `<p><em>${escapeHtml(translate("en", "sheetCut", s.name, s.rows, s.columns, MAX_ROWS, MAX_COLUMNS))}</em></p>` : "";
      return `<h2>${escapeHtml(s.name)}</h2>${s.html}${note}`;
    }).join("");
    return { title: "", html };
  });
  if (!read) return [];
  const { bytes } = read;
  let { title, html } = read.out;
  const ext = new RegExp(`\\.${kind}$`, "i");
  const body = fragmentToMarkdown(html);
  if (!body) { setStatus(t("documentEmpty", file.name), "error"); return []; }
  title = title || file.name.replace(ext, "");
  const mime = { docx: DOCX_MIME, pptx: PPTX_MIME, xlsx: XLSX_MIME, odt: ODT_MIME }[kind];
  const report = await addSource({
    title, key: `file:${file.name}`, mime: "text/markdown",
    content: `${headedBy(body, title) ? "" : `# ${title}\n\n`}${body}\n`, original: bytes, originalMime: mime,
  });
  return [report.key];
}

const escapeHtml = (s) => s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]);

/**
 * An e-book becomes one source (the chapters in reading order, each under its own heading, then
 * the parts outside the reading order such as endnotes) or, with `perChapter`, one source per
 * chapter (`file:<name>#<its path in the book>`); the .epub bytes are the raw artifact of each.
 * Chapters without text (a cover picture) are left out.
 */
async function addEpub(file, perChapter) {
  const read = await convertFile(file, async (bytes) => (await import("../build/documents.js")).epubToChapters(bytes));
  if (!read) return [];
  const { bytes, out: book } = read;
  const title = book.title || file.name.replace(/\.epub$/i, "");
  const chapters = book.chapters.map((c, i) => {
    const name = c.title || t("chapter", i + 1);
    return { name, href: c.href, body: fragmentToMarkdown(c.html, { headingOffset: perChapter ? 1 : 2, dropHeading: name }) };
  }).filter((c) => c.body);
  if (!chapters.length) { setStatus(t("documentEmpty", file.name), "error"); return []; }
  const byline = book.creator ? `*${book.creator}*\n\n` : "";
  const source = { mime: "text/markdown", original: bytes, originalMime: EPUB_MIME };
  if (!perChapter) {
    const text = chapters.map((c) => `## ${c.name}\n\n${c.body}`).join("\n\n");
    return [(await addSource({ ...source, title, key: `file:${file.name}`, content: `# ${title}\n\n${byline}${text}\n` })).key];
  }
  // Keyed by the chapter's file inside the book: a new edition with a chapter inserted keeps
  // every other chapter's key.
  const keys = [];
  for (const c of chapters) {
    keys.push((await addSource({
      ...source, title: `${title} — ${c.name}`, key: `file:${file.name}#${c.href}`,
      content: `# ${c.name}\n\n${byline}${c.body}\n`,
    })).key);
  }
  return keys;
}

/**
 * Asks for persistent storage when the wiki's first source is being added (issue #21): called
 * synchronously from the drop, click or submit handler, before any await, while the user's
 * gesture is still active (it has expired after the conversion's awaits). The footer shows the
 * answer; a refusal is not an error here.
 */
function persistOnFirstSource() {
  if (sourceCount !== 0 || !navigator.storage || !navigator.storage.persist) return;
  navigator.storage.persist().then(() => renderStorage()).catch(() => {});
}

export function wireSources() {
  $("#add-source").addEventListener("submit", async (e) => {
    e.preventDefault();
    persistOnFirstSource();
    const content = $("#source-content").value;
    if (!content.trim()) { setStatus(t("emptyContent"), "error"); return; }
    try {
      await addSource({ title: $("#source-title").value.trim(), key: $("#source-key").value.trim(), mime: $("#source-mime").value, content });
      $("#source-content").value = ""; $("#source-title").value = ""; $("#source-key").value = "";
      await app.refresh();
    } catch (err) { showError(err); }
  });
  // The click that opens the file chooser carries the gesture; the change after it may not.
  $("#ocr-langs").value = ocrLanguages();
  $("#ocr-langs").addEventListener("change", (e) => localStorage.setItem("llm-wiki.ocr", e.target.value));
  $("#source-files").addEventListener("click", () => persistOnFirstSource());
  $("#source-files").addEventListener("change", (e) => { persistOnFirstSource(); addFiles([...e.target.files]).catch(showError); });
  const drop = $("#source-content");
  drop.addEventListener("dragover", (e) => e.preventDefault());
  drop.addEventListener("drop", (e) => {
    if (e.dataTransfer && e.dataTransfer.files.length) {
      e.preventDefault();
      persistOnFirstSource();
      addFiles([...e.dataTransfer.files]).catch(showError);
    }
  });
  $("#compile").addEventListener("click", () => compile().catch(showError));
  $("#recompile-estimate-btn").addEventListener("click", () => estimateRecompile().catch(showError));
  $("#recompile-go").addEventListener("click", () => {
    const sources = offeredSources();
    $("#recompile-offer").hidden = true;
    compile({ force: true, sources }).catch(showError);
  });
  $("#recompile-dismiss").addEventListener("click", () => {
    sessionStorage.setItem(`llm-wiki.recompile-dismissed.${app.wiki.name}`, offeredSources().join("\n"));
    $("#recompile-offer").hidden = true;
  });
}
