// The llm-wiki web app shell. Everything is stored in this browser (IndexedDB) by the wasm core;
// the app only wires the DOM to the `Wiki` class: this file opens wikis, switches tabs and
// follows the address, and each tab is a module of ui/ (ui/session.js holds what they share,
// ui/hooks.js every test hook). Untrusted text is always set as text; the only HTML assigned is
// what the core renders.
import init, { Wiki } from "./pkg/llm_wiki.js";
import { listen } from "./writer.js";
import { setStatus, showError } from "./status.js";
import { $, h } from "./ui/dom.js";
import { markReady, vectorIndexOptions } from "./ui/hooks.js";
import { app, t } from "./ui/session.js";
import { keepVectorIndex } from "./ui/writing.js";
import { noticeEvictions, forgetWiki, wireEviction } from "./ui/eviction.js";
import { renderStorage, wireFooter } from "./ui/footer.js";
import { renderSources, sourcesReplaced, viewSource, wireSources } from "./ui/sources.js";
import { wireCompile } from "./ui/compile.js";
import { renderPages, viewPage, wirePages } from "./ui/pages.js";
import { renderGraphTab, wireGraph } from "./ui/graph.js";
import { renderSessions, wireAsk } from "./ui/ask.js";
import { wireLint } from "./ui/lint.js";
import { renderLog } from "./ui/log.js";
import { renderIndex, renderSchema, wireSchema } from "./ui/documents.js";
import { renderSettings, settingsReplaced, wireSettings } from "./ui/settings.js";
import { wireSearch } from "./ui/search.js";
import { openFolder, otherPageChanged, wireFolder } from "./ui/folder.js";

/** What each tab renders when shown or refreshed (the Lint tab renders on request only). */
const TABS = {
  sources: renderSources, pages: renderPages, graph: renderGraphTab, index: renderIndex, log: renderLog,
  schema: renderSchema, settings: renderSettings, ask: renderSessions, lint: async () => {},
};

app.refresh = async function refresh() {
  if (!app.wiki) return;
  await TABS[app.tab]();
  await renderStorage();
};

// Another page of this origin changed the open wiki: show it.
listen((m) => {
  if (!app.wiki || m.wiki !== app.wiki.name) return;
  if (m.kind === "changed") {
    setStatus(t("otherTabChanged"));
    app.refresh().catch(showError);
    otherPageChanged("changed");
  } else if (m.kind === "folder") {
    otherPageChanged("folder");
  }
});

function applyLanguage() {
  document.documentElement.lang = app.lang === "zh" ? "zh-CN" : "en";
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
  $("#lang-toggle").textContent = app.lang === "zh" ? "English" : "中文";
}

// ---------------------------------------------------------------- wikis

async function refreshWikiList(selected) {
  // Where IndexedDB cannot be used (the wiki is then in memory), there is no list to read.
  const names = await Wiki.list().catch(() => []);
  if (!names.includes(selected)) names.push(selected);
  names.sort();
  $("#wiki-select").replaceChildren(...names.map((n) => h("option", { value: n, textContent: n, selected: n === selected })));
}

async function openWiki(name) {
  if (app.wiki) app.wiki.close();
  settingsReplaced();
  sourcesReplaced(); // until the sources list of this wiki is read
  app.wiki = await Wiki.open(name, {
    onVersionChange: () => setStatus(t("upgraded"), "error"),
    vectorIndex: vectorIndexOptions(),
    // Firefox private windows and some webviews cannot use IndexedDB: work in memory, and say so.
    memoryFallback: true,
  });
  localStorage.setItem("llm-wiki.current", name);
  // A wiki kept in memory is empty at every start by design: it is never remembered as one the
  // browser could clear.
  app.inMemory = (await app.wiki.storageInfo().catch(() => ({}))).backend === "memory";
  if (!app.inMemory) await noticeEvictions(name);
  await refreshWikiList(name);
  await app.refresh();
  keepVectorIndex();
  await openFolder();
}

app.openWiki = openWiki;

async function deleteWiki() {
  const name = app.wiki && app.wiki.name;
  if (!name || !confirm(t("confirmDelete", name))) return;
  try {
    app.wiki.close(); app.wiki = null;
    await Wiki.delete(name);
    forgetWiki(name);
    const rest = (await Wiki.list()).filter((n) => n !== name);
    await openWiki(rest[0] || "default");
  } catch (e) { showError(e); }
}

// ---------------------------------------------------------------- tabs and the address

function showTab(tab) {
  if (tab === "settings") settingsReplaced();
  app.tab = tab;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== `tab-${tab}`;
  app.refresh().catch(showError);
}

/** Follows the address: `#/<tab>` shows a tab, `#/page/<key>` a page, `#/source/<key>/<a>-<b>[/<version>]`
 * a source at a passage. */
function route() {
  if (!app.wiki) return;
  const tab = location.hash.match(/^#\/(sources|pages|graph|ask|lint|index|log|schema|settings)$/);
  if (tab) { showTab(tab[1]); return; }
  const src = location.hash.match(/^#\/source\/([^/]+)(?:\/(\d+)-(\d+))?(?:\/([0-9a-f]+))?$/);
  if (src) {
    if (app.tab !== "sources") showTab("sources");
    const passage = src[2] ? { lines: [Number(src[2]), Number(src[3])], version: src[4] } : undefined;
    viewSource(decodeURIComponent(src[1]), passage).catch(showError);
    return;
  }
  const m = location.hash.match(/^#\/page\/(.+)$/);
  if (!m) return;
  if (app.tab !== "pages") showTab("pages");
  viewPage(decodeURIComponent(m[1])).catch(showError);
}

// ---------------------------------------------------------------- wiring

function wire() {
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  $("#lang-toggle").addEventListener("click", () => {
    app.lang = app.lang === "zh" ? "en" : "zh";
    localStorage.setItem("llm-wiki.lang", app.lang);
    applyLanguage();
    app.refresh().catch(showError);
  });
  $("#wiki-select").addEventListener("change", (e) => openWiki(e.target.value).catch(showError));
  $("#wiki-new").addEventListener("click", () => {
    const name = prompt(t("askWikiName"));
    if (name && name.trim()) openWiki(name.trim()).catch(showError);
  });
  $("#wiki-delete").addEventListener("click", deleteWiki);
  wireEviction(openWiki);
  wireSources();
  wireCompile();
  wireGraph();
  wirePages({ route, showTab });
  wireSettings();
  wireSearch();
  wireAsk();
  wireLint();
  wireSchema();
  wireFooter();
  wireFolder();
  window.addEventListener("hashchange", route);
}

async function main() {
  applyLanguage();
  wire();
  await init();
  await openWiki(localStorage.getItem("llm-wiki.current") || "default");
  markReady();
  route();
}

main().catch(showError);

// An offline app shell: the site keeps working without a network once loaded.
// (Not in the extension: its files are packaged, and its own service worker is background.js.)
if ("serviceWorker" in navigator && /^https?:$/.test(location.protocol)) {
  navigator.serviceWorker.register("./sw.js").catch(() => {});
}
