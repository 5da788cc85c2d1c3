// The live folder (issue #24): the wiki mirrored into a directory the person picked, so Obsidian,
// git or a sync tool sees it, and what they change there comes back. The core does the work
// (`mirror`, `mirrorPull`, conflicts); this module keeps the directory handle, asks for
// permission, watches the folder and shows what waits for a decision. A picked folder that holds
// another device's wiki is joined (issue #25: `mirrorJoin`), so one wiki lives on several devices
// through a folder a sync tool or git keeps. Where there is no picker (Firefox, Safari) it offers
// "Download changes" instead.
import { withWriteLock, lockName, announce } from "../writer.js";
import { setStatus, showError } from "../status.js";
import { $, h, pageLink } from "./dom.js";
import { app, t } from "./session.js";

/** How often the folder is read while the tab is visible, when the browser cannot observe it. */
const POLL_MS = 10_000;

const state = {
  /** The picked directory of the open wiki, or null. */
  handle: null,
  /** Whether the app may read and write it now. */
  granted: false,
  /** Stops watching (set while this tab watches). */
  stopWatching: null,
  /** Whether this tab holds the watch lock (it alone watches and follows other pages' writes). */
  watching: false,
  running: null,
  again: false,
};

// ---------------------------------------------------------------- the handle, kept in IndexedDB

function handleStore(mode, fn) {
  return new Promise((resolve, reject) => {
    const open = indexedDB.open("llm-wiki-folders", 1);
    open.onupgradeneeded = () => open.result.createObjectStore("handles");
    open.onerror = () => reject(open.error);
    open.onsuccess = () => {
      const tx = open.result.transaction("handles", mode);
      const req = fn(tx.objectStore("handles"));
      tx.oncomplete = () => { open.result.close(); resolve(req && req.result); };
      tx.onerror = () => { open.result.close(); reject(tx.error); };
    };
  });
}
const loadHandle = (name) => handleStore("readonly", (s) => s.get(name));
const saveHandle = (name, handle) => handleStore("readwrite", (s) => s.put(handle, name));
const dropHandle = (name) => handleStore("readwrite", (s) => s.delete(name));

// ---------------------------------------------------------------- mirror and pull

/** Runs `fn` under the wiki's write lock; `announce` tells the other pages the wiki changed. */
const locked = (fn, announce) => withWriteLock(app.wiki.name, fn, { announce });

/**
 * Brings the folder up to date with the wiki, then the wiki with the folder; called after every
 * change and when the folder changes. One run at a time; a request during a run runs after it.
 */
export function syncFolder() {
  if (!state.handle || !state.granted || !app.wiki) return Promise.resolve();
  if (state.running) { state.again = true; return state.running; }
  state.running = (async () => {
    do {
      state.again = false;
      await syncOnce().catch(folderError);
    } while (state.again);
  })().finally(() => { state.running = null; });
  return state.running;
}

async function syncOnce() {
  const wiki = app.wiki;
  if (!state.handle || !state.granted) return;
  // Another tab may have stopped using the folder, or picked another, since this one looked:
  // checked under the write lock, where that change is made too.
  const run = await locked(async () => (await stillOurs()) ? wiki.mirror(state.handle) : null, false);
  const pulled = run && await locked(async () => (await stillOurs()) ? wiki.mirrorPull(state.handle) : null, false);
  if (!pulled) { await openFolder(); return; }
  // Something came in: an edit made in the folder (`op`), or other devices' operations merged.
  const came = pulled.op !== undefined || (pulled.merged?.length ?? 0) > 0;
  // The other pages refresh only when something came in.
  if (came) announce(wiki.name, "changed");
  const kept = [];
  const converted = [];
  for (const path of pulled.inboxOther) {
    const keys = await addInboxFile(run.root, path);
    if (keys.length) converted.push(...keys); else kept.push(path.slice("inbox/".length));
  }
  if (came || converted.length) {
    await locked(() => wiki.mirror(state.handle), false);
    setStatus(t("folderPulled", pulled, converted.length));
  }
  if (came || converted.length || pulled.conflicts.length || pulled.deleted.length) await app.refresh();
  if (kept.length) setStatus(t("inboxKept", kept.join(", ")), "error");
  await renderFolder(run.held.length);
  const added = [...pulled.sources, ...converted];
  if (added.length) await compileNew(added);
}

const compileNewKey = () => `llm-wiki.compileNew.${app.wiki.name}`;

/**
 * Compiles sources that came in through the folder when the person turned *Compile new files*
 * on: at once offline (it costs nothing), after the cost estimate with an endpoint.
 */
