// The real-size suite's input: converts the sources listed in bench/scale-sources.txt (the
// toolchain's own docs, in reading order) to markdown exactly as the app does (www/src/convert.js,
// Readability + Turndown, in headless Chromium) and writes them to target/scale-corpus/:
//   manifest.json   { rustc, list, converter, sources: [{ n, path, key, title, file, bytes, warnings }], missing: [path] }
//   NNN.md          one file per source, in list order
// A listed file the toolchain lacks is skipped and reported (manifest `missing`, and on stderr).
// Idempotent: nothing is converted again while the list, the toolchain and convert.js are the same.
// Needs the converter bundle (www/build/convert.js: scripts/build.sh, or esbuild on its own; this
// script bundles it when it is missing or older than www/src/convert.js).
//   node scripts/scale-corpus.mjs [--out DIR]
import { execFileSync } from "node:child_process";
import { createHash } from "node:crypto";
import { existsSync, mkdirSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { startServer, launch, root } from "../tests/e2e/harness.mjs";

const args = process.argv.slice(2);
const outDir = args.includes("--out") ? args[args.indexOf("--out") + 1] : join(root, "target/scale-corpus");
const listFile = join(root, "bench/scale-sources.txt");
const html = join(execFileSync("rustc", ["--print", "sysroot"], { encoding: "utf8" }).trim(), "share/doc/rust/html");
const rustc = execFileSync("rustc", ["--version"], { encoding: "utf8" }).trim();

const bundle = join(root, "www/build/convert.js");
const src = join(root, "www/src/convert.js");
if (!existsSync(bundle) || statSync(bundle).mtimeMs < statSync(src).mtimeMs) {
  execFileSync(join(root, "node_modules/.bin/esbuild"), [src, "--bundle", "--format=esm", "--minify", "--log-level=warning", `--outfile=${bundle}`], { stdio: "inherit" });
}

const listText = readFileSync(listFile, "utf8");
const paths = listText.split("\n").map((l) => l.trim()).filter((l) => l && !l.startsWith("#"));
const stamp = {
  rustc,
  list: createHash("sha256").update(listText).digest("hex"),
  converter: createHash("sha256").update(readFileSync(bundle)).digest("hex"),
};
const manifestFile = join(outDir, "manifest.json");
if (existsSync(manifestFile)) {
  const old = JSON.parse(readFileSync(manifestFile, "utf8"));
  if (old.rustc === stamp.rustc && old.list === stamp.list && old.converter === stamp.converter
      && old.sources.every((s) => existsSync(join(outDir, s.file)))) {
    console.error(`scale corpus: ${old.sources.length} sources already converted in ${outDir}${old.missing.length ? `; ${old.missing.length} listed files missing` : ""}`);
    process.exit(0);
  }
}

const present = [], missing = [];
for (const p of paths) (existsSync(join(html, p)) ? present : missing).push(p);
for (const p of missing) console.error(`scale corpus: skipped ${p}: not in this toolchain's docs (${html})`);

mkdirSync(outDir, { recursive: true });
const server = await startServer();
const browser = await launch();
const sources = [];
try {
  const page = await browser.newPage();
  await page.goto(server.url);
  // In batches: one evaluate per page would cost a round trip each; all at once a large message.
  for (let i = 0; i < present.length; i += 40) {
    const batch = present.slice(i, i + 40).map((p) => ({ path: p, url: `https://doc.rust-lang.org/${p}`, html: readFileSync(join(html, p), "utf8") }));
    const converted = await page.evaluate(async (files) => {
      const { htmlToMarkdown } = await import("/build/convert.js");
      return files.map((f) => { const c = htmlToMarkdown(f.html, { url: f.url }); return { title: c.title, markdown: c.markdown, warnings: c.warnings }; });
    }, batch);
    converted.forEach((c, j) => {
      const n = i + j + 1;
      const file = `${String(n).padStart(3, "0")}.md`;
      writeFileSync(join(outDir, file), c.markdown);
      sources.push({ n, path: batch[j].path, key: batch[j].url, title: c.title, file, bytes: Buffer.byteLength(c.markdown), warnings: c.warnings });
    });
  }
} finally {
  await browser.close();
  server.stop();
}
writeFileSync(manifestFile, JSON.stringify({ ...stamp, sources, missing }, null, 1) + "\n");
const bytes = sources.reduce((s, x) => s + x.bytes, 0);
console.error(`scale corpus: ${sources.length} sources, ${(bytes / 1e6).toFixed(1)} MB of markdown, in ${outDir}`);
