// The extension's popup: what the wiki already says about the page in the current tab, and
// "clip" / "clip and compile". It opens the same wiki as the extension's app page (one origin, one
// IndexedDB, Decision 9) and writes only under the wiki's Web Lock; the compile itself runs in the
// background service worker, so closing the popup does not stop it.
import init, { Wiki } from "./app/pkg/llm_wiki.js";
import { translate, pickLanguage } from "./app/i18n.js";
import { withWriteLock, listen } from "./app/writer.js";
import { setStatus, showError } from "./app/status.js";
import { markReady, actionDone } from "./app/ui/hooks.js";
import { readTab, toSource, recall, keepImages } from "./clipper.js";

const $ = (sel) => document.querySelector(sel);
const lang = pickLanguage();
const t = (key, ...args) => translate(lang, key, ...args);

const state = { name: localStorage.getItem("llm-wiki.current") || "default", wiki: null, source: null };

/** The tab the popup is about: `?tab=<id>` when opened as a page for a given tab, else the active tab. */
async function targetTab() {
  const param = new URLSearchParams(location.search).get("tab");
  if (param) return Number(param);
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  return tab && tab.id;
}

function openInApp(hash) {
  chrome.tabs.create({ url: chrome.runtime.getURL(`app/index.html${hash}`) });
}

function pageLink(p) {
  const a = document.createElement("a");
  a.href = `app/index.html#/page/${encodeURIComponent(p.key)}`;
  a.textContent = p.title;
  a.addEventListener("click", (e) => { e.preventDefault(); openInApp(`#/page/${encodeURIComponent(p.key)}`); });
  return a;
}

async function renderClipState() {
  const key = state.source.input.key;
  const s = await state.wiki.source(key);
  $("#clip-state").textContent = s
    ? t("clippedBefore", new Date(s.capturedAt || s.addedAt).toLocaleString(lang === "zh" ? "zh-CN" : undefined), t(s.status.state))
    : t("notClipped");
  return s;
}

async function renderRecall() {
  const r = await recall(state.wiki, state.source.converted);
  $("#recall-pages").replaceChildren(...r.pages.map((p) => {
    const li = document.createElement("li");
    li.dataset.key = p.key;
    const kind = document.createElement("span"); kind.className = "meta"; kind.textContent = ` ${p.kind}`;
    const summary = document.createElement("span"); summary.className = "summary"; summary.textContent = p.summary;
    li.append(pageLink(p), kind, summary);
    return li;
  }));
  $("#recall-empty").hidden = r.pages.length > 0;
  $("#recall-contradictions").replaceChildren(...r.contradictions.map((c) => {
    const li = document.createElement("li");
    li.dataset.id = c.id;
    li.append(c.description, " (");
    c.pages.forEach((p, i) => { if (i) li.append(", "); li.append(pageLink(p)); });
    li.append(")");
    if (c.sides.length) {
      const sides = document.createElement("span"); sides.className = "sides";
      sides.textContent = c.sides.map((side) => `${side.title}: ${side.text}`).join(" · ");
      li.append(sides);
    }
    return li;
  }));
  $("#recall-contradictions-box").hidden = r.contradictions.length === 0;
}

/**
 * Stores the clip (under the wiki's write lock), its images as attachments first; resolves to the
 * AddSourceReport.
 */
async function clip() {
  const { input, converted } = state.source;
  // Asked here, in the click: the first clip with images on another site asks for access to it.
  const images = await keepImages(input.content, input.url, chrome.permissions);
  const report = await withWriteLock(state.name, async () => {
    let content = images.markdown;
    for (const a of images.attachments) {
      // The wiki may keep the picture under another name (one it already had): point at that.
      const asset = await state.wiki.addAttachment(a.name, a.mime, a.bytes);
      if (asset.name !== a.name) content = content.split(`](${a.name})`).join(`](${asset.name})`);
    }
    return state.wiki.addSource({ ...input, content, capturedAt: Date.now() });
  }, { onWait: () => setStatus(t("waitingForOtherTab")) });
  setStatus(report.outcome === "added" ? t("sourceAdded", converted.title)
    : report.outcome === "unchanged" ? t("sourceUnchanged", converted.title) : t("sourceCorrected", converted.title));
  await renderClipState();
  return report;
}

async function clipAndCompile() {
  const report = await clip();
  const { converted } = state.source;
  if (converted.warnings.length) {
    // F23: a low-confidence extraction is kept but not compiled without the user looking at it.
    setStatus(t("clippedNotCompiled", converted.warnings.join(" ")), "warn");
    return;
  }
  const stored = await state.wiki.source(report.key);
  if (stored && stored.status.state === "compiled") { setStatus(t("alreadyCompiled")); return; }
  const stop = listen((m) => {
    if (m.wiki === state.name && m.kind === "progress" && m.text) setStatus(m.text);
  });
  setStatus(t("compiling", 1, 1, report.key));
  try {
    const reply = await chrome.runtime.sendMessage({ type: "compile", wiki: state.name, sources: [report.key], lang });
    if (!reply || !reply.ok) throw Object.assign(new Error(reply ? reply.error.message : "no reply"), { code: reply?.error?.code });
    const r = reply.report;
    const pages = r.compiled.reduce((n, c) => n + c.created.length + c.updated.length, 0);
    setStatus(t("compileDone", r.compiled.length, r.failed.length, pages)
      + (r.failed.length ? ` ${r.failed.map((f) => `[${f.code}] ${f.message}`).join(" ")}` : ""),
    r.failed.length ? "error" : "info");
  } finally {
    stop();
  }
  await renderClipState();
  await renderRecall();
}

function busy(run) {
  return async () => {
    for (const b of document.querySelectorAll("button")) b.disabled = true;
    try { await run(); } catch (e) { showError(e); } finally {
      for (const b of document.querySelectorAll("button")) b.disabled = false;
      actionDone();
    }
  };
}

async function main() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  $("#open-wiki").addEventListener("click", (e) => { e.preventDefault(); openInApp(""); });
  $("#open-settings").addEventListener("click", (e) => { e.preventDefault(); openInApp("#/settings"); });
  await init();
  state.wiki = await Wiki.open(state.name, { onVersionChange: () => setStatus(t("upgraded"), "error") });
  const tabId = await targetTab();
  let page;
  try {
    page = await readTab(tabId);
  } catch (e) {
    // Browser pages (chrome://, the Web Store, PDFs in the viewer) cannot be read by extensions.
    setStatus(t("cannotClip", e && e.message ? e.message : String(e)), "error");
    markReady();
    return;
  }
  state.source = toSource(page);
  $("#page-title").textContent = state.source.converted.title;
  $("#page-url").textContent = state.source.input.key;
  if (state.source.converted.warnings.length) {
    $("#warnings").textContent = state.source.converted.warnings.join(" ");
    $("#warnings").hidden = false;
  }
  await renderClipState();
  await renderRecall();
  $("#clip").addEventListener("click", busy(clip));
  $("#clip-compile").addEventListener("click", busy(clipAndCompile));
  $("#clip").disabled = false;
  $("#clip-compile").disabled = false;
  markReady();
}

main().catch((e) => { showError(e); markReady(); });
