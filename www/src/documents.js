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
  let title = coreTitle(unzip(bytes, "DOCX_INVALID", (name) => name === "docProps/core.xml"));
  if (!title) {
    const h = new DOMParser().parseFromString(result.value, "text/html").querySelector("h1, h2");
    title = (h?.textContent || "").replace(/\s+/g, " ").trim();
  }
  // mammoth ends each footnote with a "↑" link back to its reference: not the note's text.
  const html = result.value.replace(/\s*<a href="#(?:footnote|endnote)-ref-[^"]*">↑<\/a>/g, "");
  return { html, title, messages: result.messages.map((m) => m.message) };
}

const DC = "http://purl.org/dc/elements/1.1/";

/** The entries of a zip that `keep(name)` accepts, or `DocumentError` `code` for one that is not a zip. */
function unzip(bytes, code, keep) {
  try {
    return unzipSync(bytes, { filter: (f) => keep(f.name) });
  } catch (e) {
    throw new DocumentError(code, `not a zip archive: ${e && e.message ? e.message : e}`);
  }
}

/**
 * An e-book (.epub, EPUB 2 or 3) as `{ title, creator, language, chapters: [{ title, html, href }] }`:
 * the spine's linear items in reading order, each chapter's body HTML and its title from the
 * table of contents, else its first heading, else "". Images stay as they are in the HTML (their
 * relative paths lead nowhere once converted; the alt text is kept).
 * Throws `DocumentError` (`EPUB_INVALID`) when there is no container, package document or spine.
 */
export function epubToChapters(bytes) {
  // Not the pictures, sounds and fonts: only text is read.
  const files = unzip(bytes, "EPUB_INVALID", (name) => !/\.(jpe?g|png|gif|webp|avif|svg|bmp|mp3|mp4|m4a|ogg|webm|ttf|otf|woff2?)$/i.test(name));
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
  const encrypted = drmProtected(files);
  const titles = tocTitles(files, manifest, spine);
  const chapters = [];
  // The reading order, then the parts outside it (endnotes, answers), so no text is lost.
  const refs = [...spine.getElementsByTagName("itemref")];
  const ordered = [...refs.filter((r) => r.getAttribute("linear") !== "no"), ...refs.filter((r) => r.getAttribute("linear") === "no")];
  for (const ref of ordered) {
    const item = manifest.get(ref.getAttribute("idref"));
    if (item && encrypted.has(item.path)) throw new DocumentError("EPUB_INVALID", "the book is DRM-protected: its chapters are encrypted");
    if (!item || !/html/.test(item.type) || !files[item.path]) continue;
    const doc = chapterDocument(strFromU8(files[item.path]));
    const body = doc.body || doc.getElementsByTagName("body")[0];
    if (!body) continue;
    const heading = body.querySelector("h1, h2, h3");
    const own = doc.getElementsByTagName("title")[0]?.textContent || "";
    chapters.push({
      href: item.path,
      title: titles.get(item.path) || (heading?.textContent || own).replace(/\s+/g, " ").trim(),
      html: body.innerHTML,
    });
  }
  if (!chapters.length) throw new DocumentError("EPUB_INVALID", "the spine names no readable chapter");
  return { title: meta("title"), creator: meta("creator"), language: meta("language"), chapters };
}

const A = "http://schemas.openxmlformats.org/drawingml/2006/main";
const P = "http://schemas.openxmlformats.org/presentationml/2006/main";
const R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships";

/**
 * A PowerPoint deck (.pptx) as `{ title, html, slides }`: one section per slide in the deck's
 * order, headed "Slide N: <its title>", then the text of its other shapes (paragraphs; indented
 * ones as list items), its tables, and its speaker notes. `title` is the deck's core title, else
 * the first slide's title. Pictures and charts are left out.
 * Throws `DocumentError` (`PPTX_INVALID`) when there is no presentation part.
 */
