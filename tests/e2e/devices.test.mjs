// Two devices keeping one wiki through a folder a sync tool keeps equal (issue #25), in the app
// as a person drives it. Two wikis with different names in one browser context stand in for the
// two devices (two databases, two device ids), each mirrored into its own OPFS directory; the
// test plays the sync tool, copying the changed files of one directory into the other.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, openApp, api, artifacts } from "./harness.mjs";

let server, browser;
before(async () => {
  server = await startServer();
  browser = await launch();
});
after(async () => { await browser?.close(); server?.stop(); });

/** Stubs the picker (it hands out the OPFS directory `picker-dir` names, `a/b` for one inside
 * another) and the permissions. */
function stubs() {
  window.showDirectoryPicker = async () => {
    let dir = await navigator.storage.getDirectory();
    for (const name of (localStorage.getItem("picker-dir") || "picked").split("/")) dir = await dir.getDirectoryHandle(name, { create: true });
    return dir;
  };
  FileSystemHandle.prototype.queryPermission = async function () { return "granted"; };
  FileSystemHandle.prototype.requestPermission = async function () { return "granted"; };
  // A join cut short: a device's settings file fails to close while `fail-settings` is set.
  const create = FileSystemFileHandle.prototype.createWritable;
  FileSystemFileHandle.prototype.createWritable = async function (...args) {
    const stream = await create.apply(this, args);
    if (localStorage.getItem("fail-settings") && this.name === "settings.json") {
      stream.close = async () => { await stream.abort(); throw new DOMException("stubbed crash", "AbortError"); };
    }
    return stream;
  };
}

/**
 * The sync tool, run in page `page`: brings to OPFS `to/` what changed in `from/` since the two
 * were last made equal (it remembers each file's hash then, as Syncthing does): new and changed
 * files, and deletions; where both changed a file, `from`'s change wins, but a change wins over a
 * deletion (as in Syncthing). The devices' operation files
 * go first (a page file that arrives before its operation is read as an edit made in the
 * folder: a limit README states). Resolves to how many files it wrote or removed.
 */
function sync(page, from, to) {
  return page.evaluate(async ({ from, to }) => {
    const root = await navigator.storage.getDirectory();
    const base = (window.syncBase ??= {});
    const hex = async (bytes) => [...new Uint8Array(await crypto.subtle.digest("SHA-256", bytes))]
      .map((b) => b.toString(16).padStart(2, "0")).join("");
    // path → { hash, bytes } of every file under `name`/ (a file gone since listed is left out).
    async function snapshot(name) {
      const out = new Map();
      async function walk(dir, path) {
        for await (const [n, handle] of dir.entries()) {
          if (handle.kind === "directory") { await walk(handle, [...path, n]); continue; }
          // Read at once (a File read after its file changed throws); gone or changed since
          // listed: left out, the next sync sees it.
          const bytes = await handle.getFile().then((f) => f.arrayBuffer()).catch(() => null);
          if (bytes) out.set([...path, n].join("/"), { hash: await hex(bytes), bytes });
        }
      }
      await walk(await root.getDirectoryHandle(name, { create: true }), []);
      return out;
    }
    const [src, dst] = [await snapshot(from), await snapshot(to)];
    const dir = async (path, create) => {
      let d = await root.getDirectoryHandle(to);
      for (const p of path.split("/").slice(0, -1)) d = await d.getDirectoryHandle(p, { create });
      return d;
    };
    const devices = (p) => p.includes(".llm-wiki/devices/");
    const paths = [...new Set([...src.keys(), ...dst.keys(), ...Object.keys(base)])]
      .sort((a, b) => devices(b) - devices(a));
    let done = 0;
    for (const p of paths) {
      const [a, b] = [src.get(p)?.hash, dst.get(p)?.hash];
      if (a === b) { if (a) base[p] = a; else delete base[p]; continue; }
      if (a === base[p]) continue; // changed on the other side only: another sync's job
      if (!a && b !== base[p]) continue; // deleted here, changed there: the change stays
      if (a) {
        const w = await (await (await dir(p, true)).getFileHandle(p.split("/").at(-1), { create: true })).createWritable();
        await w.write(src.get(p).bytes); await w.close();
        base[p] = a;
      } else {
        await (await dir(p, false)).removeEntry(p.split("/").at(-1));
        delete base[p];
      }
      done++;
    }
    return done;
  }, { from, to });
}

