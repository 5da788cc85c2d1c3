// The app shell end to end: open a wiki, add a markdown source, list it, reload, see it again;
// edit a page; switch language; errors reach the page with their code.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, watch, artifacts } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

test("a source added in the app is listed and survives a reload", async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const log = watch(page);
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");

  await page.fill("#source-title", "Backpressure 背压");
  await page.fill("#source-content", "# Backpressure\n\nA slow consumer makes the producer wait. 流量控制。\n");
  await page.click("#add-source button[type=submit]");
  await page.waitForSelector("#sources-table tbody tr");
  assert.match(await page.textContent("#status"), /Added/);
  assert.equal(await page.locator("#sources-table tbody tr").count(), 1);
  assert.match(await page.textContent("#sources-table"), /Backpressure 背压/);
  assert.match(await page.textContent("#sources-table"), /pending/);

  // The same text again is reported as unchanged and adds nothing.
  await page.fill("#source-title", "Backpressure 背压");
  await page.fill("#source-content", "# Backpressure\r\n\r\nA slow consumer makes the producer wait. 流量控制。\r\n");
  await page.click("#add-source button[type=submit]");
  await page.waitForFunction(() => /unchanged|没有变化/.test(document.querySelector("#status").textContent));
  assert.equal(await page.locator("#sources-table tbody tr").count(), 1);

  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForSelector("#sources-table tbody tr");
  assert.match(await page.textContent("#sources-table"), /Backpressure 背压/);
  await page.click("#sources-table tbody tr a");
  await page.waitForSelector("#source-view:not([hidden])");
  assert.match(await page.textContent("#source-view pre"), /A slow consumer makes the producer wait/);
  await page.screenshot({ path: `${artifacts}/shell-sources.png`, fullPage: true });

  // index.md and log.md are the app's.
  await page.click("#tabs button[data-tab=log]");
  await page.waitForFunction(() => document.querySelector("#log-md").textContent.includes("add-source"));
  assert.equal(log.errors.length, 0, log.errors.join("\n"));
  await context.close();
});

test("a human edit makes a page with a revision, in Chinese too", async () => {
  const context = await browser.newContext({ locale: "zh-CN" });
  const page = await context.newPage();
  const log = watch(page);
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.textContent("#tabs button[data-tab=pages]"), "页面");
  await page.click("#tabs button[data-tab=pages]");
  await page.click("#page-new");
  await page.fill("#page-title", "机器学习");
  await page.fill("#page-body", "## 监督学习\n\n人工编辑的段落。");
  await page.click("#page-editor button[type=submit]");
  await page.waitForSelector("#page-view:not([hidden])");
  assert.match(await page.textContent("#page-view"), /修订 1/);
  assert.match(await page.textContent("#pages-list"), /机器学习/);
  await page.click("#tabs button[data-tab=index]");
  await page.waitForFunction(() => document.querySelector("#index-md").textContent.includes("[[机器学习]]"));
  await page.screenshot({ path: `${artifacts}/shell-pages-zh.png`, fullPage: true });
  assert.equal(log.errors.length, 0, log.errors.join("\n"));
  await context.close();
});