export function pptxToHtml(bytes) {
  const files = unzip(bytes, "PPTX_INVALID", (name) => /\.(xml|rels)$/i.test(name)); // not the media
  const part = (path) => (files[path] ? xml(strFromU8(files[path])) : null);
  const presentation = part("ppt/presentation.xml");
  if (!presentation) throw new DocumentError("PPTX_INVALID", "no ppt/presentation.xml");
  const targets = relationships(part, "ppt/presentation.xml");
  const out = document.implementation.createHTMLDocument("");
  const body = out.body;
  let firstTitle = "";
  let n = 0;
  for (const id of presentation.getElementsByTagNameNS(P, "sldId")) {
    const path = targets.get(id.getAttributeNS(R, "id"));
    const slide = path && part(path);
    if (!slide) continue;
    n++;
    // Shapes and tables in reading (document) order, groups included; not the fallback copy an
    // mc:AlternateContent keeps for older readers, nor footers, dates and slide numbers.
    const items = [...slide.getElementsByTagName("*")].filter((e) =>
      ((e.namespaceURI === P && e.localName === "sp") || (e.namespaceURI === A && e.localName === "tbl")) && !inFallback(e));
    const shapes = items.filter((e) => e.localName === "sp" && !/^(ftr|dt|sldNum|hdr)$/.test(placeholder(e)));
    const titleShape = shapes.find((sp) => /^(title|ctrTitle)$/.test(placeholder(sp)));
    const title = titleShape ? paragraphs(titleShape).map((p) => p.text).join(" ").trim() : "";
    if (!firstTitle) firstTitle = title;
    const h = out.createElement("h2");
    h.textContent = title ? `Slide ${n}: ${title}` : `Slide ${n}`;
    body.append(h);
    for (const e of items) {
      if (e.localName === "tbl") body.append(tableOf(out, e));
      else if (e !== titleShape && shapes.includes(e)) appendParagraphs(out, body, paragraphs(e));
    }
    const notesPath = [...relationships(part, path).values()].find((t) => /notesSlide/.test(t));
    const notes = notesPath && part(notesPath);
    if (notes) {
      const noteShapes = [...notes.getElementsByTagNameNS(P, "sp")].filter((sp) =>
        [...sp.getElementsByTagNameNS(P, "ph")].some((ph) => ph.getAttribute("type") === "body"));
      const text = noteShapes.flatMap(paragraphs).filter((p) => p.text);
      if (text.length) {
        const label = out.createElement("p");
        label.innerHTML = "<em>Notes:</em>";
        body.append(label);
        appendParagraphs(out, body, text);
      }
    }
  }
  if (!n) throw new DocumentError("PPTX_INVALID", "the presentation lists no slide");
  // PowerPoint titles a new deck "PowerPoint Presentation": a title nobody chose.
  const core = coreTitle(files);
  const chosen = /^(powerpoint presentation|presentation\s*\d*|microsoft (powerpoint|word) - .*)$/i.test(core) ? "" : core;
  return { title: chosen || firstTitle, html: body.innerHTML, slides: n };
}

/** A shape's placeholder type (`title`, `body`, `ftr`…), or "" when it is not one. */
function placeholder(sp) {
  const nvPr = sp.getElementsByTagNameNS(P, "nvPr")[0];
  const ph = nvPr && [...nvPr.children].find((c) => c.localName === "ph");
  return ph ? ph.getAttribute("type") || "body" : "";
}

/** Whether `el` sits in the fallback branch of an `mc:AlternateContent`. */
function inFallback(el) {
  for (let p = el.parentNode; p && p.nodeType === 1; p = p.parentNode) if (p.localName === "Fallback") return true;
  return false;
}

/** The paragraphs of a shape's text body: `{ text, level }` (level 0 for a plain paragraph). */
function paragraphs(shape) {
  return [...shape.getElementsByTagNameNS(A, "p")].map((p) => {
    let text = "";
    for (const node of p.getElementsByTagNameNS(A, "*")) {
      if (node.localName === "t") text += node.textContent;
      else if (node.localName === "br") text += " ";
    }
    const pPr = p.getElementsByTagNameNS(A, "pPr")[0];
    return { text: text.replace(/\s+/g, " ").trim(), level: Number(pPr?.getAttribute("lvl") || 0) };
  });
}

/**
 * Paragraphs into `parent`: plain ones (level 0) as <p>, indented ones as list items nested by
 * their level.
 */
function appendParagraphs(doc, parent, paras) {
  let lists = []; // the open lists, by depth (lists[0] for level 1)
  for (const p of paras) {
    if (!p.text) continue;
    if (p.level === 0) {
      lists = [];
      const el = doc.createElement("p");
      el.textContent = p.text;
      parent.append(el);
      continue;
    }
    lists.length = Math.min(lists.length, p.level);
    while (lists.length < p.level) {
      const ul = doc.createElement("ul");
      const host = lists.length ? lists.at(-1).lastElementChild || lists.at(-1) : parent;
      host.append(ul);
      lists.push(ul);
    }
    const li = doc.createElement("li");
    li.textContent = p.text;
    lists.at(-1).append(li);
  }
}

/** A DrawingML table as an HTML table, its first row as the header. */
function tableOf(doc, tbl) {
  const table = doc.createElement("table");
  [...tbl.getElementsByTagNameNS(A, "tr")].forEach((tr, i) => {
    const row = table.insertRow();
    for (const tc of tr.getElementsByTagNameNS(A, "tc")) {
      const cell = doc.createElement(i === 0 ? "th" : "td");
      cell.textContent = paragraphs(tc).map((p) => p.text).filter(Boolean).join("; ");
      row.append(cell);
    }
  });
  return table;
}

