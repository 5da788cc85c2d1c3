// Decision 5 in the app: a compile whose update would drop a human's paragraph is held; the page
// view shows it with the paragraphs it would drop; "keep my version" and "accept" both work.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, watch, artifacts, scriptedEndpoint, configure } from "./harness.mjs";

let server, browser, endpoint;
before(async () => {
  server = await startServer();
  endpoint = await scriptedEndpoint();
  browser = await launch();
});
after(async () => { await browser?.close(); server?.stop(); endpoint?.stop(); });

async function addAndCompile(page, key, text) {
  await page.click("#tabs button[data-tab=sources]");
  await page.fill("#source-key", key);
  await page.fill("#source-content", text);
  await page.click("#add-source button[type=submit]");
  await page.waitForFunction((k) => document.querySelector("#sources-table").textContent.includes(k), key);
  await page.click("#compile");
  await page.waitForFunction(() => /Compiled 1 source\(s\), 0 failed/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
}

async function openPage(page, key) {
  await page.evaluate((k) => { location.hash = ""; location.hash = `#/page/${encodeURIComponent(k)}`; }, key);
  await page.waitForFunction((k) => !document.querySelector("#page-view").hidden && document.querySelector("#pv-title").textContent === k, key);
}

test("a held update: shown with what it drops; keep my version, then accept", { timeout: 180_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  const log = watch(page);
  page.on("dialog", (d) => d.accept());
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  await configure(page, `${endpoint.url}/v1`);
  await addAndCompile(page, "notes/a.md", "# Widgets\n\n## Widgetron\n\nWidgetron is small.\n");

  // The user writes a paragraph of their own.
  const mine = "My own observation: it runs warm.";
  await openPage(page, "Widgetron");
  await page.click("#pv-edit");
  const body = await page.inputValue("#page-body");
  await page.fill("#page-body", `${body.trimEnd()}\n\n${mine}\n`);
  await page.click("#page-editor button[type=submit]");
  await page.waitForFunction((m) => document.querySelector("#pv-body").textContent.includes(m), mine);
  assert.equal(await page.isHidden("#pv-proposal"), true);

  // A model that rewrites pages from scratch: the update is held, the page unchanged.
  await configure(page, `${endpoint.url}/fault/rewrite/v1`);
  await addAndCompile(page, "notes/b.md", "# More\n\n## Widgetron\n\nWidgetron ships in blue.\n");
  await openPage(page, "Widgetron");
  await page.waitForSelector("#pv-proposal:not([hidden])");
  assert.match(await page.textContent("#pv-proposal-dropped"), /runs warm/);
  assert.match(await page.textContent("#pv-body"), /runs warm/);
  await page.click("#pv-proposal-show");
  assert.match(await page.textContent("#pv-proposal-body"), /Rewritten by the model\./);
  await page.screenshot({ path: `${artifacts}/proposal.png`, fullPage: true });
  await page.click("#pv-proposal-reject");
  await page.waitForSelector("#pv-proposal", { state: "hidden" });
  assert.match(await page.textContent("#pv-body"), /runs warm/);

  // Held again, then accepted: the model's page is the next revision.
  await addAndCompile(page, "notes/c.md", "# Even more\n\n## Widgetron\n\nWidgetron weighs 2 kg.\n");
  await openPage(page, "Widgetron");
  await page.waitForSelector("#pv-proposal:not([hidden])");
  await page.click("#pv-proposal-accept");
  await page.waitForSelector("#pv-proposal", { state: "hidden" });
  await page.waitForFunction(() => /Rewritten by the model\./.test(document.querySelector("#pv-body").textContent));
  assert.doesNotMatch(await page.textContent("#pv-body"), /runs warm/);
  assert.match(await page.textContent("#pv-history"), /by llm/);
  assert.deepEqual(log.errors, []);
  await context.close();
});