test("with no endpoint, Rust Book chapters dropped as HTML compile offline into a wiki", async () => {
  const { readFileSync } = await import("node:fs");
  const { execFileSync } = await import("node:child_process");
  const { root } = await import("./harness.mjs");
  const sysroot = execFileSync("rustc", ["--print", "sysroot"], { encoding: "utf8" }).trim();
  const { chapters } = JSON.parse(readFileSync(`${root}/tests/fixtures/rust-book/chapters.json`, "utf8"));
  const context = await browser.newContext();
  const page = await context.newPage();
  const log = watch(page);
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  const files = chapters.slice(0, 3).map((name) => ({
    name: `${name}.html`, mimeType: "text/html",
    buffer: readFileSync(`${sysroot}/share/doc/rust/html/book/${name}.html`),
  }));
  await page.setInputFiles("#source-files", files);
  await page.waitForFunction(() => document.querySelectorAll("#sources-table tbody tr").length === 3);
  assert.match(await page.textContent("#sources-table"), /What Is Ownership\?/);
  await page.click("#compile");
  await page.waitForFunction(() => /Compiled 3 source/.test(document.querySelector("#status").textContent), null, { timeout: 60000 });
  assert.doesNotMatch(await page.textContent("#sources-table"), /pending|failed/);
  await page.click("#tabs button[data-tab=pages]");
  await page.waitForSelector("#pages-list li");
  const titles = await page.$$eval("#pages-list li > a", (as) => as.map((a) => a.textContent));
  for (const concept of ["Ownership", "Borrowing", "References"]) assert.ok(titles.includes(concept), `${concept} in ${titles}`);
  await page.screenshot({ path: `${artifacts}/offline-pages.png`, fullPage: true });
  // A page renders: cited facts, working wikilinks, backlinks, history.
  await page.click("#pages-list li > a:text-is('Ownership')");
  await page.waitForSelector("#page-view:not([hidden]) #pv-body p, #page-view:not([hidden]) #pv-body li");
  const html = await page.innerHTML("#pv-body");
  assert.match(html, /class="[^"]*wikilink/);
  assert.match(html, /footnote/);
  assert.ok(await page.locator("#pv-backlinks li a").count() > 0, "Ownership has backlinks");
  assert.ok(await page.locator("#pv-history li").count() >= 1);
  await page.screenshot({ path: `${artifacts}/offline-page-ownership.png`, fullPage: true });
  const firstLink = page.locator("#pv-body a.wikilink:not(.missing)").first();
  const target = await firstLink.getAttribute("data-page");
  await firstLink.click();
  await page.waitForFunction((t) => document.querySelector("#pv-title").textContent.length > 0 && location.hash.includes(encodeURIComponent(t)), target);
  // Instant search finds pages; Chinese and English.
  await page.fill("#search", "borrowing references");
  await page.waitForSelector("#search-results:not([hidden]) li a");
  assert.match(await page.textContent("#search-results"), /Borrowing|References/);
  await page.keyboard.press("Escape");

  // Ask (offline: an extractive, cited answer), then save it to the wiki.
  await page.click("#tabs button[data-tab=ask]");
  await page.fill("#question", "What is ownership?");
  await page.click("#ask-submit");
  await page.waitForSelector("#conversation .turn .answer a.wikilink");
  assert.match(await page.textContent("#conversation"), /Offline: this answer quotes/);
  await page.click("#conversation [data-testid=save-answer]");
  await page.waitForFunction(() => /Saved as/.test(document.querySelector("#conversation").textContent));
  await page.screenshot({ path: `${artifacts}/offline-ask.png`, fullPage: true });

  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  // The session survived the reload.
  await page.click("#tabs button[data-tab=ask]");
  await page.waitForSelector("#sessions li a");
  assert.match(await page.textContent("#sessions"), /What is ownership\?/);
  await page.click("#tabs button[data-tab=index]");
  await page.waitForFunction(() => document.querySelector("#index-md").textContent.includes("[[Ownership]]"));
  assert.match(await page.textContent("#index-md"), /## Analyses/);
  // Nothing but the page's own origin was contacted.
  const origin = new URL(server.url).origin;
  assert.deepEqual(log.requests.filter((u) => !u.startsWith(origin) && !u.startsWith("data:")), []);
  assert.equal(log.errors.length, 0, log.errors.join("\n"));
  await context.close();
});

test("the offline shell caches every module the app loads, the ones loaded on first use too", async () => {
  const { readFileSync, readdirSync } = await import("node:fs");
  const { root } = await import("./harness.mjs");
  const sw = readFileSync(`${root}/www/sw.js`, "utf8");
  const listed = new Set([...sw.matchAll(/"\.\/([^"]+)"/g)].map((m) => m[1]));
  const modules = [
    ...readdirSync(`${root}/www`).filter((f) => /\.(js|css|html)$/.test(f) && f !== "sw.js"),
    ...readdirSync(`${root}/www/ui`).filter((f) => f.endsWith(".js")).map((f) => `ui/${f}`),
    ...readdirSync(`${root}/www/build`).filter((f) => f.endsWith(".js")).map((f) => `build/${f}`),
  ];
  assert.deepEqual(modules.filter((m) => !listed.has(m)), []);
});
