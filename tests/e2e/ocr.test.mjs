// OCR (issue #26): a picture dropped as a source becomes its recognised text, a PDF that mixes
// pages with and without a text layer keeps the one and recognises the other, and OCR can be
// cancelled. The pictures are drawn here, in the page, with the browser's own fonts, so what they
// say is in front of the reader; recognition is checked word by word, allowing for the engine.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, api, configure, scriptedEndpoint, openApp as openAppAt } from "./harness.mjs";
import { pdfFile } from "./pdf-file.mjs";

let server, browser, endpoint;
before(async () => { server = await startServer(); browser = await launch(); endpoint = await scriptedEndpoint(); });
after(async () => { await browser?.close(); server?.stop(); endpoint?.stop(); });

/** A new context with the app open in it. */
async function openApp() {
  const context = await browser.newContext();
  return { context, ...(await openAppAt(context, server.url)) };
}

/** `lines` drawn black on white, 36 px in `font`, as PNG or JPEG bytes. */
async function picture(page, lines, type = "image/png", font = "sans-serif") {
  const data = await page.evaluate(async ({ lines, type, font }) => {
    await document.fonts.load(`36px ${font}`, lines.join(""));
    const canvas = document.createElement("canvas");
    canvas.width = 1200; canvas.height = 80 + lines.length * 60;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = "#000"; ctx.font = `36px ${font}`;
    lines.forEach((l, i) => ctx.fillText(l, 40, 70 + i * 60));
    const blob = await new Promise((r) => canvas.toBlob(r, type, 0.95));
    return { bytes: Array.from(new Uint8Array(await blob.arrayBuffer())), width: canvas.width, height: canvas.height };
  }, { lines, type, font });
  return { ...data, bytes: Buffer.from(data.bytes) };
}

/** CRC-32 (ISO 3309, as PNG chunks use it) of `bytes`. */
function crc32(bytes) {
  let c = ~0;
  for (const b of bytes) {
    c ^= b;
    for (let k = 0; k < 8; k++) c = (c >>> 1) ^ (0xedb88320 & -(c & 1));
  }
  return ~c >>> 0;
}

/** `png` with a `tEXt` chunk `keyword` = `text` after its header (what the scripted endpoint
 * describes a picture by: it cannot see). */
function withText(png, keyword, text) {
  const data = Buffer.concat([Buffer.from(`${keyword}\0`, "latin1"), Buffer.from(text, "latin1")]);
  const kindAndData = Buffer.concat([Buffer.from("tEXt"), data]);
  const chunk = Buffer.alloc(12 + data.length);
  chunk.writeUInt32BE(data.length, 0);
  kindAndData.copy(chunk, 4);
  chunk.writeUInt32BE(crc32(kindAndData), 8 + data.length);
  const ihdrEnd = 8 + 12 + png.readUInt32BE(8);
  return Buffer.concat([png.subarray(0, ihdrEnd), chunk, png.subarray(ihdrEnd)]);
}

/** The share of `text`'s words (four letters or more) found in `got`, ignoring case. */
function found(text, got) {
  const words = text.toLowerCase().match(/[a-z]{4,}/g);
  const have = new Set(got.toLowerCase().match(/[a-z]{4,}/g) || []);
  return words.filter((w) => have.has(w)).length / words.length;
}

/** A two-page PDF: page 1 with a text layer (Helvetica), page 2 only a JPEG picture (a scan). */
function mixedPdf(textLine, jpeg) {
  const objects = [];
  const add = (body) => { objects.push(body); return objects.length; };
  const catalog = add(null);
  const pagesObj = add(null);
  const font = add("<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>");
  const ops1 = `BT /F1 14 Tf 72 740 Td (${textLine}) Tj ET`;
  const c1 = add(`<< /Length ${ops1.length} >>\nstream\n${ops1}\nendstream`);
  const p1 = add(`<< /Type /Page /Parent ${pagesObj} 0 R /MediaBox [0 0 612 792] /Resources << /Font << /F1 ${font} 0 R >> >> /Contents ${c1} 0 R >>`);
  const img = add(`<< /Type /XObject /Subtype /Image /Width ${jpeg.width} /Height ${jpeg.height} /ColorSpace /DeviceRGB /BitsPerComponent 8 /Filter /DCTDecode /Length ${jpeg.bytes.length} >>\nstream\n${jpeg.bytes.toString("latin1")}\nendstream`);
  const h = Math.round(jpeg.height * 572 / jpeg.width);
  const ops2 = `q 572 0 0 ${h} 20 ${792 - 40 - h} cm /Im1 Do Q`;
  const c2 = add(`<< /Length ${ops2.length} >>\nstream\n${ops2}\nendstream`);
  const p2 = add(`<< /Type /Page /Parent ${pagesObj} 0 R /MediaBox [0 0 612 792] /Resources << /XObject << /Im1 ${img} 0 R >> >> /Contents ${c2} 0 R >>`);
  objects[catalog - 1] = `<< /Type /Catalog /Pages ${pagesObj} 0 R >>`;
  objects[pagesObj - 1] = `<< /Type /Pages /Kids [${p1} 0 R ${p2} 0 R] /Count 2 >>`;
  return pdfFile(objects, catalog);
}

