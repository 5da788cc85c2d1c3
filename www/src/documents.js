// Word documents and e-books → HTML, for the app's markdown conversion (issue #26; Decision 2:
// conversion happens in the JS layer, the core sees markdown plus the original bytes).
// - DOCX: mammoth's HTML output (its markdown output is deprecated and weak on tables).
// - EPUB: the zip (fflate), its package document's spine (DOMParser), the chapters in reading
//   order, each titled from the book's table of contents (EPUB 3 nav or EPUB 2 NCX).
// Bundled by scripts/build.sh into www/build/documents.js and loaded on first use; the caller
// turns the HTML into markdown with convert.js's `fragmentToMarkdown`.
import mammoth from "mammoth";
import { unzipSync, strFromU8 } from "fflate";

/** A document that cannot be read: `code` is `DOCX_INVALID` or `EPUB_INVALID`. */
export class DocumentError extends Error {
  constructor(code, message) {
    super(message);
    this.code = code;
  }
}

/**
 * A Word document (.docx) as HTML: `{ html, title, messages }`. `title` is the document's core
 * title property (docProps/core.xml) when it has one, else its first heading, else "".
 * `messages` are mammoth's warnings (styles it did not map, images it could not read).
 * Throws `DocumentError` (`DOCX_INVALID`) for bytes that are not a Word document.
 */
export async function docxToHtml(bytes) {
  let result;
  try {
    result = await mammoth.convertToHtml({ arrayBuffer: toArrayBuffer(bytes) });
  } catch (e) {
    throw new DocumentError("DOCX_INVALID", `not a readable Word document: ${e && e.message ? e.message : e}`);
  }
  let title = "";
  try {
    const core = unzipSync(bytes, { filter: (f) => f.name === "docProps/core.xml" })["docProps/core.xml"];
    if (core) title = (xml(strFromU8(core)).getElementsByTagNameNS(DC, "title")[0]?.textContent || "").trim();
  } catch { /* no core properties: the heading or the file name names it */ }
  if (!title) {
    const h = new DOMParser().parseFromString(result.value, "text/html").querySelector("h1, h2");
    title = (h?.textContent || "").replace(/\s+/g, " ").trim();
  }
  return { html: result.value, title, messages: result.messages.map((m) => m.message) };
}

const DC = "http://purl.org/dc/elements/1.1/";

/**
 * An e-book (.epub, EPUB 2 or 3) as `{ title, creator, language, chapters: [{ title, html, href }] }`:
 * the spine's linear items in reading order, each chapter's body HTML and its title from the
 * table of contents, else its first heading, else "". Images stay as they are in the HTML (their
 * relative paths lead nowhere once converted; the alt text is kept).
 * Throws `DocumentError` (`EPUB_INVALID`) when there is no container, package document or spine.
 */
export function epubToChapters(bytes) {
  let files;
  try {
    files = unzipSync(bytes);
  } catch (e) {
    throw new DocumentError("EPUB_INVALID", `not a zip archive: ${e && e.message ? e.message : e}`);
  }
  const text = (path) => (files[path] ? strFromU8(files[path]) : null);
  const container = text("META-INF/container.xml");
  if (!container) throw new DocumentError("EPUB_INVALID", "no META-INF/container.xml");
  const opfPath = xml(container).getElementsByTagName("rootfile")[0]?.getAttribute("full-path");
  const opfText = opfPath && text(opfPath);
  if (!opfText) throw new DocumentError("EPUB_INVALID", `no package document at ${opfPath || "(none named)"}`);
  const opf = xml(opfText);
  const dir = opfPath.includes("/") ? opfPath.slice(0, opfPath.lastIndexOf("/") + 1) : "";
  const meta = (name) => (opf.getElementsByTagNameNS(DC, name)[0]?.textContent || "").replace(/\s+/g, " ").trim();
  const manifest = new Map();
  for (const item of opf.getElementsByTagName("item")) {
    manifest.set(item.getAttribute("id"), {
      path: resolve(dir, item.getAttribute("href") || ""),
      type: item.getAttribute("media-type") || "",
      properties: (item.getAttribute("properties") || "").split(/\s+/),
    });
  }
  const spine = opf.getElementsByTagName("spine")[0];
  if (!spine) throw new DocumentError("EPUB_INVALID", "the package document has no spine");
  const titles = tocTitles(files, manifest, spine);
  const chapters = [];
  for (const ref of spine.getElementsByTagName("itemref")) {
    if (ref.getAttribute("linear") === "no") continue;
    const item = manifest.get(ref.getAttribute("idref"));
    if (!item || !/html/.test(item.type) || !files[item.path]) continue;
    const doc = chapterDocument(strFromU8(files[item.path]));
    const body = doc.body || doc.getElementsByTagName("body")[0];
    if (!body) continue;
    const heading = body.querySelector("h1, h2, h3");
    chapters.push({
      href: item.path,
      title: titles.get(item.path) || (heading?.textContent || "").replace(/\s+/g, " ").trim(),
      html: body.innerHTML,
    });
  }
  if (!chapters.length) throw new DocumentError("EPUB_INVALID", "the spine names no readable chapter");
  return { title: meta("title"), creator: meta("creator"), language: meta("language"), chapters };
}

/** Chapter titles by file path: the EPUB 3 navigation document's toc, else the EPUB 2 NCX. */
function tocTitles(files, manifest, spine) {
  const titles = new Map();
  const add = (base, href, label) => {
    const path = resolve(base, (href || "").split("#")[0]);
    const name = (label || "").replace(/\s+/g, " ").trim();
    if (path && name && !titles.has(path)) titles.set(path, name);
  };
  const nav = [...manifest.values()].find((m) => m.properties.includes("nav"));
  if (nav && files[nav.path]) {
    const doc = chapterDocument(strFromU8(files[nav.path]));
    const base = nav.path.slice(0, nav.path.lastIndexOf("/") + 1);
    const toc = [...doc.getElementsByTagName("nav")].find((n) => /\btoc\b/.test(n.getAttribute("epub:type") || n.getAttributeNS("http://www.idpf.org/2007/ops", "type") || "")) || doc.getElementsByTagName("nav")[0];
    for (const a of toc ? toc.getElementsByTagName("a") : []) add(base, a.getAttribute("href"), a.textContent);
  }
  const ncx = manifest.get(spine.getAttribute("toc"));
  if (!titles.size && ncx && files[ncx.path]) {
    const doc = xml(strFromU8(files[ncx.path]));
    const base = ncx.path.slice(0, ncx.path.lastIndexOf("/") + 1);
    for (const point of doc.getElementsByTagName("navPoint")) {
      const label = point.getElementsByTagName("text")[0]?.textContent;
      add(base, point.getElementsByTagName("content")[0]?.getAttribute("src"), label);
    }
  }
  return titles;
}

/** An XHTML chapter, or an HTML one where the XML parser refuses it (EPUB 2 files often are). */
function chapterDocument(source) {
  const doc = new DOMParser().parseFromString(source, "application/xhtml+xml");
  if (!doc.getElementsByTagName("parsererror").length && doc.body) return doc;
  return new DOMParser().parseFromString(source, "text/html");
}

function xml(source) {
  return new DOMParser().parseFromString(source, "application/xml");
}

/** `href` (URL-encoded, relative to the folder `base`) as a path inside the zip. */
function resolve(base, href) {
  if (!href) return "";
  const parts = [];
  for (const p of `${base}${decodeURIComponent(href)}`.split("/")) {
    if (p === "..") parts.pop(); else if (p && p !== ".") parts.push(p);
  }
  return parts.join("/");
}

function toArrayBuffer(bytes) {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}
