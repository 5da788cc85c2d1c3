// Storage loss and persistence in the app (issue #21, items 9 and 11), in headless Chromium: a
// wiki the browser cleared is noticed, with the last export's date and an import; the first
// source asks for persistent storage inside the user's gesture.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { startServer, launch, watch, artifacts } from "./harness.mjs";

let server, browser;
before(async () => { server = await startServer(); browser = await launch(); });
after(async () => { await browser?.close(); server?.stop(); });

/** Counts `navigator.storage.persist()` calls, with the event being dispatched at each call. */
const COUNT_PERSIST = () => {
  window.__persistCalls = [];
  const original = navigator.storage.persist.bind(navigator.storage);
  navigator.storage.persist = () => {
    window.__persistCalls.push({ during: window.event ? window.event.type : null });
    return original();
  };
};

async function openApp(context) {
  const page = await context.newPage();
  const log = watch(page);
  page.on("dialog", (d) => d.accept());
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  return { page, log };
}

async function addNote(page, title, text) {
  await page.fill("#source-title", title);
  await page.fill("#source-content", text);
  await page.click("#add-source button[type=submit]");
  await page.waitForFunction((t) => document.querySelector("#sources-table").textContent.includes(t), title);
}

/** Deletes the wiki's IndexedDB database behind the app's back (as an eviction does), then reloads. */
async function evict(page, wiki) {
  await page.evaluate((name) => { indexedDB.deleteDatabase(`llm-wiki/${name}`); }, wiki);
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
}

test("a wiki the browser cleared is noticed, with the date of the last vault export and an import that restores it", { timeout: 120_000 }, async () => {
  const context = await browser.newContext({ acceptDownloads: true });
  const { page, log } = await openApp(context);
  await addNote(page, "Kestrel drone", "# Kestrel\n\nThe Kestrel drone flies 42 minutes on one battery.\n");
  assert.equal(await page.isHidden("#eviction-notice"), true, "no notice while the wiki is there");
  const [download] = await Promise.all([page.waitForEvent("download"), page.click("#vault-export")]);
  const vault = readFileSync(await download.path());
  const exportedAt = await page.evaluate(() => Number(localStorage.getItem("llm-wiki.exported.default")));
  assert.ok(exportedAt > 0);

  await evict(page, "default");
  await page.waitForSelector("#eviction-notice:not([hidden])");
  const notice = await page.textContent("#eviction-text");
  assert.match(notice, /"default" is gone/);
  assert.match(notice, /1 source/);
  const shown = await page.evaluate((ms) => new Date(ms).toLocaleString(), exportedAt);
  assert.ok(notice.includes(shown), `the export date ${shown} is not in: ${notice}`);
  assert.equal(await page.textContent("#eviction-import"), "Import vault");
  assert.equal(await page.locator("#sources-table tbody tr").count(), 0, "the wiki did open empty");
  await page.screenshot({ path: `${artifacts}/storage-evicted.png`, fullPage: true });

  // The notice stays across a reload until the user acts.
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForSelector("#eviction-notice:not([hidden])");

  // Import vault: the button opens the file chooser; the import restores the source, the notice goes.
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.click("#eviction-import")]);
  await chooser.setFiles({ name: "default.zip", mimeType: "application/zip", buffer: vault });
  await page.waitForFunction(() => /Imported/.test(document.querySelector("#status").textContent), null, { timeout: 30_000 });
  await page.waitForSelector("#eviction-notice[hidden]", { state: "attached" });
  await page.click("#tabs button[data-tab=sources]");
  await page.waitForFunction(() => document.querySelector("#sources-table").textContent.includes("Kestrel drone"));
  assert.equal(log.errors.length, 0, log.errors.join("\n"));
  await context.close();
});