async function compileNew(keys) {
  if (localStorage.getItem(compileNewKey()) !== "1") return;
  const { compile, compiling } = await import("./compile.js");
  if (compiling()) return; // the running compile's next one picks them up
  const estimate = await app.wiki.estimate({ sources: keys });
  if (!estimate.sources.length) return;
  if (estimate.total.calls > 0 && !confirm(t("compileNewConfirm", estimate.total, estimate.sources.length))) return;
  await compile({ sources: keys });
}

/**
 * An inbox file the core does not read: HTML, PDF, Word and EPUB are converted and added as a
 * dropped file would be, and leave the inbox once the source is there. Resolves to the keys of
 * the sources it became; anything else stays in the inbox (no keys): nothing is deleted that did
 * not come in.
 */
async function addInboxFile(root, path) {
  const name = path.split("/").at(-1);
  const { addFiles, convertedHere } = await import("./sources.js");
  if (!convertedHere(name)) return [];
  let dir = state.handle;
  for (const p of [...root.split("/"), ...path.split("/").slice(0, -1)]) dir = await dir.getDirectoryHandle(p);
  const file = await (await dir.getFileHandle(name)).getFile();
  const keys = await addFiles([file]);
  // Not added (a scan without text…): it stays.
  if (!keys.length) return [];
  await dir.removeEntry(name);
  return keys;
}

function folderError(e) {
  if (e && e.code === "FOLDER" && /NotAllowedError|SecurityError/.test(e.message)) {
    state.granted = false;
    renderFolder().catch(() => {});
  }
  showError(e);
}

// ---------------------------------------------------------------- watching

/**
 * Watches the folder while this tab is the wiki's watcher: one tab per wiki holds the watch lock
 * (the others wait for it and take over when it closes) and they refresh over BroadcastChannel.
 * With `FileSystemObserver` a change is reported as it happens and an idle folder costs nothing;
 * without it the folder is read on focus and every 10 s while the tab is visible.
 */
function watch() {
  if (state.stopWatching || !navigator.locks) return;
  const name = app.wiki.name;
  let release;
  const held = new Promise((r) => { release = r; });
  state.stopWatching = () => { release(); state.stopWatching = null; };
  navigator.locks.request(`${lockName(name)}/watch`, async () => {
    if (!app.wiki || app.wiki.name !== name || !state.stopWatching) return;
    state.watching = true;
    const stops = [];
    let observed = false;
    if ("FileSystemObserver" in globalThis) {
      let timer = null;
      const observer = new FileSystemObserver(() => {
        clearTimeout(timer);
        timer = setTimeout(() => syncFolder(), 300);
      });
      try {
        await observer.observe(state.handle, { recursive: true });
        stops.push(() => observer.disconnect());
        observed = true;
      } catch (e) {
        console.warn("FileSystemObserver refused the folder; polling instead", e);
      }
    }
    if (!observed) {
      const poll = () => { if (document.visibilityState === "visible") syncFolder(); };
      const timer = setInterval(poll, POLL_MS);
      window.addEventListener("focus", poll);
      stops.push(() => { clearInterval(timer); window.removeEventListener("focus", poll); });
    }
    await held;
    state.watching = false;
    for (const stop of stops) stop();
  });
}

/**
 * Another page of this origin changed the wiki (another tab, the extension's popup): the watcher
 * tab writes it to the folder, so a clip lands there while no tab of the writer is open. Another
 * tab picked or stopped the folder (`kind` "folder"): this tab takes the folder up again.
 */
export function otherPageChanged(kind) {
  if (kind === "folder") openFolder().catch(showError);
  else if (state.watching) syncFolder();
}

function stopWatching() { state.stopWatching?.(); }

// ---------------------------------------------------------------- opening and picking

/** Whether the folder this tab uses is still the wiki's (call it under the write lock). */
async function stillOurs() {
  const stored = await loadHandle(app.wiki.name).catch(() => null);
  return !!stored && !!state.handle && stored.isSameEntry(state.handle);
}

/** On opening a wiki, and when another tab picked or stopped its folder: its folder, if it has
 * one, and whether the app may still use it. */
export async function openFolder() {
  stopWatching();
  state.handle = await loadHandle(app.wiki.name).catch(() => null) || null;
  state.granted = false;
  if (state.handle) {
    const perm = await state.handle.queryPermission({ mode: "readwrite" }).catch(() => "denied");
    state.granted = perm === "granted";
  }
  await renderFolder();
  if (state.granted) { watch(); syncFolder(); }
}

/** Whether the person agrees to drop what waits for a decision (the folder's files stay). */
async function dropPending() {
  const status = await app.wiki.mirrorStatus().catch(() => undefined);
  const waiting = status ? status.conflicts + status.deleted.length : 0;
  return waiting === 0 || confirm(t("folderDropPending", waiting));
}

