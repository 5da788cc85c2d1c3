// The clipper extension (issue 9), loaded unpacked in headless Chromium: clip pages served by a
// local fixture server (a cookie banner, navigation, a consent overlay added by script), find the
// article and not the banner in raw/, compile against the scripted endpoint from the extension's
// own origin, see the popup's recall (matching pages, their summaries, an open contradiction) for
// a second page on the same topic, re-clip unchanged and changed pages, and the one-writer lock.
// Field cases F06 (OLLAMA_ORIGINS for chrome-extension://<id>) and F23 (banner vs article).
//
// The popup is opened as a page, `popup.html?tab=<id>` (headless Chromium does not show the
// toolbar popup to Playwright). The shipped manifest asks for `activeTab`, which only a click on
// the toolbar grants; the copy loaded here adds `host_permissions` for the fixture host,
// http://localhost/*, and for http://127.0.0.2/*, the other site a clip's picture comes from (in
// use, an optional permission the clip asks for) — the one difference. The scripted endpoint is
// on 127.0.0.1, another host, so its calls stay subject to CORS as in real use.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { inflateRawSync } from "node:zlib";
import { chromium } from "playwright-core";
import { CHROMIUM_ARGS, artifacts, root, scriptedEndpoint, configure, fillEndpoint } from "./harness.mjs";

const extensionDir = `${root}/www/extension`;
const fixtures = `${root}/tests/fixtures/extension`;

let context, sw, id, endpoint, fixtureServer, base, app, tmp;
/** The picture pictures.html shows: PNG signature and filler, 3,000 bytes. */
const CRAB = Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), Buffer.alloc(2992, 7)]);
/** The other picture, on another site (127.0.0.2, not localhost), its name with parentheses. */
const SKETCH = Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), Buffer.alloc(1992, 9)]);
const site = { edition: 1 };

/** Serves tests/fixtures/extension/; editions 2 and 3 of backpressure.html add a paragraph each. */
function startFixtures() {
  return new Promise((resolve) => {
    const server = createServer((req, res) => {
      const name = new URL(req.url, "http://x").pathname.slice(1);
      if (name === "favicon.ico") { res.writeHead(204).end(); return; }
      if (name === "crab.png") { res.writeHead(200, { "content-type": "image/png" }).end(CRAB); return; }
      if (name === "Ferris_(sketch).png") { res.writeHead(200, { "content-type": "image/png" }).end(SKETCH); return; }
      if (!/^[a-z-]+\.html$/.test(name) || !existsSync(`${fixtures}/${name}`)) { res.writeHead(404).end(); return; }
      let html = readFileSync(`${fixtures}/${name}`, "utf8").replaceAll("{{OTHER}}", `http://127.0.0.2:${server.address().port}`);
      if (name === "backpressure.html" && site.edition >= 2) {
        html = html.replace("<p>Claim.", "<p>Credit-based flow control is the same idea across a network: the receiver grants credits and the sender spends one per message.</p>\n<p>Claim.");
      }
      if (name === "backpressure.html" && site.edition === 3) {
        html = html.replace("<p>Claim.", "<p>A bounded queue between stages turns a slow consumer into a waiting producer instead of a growing buffer.</p>\n<p>Claim.");
      }
      res.writeHead(200, { "content-type": "text/html; charset=utf-8" }).end(html);
    });
    // On every loopback address: 127.0.0.2 stands for another site (pictures.html takes a picture from it).
    server.listen(0, "0.0.0.0", () => resolve(server));
  });
}

