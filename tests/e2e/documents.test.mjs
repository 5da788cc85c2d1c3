// Word documents and e-books dropped into the app (issue #26): DOCX through mammoth's HTML and the
// app's markdown conversion, EPUB through its spine and table of contents, the original bytes
// kept as the raw artifact. The Word files under tests/fixtures/documents/ are mammoth's own test
// documents, written by Word; the Chinese document and the e-books are built here, so what each
// holds is in front of the reader.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { zipSync, unzipSync, strToU8, strFromU8 } from "fflate";
import ExcelJS from "exceljs";
import { startServer, launch, artifacts, api, root, openApp as openAppAt } from "./harness.mjs";

const fixtures = `${root}/tests/fixtures/documents`;
const DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document";
let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

/** A new context with the app open in it. */
async function openApp() {
  const context = await browser.newContext();
  return { context, ...(await openAppAt(context, server.url)) };
}

/** Drops files on the app's file input and waits until the sources list has `count` rows. */
async function drop(page, files, count) {
  await page.setInputFiles("#source-files", files);
  await page.waitForFunction((n) => document.querySelectorAll("#sources-table tbody tr").length === n, count, { timeout: 60_000 })
    .catch(async (e) => { throw new Error(`${e.message}; status: ${await page.textContent("#status")}; rows: ${await page.textContent("#sources-table tbody")}`); });
}

const source = (page, key) => api(page, "default", "return await w.source(arg)", key);
const sha = (b) => createHash("sha256").update(b).digest("hex");

/** A Word document in Chinese: Word's own tables.docx with a new body, a heading style and a title. */
function chineseDocx() {
  const files = unzipSync(readFileSync(`${fixtures}/tables.docx`));
  const p = (text, style) => `<w:p>${style ? `<w:pPr><w:pStyle w:val="${style}"/></w:pPr>` : ""}<w:r><w:t xml:space="preserve">${text}</w:t></w:r></w:p>`;
  const cell = (text) => `<w:tc><w:tcPr><w:tcW w:w="4621" w:type="dxa"/></w:tcPr>${p(text)}</w:tc>`;
  const row = (a, b) => `<w:tr>${cell(a)}${cell(b)}</w:tr>`;
  const doc = strFromU8(files["word/document.xml"]);
  const body = [
    p("所有权笔记", "Heading1"),
    p("Rust 中每个值都有一个所有者。"),
    p("借用", "Heading2"),
    p("借用让代码使用一个值而不取得它的所有权。"),
    `<w:tbl><w:tblPr><w:tblW w:w="0" w:type="auto"/></w:tblPr>${row("概念", "含义")}${row("移动", "所有权转给另一个变量")}</w:tbl>`,
  ].join("");
  files["word/document.xml"] = strToU8(doc.replace(/<w:body>[\s\S]*?(<w:sectPr)/, `<w:body>${body}$1`));
  const styles = strFromU8(files["word/styles.xml"]).replace("</w:styles>",
    '<w:style w:type="paragraph" w:styleId="Heading1"><w:name w:val="heading 1"/></w:style>' +
    '<w:style w:type="paragraph" w:styleId="Heading2"><w:name w:val="heading 2"/></w:style></w:styles>');
  files["word/styles.xml"] = strToU8(styles);
  files["docProps/core.xml"] = strToU8(strFromU8(files["docProps/core.xml"]).replace("<dc:title></dc:title>", "<dc:title>所有权笔记</dc:title>"));
  return Buffer.from(zipSync(files));
}

/** Word's tiny-picture.docx with a 2,000-byte picture instead of its 110 bytes. */
function pictureDocx() {
  const files = unzipSync(readFileSync(`${fixtures}/tiny-picture.docx`));
  const png = new Uint8Array(2000);
  png.set(files["word/media/image1.png"]);
  files["word/media/image1.png"] = png;
  return Buffer.from(zipSync(files));
}

/**
 * An EPUB 3 book: a cover page (a picture only), two chapters listed in the spine in the other
 * order than their file names, an appendix out of the reading order (linear="no"), and a nav.
 */
