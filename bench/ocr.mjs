// OCR and Word conversion against issue #26's goals, in headless Chromium through the product
// build (scripts/build.sh; www/build/ocr.js, documents.js, convert.js):
// - English: a degraded A4 page at 300 dpi (2480 × 3508 px: 11 pt text, turned by 0.6°, noise,
//   blurred, saved as JPEG at quality 55), read with `eng`: time and the share of words right;
// - Chinese: the same for `chi_sim`, drawn with Noto Sans SC (not shipped with the app: install
//   it for the bench with `npm i --no-save @fontsource/noto-sans-sc@5.3.0`, or point
//   BENCH_CJK_FONT_DIR at its package folder), the share of characters right;
// - a Word document of 50 pages (about 25,000 words), through mammoth and the app's markdown
//   conversion.
// Words and characters right: of the page's words (characters for Chinese), counted with
// multiplicity, the share the recognised text holds.
// Usage: scripts/build.sh && node bench/ocr.mjs
import { existsSync, readFileSync } from "node:fs";
import { zipSync, unzipSync, strToU8, strFromU8 } from "fflate";
import { startServer, launch, root } from "../tests/e2e/harness.mjs";

const EN = readFileSync(`${root}/tests/fixtures/rust-book/ch04-01-what-is-ownership.md`, "utf8")
  .replace(/```[\s\S]*?```/g, " ").replace(/[#*`\[\]()>|_-]/g, " ").replace(/\s+/g, " ").trim().split(" ").slice(0, 420).join(" ");
const ZH = "所有权是一组规则，它决定了程序如何管理内存。一些语言有垃圾回收机制，在程序运行时定期寻找不再使用的内存；另一些语言要求程序员显式地分配和释放内存。本书采用第三种方式：通过所有权系统管理内存，编译器在编译时会根据一系列规则进行检查。如果违反了任何这些规则，程序都不能编译。在运行时，所有权系统的任何功能都不会减慢程序。因为所有权对很多程序员来说都是一个新概念，需要一些时间来适应。好消息是随着你对规则越来越有经验，你就越能自然地编写出安全而高效的代码。".repeat(3);
const fontDir = process.env.BENCH_CJK_FONT_DIR || `${root}/node_modules/@fontsource/noto-sans-sc`;

const server = await startServer();
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.route("**/bench-cjk/**", (r) => {
    const file = `${fontDir}/files/${r.request().url().split("/").pop()}`;
    return existsSync(file) ? r.fulfill({ body: readFileSync(file), contentType: "font/woff2" }) : r.fulfill({ status: 404 });
  });
  await page.goto(`${server.url}/style.css`);
  const haveCjk = existsSync(`${fontDir}/400.css`);
  if (haveCjk) {
    const css = readFileSync(`${fontDir}/400.css`, "utf8").replace(/url\(\.\/files\//g, `url(${server.url}/bench-cjk/`);
    await page.addStyleTag({ content: css });
  }
  const rows = [];
  const ocr = async (text, langs, font, unit) => page.evaluate(async ({ text, langs, font, unit }) => {
    // An A4 page at 300 dpi, the text wrapped at its margins, then degraded as a scan is.
    await document.fonts.load(`46px ${font}`, text.slice(0, 50));
    const page = document.createElement("canvas");
    page.width = 2480; page.height = 3508;
    const ctx = page.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, page.width, page.height);
    ctx.translate(page.width / 2, page.height / 2); ctx.rotate(0.6 * Math.PI / 180); ctx.translate(-page.width / 2, -page.height / 2);
    ctx.fillStyle = "#111"; ctx.font = `46px ${font}`;
    const tokens = unit === "word" ? text.split(" ") : [...text];
    let line = "", y = 300;
    for (const t of tokens) {
      const next = unit === "word" ? (line ? `${line} ${t}` : t) : line + t;
      if (ctx.measureText(next).width > 2480 - 2 * 300) { ctx.fillText(line, 300, y); y += 70; line = t; } else line = next;
    }
    ctx.fillText(line, 300, y);
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    const img = ctx.getImageData(0, 0, page.width, page.height);
    let seed = 7;
    for (let i = 0; i < img.data.length; i += 4) {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      const n = ((seed >> 8) % 61) - 30; // ±30 grey levels of noise
      for (let c = 0; c < 3; c++) img.data[i + c] = Math.max(0, Math.min(255, img.data[i + c] + n));
    }
    ctx.putImageData(img, 0, 0);
    const blurred = document.createElement("canvas");
    blurred.width = page.width; blurred.height = page.height;
    const b = blurred.getContext("2d");
    b.filter = "blur(0.8px)"; b.drawImage(page, 0, 0);
    const jpeg = await new Promise((r) => blurred.toBlob(r, "image/jpeg", 0.55));
    const { recognise } = await import("/build/ocr.js");
    const t0 = performance.now();
    const [r] = await recognise([jpeg], { langs });
    const ms = performance.now() - t0;
    const split = (s) => (unit === "word" ? s.toLowerCase().match(/[a-z0-9']+/g) || [] : [...s.replace(/[\s，。；：、]/g, "")]);
    const want = new Map();
    for (const w of split(text)) want.set(w, (want.get(w) || 0) + 1);
    const got = new Map();
    for (const w of split(r.text)) got.set(w, (got.get(w) || 0) + 1);
    let total = 0, hit = 0;
    for (const [w, n] of want) { total += n; hit += Math.min(n, got.get(w) || 0); }
    return { ms, right: hit / total, units: total, confidence: r.confidence, jpegBytes: jpeg.size };
  }, { text, langs, font, unit });
  const en = await ocr(EN, "eng", "sans-serif", "word");
  rows.push(`| English A4, 300 dpi, degraded (${en.units} words; JPEG ${(en.jpegBytes / 1024).toFixed(0)} KB) | ${(en.ms / 1000).toFixed(1)} s | ${(en.right * 100).toFixed(1)} % of words (confidence ${en.confidence}) | ≤ 10 s, ≥ 95 % |`);
  if (haveCjk) {
    const zh = await ocr(ZH, "chi_sim", "'Noto Sans SC'", "char");
    rows.push(`| Chinese (chi_sim) A4, 300 dpi, degraded (${zh.units} characters) | ${(zh.ms / 1000).toFixed(1)} s | ${(zh.right * 100).toFixed(1)} % of characters (confidence ${zh.confidence}) | ≤ 30 s, ≥ 90 % |`);
  } else {
    rows.push("| Chinese (chi_sim) | not run: no Noto Sans SC (see the header) | — | ≤ 30 s, ≥ 90 % |");
  }
  // A Word document of 50 pages: Word's own tables.docx with a body of 50 pages of paragraphs.
  const files = unzipSync(readFileSync(`${root}/tests/fixtures/documents/tables.docx`));
  const para = (t) => `<w:p><w:r><w:t xml:space="preserve">${t}</w:t></w:r></w:p>`;
  const body = Array.from({ length: 50 }, (_, p) => Array.from({ length: 10 }, (_, i) => para(`Page ${p + 1}, paragraph ${i + 1}. ${EN.split(" ").slice(i * 40, i * 40 + 50).join(" ")}`)).join("")).join("");
  files["word/document.xml"] = strToU8(strFromU8(files["word/document.xml"]).replace(/<w:body>[\s\S]*?(<w:sectPr)/, `<w:body>${body}$1`));
  const docx = Array.from(zipSync(files));
  const d = await page.evaluate(async (bytes) => {
    const { docxToHtml } = await import("/build/documents.js");
    const { fragmentToMarkdown } = await import("/build/convert.js");
    const t0 = performance.now();
    const doc = await docxToHtml(new Uint8Array(bytes));
    const md = fragmentToMarkdown(doc.html);
    return { ms: performance.now() - t0, words: md.split(/\s+/).length };
  }, docx);
  rows.push(`| Word document, 50 pages (${d.words} words) → markdown | ${(d.ms / 1000).toFixed(2)} s | — | ≤ 2 s |`);
  console.log("| measure | time | right | goal |");
  console.log("|---|---|---|---|");
  for (const r of rows) console.log(r);
} finally {
  await browser.close();
  server.stop();
}
