// The HTML → markdown converter against plain Readability on Mozilla Readability's own test pages
// (issue #26; the vendored subset in tests/fixtures/readability/). The converter removes page
// chrome before Readability runs; it must never cost the article: on every page its recall of
// the expected article's words is within 0.01 of plain Readability's, it keeps no more than about
// as much again of other text, and a full article is not flagged low-confidence (such a clip is
// kept but not compiled).
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startServer, launch, root } from "./harness.mjs";
import { pageNames, scorePages } from "./readability-suite.mjs";

const dir = `${root}/tests/fixtures/readability`;
let server, browser, rows;
before(async () => {
  server = await startServer();
  browser = await launch();
  const page = await browser.newPage();
  await page.goto(`${server.url}/style.css`);
  rows = await scorePages(page, dir, pageNames(dir));
});
after(async () => { await browser?.close(); server?.stop(); });

test("every vendored page: our recall is within 0.01 of plain Readability's", () => {
  assert.equal(rows.length, 23);
  const behind = rows.filter((r) => r.ours < r.plain - 0.01).map((r) => `${r.name}: ${r.ours.toFixed(3)} against ${r.plain.toFixed(3)}`);
  assert.deepEqual(behind, []);
  const mean = (k) => rows.reduce((s, r) => s + r[k], 0) / rows.length;
  console.log(`recall over ${rows.length} pages: ours ${mean("ours").toFixed(3)}, plain Readability ${mean("plain").toFixed(3)}`);
});

test("articles in containers named like sidebars are kept: videos-1 and ebb-org", () => {
  for (const name of ["videos-1", "ebb-org"]) {
    const r = rows.find((x) => x.name === name);
    assert.ok(r.ours >= 0.95, `${name}: recall ${r.ours.toFixed(3)}`);
  }
});

test("what comes with the article is bounded: precision at least 0.5 on every page of 200 characters or more", () => {
  // A converter that kept the whole page would keep every word (recall 1) and fail here.
  const text = (name) => readFileSync(`${dir}/${name}/expected.html`, "utf8").replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
  const loose = rows.filter((r) => text(r.name).length >= 200 && r.oursPrecision < 0.5).map((r) => `${r.name}: ${r.oursPrecision.toFixed(3)}`);
  assert.deepEqual(loose, []);
});

test("a full article is not flagged low-confidence", () => {
  const text = (name) => readFileSync(`${dir}/${name}/expected.html`, "utf8").replace(/<[^>]+>/g, " ").replace(/\s+/g, " ").trim();
  const flagged = rows.filter((r) => r.oursWarned && text(r.name).length >= 500).map((r) => r.name);
  assert.deepEqual(flagged, []);
});