function epub3() {
  const chapter = (title, body) => `<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><head><title>${title}</title></head>
<body><section epub:type="chapter">${body}</section></body></html>`;
  return Buffer.from(zipSync({
    mimetype: [strToU8("application/epub+zip"), { level: 0 }],
    "META-INF/container.xml": strToU8(`<?xml version="1.0"?>
<container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles>
<rootfile full-path="OEBPS/content.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`),
    "OEBPS/content.opf": strToU8(`<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="3.0" unique-identifier="id">
<metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:identifier id="id">urn:uuid:1</dc:identifier>
<dc:title>The Little Book of Ownership</dc:title><dc:creator>Ferris Crab</dc:creator><dc:language>en</dc:language></metadata>
<manifest>
<item id="nav" href="nav.xhtml" media-type="application/xhtml+xml" properties="nav"/>
<item id="cover" href="text/cover.xhtml" media-type="application/xhtml+xml"/>
<item id="c1" href="text/b-moves.xhtml" media-type="application/xhtml+xml"/>
<item id="c2" href="text/a-borrowing.xhtml" media-type="application/xhtml+xml"/>
<item id="app" href="text/appendix.xhtml" media-type="application/xhtml+xml"/>
<item id="img" href="images/crab.png" media-type="image/png"/>
</manifest>
<spine><itemref idref="cover"/><itemref idref="c1"/><itemref idref="c2"/><itemref idref="app" linear="no"/></spine></package>`),
    "OEBPS/nav.xhtml": strToU8(`<?xml version="1.0" encoding="utf-8"?>
<html xmlns="http://www.w3.org/1999/xhtml" xmlns:epub="http://www.idpf.org/2007/ops"><body>
<nav epub:type="toc"><ol><li><a href="text/b-moves.xhtml">1. Moves</a></li><li><a href="text/a-borrowing.xhtml#start">2. Borrowing</a></li></ol></nav>
</body></html>`),
    "OEBPS/text/cover.xhtml": strToU8(chapter("Cover", `<img src="../images/crab.png" alt=""/>`)),
    "OEBPS/text/b-moves.xhtml": strToU8(chapter("Moves", `<h1>1. Moves</h1><p>Assigning a value moves it; the old name can no longer be used.</p>
<h2>Copy types</h2><p>Integers are copied, not moved. See <a href="a-borrowing.xhtml">the next chapter</a>.</p>
<p><img src="../images/crab.png" alt="Ferris the crab"/></p>`)),
    "OEBPS/text/a-borrowing.xhtml": strToU8(chapter("Borrowing", `<h1 id="start">2. Borrowing</h1><p>A reference borrows a value without taking ownership.</p>
<pre><code class="language-rust">let r = &amp;s;</code></pre>`)),
    "OEBPS/text/appendix.xhtml": strToU8(chapter("Appendix", "<p>Answers to the exercises, outside the reading order.</p>")),
    "OEBPS/images/crab.png": new Uint8Array([137, 80, 78, 71]),
  }));
}

/** An EPUB 2 book in Chinese: an NCX table of contents and a chapter that is HTML, not XML. */
function epub2() {
  return Buffer.from(zipSync({
    mimetype: [strToU8("application/epub+zip"), { level: 0 }],
    "META-INF/container.xml": strToU8(`<?xml version="1.0"?><container version="1.0" xmlns="urn:oasis:names:tc:opendocument:xmlns:container"><rootfiles><rootfile full-path="book.opf" media-type="application/oebps-package+xml"/></rootfiles></container>`),
    "book.opf": strToU8(`<?xml version="1.0" encoding="utf-8"?>
<package xmlns="http://www.idpf.org/2007/opf" version="2.0"><metadata xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>活字印刷</dc:title><dc:language>zh</dc:language></metadata>
<manifest><item id="ncx" href="toc.ncx" media-type="application/x-dtbncx+xml"/>
<item id="p1" href="part%201.html" media-type="application/xhtml+xml"/><item id="p2" href="part2.html" media-type="application/xhtml+xml"/></manifest>
<spine toc="ncx"><itemref idref="p1"/><itemref idref="p2"/></spine></package>`),
    "toc.ncx": strToU8(`<?xml version="1.0" encoding="utf-8"?><ncx xmlns="http://www.daisy.org/z3986/2005/ncx/" version="2005-1"><navMap>
<navPoint id="a" playOrder="1"><navLabel><text>毕昇</text></navLabel><content src="part%201.html"/></navPoint>
<navPoint id="b" playOrder="2"><navLabel><text>泥活字</text></navLabel><content src="part2.html"/></navPoint></navMap></ncx>`),
    "part 1.html": strToU8(`<html><body><p>毕昇发明了活字印刷术。<br>他生活在北宋。<p>活字可以反复使用。</body></html>`),
    "part2.html": strToU8(`<html><body><h2>泥活字</h2><p>泥活字用胶泥制成，每字一印。</p></body></html>`),
  }));
}