async function pickFolder() {
  if (!(await dropPending())) return;
  const handle = await window.showDirectoryPicker({ id: "llm-wiki", mode: "readwrite" });
  if (await handle.requestPermission({ mode: "readwrite" }) !== "granted") {
    setStatus(t("folderDenied", handle.name), "error");
    return;
  }
  // Another device's wiki in the folder (a sync tool or git keeps it): join it, not beside it.
  if (await joinStep(handle)) return;
  stopWatching();
  const name = app.wiki.name;
  await locked(async () => { await app.wiki.forgetMirror(); await saveHandle(name, handle); }, false);
  announce(name, "folder");
  state.handle = handle;
  state.granted = true;
  watch();
  await syncFolder();
  const status = await app.wiki.mirrorStatus();
  if (status) setStatus(t("folderMirroring", handle.name, status.root));
  // A vault picked as the folder: its notes can come in as sources, once.
  const notes = await app.wiki.folderNotes(handle);
  if (notes > 0 && confirm(t("adoptConfirm", handle.name, notes))) {
    const report = await locked(() => app.wiki.mirrorAdopt(handle, undefined), true);
    setStatus(t("adopted", report));
    await syncFolder();
    await app.refresh();
    const added = [...report.sourcesAdded, ...report.sourcesCorrected];
    if (added.length) await compileNew(added);
  }
}

/** Where a join of the open wiki was cut short: the root it was joining (localStorage). */
const joiningKey = (name) => `llm-wiki.joining.${name}`;

/**
 * Before the first mirror into a picked folder: what the core says the folder holds. The
 * wiki's own folder picked (not the one holding it) is refused; another device's wiki there is
 * joined, by this wiki when it is empty, else by a new wiki the person agrees to make; a join
 * cut short goes on. Resolves to true when the pick is handled, false to mirror as before.
 */
async function joinStep(handle) {
  const check = await app.wiki.mirrorJoinable(handle);
  if (check.inside) { setStatus(t("folderInside", handle.name), "error"); return true; }
  // A join of this wiki cut short (the folder's wiki is this one's now, or it is still empty).
  const resume = localStorage.getItem(joiningKey(app.wiki.name));
  const cut = check.wikis.find((w) => w.root === resume && (w.own || check.empty));
  if (cut) { await join(handle, cut.root); return true; }
  // This wiki's own folder, kept with other devices, picked again after "Stop": taken up
  // again (mirroring beside it would part this device from the others).
  const mine = check.wikis.find((w) => w.own && w.devices > 1);
  if (mine) { await join(handle, mine.root, true); return true; }
  const other = check.wikis.find((w) => !w.own);
  if (!other) return false;
  if (check.empty) {
    if (!confirm(t("joinConfirm", other.devices, other.root))) return false;
    await join(handle, other.root);
    return true;
  }
  if (!confirm(t("joinNewConfirm", other.devices, other.root, app.wiki.name))) return false;
  const name = prompt(t("askJoinWikiName"), handle.name)?.trim();
  if (!name) { setStatus(t("joinNoName")); return true; }
  await app.openWiki(name);
  // That wiki may be one whose join of this folder was cut short: it goes on.
  const again = await app.wiki.mirrorJoinable(handle);
  const cutThere = localStorage.getItem(joiningKey(name)) === other.root
    && again.wikis.some((w) => w.root === other.root && (w.own || again.empty));
  if (!again.empty && !cutThere) { setStatus(t("joinNotEmpty", name), "error"); return true; }
  await join(handle, other.root);
  return true;
}

/**
 * Makes the open, empty wiki one more device of the wiki in `handle`/`root` (the core takes a
 * device slot, imports the folder and takes it as the mirror), then mirrors as usual; `again`:
 * the wiki is a device of it already and takes the folder up again after "Stop". The
 * handle is kept only once the join is done, so a join cut short is never mirrored beside the
 * folder's wiki after a reload: picking the folder again finishes it.
 */
async function join(handle, root, again = false) {
  stopWatching();
  const name = app.wiki.name;
  localStorage.setItem(joiningKey(name), root);
  setStatus(t(again ? "takingUp" : "joining", root));
  let report;
  try {
    report = await locked(async () => {
      await app.wiki.forgetMirror();
      await dropHandle(name);
      const r = await app.wiki.mirrorJoin(handle, root);
      await saveHandle(name, handle);
      return r;
    }, true);
  } catch (e) {
    console.error(e);
    state.handle = null;
    state.granted = false;
    announce(name, "folder");
    await renderFolder();
    setStatus(t("joinFailed", (e && e.code ? `[${e.code}] ` : "") + (e && e.message || String(e))), "error");
    return;
  }
  localStorage.removeItem(joiningKey(name));
  announce(name, "folder");
  state.handle = handle;
  state.granted = true;
  watch();
  await syncFolder();
  await app.refresh();
  setStatus(t(again ? "tookUp" : "joined", report, root));
}