test("no eviction notice for a wiki deleted on purpose, emptied by the user, or never used; a dismissal sticks", { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  const { page } = await openApp(context);
  // Never used: an empty wiki reloads without a notice.
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.isHidden("#eviction-notice"), true);

  // Emptied by the user: the source removed in the app, then a reload.
  await addNote(page, "Temporary", "# Temporary\n\nA note that is removed again.\n");
  await page.click("#sources-table tbody tr button[data-testid=remove-source]");
  await page.waitForFunction(() => document.querySelectorAll("#sources-table tbody tr").length === 0);
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.isHidden("#eviction-notice"), true, "a wiki the user emptied is no eviction");
  // Even when the app missed the removal (its counts still say one source): the wiki has history.
  await page.evaluate(() => localStorage.setItem("llm-wiki.known", JSON.stringify({ default: { sources: 1, pages: 1 } })));
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.isHidden("#eviction-notice"), true, "an emptied wiki with history is no eviction");

  // Deleted on purpose with "Delete wiki".
  await addNote(page, "Kept", "# Kept\n\nThis one stays until the wiki is deleted.\n");
  await page.click("#wiki-delete");
  await page.waitForFunction(() => document.querySelectorAll("#sources-table tbody tr").length === 0);
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.isHidden("#eviction-notice"), true, "a deleted wiki is no eviction");

  // Cleared, then dismissed: the notice does not come back.
  await addNote(page, "Again", "# Again\n\nA note in a wiki the browser then clears.\n");
  await evict(page, "default");
  await page.waitForSelector("#eviction-notice:not([hidden])");
  assert.match(await page.textContent("#eviction-text"), /No vault export was made/);
  await page.click("#eviction-dismiss");
  assert.equal(await page.isHidden("#eviction-notice"), true);
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  assert.equal(await page.isHidden("#eviction-notice"), true, "a dismissed notice stays dismissed");
  await context.close();
});

test("a wiki other than the open one that the browser cleared is noticed too", { timeout: 60_000 }, async () => {
  const context = await browser.newContext();
  const { page } = await openApp(context);
  await addNote(page, "Default note", "# Default\n\nThe default wiki's note.\n");
  // A second wiki the app knew, with a source, whose database then goes.
  await page.evaluate(() => {
    const known = JSON.parse(localStorage.getItem("llm-wiki.known") || "{}");
    known.research = { sources: 3, pages: 7 };
    localStorage.setItem("llm-wiki.known", JSON.stringify(known));
  });
  await page.reload();
  await page.waitForSelector("body[data-ready=true]");
  await page.waitForSelector("#eviction-notice:not([hidden])");
  assert.match(await page.textContent("#eviction-text"), /"research" is gone from this browser's storage: it had 3 source\(s\) and 7 page\(s\)/);
  await context.close();
});

test("adding the first source asks for persistent storage inside the gesture, by form, file choice and drop", { timeout: 60_000 }, async () => {
  const calls = async (page) => page.evaluate(() => window.__persistCalls);
  // The form.
  let context = await browser.newContext();
  await context.addInitScript(COUNT_PERSIST);
  let { page } = await openApp(context);
  assert.deepEqual(await calls(page), []);
  await addNote(page, "First", "# First\n\nThe first source of this wiki.\n");
  // Headless Chromium answers false without a prompt: only the request is checked.
  assert.deepEqual(await calls(page), [{ during: "submit" }], "requested synchronously in the submit handler");
  await addNote(page, "Second", "# Second\n\nNot the first source any more.\n");
  assert.equal((await calls(page)).length, 1, "only for the first source");
  await page.waitForFunction(() => /not persistent|persistent/.test(document.querySelector("#storage-info").textContent));
  await context.close();

  // A drop of files onto the text area.
  context = await browser.newContext();
  await context.addInitScript(COUNT_PERSIST);
  ({ page } = await openApp(context));
  const dataTransfer = await page.evaluateHandle(() => {
    const dt = new DataTransfer();
    dt.items.add(new File(["# Dropped\n\nA dropped note.\n"], "dropped.md", { type: "text/markdown" }));
    return dt;
  });
  await page.dispatchEvent("#source-content", "drop", { dataTransfer });
  await page.waitForFunction(() => document.querySelector("#sources-table").textContent.includes("file:dropped.md"));
  assert.deepEqual(await calls(page), [{ during: "drop" }]);
  await context.close();

  // The file chooser: the click that opens it asks.
  context = await browser.newContext();
  await context.addInitScript(COUNT_PERSIST);
  ({ page } = await openApp(context));
  const [chooser] = await Promise.all([page.waitForEvent("filechooser"), page.click("label.file:has(#source-files)")]);
  assert.equal((await calls(page))[0]?.during, "click");
  await chooser.setFiles({ name: "chosen.md", mimeType: "text/markdown", buffer: Buffer.from("# Chosen\n\nA chosen note.\n") });
  await page.waitForFunction(() => document.querySelector("#sources-table").textContent.includes("file:chosen.md"));
  assert.ok((await calls(page)).every((c) => c.during === "click" || c.during === "change"), JSON.stringify(await calls(page)));
  await context.close();
});