test("Word documents become sources: tables, footnotes, pictures as placeholders, Chinese; the .docx is kept", { timeout: 180_000 }, async () => {
  const { context, page, log } = await openApp();
  const tables = readFileSync(`${fixtures}/tables.docx`);
  const zh = chineseDocx();
  await drop(page, [
    { name: "tables.docx", mimeType: DOCX, buffer: tables },
    { name: "footnotes.docx", mimeType: DOCX, buffer: readFileSync(`${fixtures}/footnotes.docx`) },
    { name: "picture.docx", mimeType: DOCX, buffer: pictureDocx() },
    { name: "所有权.docx", mimeType: DOCX, buffer: zh },
  ], 4);

  const t = await source(page, "file:tables.docx");
  assert.equal(t.mime, "text/markdown");
  assert.equal(t.title, "tables");
  assert.deepEqual(t.original, { mime: DOCX, sha256: sha(tables), bytes: tables.length });
  // A Word table has no header cells: an empty header row, as for any such table (F40).
  assert.equal(t.text, "# tables\n\nAbove\n\n|  |  |\n| --- | --- |\n| Top left | Top right |\n| Bottom left | Bottom right |\n\nBelow\n");

  const f = await source(page, "file:footnotes.docx");
  assert.match(f.text, /Ouch/, "the text");
  assert.match(f.text, /A tachyon walks into a bar/, "the footnote's text");
  assert.ok(!f.text.includes("↑"), "no back-link arrow in the note's text");

  const pic = await source(page, "file:picture.docx");
  assert.match(pic.text, /\[image: [^\]]*\(image\/png, [^)]*inline data not kept\)\]/, pic.text);
  assert.ok(!/base64/.test(pic.text), "no inline image data in the text");

  const z = await source(page, "file:所有权.docx");
  assert.equal(z.title, "所有权笔记");
  assert.equal(z.text, "# 所有权笔记\n\nRust 中每个值都有一个所有者。\n\n## 借用\n\n借用让代码使用一个值而不取得它的所有权。\n\n|  |  |\n| --- | --- |\n| 概念 | 含义 |\n| 移动 | 所有权转给另一个变量 |\n");
  assert.deepEqual(log.errors, []);

  // Not a Word document, and one whose only content is a 110-byte picture (no text): each is
  // said, and nothing is added.
  await page.setInputFiles("#source-files", [{ name: "broken.docx", mimeType: DOCX, buffer: Buffer.from("not a zip") }]);
  await page.waitForFunction(() => /Could not read broken\.docx/.test(document.querySelector("#status").textContent), null, { timeout: 30_000 });
  await page.setInputFiles("#source-files", [{ name: "tiny-picture.docx", mimeType: DOCX, buffer: readFileSync(`${fixtures}/tiny-picture.docx`) }]);
  await page.waitForFunction(() => /tiny-picture\.docx holds no text/.test(document.querySelector("#status").textContent), null, { timeout: 30_000 });
  assert.equal(await page.locator("#sources-table tbody tr").count(), 4);
  await context.close();
});

