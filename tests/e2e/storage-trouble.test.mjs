// Storage trouble in the web app, in headless Chromium: a browser window where IndexedDB cannot
// be used at all (the app works in memory and says so), and a full disk during a vault import
// (QUOTA_EXCEEDED with this origin's figures and advice, nothing half-written). Issue #21, items
// 8 and 10.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, watch, artifacts } from "./harness.mjs";

let server, browser;
before(async () => {
  server = await startServer();
  browser = await launch();
});
after(async () => { await browser?.close(); server?.stop(); });

/** Adds `[key, content]` sources through the app's form, waiting for each row to be listed. */
async function addSources(page, notes) {
  for (const [key, content] of notes) {
    await page.fill("#source-key", key);
    await page.fill("#source-content", content);
    await page.click("#add-source button[type=submit]");
    await page.waitForFunction((k) => [...document.querySelectorAll("#sources-table tbody tr")].some((r) => r.dataset.key === k), key);
  }
}

const NOTES = [
  ["kestrel.md", "# Kestrel drone\n\nThe Kestrel drone flies for 42 minutes on one battery. It weighs 3.1 kg and carries a thermal camera for search and rescue.\n"],
  ["苏黎世.md", "# 苏黎世\n\n苏黎世是瑞士最大的城市，位于苏黎世湖北岸。这座城市以银行业和大学闻名。\n"],
];

test("IndexedDB unavailable: the app works in memory and says nothing is kept", { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  // As in Firefox private windows and some embedded webviews: every open throws.
  await context.addInitScript(() => {
    IDBFactory.prototype.open = function () {
      throw new DOMException("A mutation operation was attempted on a database that did not allow mutations.", "InvalidStateError");
    };
  });
  const page = await context.newPage();
  const log = watch(page);
  page.on("dialog", (d) => d.accept());
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  const banner = page.locator("#memory-banner");
  await banner.waitFor({ state: "visible" });
  assert.match(await banner.textContent(), /nothing is kept after this tab closes/);
  assert.match(await banner.textContent(), /[Ee]xport a vault/);
  assert.match(await page.textContent("#storage-info"), /in memory/);
  // Everything else works: add, compile (offline), search, export.
  await addSources(page, NOTES);
  await page.click("#compile");
  await page.waitForFunction(() => /Compiled 2 source/.test(document.querySelector("#status").textContent), null, { timeout: 60_000 });
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#vault-export")]);
  assert.ok((await download.path()) && (await download.suggestedFilename()).endsWith(".zip"));
  await page.screenshot({ path: `${artifacts}/storage-memory.png`, fullPage: true });
  // Reloaded, the wiki in memory starts empty again: that is no eviction to report.
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await page.locator("#memory-banner").waitFor({ state: "visible" });
  assert.equal(await page.locator("#eviction-notice").isVisible(), false);
  assert.deepEqual(log.errors.filter((e) => !/favicon/.test(e)), []);
  await context.close();
});

test("IndexedDB available: no memory banner", { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForFunction(() => /Storage:/.test(document.querySelector("#storage-info").textContent));
  assert.equal(await page.locator("#memory-banner").isVisible(), false);
  await context.close();
});

test("a full disk during a vault import: QUOTA_EXCEEDED with figures and advice, nothing written", { timeout: 180_000 }, async () => {
  // A vault of ~0.5 MB, exported from a wiki in another context (another origin's storage).
  let context = await browser.newContext();
  let page = await context.newPage();
  await page.goto(`${server.url}style.css`);
  const vault = await page.evaluate(async () => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("big");
    // Text that deflate cannot shrink much: words from a seeded generator.
    let seed = 7;
    const next = () => (seed = (seed * 1103515245 + 12345) % 2147483648);
    for (let i = 0; i < 80; i++) {
      const words = Array.from({ length: 900 }, () => next().toString(36)).join(" ");
      await w.addSource({ key: `note-${i}.md`, title: `Note ${i}`, mime: "text/markdown", content: `# Note ${i}\n\n${words}.\n` });
    }
    return Array.from(await w.exportVault());
  });
  await context.close();
  assert.ok(vault.length > 250_000, `the vault is ${vault.length} bytes`);

  context = await browser.newContext();
  page = await context.newPage();
  await page.goto(`${server.url}style.css`);
  // What a fresh origin uses once a wiki is open (the wasm code cache counts too), measured in a
  // context of its own: the quota override must be in place before the origin first uses storage.
  const used = await page.evaluate(async () => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    (await Wiki.open("probe")).close();
    return (await navigator.storage.estimate()).usage;
  });
  await context.close();
  context = await browser.newContext();
  page = await context.newPage();
  await page.goto(`${server.url}style.css`);
  const cdp = await context.newCDPSession(page);
  // Room to open the wiki, not for the import.
  await cdp.send("Storage.overrideQuotaForOrigin", { origin: new URL(server.url).origin, quotaSize: used + 150_000 });
  const r = await page.evaluate(async (vault) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("target");
    const before = (await w.sources()).length;
    let error;
    try { await w.importVault(new Uint8Array(vault)); } catch (e) {
      error = { code: e.code, message: e.message, usage: e.usage, quota: e.quota };
    }
    return { error, before, after: (await w.sources()).length };
  }, vault);
  assert.ok(r.error, "the import failed");
  assert.equal(r.error.code, "QUOTA_EXCEEDED", JSON.stringify(r.error));
  // The figures are present (they are the browser's estimate, which does not show a test's
  // quota override, so their values are not compared with it).
  assert.equal(typeof r.error.usage, "number");
  assert.equal(typeof r.error.quota, "number");
  assert.match(r.error.message, /uses [\d.]+ MB of its [\d.]+ MB/);
  assert.match(r.error.message, /export a vault/);
  assert.match(r.error.message, /delete wikis/);
  assert.match(r.error.message, /persist/);
  assert.equal(r.after, r.before, "nothing of the import was written");
  await context.close();
});
