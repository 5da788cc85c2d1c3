// The HTML → markdown converter against plain Readability on Mozilla Readability's test pages
// (issue #26): the recall of each expected article's words, ours beside plain Readability's, in
// headless Chromium through the product build (www/build/convert.js, scripts/build.sh).
// The full set (130 pages, about 28 MB) is not in this repository; check it out and point at it:
//   git clone --depth 1 https://github.com/mozilla/readability /tmp/readability
//   READABILITY_PAGES=/tmp/readability/test/test-pages node bench/readability.mjs
// Without READABILITY_PAGES it runs the vendored subset (tests/fixtures/readability/).
import { writeFileSync } from "node:fs";
import { startServer, launch, root } from "../tests/e2e/harness.mjs";
import { pageNames, scorePages } from "../tests/e2e/readability-suite.mjs";

const dir = process.env.READABILITY_PAGES || `${root}/tests/fixtures/readability`;
const names = pageNames(dir);
const server = await startServer();
const browser = await launch();
try {
  const page = await browser.newPage();
  await page.goto(`${server.url}/style.css`);
  const t0 = Date.now();
  const rows = await scorePages(page, dir, names);
  const mean = (k) => rows.reduce((s, r) => s + r[k], 0) / rows.length;
  const gap = (r) => r.ours - r.plain;
  console.log(`${rows.length} pages from ${dir} in ${((Date.now() - t0) / 1000).toFixed(1)} s`);
  console.log(`mean recall: ours ${mean("ours").toFixed(3)}, plain Readability ${mean("plain").toFixed(3)}`);
  console.log(`mean precision: ours ${mean("oursPrecision").toFixed(3)}, plain Readability ${mean("plainPrecision").toFixed(3)}`);
  console.log(`low-confidence warnings (the clip is kept, not compiled): ${rows.filter((r) => r.oursWarned).length}`);
  const behind = rows.filter((r) => gap(r) < -0.01);
  console.log(`pages where ours is more than 0.01 behind: ${behind.length}`);
  console.log("| page | recall, ours | plain Readability | gap | precision, ours | plain | ours warned |");
  console.log("|---|---|---|---|---|---|---|");
  for (const r of [...rows].sort((a, b) => gap(a) - gap(b)).slice(0, Number(process.env.READABILITY_ROWS || 25))) {
    console.log(`| ${r.name} | ${r.ours.toFixed(3)} | ${r.plain.toFixed(3)} | ${gap(r).toFixed(3)} | ${r.oursPrecision.toFixed(3)} | ${r.plainPrecision.toFixed(3)} | ${r.oursWarned ? "yes" : ""} |`);
  }
  if (process.env.READABILITY_JSON) writeFileSync(process.env.READABILITY_JSON, JSON.stringify(rows, null, 1));
} finally {
  await browser.close();
  server.stop();
}