test("an e-book becomes one source in reading order, or one per chapter when asked; EPUB 2 and 3", { timeout: 180_000 }, async () => {
  const { context, page, log } = await openApp();
  const book = epub3();
  await drop(page, [{ name: "ownership.epub", mimeType: "application/epub+zip", buffer: book }], 1);
  const b = await source(page, "file:ownership.epub");
  assert.equal(b.title, "The Little Book of Ownership");
  assert.deepEqual(b.original, { mime: "application/epub+zip", sha256: sha(book), bytes: book.length });
  assert.equal(b.text, [
    "# The Little Book of Ownership", "*Ferris Crab*",
    "## 1. Moves", "Assigning a value moves it; the old name can no longer be used.",
    "#### Copy types", "Integers are copied, not moved. See the next chapter.", "Ferris the crab",
    "## 2. Borrowing", "A reference borrows a value without taking ownership.", "```rust\nlet r = &s;\n```",
    // Outside the reading order (linear="no"), after it: not lost.
    "## Appendix", "Answers to the exercises, outside the reading order.",
  ].join("\n\n") + "\n");

  await page.check("#source-epub-chapters");
  const zh = epub2();
  await drop(page, [{ name: "活字.epub", mimeType: "application/epub+zip", buffer: zh }], 3);
  // Keyed by the chapter's file in the book, so a new edition keeps each chapter's key.
  const [c1, c2] = [await source(page, "file:活字.epub#part 1.html"), await source(page, "file:活字.epub#part2.html")];
  assert.equal(c1.title, "活字印刷 — 毕昇");
  assert.equal(c1.text, "# 毕昇\n\n毕昇发明了活字印刷术。  \n他生活在北宋。\n\n活字可以反复使用。\n");
  assert.equal(c2.title, "活字印刷 — 泥活字");
  assert.equal(c2.text, "# 泥活字\n\n泥活字用胶泥制成，每字一印。\n");
  assert.equal(c2.original.sha256, sha(zh));
  await page.screenshot({ path: `${artifacts}/documents-epub.png`, fullPage: true });

  // Compiled offline, the book's words are found in Chinese too.
  await page.click("#compile");
  await page.waitForFunction(() => /Compiled 3 source/.test(document.querySelector("#status").textContent), null, { timeout: 90_000 });
  const hits = await api(page, "default", "return (await w.search('泥活字', { k: 5 })).hits.map((h) => h.key)");
  assert.ok(hits.length > 0, "the chapter's words are searchable");
  assert.deepEqual(log.errors, []);
  assert.ok(log.requests.every((u) => u.startsWith(server.url)), "nothing loaded from elsewhere");
  await context.close();
});

/** A workbook written by ExcelJS: a sheet of mixed cells, a sheet over the caps, an empty sheet. */
async function workbook() {
  const wb = new ExcelJS.Workbook();
  const sales = wb.addWorksheet("销售");
  sales.addRow(["Region", "Units", "Date", "Double", "Note"]);
  sales.addRow(["华东", 12, new Date(Date.UTC(2026, 0, 15)), { formula: "B2*2", result: 24 }, { richText: [{ text: "Rich " }, { text: "text" }] }]);
  sales.addRow(["华南", 7, new Date(Date.UTC(2026, 1, 1, 9, 30)), { formula: "B3*2", result: 14 }, { text: "a | link", hyperlink: "https://example.com" }]);
  const big = wb.addWorksheet("Big");
  for (let r = 0; r < 1005; r++) big.addRow(Array.from({ length: 55 }, (_, c) => (r === 0 ? `h${c}` : r * 100 + c)));
  wb.addWorksheet("Empty");
  // What the sheet shows, not the stored double: a percent format, float noise, a formula with no
  // saved result (a file written by a script), a merged title, a time of day.
  const formats = wb.addWorksheet("Formats");
  formats.addRow(["Share", "Sum", "Later", "At"]);
  formats.addRow([0.255, 0.1 + 0.2, { formula: "B2*2" }, new Date(Date.UTC(1899, 11, 30, 14, 30))]);
  formats.getCell("A2").numFmt = "0.0%";
  formats.getCell("D2").numFmt = "hh:mm";
  return Buffer.from(await wb.xlsx.writeBuffer());
}