async function grantAgain() {
  const perm = await state.handle.requestPermission({ mode: "readwrite" });
  state.granted = perm === "granted";
  if (!state.granted) { setStatus(t("folderDenied", state.handle.name), "error"); await renderFolder(); return false; }
  watch();
  await syncFolder();
  return true;
}

async function stopFolder() {
  if (!(await dropPending())) return;
  stopWatching();
  const name = app.wiki.name;
  await locked(async () => { await app.wiki.forgetMirror(); await dropHandle(name); }, false);
  announce(name, "folder");
  state.handle = null;
  state.granted = false;
  await renderFolder();
}

async function downloadChanges(fromStart) {
  const bytes = await app.wiki.exportChanges(fromStart);
  const name = `${app.wiki.name}-changes-${new Date().toISOString().slice(0, 19).replace(/:/g, "")}.zip`;
  const a = h("a", { href: URL.createObjectURL(new Blob([bytes], { type: "application/zip" })), download: name });
  document.body.append(a); a.click(); a.remove();
  setStatus(t("changesDownloaded", name));
}

// ---------------------------------------------------------------- what waits for a decision

export async function renderFolder(heldCount = 0) {
  if (!app.wiki) return;
  const picker = "showDirectoryPicker" in window;
  $("#folder-use").hidden = !picker || !!state.handle;
  $("#folder-download").hidden = picker;
  $("#folder-download-all").hidden = picker;
  $("#folder-grant").hidden = !state.handle || state.granted;
  $("#folder-stop").hidden = !state.handle;
  $("#folder-compile-label").hidden = !state.handle;
  $("#folder-compile").checked = localStorage.getItem(compileNewKey()) === "1";
  if (state.handle && !state.granted) $("#folder-grant").textContent = t("folderGrant", state.handle.name);
  const status = await app.wiki.mirrorStatus().catch(() => undefined);
  $("#folder-status").textContent = !state.handle ? ""
    : !state.granted ? t("folderNeedsGrant", state.handle.name)
    : !status ? t("folderNotYet", state.handle.name)
    : t("folderStatus", state.handle.name, status.behind, heldCount);
  const conflicts = state.granted ? await app.wiki.mirrorConflicts() : [];
  const deleted = state.granted && status ? status.deleted : [];
  const box = $("#folder-held");
  box.hidden = conflicts.length === 0 && deleted.length === 0;
  box.replaceChildren(...conflicts.map(conflictRow), ...deleted.map(deletedRow));
}

/** A page whose file was deleted in the folder: delete the page too, or write the file back. */
function deletedRow(key) {
  const after = async (fn) => {
    try { await fn(); await syncFolder(); await app.refresh(); await renderFolder(); } catch (e) { showError(e); }
  };
  return h("div", { className: "conflict", "data-testid": "deleted-outside" },
    h("span", { textContent: t("deletedOutside", key) }),
    h("button", { textContent: t("deletePageToo"), onclick: () => after(() => locked(() => app.wiki.deletePage(key), true)) }),
    h("button", { textContent: t("keepPage"), onclick: () => after(() => locked(() => app.wiki.restorePageFile(state.handle, key), false)) }));
}

/** A conflict in the footer (with the folder, or with another device): its choices are beside
 * the page. */
function conflictRow(c) {
  return h("div", { className: "conflict", "data-testid": "folder-conflict" },
    h("span", { textContent: c.device ? t("conflictOnDevice", c.key, c.device) : t("conflictOn", c.key) }),
    pageLink(c.key, t("conflictOpen")));
}

/**
 * Ends the conflict on page `key` with `choice` (`{ keep: "mine" | "theirs" }` or
 * `{ keep: "merge", text }`) made on the folder's version `seen`, then syncs. Resolves to true
 * when it ended; otherwise the reason is shown.
 */
export async function resolveConflict(key, choice, seen) {
  try {
    if (!state.handle) { setStatus(t("conflictNoFolder"), "error"); return false; }
    if (!state.granted && !(await grantAgain())) return false;
    await locked(() => app.wiki.resolveMirrorConflict(state.handle, key, choice, seen), true);
    setStatus(t("conflictResolved", key));
    await syncFolder();
    await app.refresh();
    await renderFolder();
    return true;
  } catch (e) { showError(e); return false; }
}

export function wireFolder() {
  $("#folder-use").addEventListener("click", () => pickFolder().catch(showError));
  $("#folder-grant").addEventListener("click", () => grantAgain().catch(showError));
  $("#folder-stop").addEventListener("click", () => stopFolder().catch(showError));
  $("#folder-compile").addEventListener("change", (e) => localStorage.setItem(compileNewKey(), e.target.checked ? "1" : "0"));
  $("#folder-download").addEventListener("click", () => downloadChanges(false).catch(showError));
  $("#folder-download-all").addEventListener("click", () => downloadChanges(true).catch(showError));
}