test("a picture becomes its recognised text; a PDF's scanned page is recognised beside its text page", { timeout: 180_000 }, async () => {
  const { context, page, log } = await openApp();
  await page.selectOption("#ocr-langs", "eng");
  const said = ["Ownership rules in Rust programs", "Each value has exactly one owner"];
  const png = await picture(page, said);
  await page.setInputFiles("#source-files", [{ name: "rules.png", mimeType: "image/png", buffer: png.bytes }]);
  await page.waitForFunction(() => /Added/.test(document.querySelector("#status").textContent), null, { timeout: 120_000 });
  const s = await api(page, "default", "return await w.source('file:rules.png')");
  // The picture is kept as the raw artifact, and as an attachment the source shows.
  assert.equal(s.mime, "text/markdown");
  assert.equal(s.original.mime, "image/png");
  assert.ok(s.text.startsWith("![[rules.png]]\n"), s.text);
  const assets = await api(page, "default", "return await w.assets()");
  assert.deepEqual(assets.map((a) => [a.name, a.mime]), [["rules.png", "image/png"]]);
  assert.ok(found(said.join(" "), s.text) >= 0.8, s.text);
  assert.match(s.text, /\*Read by OCR \(mean confidence \d+%\)\.( Low confidence: check it against the picture\.)?\*\n$/);

  const scan = await picture(page, ["References must always be valid", "The borrow checker proves it"], "image/jpeg");
  const pdf = mixedPdf("Borrowing lets code use a value without owning it.", scan);
  await page.setInputFiles("#source-files", [{ name: "mixed.pdf", mimeType: "application/pdf", buffer: pdf }]);
  await page.waitForFunction(() => /Added "mixed"/.test(document.querySelector("#status").textContent), null, { timeout: 120_000 });
  const m = await api(page, "default", "return await w.source('file:mixed.pdf')");
  const [first, rest] = m.text.split("\n\n");
  assert.equal(first, "Borrowing lets code use a value without owning it.", "the text page as it is");
  assert.ok(found("References must always be valid The borrow checker proves it", rest) >= 0.8, m.text);
  assert.match(m.text, /\*Read by OCR \(1 page\(s\) without text; mean confidence page 2: \d+%\)\./);
  assert.deepEqual(log.errors, []);
  await context.close();
});

test("Chinese: a picture of Simplified Chinese is read with chi_sim, its characters without spaces between them", { timeout: 180_000 }, async () => {
  const { context, page, log } = await openApp();
  await page.selectOption("#ocr-langs", "chi_sim+eng");
  // WenQuanYi Zen Hei: the CJK font scripts/setup.sh installs.
  const said = ["所有权是一组规则，它决定了程序如何管理内存。", "借用让代码使用一个值而不取得它的所有权。"];
  const png = await picture(page, said, "image/png", "'WenQuanYi Zen Hei'");
  await page.setInputFiles("#source-files", [{ name: "规则.png", mimeType: "image/png", buffer: png.bytes }]);
  await page.waitForFunction(() => /Added/.test(document.querySelector("#status").textContent), null, { timeout: 120_000 });
  const s = await api(page, "default", "return await w.source('file:规则.png')");
  const want = [...said.join("")].filter((c) => /\p{Script=Han}/u.test(c));
  const got = new Map();
  for (const c of s.text) got.set(c, (got.get(c) || 0) + 1);
  let hit = 0;
  for (const c of want) if (got.get(c) > 0) { hit++; got.set(c, got.get(c) - 1); }
  assert.ok(hit / want.length >= 0.9, `${hit} of ${want.length} characters: ${s.text}`);
  assert.ok(!/\p{Script=Han} \p{Script=Han}/u.test(s.text), `no spaces between characters: ${s.text}`);
  assert.ok(s.text.includes("管理内存"), s.text);
  // The Chinese model names settings of the legacy engine, which the LSTM-only engine does not
  // have: tesseract prints a warning for each (on the console's error channel). Nothing else.
  assert.deepEqual(log.errors.filter((e) => !/^Warning: Parameter not found: \w+$/.test(e)), []);
  await context.close();
});