/** A two-slide deck: the deck lists slide 2's file first; a title, bullets, notes and a table. */
function deck() {
  const ns = 'xmlns:a="http://schemas.openxmlformats.org/drawingml/2006/main" xmlns:p="http://schemas.openxmlformats.org/presentationml/2006/main" xmlns:r="http://schemas.openxmlformats.org/officeDocument/2006/relationships"';
  const shape = (ph, paras) => `<p:sp><p:nvSpPr><p:cNvPr id="1" name="s"/><p:cNvSpPr/><p:nvPr>${ph ? `<p:ph type="${ph}"/>` : ""}</p:nvPr></p:nvSpPr><p:txBody>${
    paras.map(([text, lvl]) => `<a:p>${lvl ? `<a:pPr lvl="${lvl}"/>` : ""}<a:r><a:t>${text}</a:t></a:r></a:p>`).join("")}</p:txBody></p:sp>`;
  const slide = (body) => `<?xml version="1.0" encoding="UTF-8"?><p:sld ${ns}><p:cSld><p:spTree>${body}</p:spTree></p:cSld></p:sld>`;
  const rels = (items) => `<?xml version="1.0" encoding="UTF-8"?><Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">${
    items.map(([id, type, target]) => `<Relationship Id="${id}" Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/${type}" Target="${target}"/>`).join("")}</Relationships>`;
  const table = `<p:graphicFrame><a:graphic><a:graphicData><a:tbl>${[["Type", "Moves?"], ["String", "yes"], ["i32", "no, copied"]].map((row) =>
    `<a:tr>${row.map((c) => `<a:tc><a:txBody><a:p><a:r><a:t>${c}</a:t></a:r></a:p></a:txBody></a:tc>`).join("")}</a:tr>`).join("")}</a:tbl></a:graphicData></a:graphic></p:graphicFrame>`;
  return Buffer.from(zipSync({
    "[Content_Types].xml": strToU8('<?xml version="1.0"?><Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types"/>'),
    "ppt/presentation.xml": strToU8(`<?xml version="1.0" encoding="UTF-8"?><p:presentation ${ns}><p:sldIdLst><p:sldId id="256" r:id="rId2"/><p:sldId id="257" r:id="rId1"/></p:sldIdLst></p:presentation>`),
    "ppt/_rels/presentation.xml.rels": strToU8(rels([["rId1", "slide", "slides/slide1.xml"], ["rId2", "slide", "slides/slide2.xml"]])),
    "ppt/slides/slide2.xml": strToU8(slide(shape("ctrTitle", [["所有权入门"]]) + shape("", [["Every value has an owner.", 0], ["One owner at a time", 1], ["Moves hand it over", 2], ["Dropped at scope end", 1]])
      + shape("ftr", [["Confidential"]]) + shape("sldNum", [["2"]])
      + `<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006"><mc:Choice Requires="a14">${shape("", [["E = mc²", 0]])}</mc:Choice><mc:Fallback>${shape("", [["E = mc²", 0]])}</mc:Fallback></mc:AlternateContent>`)),
    "ppt/slides/_rels/slide2.xml.rels": strToU8(rels([["rId1", "notesSlide", "../notesSlides/notesSlide1.xml"]])),
    "ppt/notesSlides/notesSlide1.xml": strToU8(`<?xml version="1.0"?><p:notes ${ns}><p:cSld><p:spTree>${shape("body", [["Say: ownership is checked at compile time."]])}</p:spTree></p:cSld></p:notes>`),
    "ppt/slides/slide1.xml": strToU8(slide(shape("title", [["Moves and copies"]]) + table)),
    "docProps/core.xml": strToU8('<?xml version="1.0"?><cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:title>Ownership talk</dc:title></cp:coreProperties>'),
  }));
}

/** An OpenDocument text: headings, spans and spaces, a list, a table with a repeated cell. */
function odt() {
  const ns = 'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" xmlns:xlink="http://www.w3.org/1999/xlink"';
  const cell = (t, repeat) => `<table:table-cell${repeat ? ` table:number-columns-repeated="${repeat}"` : ""}><text:p>${t}</text:p></table:table-cell>`;
  return Buffer.from(zipSync({
    mimetype: [strToU8("application/vnd.oasis.opendocument.text"), { level: 0 }],
    "content.xml": strToU8(`<?xml version="1.0" encoding="UTF-8"?><office:document-content ${ns}><office:body><office:text>
<text:h text:outline-level="1">借用规则</text:h><text:p>A reference <text:span>borrows</text:span> a value:<text:s text:c="2"/>no move.<text:note text:note-class="footnote"><text:note-citation>1</text:note-citation><text:note-body><text:p>The Rust Book, chapter 4.</text:p></text:note-body></text:note> See <text:a xlink:href="https://doc.rust-lang.org/book/">the book</text:a>.</text:p>
<text:h text:outline-level="2">Two kinds</text:h>
<text:list><text:list-item><text:p>shared, &amp;T</text:p><text:list><text:list-item><text:p>many at once</text:p></text:list-item></text:list></text:list-item><text:list-item><text:p>mutable, &amp;mut T</text:p></text:list-item></text:list>
<table:table><table:table-row>${cell("Kind")}${cell("Many at once?")}</table:table-row><table:table-row>${cell("both", 2)}</table:table-row></table:table>
</office:text></office:body></office:document-content>`),
    "meta.xml": strToU8(`<?xml version="1.0"?><office:document-meta ${ns} xmlns:dc="http://purl.org/dc/elements/1.1/"><office:meta><dc:title>Borrowing notes</dc:title></office:meta></office:document-meta>`),
  }));
}

