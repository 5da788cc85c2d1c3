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