test("OCR can be cancelled, and then nothing is added", { timeout: 120_000 }, async () => {
  const { context, page } = await openApp();
  const png = await picture(page, Array.from({ length: 12 }, (_, i) => `Line ${i} of a long scanned page about lifetimes`));
  await page.setInputFiles("#source-files", [{ name: "long.png", mimeType: "image/png", buffer: png.bytes }]);
  await page.waitForSelector("#ocr-cancel:not([hidden])", { timeout: 30_000 });
  await page.click("#ocr-cancel");
  await page.waitForFunction(() => /OCR of long\.png cancelled/.test(document.querySelector("#status").textContent), null, { timeout: 30_000 })
    .catch(async (e) => { throw new Error(`${e.message}; status: ${await page.textContent("#status")}`); });
  assert.equal(await page.isHidden("#ocr-cancel"), true);
  // Again, once recognition is under way.
  await page.setInputFiles("#source-files", []);
  await page.setInputFiles("#source-files", [{ name: "long.png", mimeType: "image/png", buffer: png.bytes }]);
  await page.waitForFunction(() => /Reading long\.png by OCR/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 })
    .catch(async (e) => { throw new Error(`${e.message}; waiting for progress, status: ${await page.textContent("#status")}`); });
  await page.click("#ocr-cancel");
  await page.waitForFunction(() => /OCR of long\.png cancelled/.test(document.querySelector("#status").textContent), null, { timeout: 30_000 })
    .catch(async (e) => { throw new Error(`${e.message}; after a cancel in recognition, status: ${await page.textContent("#status")}`); });
  assert.equal(await api(page, "default", "return (await w.sources()).length"), 0);
  assert.equal(await api(page, "default", "return (await w.assets()).length"), 0);
  await context.close();
});

test("with describeImages, a picture is described once and the facts drawn from it cite it, unverified", { timeout: 180_000 }, async () => {
  const { context, page } = await openApp();
  await page.selectOption("#ocr-langs", "eng");
  await configure(page, endpoint.url, { describeImages: true });
  const said = "The bar chart shows that Ferris sold 42 crates in 2025.";
  const png = await picture(page, ["Crate sales by year"]);
  const bytes = withText(png.bytes, "Description", said);
  await page.click("#tabs button[data-tab=sources]");
  await page.setInputFiles("#source-files", [{ name: "sales.png", mimeType: "image/png", buffer: bytes }]);
  await page.waitForFunction(() => /Added/.test(document.querySelector("#status").textContent), null, { timeout: 120_000 });
  const before = await api(page, "default", "return await w.source('file:sales.png')");
  assert.ok(before.text.startsWith("![[sales.png]]\n"), before.text);

  await page.click("#compile");
  await page.waitForFunction(() => /Compiled 1 source/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 })
    .catch(async (e) => { throw new Error(`${e.message}; status: ${await page.textContent("#status")}`); });
  assert.match(await page.textContent("#status"), /1 picture\(s\) described\./);

  // The description is kept with the attachment, with the model; the source's text and version
  // did not change.
  const [asset] = await api(page, "default", "return await w.assets()");
  assert.equal(asset.name, "sales.png");
  assert.ok(asset.description.text.startsWith(said), asset.description.text);
  assert.equal(asset.description.model, "scripted-chat");
  const after = await api(page, "default", "return await w.source('file:sales.png')");
  assert.equal(after.version, before.version);

  // A claim drawn from the description cites the picture in its footnote and is not verified;
  // the recognised text's claims verify as usual. The page shows the footnote with a link to
  // the picture.
  const bodies = await api(page, "default", "const out = []; for (const p of await w.pages()) { const v = await w.pageView(p.key); out.push([p.key, v.page.body, v.html]); } return out");
  const notes = bodies.flatMap(([, body]) => body.split("\n").filter((l) => /^\[\^c[0-9a-f]+\]:/.test(l)));
  const pictured = notes.filter((l) => l.includes("picture [[sales.png]]"));
  assert.ok(pictured.length > 0, notes.join("\n"));
  assert.ok(pictured.every((l) => l.includes(said.slice(0, 30)) && l.endsWith("(a model's description of the picture, not verified)")), pictured.join("\n"));
  assert.ok(notes.some((l) => !l.includes("picture [[") && !l.includes("unverified")), notes.join("\n"));
  const [, , html] = bodies.find(([, body]) => body.includes("picture [[sales.png]]"));
  assert.match(html, /class="asset" data-asset="[0-9a-f]{64}" data-name="sales\.png"/);

  // Compiled again, the picture is not sent again.
  await api(page, "default", "await w.compile({ force: true }); return null");
  const again = await api(page, "default", "return (await w.operations()).filter((o) => o.kind === 'describe').length");
  assert.equal(again, 1);
  await context.close();
});