/** The targets of part `path`'s relationships, by id, as paths inside the zip. */
function relationships(part, path) {
  const dir = path.slice(0, path.lastIndexOf("/") + 1);
  const rels = part(`${dir}_rels/${path.slice(dir.length)}.rels`);
  const out = new Map();
  for (const r of rels ? rels.getElementsByTagName("Relationship") : []) {
    if (r.getAttribute("TargetMode") === "External") continue;
    out.set(r.getAttribute("Id"), resolve(dir, r.getAttribute("Target") || ""));
  }
  return out;
}

/** The document's title in its core properties (docProps/core.xml), or "". */
function coreTitle(files) {
  const core = files["docProps/core.xml"];
  if (!core) return "";
  return (xml(strFromU8(core)).getElementsByTagNameNS(DC, "title")[0]?.textContent || "").replace(/\s+/g, " ").trim();
}

const TEXT = "urn:oasis:names:tc:opendocument:xmlns:text:1.0";
const TABLE = "urn:oasis:names:tc:opendocument:xmlns:table:1.0";
const OFFICE = "urn:oasis:names:tc:opendocument:xmlns:office:1.0";

/**
 * An OpenDocument text (.odt) as `{ title, html }`: its headings (by outline level), paragraphs
 * (text boxes' included), lists, tables and web links in order, from content.xml, its footnotes
 * and endnotes as a numbered list at the end. `title` is the document's meta title (meta.xml),
 * else its first heading. Pictures and comments are left out.
 * Throws `DocumentError` (`ODT_INVALID`) when there is no text body.
 */
export function odtToHtml(bytes) {
  const files = unzip(bytes, "ODT_INVALID", (name) => name === "content.xml" || name === "meta.xml");
  const content = files["content.xml"] && xml(strFromU8(files["content.xml"]));
  const text = content?.getElementsByTagNameNS(OFFICE, "text")[0];
  if (!text) throw new DocumentError("ODT_INVALID", "no text body in content.xml");
  const out = document.implementation.createHTMLDocument("");
  const notes = []; // footnote and endnote bodies, in order
  /** Appends the inline content of `el` to `target`: text, links, note references. */
  const inline = (el, target) => {
    for (const node of el.childNodes) {
      if (node.nodeType === 3) target.append(node.textContent);
      else if (node.localName === "s") target.append(" ".repeat(Math.min(100, Number(node.getAttributeNS(TEXT, "c") || 1))));
      else if (node.localName === "tab" || node.localName === "line-break") target.append(" ");
      else if (node.localName === "annotation" || node.localName === "bookmark" || node.localName === "soft-page-break") continue;
      else if (node.localName === "note") {
        const body = [...node.children].find((c) => c.localName === "note-body");
        if (!body) continue;
        const id = `fn${notes.length + 1}`;
        notes.push({ id, text: textOf(body) });
        const sup = out.createElement("sup");
        const a = out.createElement("a");
        a.href = `#${id}`;
        a.textContent = String(notes.length);
        sup.append(a);
        target.append(sup);
      } else if (node.localName === "a") {
        const href = node.getAttributeNS("http://www.w3.org/1999/xlink", "href") || "";
        if (/^(https?|mailto):/i.test(href)) {
          const a = out.createElement("a");
          a.href = href;
          inline(node, a);
          target.append(a);
        } else inline(node, target);
      } else inline(node, target);
    }
  };
  /** The plain text of `el` (a note's body, a table cell), paragraphs joined by "; ". */
  const textOf = (el) => {
    const parts = [];
    for (const c of el.children) {
      if (c.localName === "p" || c.localName === "h") {
        const span = out.createElement("span");
        inline(c, span);
        parts.push(span.textContent.replace(/\s+/g, " ").trim());
      } else if (c.localName === "list" || c.localName === "list-item" || c.localName === "section") parts.push(textOf(c));
    }
    return parts.filter(Boolean).join("; ");
  };
  const block = (tag, el) => {
    const b = out.createElement(tag);
    inline(el, b);
    return b.textContent.trim() ? b : null;
  };
  const walk = (node, parent) => {
    for (const el of node.children) {
      if (el.namespaceURI === TEXT && el.localName === "h") {
        const level = Math.min(6, Math.max(1, Number(el.getAttributeNS(TEXT, "outline-level") || 1)));
        const h = block(`h${level}`, el);
        if (h) parent.append(h);
      } else if (el.namespaceURI === TEXT && el.localName === "p") {
        const p = block("p", el);
        if (p) parent.append(p);
      } else if (el.namespaceURI === TEXT && el.localName === "list") {
        const ul = out.createElement("ul");
        for (const item of el.children) {
          if (item.localName !== "list-item" && item.localName !== "list-header") continue;
          // An item's paragraphs as its text (a tight list); a list inside it nests.
          const li = out.createElement("li");
          for (const child of item.children) {
            if (child.localName === "p" || child.localName === "h") {
              if (li.childNodes.length) li.append(" ");
              inline(child, li);
            } else if (child.localName === "list") walk({ children: [child] }, li);
          }
          if (li.textContent.trim()) ul.append(li);
        }
        if (ul.children.length) parent.append(ul);
      } else if (el.namespaceURI === TABLE && el.localName === "table") {
        parent.append(odfTable(out, el, textOf));
      } else if (el.namespaceURI === TEXT && (el.localName === "section" || el.localName === "index-body")) {
        walk(el, parent);
      }
    }
  };
  walk(text, out.body);
  if (notes.length) {
    const ol = out.createElement("ol");
    for (const n of notes) {
      const li = out.createElement("li");
      li.id = n.id;
      li.textContent = n.text;
      ol.append(li);
    }
    out.body.append(ol);
  }
  const meta = files["meta.xml"] && xml(strFromU8(files["meta.xml"]));
  const metaTitle = (meta?.getElementsByTagNameNS(DC, "title")[0]?.textContent || "").trim();
  return { title: metaTitle || (out.body.querySelector("h1, h2, h3")?.textContent || ""), html: out.body.innerHTML };
}