test("a slide deck, a workbook and an OpenDocument text become sources: slides, one table per sheet, caps said", { timeout: 180_000 }, async () => {
  const { context, page, log } = await openApp();
  const xlsx = await workbook();
  await drop(page, [
    { name: "talk.pptx", mimeType: "application/vnd.openxmlformats-officedocument.presentationml.presentation", buffer: deck() },
    { name: "sales.xlsx", mimeType: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", buffer: xlsx },
    { name: "borrow.odt", mimeType: "application/vnd.oasis.opendocument.text", buffer: odt() },
  ], 3);

  const talk = await source(page, "file:talk.pptx");
  assert.equal(talk.title, "Ownership talk");
  assert.equal(talk.text, [
    "# Ownership talk",
    "## Slide 1: 所有权入门", "Every value has an owner.", "-   One owner at a time\n    -   Moves hand it over\n-   Dropped at scope end", "E = mc²", "*Notes:*", "Say: ownership is checked at compile time.",
    "## Slide 2: Moves and copies", "| Type | Moves? |\n| --- | --- |\n| String | yes |\n| i32 | no, copied |",
  ].join("\n\n") + "\n");

  const sales = await source(page, "file:sales.xlsx");
  assert.equal(sales.title, "sales");
  assert.deepEqual(sales.original, { mime: "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet", sha256: sha(xlsx), bytes: xlsx.length });
  const [first, afterFirst] = sales.text.split("\n## Big\n");
  const [rest, formats] = afterFirst.split("\n## Formats\n");
  assert.equal(formats, "\n| Share | Sum | Later | At |\n| --- | --- | --- | --- |\n| 25.5% | 0.3 | \\=B2\\*2 | 14:30 |\n");
  assert.equal(first, [
    "# sales", "## 销售",
    "| Region | Units | Date | Double | Note |\n| --- | --- | --- | --- | --- |\n| 华东 | 12 | 2026-01-15 | 24 | Rich text |\n| 华南 | 7 | 2026-02-01 09:30:00 | 14 | a \\| link |",
  ].join("\n\n") + "\n");
  const rows = rest.split("\n").filter((l) => l.startsWith("|"));
  assert.equal(rows.length, 1 + 1 + 1000, "the header, its rule and 1,000 rows");
  assert.equal(rows[0].split(" | ").length, 50, "50 columns");
  assert.match(rest, /\*Big has 1005 rows and 55 columns; the first 1001 rows \(with the header\) and 50 columns are kept\.\*/);
  assert.ok(!/## Empty/.test(sales.text), "an empty sheet is left out");

  // Each kind, broken: said, and nothing added.
  for (const [name, mimeType] of [["broken.pptx", "application/vnd.openxmlformats-officedocument.presentationml.presentation"],
    ["broken.xlsx", "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"], ["broken.odt", "application/vnd.oasis.opendocument.text"],
    ["broken.epub", "application/epub+zip"]]) {
    await page.setInputFiles("#source-files", [{ name, mimeType, buffer: Buffer.from("not a zip at all") }]);
    await page.waitForFunction((n) => document.querySelector("#status").textContent.includes(`Could not read ${n}`), name, { timeout: 30_000 });
  }
  // A type the app does not read (an old Word file) and a binary file under a text name.
  await page.setInputFiles("#source-files", [{ name: "old.doc", mimeType: "application/msword", buffer: Buffer.from([0xd0, 0xcf, 0x11, 0xe0, 0, 0, 1]) }]);
  await page.waitForFunction(() => /Could not read old\.doc: the app does not read this kind of file/.test(document.querySelector("#status").textContent));
  await page.setInputFiles("#source-files", [{ name: "blob.txt", mimeType: "text/plain", buffer: Buffer.from([0x41, 0, 0x42]) }]);
  await page.waitForFunction(() => /Could not read blob\.txt: it is not text/.test(document.querySelector("#status").textContent));
  assert.equal(await page.locator("#sources-table tbody tr").count(), 3);

  const borrow = await source(page, "file:borrow.odt");
  assert.equal(borrow.title, "Borrowing notes");
  assert.equal(borrow.text, [
    "# Borrowing notes", "# 借用规则", "A reference borrows a value: no move.[^fn1] See [the book](https://doc.rust-lang.org/book/).", "## Two kinds",
    "-   shared, &T\n    -   many at once\n-   mutable, &mut T", "| Kind | Many at once? |\n| --- | --- |\n| both | both |",
    "[^fn1]: The Rust Book, chapter 4.",
  ].join("\n\n") + "\n");
  assert.deepEqual(log.errors, []);
  await context.close();
});
