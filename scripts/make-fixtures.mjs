// Converts the Rust Book chapters listed in tests/fixtures/rust-book/chapters.json to markdown the
// way the app does (www/src/convert.js in headless Chromium) and writes them beside the list.
// Run after scripts/build.sh: node scripts/make-fixtures.mjs
import { execFileSync } from "node:child_process";
import { readFileSync, writeFileSync } from "node:fs";
import { startServer, launch, root } from "../tests/e2e/harness.mjs";

const dir = `${root}/tests/fixtures/rust-book`;
const { chapters } = JSON.parse(readFileSync(`${dir}/chapters.json`, "utf8"));
const sysroot = execFileSync("rustc", ["--print", "sysroot"], { encoding: "utf8" }).trim();
const server = await startServer();
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.goto(server.url);
  for (const name of chapters) {
    const html = readFileSync(`${sysroot}/share/doc/rust/html/book/${name}.html`, "utf8");
    const out = await page.evaluate(async ({ html, url }) => {
      const { htmlToMarkdown } = await import("/build/convert.js");
      return htmlToMarkdown(html, { url });
    }, { html, url: `https://doc.rust-lang.org/book/${name}.html` });
    writeFileSync(`${dir}/${name}.md`, out.markdown);
    console.log(`${name}: "${out.title}", ${out.markdown.length} chars${out.warnings.length ? ", " + out.warnings.join("; ") : ""}`);
  }
} finally {
  await browser.close();
  server.stop();
}