/**
 * An ODF table as an HTML table, its first row the header: its own rows only (a table inside a
 * cell is read as that cell's text), repeated rows and cells expanded up to 50, empty trailing
 * cells and rows dropped.
 */
function odfTable(doc, el, textOf) {
  const table = doc.createElement("table");
  const rows = [];
  const collect = (node) => {
    for (const c of node.children) {
      if (c.localName === "table-row") rows.push(c);
      else if (/^table-(header-rows|rows|row-group)$/.test(c.localName)) collect(c);
    }
  };
  collect(el);
  let first = true;
  for (const row of rows) {
    const cells = [];
    for (const cell of row.children) {
      if (cell.localName !== "table-cell" && cell.localName !== "covered-table-cell") continue;
      const repeat = Math.min(50, Number(cell.getAttributeNS(TABLE, "number-columns-repeated") || 1));
      const value = textOf(cell);
      for (let i = 0; i < repeat; i++) cells.push(value);
    }
    while (cells.length && !cells.at(-1)) cells.pop();
    const times = Math.min(50, Number(row.getAttributeNS(TABLE, "number-rows-repeated") || 1));
    if (!cells.length) continue;
    for (let r = 0; r < times; r++) {
      const tr = table.insertRow();
      for (const value of cells) {
        const c = doc.createElement(first ? "th" : "td");
        c.textContent = value;
        tr.append(c);
      }
      first = false;
    }
  }
  return table;
}

/**
 * The files an EPUB lists as encrypted (META-INF/encryption.xml), font obfuscation aside (it
 * hides fonts only); every file when META-INF/rights.xml holds a DRM licence.
 */
function drmProtected(files) {
  const out = new Set();
  if (files["META-INF/rights.xml"]) return new Set(Object.keys(files));
  const enc = files["META-INF/encryption.xml"];
  if (!enc) return out;
  for (const data of xml(strFromU8(enc)).getElementsByTagNameNS("*", "EncryptedData")) {
    const method = data.getElementsByTagNameNS("*", "EncryptionMethod")[0]?.getAttribute("Algorithm") || "";
    if (/idpf\.org\/2008\/embedding|ns\.adobe\.com\/pdf\/enc#RC/.test(method)) continue;
    const uri = data.getElementsByTagNameNS("*", "CipherReference")[0]?.getAttribute("URI");
    if (uri) out.add(resolve("", uri));
  }
  return out;
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

/**
 * `href` (URL-encoded, relative to the folder `base`, or from the archive's root when it starts
 * with `/`) as a path inside the zip.
 */
function resolve(base, href) {
  if (!href) return "";
  let decoded;
  try { decoded = decodeURIComponent(href); } catch { decoded = href; } // a bare "%" in a name
  const parts = [];
  for (const p of `${decoded.startsWith("/") ? "" : base}${decoded}`.split("/")) {
    if (p === "..") parts.pop(); else if (p && p !== ".") parts.push(p);
  }
  return parts.join("/");
}

function toArrayBuffer(bytes) {
  return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength);
}