before(async () => {
  assert.ok(existsSync(`${extensionDir}/app/pkg/llm_wiki_bg.wasm`), "build the extension first: scripts/build.sh");
  for (const f of ["index.html", "app.js", "i18n.js", "writer.js", "status.js", "vector-index.js", "hnsw-worker.js", "style.css", "build/convert.js"]) {
    assert.ok(readFileSync(`${root}/www/${f}`).equals(readFileSync(`${extensionDir}/app/${f}`)), `www/extension/app/${f} is stale: run scripts/build-extension.sh`);
  }
  assert.ok(readFileSync(`${root}/pkg/llm_wiki_bg.wasm`).equals(readFileSync(`${extensionDir}/app/pkg/llm_wiki_bg.wasm`)), "the extension's pkg/ is stale: run scripts/build-extension.sh");
  endpoint = await scriptedEndpoint();
  fixtureServer = await startFixtures();
  base = `http://localhost:${fixtureServer.address().port}`;
  tmp = mkdtempSync(join(tmpdir(), "llm-wiki-extension-"));
  const ext = `${tmp}/extension`;
  cpSync(extensionDir, ext, { recursive: true, dereference: true });
  const manifest = JSON.parse(readFileSync(`${ext}/manifest.json`, "utf8"));
  assert.deepEqual(manifest.permissions, ["activeTab", "scripting", "unlimitedStorage"]);
  assert.equal(manifest.host_permissions, undefined);
  // Asked for at the first clip whose images are on another site, for those sites only.
  assert.deepEqual(manifest.optional_host_permissions, ["http://*/*", "https://*/*"]);
  // The fixture site, and the site its pictures page takes one picture from (what a person
  // grants when the clip asks; the prompt itself cannot be answered in a headless browser). Not
  // 127.0.0.1: the scripted endpoint is there, and must be reached as any site would reach it.
  manifest.host_permissions = ["http://localhost/*", "http://127.0.0.2/*"];
  writeFileSync(`${ext}/manifest.json`, JSON.stringify(manifest, null, 2));
  context = await chromium.launchPersistentContext(`${tmp}/profile`, {
    executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, acceptDownloads: true,
    args: [...CHROMIUM_ARGS, `--disable-extensions-except=${ext}`, `--load-extension=${ext}`],
  });
  [sw] = context.serviceWorkers();
  sw ??= await context.waitForEvent("serviceworker");
  id = new URL(sw.url()).host;
});

after(async () => {
  await context?.close();
  fixtureServer?.close();
  endpoint?.stop();
  if (tmp) rmSync(tmp, { recursive: true, force: true });
});

const errors = [];
function watch(page, label) {
  page.on("pageerror", (e) => errors.push(`${label}: ${e}`));
  page.on("console", (m) => { if (m.type() === "error") errors.push(`${label}: ${m.text()}`); });
  return page;
}

/** Opens a fixture page in a tab. */
async function visit(name) {
  const page = watch(await context.newPage(), name);
  await page.goto(`${base}/${name}`);
  return page;
}

/** Opens the popup for the tab showing `tab` and waits until it has read the page and the wiki. */
async function popupFor(tab) {
  // The newest tab with that URL (a closed one can linger in the list for a moment).
  const tabId = await sw.evaluate((url) => chrome.tabs.query({}).then((all) => Math.max(...all.filter((t) => t.url === url).map((t) => t.id))), tab.url());
  assert.ok(tabId > 0, `no tab for ${tab.url()}`);
  const popup = watch(await context.newPage(), "popup");
  await popup.goto(`chrome-extension://${id}/popup.html?tab=${tabId}`);
  await popup.waitForSelector("body[data-ready=true]");
  return popup;
}

/** Clicks a popup button and waits for its action to finish; returns the popup's status line. */
async function press(popup, button) {
  const done = Number(await popup.getAttribute("body", "data-done") || 0);
  await popup.click(button);
  await popup.waitForSelector(`body[data-done="${done + 1}"]`, { timeout: 120_000 });
  return popup.textContent("#status");
}