async function until(what, fn, timeout = 20_000) {
  const end = Date.now() + timeout;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

/** Waits until the wiki's folder holds every operation it made. */
const written = (page, wiki) => until(`${wiki}'s folder up to date`, async () =>
  (await api(page, wiki, "return (await w.mirrorStatus())?.behind === 0")));

/** The open wiki's name in `page`. */
const wikiOf = (page) => page.inputValue("#wiki-select");

/** Edits page `key` in the app's editor, as a person would; resolves once it is saved. (The
 * status line is no witness: the embedding that follows a write can replace "Saved".) */
async function edit(page, key, body) {
  await page.evaluate((k) => { location.hash = `#/page/${k}`; }, key);
  await page.waitForFunction((k) => !document.querySelector("#page-view").hidden && document.querySelector("#pv-title").textContent === k, key, { polling: 100 });
  await page.click("#pv-edit");
  await page.fill("#page-body", body);
  await page.click("#page-editor button[type=submit]");
  const wiki = await wikiOf(page);
  await until(`${key} saved`, async () => (await api(page, wiki, "return (await w.page(arg))?.body", key)) === body);
}

/** The page body shown, once it matches `re` (the app pulls what the sync tool brought). */
async function shows(page, key, re) {
  await page.evaluate((k) => { location.hash = `#/page/${k}`; }, key);
  // The tab notices the folder changed (FileSystemObserver, or on focus without it).
  await page.evaluate(() => window.dispatchEvent(new Event("focus")));
  await page.waitForFunction(({ src, flags }) => new RegExp(src, flags).test(document.querySelector("#pv-body")?.textContent || ""),
    { src: re.source, flags: re.flags }, { timeout: 20_000, polling: 100 });
}

/** Waits for the footer to list the conflicts on `keys` (default Alpha) and no other, each
 * with device `id` (shown short). */
async function conflictWith(page, id, keys = ["Alpha"]) {
  const want = keys.map((k) => `"${k}" changed both here and on device ${id.slice(0, 5)}:`);
  await page.evaluate(() => window.dispatchEvent(new Event("focus"))); // as on switching to the tab
  await page.waitForFunction((w) => {
    const rows = [...document.querySelectorAll("[data-testid=folder-conflict] span")].map((s) => s.textContent).sort();
    return JSON.stringify(rows) === JSON.stringify(w);
  }, want.sort(), { timeout: 20_000, polling: 100 }).catch(async (e) => {
    throw new Error(`${e.message}: the footer says ${JSON.stringify(await page.textContent("#folder-held"))}`);
  });
}

test("two devices: the second joins the folder, edits travel both ways, a conflict names the other device", { timeout: 120_000 }, async () => {
  const t0 = Date.now();
  const context = await browser.newContext();
  await context.addInitScript(stubs);
  const dialogs = [];
  // The first device: wiki "laptop", mirrored into dev-a/.
  const { page: a, log: logA } = await openApp(context, server.url, "laptop");
  a.on("dialog", (d) => dialogs.push(d.message()));
  await a.click("#tabs button[data-tab=pages]");
  await a.click("#page-new");
  await a.fill("#page-title", "Alpha");
  await a.fill("#page-body", "Written on the laptop.");
  await a.click("#page-editor button[type=submit]");
  await until("Alpha made", async () => (await api(a, "laptop", "return (await w.page('Alpha'))?.body")) === "Written on the laptop.");
  await a.evaluate(() => localStorage.setItem("picker-dir", "dev-a"));
  await a.click("#folder-use");
  await written(a, "laptop");
  const tool = await context.newPage();
  await tool.goto(`${server.url}/style.css`); // any document of the origin
  assert.ok(await sync(tool, "dev-a", "dev-b") > 0);

  // The second device: a new wiki "phone" picks its copy of the folder and joins it.
  const { page: b, log: logB } = await openApp(context, server.url, "phone");
  b.on("dialog", (d) => dialogs.push(d.message()));
  await b.evaluate(() => localStorage.setItem("picker-dir", "dev-b"));
  await b.click("#folder-use");
  await b.waitForFunction(() => /Joined the wiki in llm-wiki\//.test(document.querySelector("#status").textContent), null, { timeout: 20_000, polling: 100 });
  assert.ok(dialogs.some((m) => /kept by 1 device\(s\) in llm-wiki\/\. Join it\?/.test(m)), dialogs.join("\n"));
  await shows(b, "Alpha", /Written on the laptop/);
  const [idA, idB] = [await api(a, "laptop", "return await w.deviceId()"), await api(b, "phone", "return await w.deviceId()")];
  assert.notEqual(idA, idB);
  assert.equal(await tool.evaluate(async (id) => {
    const root = await navigator.storage.getDirectory();
    const dir = await (await (await (await root.getDirectoryHandle("dev-b")).getDirectoryHandle("llm-wiki")).getDirectoryHandle(".llm-wiki")).getDirectoryHandle("devices");
    return !!(await dir.getDirectoryHandle(id).catch(() => null));
  }, idB), true, "the phone writes under its own device folder");
  assert.equal(await tool.evaluate(async () => !!(await (await navigator.storage.getDirectory()).getDirectoryHandle("dev-b")
    .then((d) => d.getDirectoryHandle("llm-wiki 2")).catch(() => null))), false, "nothing mirrored beside the wiki");

  // The phone edits the page; the sync tool brings it to the laptop, which shows it.
  await edit(b, "Alpha", "Edited on the phone.");
  await written(b, "phone");
  await sync(tool, "dev-b", "dev-a");
  await shows(a, "Alpha", /Edited on the phone/);

  // Both edit the page before either sees the other's edit: once the files went both ways,
  // each device shows the conflict naming the other one.
  await written(a, "laptop");
  await sync(tool, "dev-a", "dev-b"); // what the laptop's pull wrote
  await written(b, "phone");
  await edit(a, "Alpha", "The laptop's version.");
  await edit(b, "Alpha", "The phone's version.");
  await written(a, "laptop");
  await written(b, "phone");
  await sync(tool, "dev-a", "dev-b");
  await conflictWith(b, idA);
  await written(b, "phone");
  await sync(tool, "dev-b", "dev-a");
  await conflictWith(a, idB);
  // Beside the page: what happened, and the choices (the page shows the later edit on both).
  for (const [page, other] of [[a, idB], [b, idA]]) {
    await page.click("[data-testid=folder-conflict] a");
    await page.waitForSelector("#pv-conflict:not([hidden])");
    assert.match(await page.textContent("[data-testid=conflict-held]"), new RegExp(`on this device and on device ${other.slice(0, 5)}`));
    assert.equal(await page.textContent("[data-testid=conflict-mine]"), "Keep the page as it is");
    assert.equal(await page.textContent("[data-testid=conflict-theirs]"), "Take the other version");
  }
  const bodies = [await a.textContent("#pv-body"), await b.textContent("#pv-body")];
  assert.equal(bodies[0], bodies[1], "both show the same (later) version");
  await b.screenshot({ path: `${artifacts}/devices-conflict.png`, fullPage: true });

  // The phone takes the other version; the laptop's conflict ends once the files come over.
  const other = await b.textContent("#pv-conflict-theirs-text");
  await b.click("[data-testid=conflict-theirs]");
  await b.waitForSelector("[data-testid=folder-conflict]", { state: "detached", timeout: 20_000 });
  await written(b, "phone");
  await sync(tool, "dev-b", "dev-a");
  await a.evaluate(() => window.dispatchEvent(new Event("focus")));
  await a.waitForSelector("[data-testid=folder-conflict]", { state: "detached", timeout: 20_000 });
  const chosen = other.match(/The (laptop|phone)'s version/)[0];
  await shows(a, "Alpha", new RegExp(chosen));

  assert.deepEqual([...logA.errors, ...logB.errors], []);
  console.log(`two devices: ${Date.now() - t0} ms`);
  await context.close();
});

/**
 * Syncs both ways until the two folders agree but for index.md and log.md (each device writes
 * its own), each device reading what came (as on focus) in between.
 */
async function settle(tool, a, b) {
  for (let round = 0; round < 10; round++) {
    const n = await sync(tool, "dev-a", "dev-b") + await sync(tool, "dev-b", "dev-a");
    for (const page of [a, b]) await page.evaluate(() => window.dispatchEvent(new Event("focus")));
    await new Promise((r) => setTimeout(r, 1000));
    const differ = await tool.evaluate(async () => {
      const root = await navigator.storage.getDirectory();
      const read = async (name) => {
        const out = {};
        async function walk(dir, path) {
          for await (const [n, h] of dir.entries()) {
            if (h.kind === "directory") await walk(h, `${path}${n}/`);
            else out[`${path}${n}`] = await h.getFile().then((f) => f.text()).catch(() => null);
          }
        }
        await walk(await root.getDirectoryHandle(name), "");
        return out;
      };
      const [x, y] = [await read("dev-a"), await read("dev-b")];
      return [...new Set([...Object.keys(x), ...Object.keys(y)])]
        .filter((p) => !/\/(index|log)\.md$/.test(p) && x[p] !== y[p]);
    });
    if (n === 0 && differ.length === 0) return;
  }
  throw new Error("the two folders never settled");
}

/** Makes page `title` in the app's editor. */
async function newPage(page, title, body) {
  await page.evaluate(() => { location.hash = "#/pages"; });
  await page.click("#page-new");
  await page.fill("#page-title", title);
  await page.fill("#page-body", body);
  await page.click("#page-editor button[type=submit]");
  const wiki = await wikiOf(page);
  await until(`${title} made`, async () => (await api(page, wiki, "return (await w.page(arg))?.body", title)) === body);
}

test("joining from the wrong folder or a wiki with pages; a deletion against an edit, both ways", { timeout: 120_000 }, async () => {
  const t0 = Date.now();
  const context = await browser.newContext();
  await context.addInitScript(stubs);
  const { page: a, log: logA } = await openApp(context, server.url, "laptop");
  for (const [title, body] of [["Alpha", "Alpha."], ["Beta", "Beta."], ["Gamma", "Gamma."]]) await newPage(a, title, body);
  await a.evaluate(() => localStorage.setItem("picker-dir", "dev-a"));
  await a.click("#folder-use");
  await written(a, "laptop");
  const tool = await context.newPage();
  await tool.goto(`${server.url}/style.css`);
  await sync(tool, "dev-a", "dev-b");

  // A wiki with pages of its own, on the second device. The wiki's own folder picked: refused.
  const { page: b, log: logB } = await openApp(context, server.url, "notes");
  // A person accepts each question, and the name a prompt proposes.
  const dialogs = [];
  b.removeAllListeners("dialog");
  b.on("dialog", (d) => { dialogs.push(d.message()); d.accept(d.type() === "prompt" ? d.defaultValue() : undefined); });
  await newPage(b, "Mine", "A page of the notes wiki.");
  await b.evaluate(() => localStorage.setItem("picker-dir", "dev-b/llm-wiki"));
  await b.click("#folder-use");
  await b.waitForFunction(() => /"llm-wiki" is a wiki's own folder: pick the folder that holds it/.test(document.querySelector("#status").textContent), null, { polling: 100 });
  assert.equal(await api(b, "notes", "return (await w.mirrorStatus()) ?? null"), null, "nothing mirrored");
  // The folder that holds it: the app offers a new wiki to join with (named after the folder).
  await b.evaluate(() => localStorage.setItem("picker-dir", "dev-b"));
  await b.click("#folder-use");
  await b.waitForFunction(() => /Joined the wiki in llm-wiki\//.test(document.querySelector("#status").textContent), null, { timeout: 20_000, polling: 100 })
    .catch(async (e) => { throw new Error(`${e.message}: ${await b.textContent("#status")} ${JSON.stringify(dialogs)} ${logB.errors}`); });
  assert.ok(dialogs.some((m) => /The wiki "notes" is not empty, so it cannot join it\. Make a new wiki/.test(m)), dialogs.join("\n"));
  assert.equal(await b.inputValue("#wiki-select"), "dev-b");
  assert.deepEqual(await api(b, "notes", "return (await w.pages()).map((p) => p.key)"), ["Mine"], "the notes wiki is left as it was");
  await shows(b, "Gamma", /Gamma\./);
  const idA = await api(a, "laptop", "return await w.deviceId()");
  const idB = await api(b, "dev-b", "return await w.deviceId()");

  // Beta: deleted on the laptop, then edited on the phone. Gamma: edited on the phone, then
  // deleted on the laptop. Neither device saw the other's change: the edit stays either way.
  const remove = async (key) => {
    await a.evaluate((k) => { location.hash = `#/page/${k}`; }, key);
    await a.waitForFunction((k) => document.querySelector("#pv-title").textContent === k, key, { polling: 100 });
    await a.click("#pv-delete");
    await until(`${key} deleted`, async () => (await api(a, "laptop", "return (await w.page(arg)) ?? null", key)) === null);
  };
  await remove("Beta");
  await edit(b, "Beta", "Beta, edited on the phone.");
  await edit(b, "Gamma", "Gamma, edited on the phone.");
  await remove("Gamma");
  await written(a, "laptop");
  await written(b, "dev-b");
  await sync(tool, "dev-a", "dev-b");
  await conflictWith(b, idA, ["Beta", "Gamma"]);
  await written(b, "dev-b");
  await sync(tool, "dev-b", "dev-a");
  await conflictWith(a, idB, ["Beta", "Gamma"]);
  await settle(tool, a, b);
  // The folders are equal; both devices have read them too (a pull follows the last files).
  const keys = (page, wiki) => api(page, wiki, "return (await w.pages()).map((p) => p.key)");
  await until("both devices hold the same pages", async () => {
    for (const p of [a, b]) await p.evaluate(() => window.dispatchEvent(new Event("focus")));
    return JSON.stringify(await keys(a, "laptop")) === JSON.stringify(await keys(b, "dev-b"));
  });
  const box = async (page, key) => {
    await page.evaluate((k) => { location.hash = "#/sources"; location.hash = `#/page/${k}`; }, key);
    await page.waitForFunction((k) => document.querySelector("#pv-title").textContent === k && !document.querySelector("#pv-conflict").hidden, key, { polling: 100 });
    return page.evaluate(() => ({
      held: document.querySelector("[data-testid=conflict-held]").textContent,
      buttons: [...document.querySelectorAll("#pv-conflict button")].filter((b) => !b.hidden).map((b) => b.textContent),
      body: document.querySelector("#pv-body").textContent,
    }));
  };
  for (const page of [a, b]) {
    for (const key of ["Beta", "Gamma"]) {
      const held = await box(page, key);
      assert.match(held.held + (page === a ? " (laptop)" : " (phone)"), /deleted on one device while it was edited on the other[^]*The edit is kept, on every device/);
      assert.deepEqual(held.buttons, ["Keep the page", "Delete the page"]);
      assert.match(held.body, /edited on the phone/);
    }
  }
  await a.screenshot({ path: `${artifacts}/devices-deleted.png`, fullPage: true });

  // The phone deletes Beta after all; the laptop keeps Gamma. Once the files went both ways,
  // neither device shows a conflict, and both agree.
  await box(b, "Beta");
  await b.click("[data-testid=conflict-theirs]");
  await until("Beta deleted", async () => (await api(b, "dev-b", "return (await w.page('Beta')) ?? null")) === null);
  await box(a, "Gamma");
  await a.click("[data-testid=conflict-mine]");
  await a.waitForSelector("#pv-conflict", { state: "hidden", timeout: 20_000 });
  await written(a, "laptop");
  await written(b, "dev-b");
  await sync(tool, "dev-a", "dev-b");
  await sync(tool, "dev-b", "dev-a");
  for (const [page, wiki] of [[a, "laptop"], [b, "dev-b"]]) {
    await page.evaluate(() => window.dispatchEvent(new Event("focus")));
    await until(`${wiki} settled`, async () => {
      const [keys, conflicts] = await api(page, wiki, "return [(await w.pages()).map((p) => p.key).sort(), (await w.mirrorConflicts()).length]");
      return JSON.stringify(keys) === JSON.stringify(["Alpha", "Gamma"]) && conflicts === 0;
    }).catch(async (e) => {
      throw new Error(`${e.message}: ${JSON.stringify(await api(page, wiki, "return [(await w.pages()).map((p) => p.key), await w.mirrorConflicts(), (await w.operations()).map((o) => [o.id, o.time, o.summary])]"))}`);
    });
    await page.waitForSelector("[data-testid=folder-conflict]", { state: "detached", timeout: 20_000 });
  }
  assert.equal(await api(b, "dev-b", "return (await w.page('Gamma')).body"), "Gamma, edited on the phone.");

  assert.deepEqual([...logA.errors, ...logB.errors], []);
  console.log(`deletions against edits: ${Date.now() - t0} ms`);
  await context.close();
});

/** The laptop: a wiki with page Alpha mirrored into OPFS `dev-a`, and the sync tool's page,
 * which has brought that folder to `dev-b`. */
async function laptopInFolder(context) {
  const { page: a, log: logA } = await openApp(context, server.url, "laptop");
  await newPage(a, "Alpha", "Written on the laptop.");
  await a.evaluate(() => localStorage.setItem("picker-dir", "dev-a"));
  await a.click("#folder-use");
  await written(a, "laptop");
  const tool = await context.newPage();
  await tool.goto(`${server.url}/style.css`);
  await sync(tool, "dev-a", "dev-b");
  return { a, logA, tool };
}

/** Whether a wiki was mirrored beside the folder's, in `dev-b/llm-wiki 2/`. */
const besideIn = (tool) => tool.evaluate(async () => !!(await (await navigator.storage.getDirectory()).getDirectoryHandle("dev-b")
  .then((d) => d.getDirectoryHandle("llm-wiki 2")).catch(() => null)));

test("a join cut short goes on when the folder is picked again", { timeout: 90_000 }, async () => {
  const context = await browser.newContext();
  await context.addInitScript(stubs);
  const { a, logA, tool } = await laptopInFolder(context);

  // The join stops at its last step (the folder fails): the app says so, keeps no folder, and
  // mirrors nothing beside the wiki, after a reload either.
  const { page: b, log: logB } = await openApp(context, server.url, "phone");
  await b.evaluate(() => { localStorage.setItem("picker-dir", "dev-b"); localStorage.setItem("fail-settings", "1"); });
  await b.click("#folder-use");
  await b.waitForFunction(() => /Joining stopped[^]*Pick the folder again to finish/.test(document.querySelector("#status").textContent), null, { timeout: 20_000, polling: 100 });
  await b.reload();
  await b.waitForSelector("body[data-ready=true]");
  await b.waitForSelector("#folder-use:not([hidden])");
  assert.equal(await api(b, "phone", "return (await w.mirrorStatus()) ?? null"), null, "no mirror");
  const beside = () => besideIn(tool);
  assert.equal(await beside(), false, "nothing mirrored beside the wiki");

  // Picked again: the join goes on, and the phone is a device like any other.
  await b.evaluate(() => localStorage.removeItem("fail-settings"));
  await b.click("#folder-use");
  await b.waitForFunction(() => /Joined the wiki in llm-wiki\//.test(document.querySelector("#status").textContent), null, { timeout: 20_000, polling: 100 });
  assert.equal(await beside(), false, "nothing mirrored beside the wiki");
  await edit(b, "Alpha", "Edited on the phone.");
  await written(b, "phone");
  await sync(tool, "dev-b", "dev-a");
  await shows(a, "Alpha", /Edited on the phone/);
  assert.deepEqual([...logA.errors, ...logB.errors].filter((e) => !/stubbed crash/.test(e)), []);
  await context.close();
});

test("a new wiki's join goes on from the wiki that began it; a shared folder is taken up again after Stop", { timeout: 120_000 }, async () => {
  const context = await browser.newContext();
  await context.addInitScript(stubs);
  const { a, logA, tool } = await laptopInFolder(context);

  // A wiki with pages of its own: each prompt gets the next of `names` (none: cancelled).
  const { page: b, log: logB } = await openApp(context, server.url, "notes");
  const dialogs = [];
  let names = [];
  b.removeAllListeners("dialog");
  b.on("dialog", (d) => {
    dialogs.push(d.message());
    if (d.type() !== "prompt") return d.accept();
    const name = names.shift();
    return name === undefined ? d.dismiss() : d.accept(name);
  });
  await newPage(b, "Mine", "A page of the notes wiki.");
  const status = (re) => b.waitForFunction((src) => new RegExp(src).test(document.querySelector("#status").textContent), re.source, { timeout: 20_000, polling: 100 })
    .catch(async (e) => { throw new Error(`${e.message}: ${await b.textContent("#status")} ${JSON.stringify(dialogs)}`); });
  // The new wiki's name not given: nothing is joined, and the app says so.
  await b.evaluate(() => localStorage.setItem("picker-dir", "dev-b"));
  await b.click("#folder-use");
  await status(/Nothing was joined: the new wiki needs a name/);
  assert.equal(await wikiOf(b), "notes");
  assert.equal(await api(b, "notes", "return (await w.mirrorStatus()) ?? null"), null, "nothing mirrored");

  // The join into the new wiki stops at its last step; after a reload the person is back in
  // the wiki that began it and picks the folder again, naming the same new wiki: it goes on.
  names = ["phone"];
  await b.evaluate(() => localStorage.setItem("fail-settings", "1"));
  await b.click("#folder-use");
  await status(/Joining stopped[^]*Pick the folder again to finish/);
  await b.evaluate(() => { localStorage.removeItem("fail-settings"); localStorage.setItem("llm-wiki.current", "notes"); });
  await b.reload();
  await b.waitForSelector("body[data-ready=true]");
  assert.equal(await wikiOf(b), "notes");
  names = ["phone"];
  await b.click("#folder-use");
  await status(/Joined the wiki in llm-wiki\//);
  assert.equal(await wikiOf(b), "phone");
  assert.ok(!dialogs.some((m) => /is not empty: only a new, empty wiki can join/.test(m)), dialogs.join("\n"));
  assert.deepEqual(await api(b, "notes", "return (await w.pages()).map((p) => p.key)"), ["Mine"], "the notes wiki is left as it was");
  await shows(b, "Alpha", /Written on the laptop/);
  await edit(b, "Alpha", "Edited on the phone.");
  await written(b, "phone");
  await sync(tool, "dev-b", "dev-a");
  await shows(a, "Alpha", /Edited on the phone/);

  // Stopped; meanwhile the phone and the laptop each edit a page. The same folder picked
  // again is taken up again, not mirrored beside it: both edits reach both devices.
  await b.click("#folder-stop");
  await b.waitForSelector("#folder-use:not([hidden])");
  await newPage(b, "Beta", "Written on the phone while stopped.");
  await edit(a, "Alpha", "Edited on the laptop meanwhile.");
  await written(a, "laptop");
  await sync(tool, "dev-a", "dev-b");
  await b.click("#folder-use");
  await status(/This browser keeps the wiki in llm-wiki\/ again/);
  assert.equal(await besideIn(tool), false, "nothing mirrored beside the wiki");
  await shows(b, "Alpha", /Edited on the laptop meanwhile/);
  await written(b, "phone");
  await sync(tool, "dev-b", "dev-a");
  // The laptop follows a link to Beta before the phone's change is read: Beta shows once it is.
  await shows(a, "Beta", /Written on the phone while stopped/);
  assert.deepEqual([...logA.errors, ...logB.errors].filter((e) => !/stubbed crash/.test(e)), []);
  await context.close();
});
