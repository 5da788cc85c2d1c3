// Writes bench/scale-sources.txt: the real-size suite's input, the toolchain's own docs in reading
// order (each book's toc.html, then its pages the toc does not list, by name). Redirect stubs,
// print.html, toc.html and 404.html are skipped. Run it only to change the inputs on purpose:
// the list is committed so a toolchain update does not silently change them.
//   node scripts/scale-list.mjs
import { execFileSync } from "node:child_process";
import { readFileSync, readdirSync, statSync, writeFileSync } from "node:fs";
import { join, relative } from "node:path";

const html = join(execFileSync("rustc", ["--print", "sysroot"], { encoding: "utf8" }).trim(), "share/doc/rust/html");
const BOOKS = [
  // The Rust Book's chapters only (ch00–ch21): not its title page, foreword or appendices.
  { dir: "book", keep: (f) => /^ch\d\d-\d\d-.*\.html$/.test(f) },
  { dir: "cargo", keep: () => true },
  { dir: "nomicon", keep: () => true },
  { dir: "reference", keep: () => true },
];
const SKIP = new Set(["print.html", "toc.html", "404.html"]);
const SKIP_DIRS = new Set(["css", "fonts", "images", "img", "theme", "FontAwesome"]);

function walk(dir, out = []) {
  for (const f of readdirSync(dir).sort()) {
    const p = join(dir, f);
    if (statSync(p).isDirectory()) { if (!SKIP_DIRS.has(f)) walk(p, out); } else if (f.endsWith(".html")) out.push(p);
  }
  return out;
}
const isRedirect = (p) => /http-equiv="refresh"/i.test(readFileSync(p, "utf8").slice(0, 2000));

const lines = [];
for (const { dir, keep } of BOOKS) {
  const base = join(html, dir);
  const toc = readFileSync(join(base, "toc.html"), "utf8");
  const ordered = [...new Set([...toc.matchAll(/href="([^"#]+\.html)"/g)].map((m) => m[1]))];
  const all = walk(base).map((p) => relative(base, p));
  const rest = all.filter((f) => !ordered.includes(f));
  const picked = [...ordered, ...rest].filter((f) => all.includes(f) && !SKIP.has(f.split("/").pop()) && keep(f) && !isRedirect(join(base, f)));
  for (const f of picked) lines.push(`${dir}/${f}`);
  console.error(`${dir}: ${picked.length} pages`);
}
const header = [
  "# The real-size suite's sources (scripts/scale-list.mjs wrote this list; edit it on purpose only).",
  "# Paths under $(rustc --print sysroot)/share/doc/rust/html/, in reading order; one source each.",
  `# Written from ${execFileSync("rustc", ["--version"], { encoding: "utf8" }).trim()}.`,
];
writeFileSync(new URL("../bench/scale-sources.txt", import.meta.url), [...header, ...lines].join("\n") + "\n");
console.error(`${lines.length} sources`);