/** Facts about the wiki, read through the JS API on the extension's app page. */
function wikiFacts(page = app) {
  return page.evaluate(async () => {
    const { default: init, Wiki } = await import("/app/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("default");
    try {
      const sources = [];
      for (const s of await w.sources()) sources.push(await w.source(s.key));
      return { sources, pages: await w.pages(), ops: (await w.operations()).length };
    } finally { w.close(); }
  });
}

/** The wiki's vault (Decision 10) as { path: Buffer }, unzipped here (stored or deflated entries). */
async function vault() {
  const bytes = Buffer.from(await app.evaluate(async () => {
    const { default: init, Wiki } = await import("/app/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("default");
    try { return Array.from(await w.exportVault()); } finally { w.close(); }
  }));
  const files = {};
  const eocd = bytes.lastIndexOf(Buffer.from([0x50, 0x4b, 0x05, 0x06]));
  let at = bytes.readUInt32LE(eocd + 16);
  for (let n = bytes.readUInt16LE(eocd + 10); n > 0; n--) {
    assert.equal(bytes.readUInt32LE(at), 0x02014b50, "central directory entry");
    const method = bytes.readUInt16LE(at + 10), size = bytes.readUInt32LE(at + 20);
    const nameLen = bytes.readUInt16LE(at + 28), extra = bytes.readUInt16LE(at + 30), comment = bytes.readUInt16LE(at + 32);
    const local = bytes.readUInt32LE(at + 42);
    const name = bytes.subarray(at + 46, at + 46 + nameLen).toString("utf8");
    const start = local + 30 + bytes.readUInt16LE(local + 26) + bytes.readUInt16LE(local + 28);
    const data = bytes.subarray(start, start + size);
    files[name] = method === 8 ? inflateRawSync(data) : Buffer.from(data);
    at += 46 + nameLen + extra + comment;
  }
  return files;
}

/** Saves the endpoint settings in the app's Settings tab, then goes back to Sources. */
async function saveEndpoint(baseUrl) {
  await configure(app, baseUrl);
  await app.click("#tabs button[data-tab=sources]");
}

/** The requests the scripted endpoint received from the extension's origin. */
async function requestsFromExtension() {
  const all = await (await fetch(`${endpoint.url}/__requests`)).json();
  return all.filter((q) => q.headers.origin === `chrome-extension://${id}`);
}

/** How many model calls (POSTs) the scripted endpoint received from the extension's origin. */
async function endpointCallsFromExtension() {
  return (await requestsFromExtension()).filter((q) => q.method === "POST").length;
}

test("F06: the extension's settings show the exact OLLAMA_ORIGINS value, and a refusing endpoint names it", { timeout: 120_000 }, async () => {
  app = watch(await context.newPage(), "app");
  // The extension's options page opens the app's Settings tab.
  await app.goto(`chrome-extension://${id}/options.html`);
  await app.waitForURL(`chrome-extension://${id}/app/index.html#/settings`);
  await app.waitForSelector("body[data-ready=true]");
  await app.waitForSelector("#tab-settings:not([hidden])");
  await app.waitForFunction(() => document.querySelector("#cfg-origins").textContent !== "");
  assert.equal(await app.textContent("#cfg-origins"), `OLLAMA_ORIGINS=chrome-extension://${id}`);

  // The scripted endpoint's cors fault path answers like Ollama does for an origin it does not
  // list: 403, empty body, no CORS headers.
  await fillEndpoint(app, `${endpoint.url}/fault/cors/v1`);
  const opsBefore = (await wikiFacts()).ops;
  await app.click("#cfg-test");
  await app.waitForFunction(() => /LLM_ORIGIN_NOT_ALLOWED/.test(document.querySelector("#cfg-report").textContent));
  const report = await app.textContent("#cfg-report");
  assert.ok(report.includes(`OLLAMA_ORIGINS=chrome-extension://${id}`), report);
  assert.ok(!/LLM_AUTH|LLM_UNREACHABLE/.test(report), report);
  // No retry storm: each refused step is tried once (a CORS refusal is not retried).
  const refused = (await requestsFromExtension()).filter((q) => q.path.startsWith("/fault/cors/"));
  console.log(`F06: ${refused.length} refused requests for the connection test`);
  assert.ok(refused.length > 0 && refused.length <= 10, JSON.stringify(refused.map((q) => `${q.method} ${q.path}`)));
  assert.equal((await wikiFacts()).ops, opsBefore, "the connection test wrote nothing");

  await saveEndpoint(`${endpoint.url}/v1`);
  errors.length = 0; // the refused requests above are logged by the browser, as they should be
});

test("F23: a page with a cookie banner and navigation is clipped as its article; the original HTML is kept", { timeout: 120_000 }, async () => {
  const tab = await visit("backpressure.html");
  // The consent overlay is in the live page the extension reads.
  assert.match(await tab.textContent("body"), /Accept all cookies to continue reading/);
  const popup = await popupFor(tab);
  assert.equal(await popup.textContent("#page-title"), "Understanding Backpressure");
  assert.equal(await popup.isVisible("#recall-empty"), true, "an empty wiki has nothing to say about the page");
  assert.equal(await popup.isVisible("#warnings"), false);
  assert.match(await press(popup, "#clip"), /Added "Understanding Backpressure"/);

  // The open app tab refreshes itself (BroadcastChannel) and lists the clip.
  const url = `${base}/backpressure.html`;
  await app.waitForSelector(`#sources-table tr[data-key="${url}"]`);

  const { sources, ops } = await wikiFacts();
  assert.equal(sources.length, 1);
  const s = sources[0];
  assert.equal(s.key, url, "the URL is the source key");
  assert.equal(s.url, url);
  assert.equal(s.title, "Understanding Backpressure");
  assert.equal(typeof s.capturedAt, "number");
  assert.ok(Math.abs(Date.now() - s.capturedAt) < 120_000, "capture time is now");
  assert.equal(s.status.state, "pending");
  assert.equal(s.original.mime, "text/html");

  const files = await vault();
  const text = Object.entries(files).filter(([p]) => p.startsWith("raw/text/"));
  const original = Object.entries(files).filter(([p]) => p.startsWith("raw/original/"));
  assert.equal(text.length, 1, Object.keys(files).join("\n"));
  assert.equal(original.length, 1, Object.keys(files).join("\n"));
  const md = text[0][1].toString("utf8");
  assert.ok(md.startsWith("# Understanding Backpressure\n"), md);
  for (const p of ["Backpressure is how a slow consumer", "The default stream buffer holds 16 chunks", "Reactive libraries make the demand explicit"]) {
    assert.ok(md.includes(p), `raw/ misses the paragraph "${p}":\n${md}`);
  }
  assert.match(md, /\[\^fn1\]: Footnote text\./);
  for (const bad of ["cookies", "Accept all", "Pricing", "privacy", "©", "trackEverything", "842 partners"]) {
    assert.ok(!md.includes(bad), `raw/ text contains "${bad}":\n${md}`);
  }
  // The raw artifact is the page as the reader had it: banner, overlay and all.
  const html = original[0][1].toString("utf8");
  assert.ok(original[0][0].endsWith(".html"), original[0][0]);
  for (const kept of ["We value your privacy", "Accept all cookies to continue reading", "<h1>Understanding Backpressure</h1>"]) {
    assert.ok(html.includes(kept), `the original misses ${kept}`);
  }

  // Re-clipping the unchanged page is a no-op: no operation, no new version.
  assert.match(await press(popup, "#clip"), /is unchanged: nothing to do/);
  const again = await wikiFacts();
  assert.equal(again.ops, ops);
  assert.equal(again.sources[0].version, s.version);
  await popup.close();
  await tab.close();

  // The same article reached through a tracking link with a fragment is the same source.
  const tracked = await visit("backpressure.html?utm_source=newsletter&utm_medium=email#reactive");
  const trackedPopup = await popupFor(tracked);
  assert.equal(await trackedPopup.textContent("#page-url"), url);
  assert.match(await trackedPopup.textContent("#clip-state"), /Clipped .* · pending/);
  assert.match(await press(trackedPopup, "#clip"), /is unchanged: nothing to do/);
  assert.equal((await wikiFacts()).sources.length, 1);
  await trackedPopup.close();
  await tracked.close();
});

test("clip and compile runs against the scripted endpoint from the extension's origin", { timeout: 180_000 }, async () => {
  const before = await endpointCallsFromExtension();
  const tab = await visit("backpressure.html");
  const popup = await popupFor(tab);
  const status = await press(popup, "#clip-compile");
  assert.match(status, /Compiled 1 source\(s\), 0 failed; [1-9]\d* page\(s\) written/);
  assert.ok(await endpointCallsFromExtension() > before, "the compile called the endpoint with Origin chrome-extension://<id>");
  const { sources, pages } = await wikiFacts();
  assert.equal(sources[0].status.state, "compiled");
  assert.ok(pages.some((p) => p.title === "Understanding Backpressure" && p.kind === "source"), JSON.stringify(pages.map((p) => p.title)));
  // The popup now finds the page it just compiled.
  await popup.reload();
  await popup.waitForSelector("body[data-ready=true]");
  assert.match(await popup.textContent("#recall-pages"), /Understanding Backpressure/);
  assert.match(await popup.textContent("#clip-state"), /compiled/);
  // The app tab was told and refreshed its list.
  await app.waitForFunction((url) => /compiled/.test(document.querySelector(`#sources-table tr[data-key="${url}"]`)?.textContent || ""), `${base}/backpressure.html`);
  await popup.close();
  await tab.close();
});

test("the popup writes only under the wiki's Web Lock (one writer with the app's tabs)", { timeout: 180_000 }, async () => {
  // The app page holds the wiki's write lock, as it does while it compiles.
  await app.evaluate(() => {
    window.__release = null;
    navigator.locks.request("llm-wiki/default", () => new Promise((resolve) => { window.__release = resolve; }));
  });
  await app.waitForFunction(() => typeof window.__release === "function");
  const tab = await visit("sourdough.html");
  const popup = await popupFor(tab);
  assert.equal(await popup.textContent("#page-title"), "酸面包的发酵");
  const done = Number(await popup.getAttribute("body", "data-done") || 0);
  await popup.click("#clip-compile");
  await popup.waitForFunction(() => /Another tab is writing/.test(document.querySelector("#status").textContent));
  await new Promise((r) => setTimeout(r, 500));
  assert.equal((await wikiFacts()).sources.length, 1, "nothing written while another page holds the lock");
  await app.evaluate(() => window.__release());
  await popup.waitForSelector(`body[data-done="${done + 1}"]`, { timeout: 120_000 });
  assert.match(await popup.textContent("#status"), /Compiled 1 source\(s\), 0 failed/);
  const { sources } = await wikiFacts();
  assert.deepEqual(sources.map((s) => s.status.state), ["compiled", "compiled"]);
  await popup.close();
  await tab.close();

  // One more unrelated page, in English: it shares only common words with the backpressure pages.
  // Its compile runs in the background service worker and goes on after the popup is closed (a
  // slow endpoint, 400 ms before each answer, keeps it running long enough to close the popup).
  await saveEndpoint(`${endpoint.url}/fault/delay=400/v1`);
  const rye = await visit("rye.html");
  let ryePopup = await popupFor(rye);
  await ryePopup.click("#clip-compile");
  await ryePopup.waitForFunction(() => /Compiling/.test(document.querySelector("#status").textContent));
  await ryePopup.close();
  const ryeState = async () => (await wikiFacts()).sources.find((x) => x.key === `${base}/rye.html`)?.status.state;
  assert.equal(await ryeState(), "pending", "the compile was still running when the popup closed");
  const deadline = Date.now() + 90_000;
  while ((await ryeState()) !== "compiled" && Date.now() < deadline) await new Promise((r) => setTimeout(r, 300));
  assert.equal(await ryeState(), "compiled", "the background finished the compile");
  await saveEndpoint(`${endpoint.url}/v1`);
  ryePopup = await popupFor(rye);
  assert.equal(await ryePopup.isVisible("#recall-empty"), false, "it recalls its own page after compiling");
  await ryePopup.close();
  await rye.close();
});

test("the popup's recall for a second page on the same topic: matching pages, summaries, then an open contradiction", { timeout: 180_000 }, async () => {
  const tab = await visit("streams.html");
  let popup = await popupFor(tab);
  assert.equal(await popup.textContent("#page-title"), "Backpressure in Stream Pipelines");
  assert.match(await popup.textContent("#clip-state"), /Not clipped yet/);
  const { pages } = await wikiFacts();
  const recalled = await popup.$$eval("#recall-pages li", (lis) => lis.map((li) => ({ key: li.dataset.key, title: li.querySelector("a").textContent, summary: li.querySelector(".summary").textContent })));
  const summaryPage = pages.find((p) => p.title === "Understanding Backpressure" && p.kind === "source");
  const hit = recalled.find((r) => r.key === summaryPage.key);
  assert.ok(hit, `the first article's page is recalled: ${JSON.stringify(recalled)}`);
  assert.ok(hit.summary.length > 0);
  assert.equal(hit.summary, summaryPage.summary, "the one-line summary is the page's");
  // The bread pages share no topic with it: the rye page shares common English words ("the",
  // "is", "with"…), which BM25 alone would rank; recall leaves both out.
  const unrelated = new Set(pages.filter((p) => /[\u4e00-\u9fff]|Rye/.test(p.title) || /rye/i.test(p.summary)).map((p) => p.key));
  assert.ok(unrelated.size >= 2, JSON.stringify(pages.map((p) => p.title)));
  assert.ok(!recalled.some((r) => unrelated.has(r.key)), `the bread pages are not about this page: ${JSON.stringify(recalled)}`);
  assert.equal(await popup.isVisible("#recall-contradictions-box"), false, "no contradiction yet");

  // Compiling it: its 64-chunk buffer disagrees with the first article's 16. The scripted model
  // proposes that contradiction, but each figure is a claim on its own source's summary page
  // only: a record opens only for two asserted, verified claims on one page (issue 21, item 7),
  // so the popup shows none. (Left in the issue note: a scripted case with both figures on one
  // topic page, so the popup's contradiction list is driven again.)
  assert.match(await press(popup, "#clip-compile"), /Compiled 1 source\(s\), 0 failed/);
  assert.equal(await popup.isVisible("#recall-contradictions-box"), false, "a proposal across two pages opens no record");
  await popup.close();
  const first = await visit("backpressure.html");
  popup = await popupFor(first);
  assert.equal(await popup.isVisible("#recall-contradictions-box"), false);
  await popup.close();
  await first.close();
  await tab.close();
});

test("CJK: the popup recalls the Chinese page for another Chinese page on the same topic, and nothing else", { timeout: 120_000 }, async () => {
  // The interface language is the app's (one origin, one localStorage).
  await app.evaluate(() => localStorage.setItem("llm-wiki.lang", "zh"));
  const tab = await visit("sourdough-starter.html");
  const popup = await popupFor(tab);
  await app.evaluate(() => localStorage.removeItem("llm-wiki.lang"));
  assert.equal(await popup.textContent("#clip-compile"), "剪藏并编译");
  assert.equal(await popup.textContent("#recall h2"), "知识库里关于本页的内容");
  assert.equal(await popup.textContent("#page-title"), "天然酵种的养护");
  const titles = await popup.$$eval("#recall-pages li > a", (as) => as.map((a) => a.textContent));
  assert.ok(titles.includes("酸面包的发酵"), JSON.stringify(titles));
  assert.ok(!titles.some((x) => /Backpressure/i.test(x)), JSON.stringify(titles));
  await popup.close();
  await tab.close();
});

test("a changed page is a new version of the same source", { timeout: 120_000 }, async () => {
  const url = `${base}/backpressure.html`;
  const before = (await wikiFacts()).sources.find((s) => s.key === url);
  site.edition = 2;
  const tab = await visit("backpressure.html");
  const popup = await popupFor(tab);
  assert.match(await press(popup, "#clip"), /was corrected: a new version is pending compile/);
  const { sources } = await wikiFacts();
  assert.equal(sources.length, 4, "still one source for the URL");
  const after = sources.find((s) => s.key === url);
  assert.notEqual(after.version, before.version);
  assert.deepEqual(after.previousVersions, [before.version]);
  assert.equal(after.status.state, "pending");
  assert.ok(after.text.includes("Credit-based flow control"), after.text);
  await popup.close();
  await tab.close();
});

test("F23: when the article is shorter than the banner, the clip is kept but not compiled, with a warning", { timeout: 120_000 }, async () => {
  const before = await endpointCallsFromExtension();
  const tab = await visit("thin.html");
  const popup = await popupFor(tab);
  assert.equal(await popup.isVisible("#warnings"), true);
  assert.match(await popup.textContent("#warnings"), /low-confidence/);
  assert.match(await press(popup, "#clip-compile"), /Clipped, not compiled: low-confidence/);
  const s = (await wikiFacts()).sources.find((x) => x.key === `${base}/thin.html`);
  assert.equal(s.status.state, "pending");
  assert.ok(!s.text.includes("cookies"), s.text);
  assert.equal(await endpointCallsFromExtension(), before, "no model call for it");
  await popup.close();
  await tab.close();
  await app.screenshot({ path: `${artifacts}/extension-app.png`, fullPage: true });
  assert.deepEqual(errors, []);
});

test("the extension's wiki page mirrors into a folder, and a clip from the popup lands there", { timeout: 120_000 }, async () => {
  // The picker hands out an OPFS directory of the extension's origin (the same
  // FileSystemDirectoryHandle code a picked folder uses); permissions are granted.
  const folderApp = watch(await context.newPage(), "folder app");
  await folderApp.addInitScript(() => {
    window.showDirectoryPicker = async () => (await navigator.storage.getDirectory()).getDirectoryHandle("picked", { create: true });
    FileSystemHandle.prototype.queryPermission = async () => "granted";
    FileSystemHandle.prototype.requestPermission = async () => "granted";
    // Nothing changes in the folder and the page counts as hidden, so neither the observer nor
    // the poll syncs: only the popup's announcement can.
    delete window.FileSystemObserver;
    Object.defineProperty(document, "visibilityState", { get: () => "hidden" });
  });
  await folderApp.goto(`chrome-extension://${id}/app/index.html`);
  await folderApp.waitForSelector("body[data-ready=true]");
  await folderApp.click("#folder-use");
  await folderApp.waitForFunction(() => /up to date/.test(document.querySelector("#folder-status").textContent), null, { timeout: 30_000 });
  const inFolder = (path) => folderApp.evaluate(async (path) => {
    let dir = await (await navigator.storage.getDirectory()).getDirectoryHandle("picked");
    const parts = path.split("/");
    try {
      for (const p of parts.slice(0, -1)) dir = await dir.getDirectoryHandle(p);
      return await (await (await dir.getFileHandle(parts.at(-1))).getFile()).text();
    } catch { return null; }
  }, path);
  const { sources } = await wikiFacts();
  for (const s of sources) assert.ok(await inFolder(`llm-wiki/raw/text/${s.version}.md`) !== null, `${s.key} in the folder`);
  assert.match(await inFolder("llm-wiki/index.md"), /Understanding Backpressure/);

  // A clip from the popup, with no write of this page: the watching page writes it out.
  site.edition = 3;
  const tab = await visit("backpressure.html");
  const popup = await popupFor(tab);
  assert.match(await press(popup, "#clip"), /was corrected/);
  const clipped = (await wikiFacts()).sources.find((s) => s.key === `${base}/backpressure.html`);
  assert.ok(!sources.some((s) => s.version === clipped.version), "a version the folder has not seen");
  const end = Date.now() + 20_000;
  while ((await inFolder(`llm-wiki/raw/text/${clipped.version}.md`)) === null) {
    assert.ok(Date.now() < end, "the clip reached the folder");
    await new Promise((r) => setTimeout(r, 200));
  }
  await popup.close();
  await tab.close();
  await folderApp.close();
  assert.deepEqual(errors, []);
});

test("a clip keeps its images as attachments; without the permission they stay links and the source says so", { timeout: 120_000 }, async () => {
  const url = `${base}/pictures.html`;
  const other = base.replace("localhost", "127.0.0.2");
  const tab = await visit("pictures.html");
  // Refused: the picture on another site stays a link, and the source says why; the page's own
  // picture is kept (read under the popup's grant for the page, no prompt).
  let popup = await popupFor(tab);
  await popup.evaluate(() => {
    chrome.permissions.contains = async () => false;
    chrome.permissions.request = async () => false;
  });
  assert.match(await press(popup, "#clip"), /Added/);
  let s = (await wikiFacts()).sources.find((x) => x.key === url);
  assert.ok(s.text.includes(`![A sketch](${other}/Ferris_(sketch).png)`), s.text);
  assert.match(s.text, /!\[Ferris the crab\]\(clip-[0-9a-f]{16}\.png\)/);
  assert.ok(s.text.endsWith(`*1 image(s) stay links to their site (no permission to fetch from ${other}).*\n`), s.text);
  await popup.close();

  // Granted: both kept as attachments, the markdown points at them (a name with parentheses
  // too), and the page renders them from the wiki.
  popup = await popupFor(tab);
  assert.match(await press(popup, "#clip-compile"), /Compiled 1 source/);
  s = (await wikiFacts()).sources.find((x) => x.key === url);
  const names = [...s.text.matchAll(/!\[[^\]]*\]\((clip-[0-9a-f]{16}\.png)\)/g)].map((m) => m[1]);
  assert.equal(names.length, 2, s.text);
  assert.ok(!/stay links|127\.0\.0\.2|crab\.png/.test(s.text), s.text);
  const assets = await app.evaluate(async (names) => {
    const { default: init, Wiki } = await import("/app/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("default");
    try {
      const out = [];
      for (const name of names) {
        const a = (await w.assets()).find((x) => x.name === name);
        out.push({ mime: a.mime, bytes: a.bytes, sha: a.sha256, head: Array.from(await w.asset(a.sha256)).slice(8, 10) });
      }
      return out;
    } finally { w.close(); }
  }, names);
  assert.deepEqual(assets.map((a) => [a.mime, a.bytes, a.head]), [["image/png", CRAB.length, [7, 7]], ["image/png", SKETCH.length, [9, 9]]]);
  assets.forEach((a, i) => assert.equal(names[i], `clip-${a.sha.slice(0, 16)}.png`, "content-addressed"));
  const html = await app.evaluate(async (text) => {
    const { default: init, Wiki } = await import("/app/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("default");
    try { return (await w.renderMarkdown(text)).html; } finally { w.close(); }
  }, s.text);
  assert.equal([...html.matchAll(/<img[^>]*data-asset="[0-9a-f]{64}"/g)].length, 2, "rendered from the wiki, not the sites");
  // The same page again: the same attachments, nothing new.
  assert.match(await press(popup, "#clip"), /unchanged/);
  await popup.close();
  await tab.close();
  assert.deepEqual(errors, []);
});

test("OCR runs inside the extension: its worker, engine and models from the extension's own files", { timeout: 120_000 }, async () => {
  const page = watch(await context.newPage(), "ocr app");
  const requests = [];
  page.on("request", (r) => requests.push(r.url()));
  // A wiki of its own: the default one is mirrored into a folder by the test above, and its
  // syncs are not what this test is about.
  await page.addInitScript(() => localStorage.setItem("llm-wiki.current", "ocr"));
  await page.goto(`chrome-extension://${id}/app/index.html`);
  await page.waitForSelector("body[data-ready=true]");
  await page.selectOption("#ocr-langs", "eng");
  const png = Buffer.from(await page.evaluate(async () => {
    const canvas = document.createElement("canvas");
    canvas.width = 1100; canvas.height = 140;
    const ctx = canvas.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, canvas.width, canvas.height);
    ctx.fillStyle = "#000"; ctx.font = "40px sans-serif";
    ctx.fillText("Borrowing never outlives the owner", 40, 90);
    const blob = await new Promise((r) => canvas.toBlob(r, "image/png"));
    return Array.from(new Uint8Array(await blob.arrayBuffer()));
  }));
  await page.setInputFiles("#source-files", [{ name: "scan.png", mimeType: "image/png", buffer: png }]);
  await page.waitForFunction(() => /Added "scan"/.test(document.querySelector("#status").textContent), null, { timeout: 90_000 })
    .catch(async (e) => { throw new Error(`${e.message}; status: ${await page.textContent("#status")}`); });
  const s = await page.evaluate(async () => {
    const { default: init, Wiki } = await import("/app/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open("ocr");
    try { return await w.source("file:scan.png"); } finally { w.close(); }
  });
  assert.match(s.text, /Borrowing/i, s.text);
  assert.match(s.text, /owner/i, s.text);
  assert.ok(requests.some((u) => /\/build\/ocr\/lang\/eng\.traineddata\.gz$/.test(u)), "the model came from the extension");
  assert.deepEqual(requests.filter((u) => !u.startsWith(`chrome-extension://${id}/`) && !u.startsWith("blob:") && !u.startsWith("data:")), []);
  await page.close();
  assert.deepEqual(errors, []);
});
