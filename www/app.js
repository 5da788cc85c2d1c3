// The llm-wiki web app shell. Everything is stored in this browser (IndexedDB) by the wasm core;
// this file only wires the DOM to the `Wiki` class. Untrusted text is always set with textContent.
import init, { Wiki } from "./pkg/llm_wiki.js";
import { strings, pickLanguage } from "./i18n.js";
import { htmlToMarkdown } from "./build/convert.js";

const $ = (sel) => document.querySelector(sel);
let lang = pickLanguage();
const t = (key, ...args) => {
  const v = strings[lang][key] ?? strings.en[key] ?? key;
  return typeof v === "function" ? v(...args) : v;
};

const state = { wiki: null, tab: "sources", editing: null };

function setStatus(message, kind = "info") {
  const el = $("#status");
  el.textContent = message;
  el.className = kind;
}

function showError(e) {
  console.error(e);
  const code = e && e.code ? `[${e.code}] ` : "";
  setStatus(code + (e && e.message ? e.message : String(e)), "error");
}

function applyLanguage() {
  document.documentElement.lang = lang === "zh" ? "zh-CN" : "en";
  for (const el of document.querySelectorAll("[data-i18n]")) el.textContent = t(el.dataset.i18n);
  for (const el of document.querySelectorAll("[data-i18n-placeholder]")) el.placeholder = t(el.dataset.i18nPlaceholder);
  $("#lang-toggle").textContent = lang === "zh" ? "English" : "中文";
}

function formatBytes(n) {
  if (n == null) return "?";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}

function formatTime(ms) {
  return new Date(ms).toLocaleString(lang === "zh" ? "zh-CN" : undefined);
}

// ---------------------------------------------------------------- wikis

async function refreshWikiList(selected) {
  const names = await Wiki.list();
  if (!names.includes(selected)) names.push(selected);
  names.sort();
  const select = $("#wiki-select");
  select.replaceChildren(...names.map((n) => {
    const o = document.createElement("option");
    o.value = n; o.textContent = n; o.selected = n === selected;
    return o;
  }));
}

async function openWiki(name) {
  if (state.wiki) state.wiki.close();
  state.wiki = await Wiki.open(name, {
    onVersionChange: () => setStatus(t("upgraded"), "error"),
  });
  localStorage.setItem("llm-wiki.current", name);
  await refreshWikiList(name);
  await refresh();
}

// ---------------------------------------------------------------- tabs

function showTab(tab) {
  state.tab = tab;
  for (const b of document.querySelectorAll("#tabs button")) b.classList.toggle("active", b.dataset.tab === tab);
  for (const s of document.querySelectorAll(".tab")) s.hidden = s.id !== `tab-${tab}`;
  refresh().catch(showError);
}

async function refresh() {
  if (!state.wiki) return;
  switch (state.tab) {
    case "sources": await renderSources(); break;
    case "pages": await renderPages(); break;
    case "index": $("#index-md").textContent = await state.wiki.index(); break;
    case "log": $("#log-md").textContent = await state.wiki.log(); break;
    case "schema": $("#schema-md").value = await state.wiki.schema(); break;
  }
  await renderStorage();
}

// ---------------------------------------------------------------- sources

async function renderSources() {
  const sources = await state.wiki.sources();
  const tbody = $("#sources-table tbody");
  tbody.replaceChildren(...sources.map((s) => {
    const tr = document.createElement("tr");
    const title = document.createElement("a");
    title.href = "#"; title.textContent = s.title;
    title.addEventListener("click", (e) => { e.preventDefault(); viewSource(s.key).catch(showError); });
    const cells = [title, s.key, t(s.status.state) + (s.status.reason ? `: ${s.status.reason}` : ""), formatTime(s.addedAt)];
    for (const c of cells) {
      const td = document.createElement("td");
      if (c instanceof Node) td.append(c); else td.textContent = c;
      tr.append(td);
    }
    tr.dataset.key = s.key;
    return tr;
  }));
  $("#sources-empty").hidden = sources.length > 0;
  $("#sources-table").hidden = sources.length === 0;
}

async function viewSource(key) {
  const s = await state.wiki.source(key);
  const view = $("#source-view");
  if (!s) { view.hidden = true; return; }
  const h = document.createElement("h3"); h.textContent = s.title;
  const meta = document.createElement("p"); meta.className = "meta";
  meta.textContent = `${s.key} · ${s.mime} · v ${s.version.slice(0, 12)}…`;
  const pre = document.createElement("pre"); pre.textContent = s.text;
  view.replaceChildren(h, meta, pre);
  view.hidden = false;
}

async function addSource({ title, key, mime, content }) {
  const url = /^https?:\/\//.test(key || "") ? key : undefined;
  let original;
  if (mime === "text/html") {
    // Decision 2: HTML becomes markdown here, in JS; the original HTML is kept as the raw artifact.
    const converted = htmlToMarkdown(content, { url });
    for (const w of converted.warnings) setStatus(t("convertWarning", converted.title, w), "error");
    original = new TextEncoder().encode(content);
    title = title || converted.title;
    content = converted.markdown;
    mime = "text/markdown";
  }
  const report = await state.wiki.addSource({
    title: title || undefined, key: key || undefined, mime, content, url,
    original, originalMime: original ? "text/html" : undefined,
    capturedAt: Date.now(),
  });
  const shown = title || report.key;
  setStatus(report.outcome === "added" ? t("sourceAdded", shown)
    : report.outcome === "unchanged" ? t("sourceUnchanged", shown) : t("sourceCorrected", shown));
  return report;
}

async function addFiles(files) {
  for (const f of files) {
    const mime = /\.(md|markdown)$/i.test(f.name) ? "text/markdown"
      : /\.html?$/i.test(f.name) ? "text/html" : "text/plain";
    await addSource({ title: "", key: `file:${f.name}`, mime, content: await f.text() });
  }
  await refresh();
}

// ---------------------------------------------------------------- compile

async function compile() {
  const controller = new AbortController();
  state.compileController = controller;
  $("#compile").disabled = true;
  $("#compile-cancel").hidden = false;
  const progress = $("#compile-progress");
  try {
    const report = await state.wiki.compile({
      signal: controller.signal,
      onProgress: (p) => {
        if (p.stage === "source") progress.textContent = t("compiling", p.index + 1, p.total, p.key);
      },
    });
    const pages = report.compiled.reduce((n, r) => n + r.created.length + r.updated.length, 0);
    setStatus(report.compiled.length + report.failed.length === 0 ? t("nothingToCompile")
      : t("compileDone", report.compiled.length, report.failed.length, pages), report.failed.length ? "error" : "info");
    progress.textContent = "";
  } catch (e) {
    if (e && e.code === "CANCELLED") setStatus(t("cancelled"), "error"); else showError(e);
    progress.textContent = "";
  } finally {
    $("#compile").disabled = false;
    $("#compile-cancel").hidden = true;
    await refresh();
  }
}

// ---------------------------------------------------------------- pages

async function renderPages() {
  const pages = await state.wiki.pages();
  $("#pages-list").replaceChildren(...pages.map((p) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = "#"; a.textContent = p.title;
    a.addEventListener("click", (e) => { e.preventDefault(); viewPage(p.key).catch(showError); });
    const kind = document.createElement("span"); kind.className = "kind"; kind.textContent = p.kind;
    const summary = document.createElement("span"); summary.className = "summary"; summary.textContent = p.summary;
    li.append(a, " ", kind, " ", summary);
    return li;
  }));
  $("#pages-empty").hidden = pages.length > 0;
}

async function viewPage(key) {
  const p = await state.wiki.page(key);
  const view = $("#page-view");
  if (!p) { view.hidden = true; return; }
  const h = document.createElement("h3"); h.textContent = p.title;
  const meta = document.createElement("p"); meta.className = "meta";
  meta.textContent = `${p.kind} · ${t("revision")} ${p.revision} · ${formatTime(p.updated)}`;
  const body = document.createElement("pre"); body.textContent = p.body;
  const edit = document.createElement("button"); edit.textContent = t("edit");
  edit.addEventListener("click", () => openEditor(p));
  const history = await state.wiki.history(p.key);
  const hist = document.createElement("ol"); hist.className = "history";
  for (const r of history) {
    const li = document.createElement("li");
    li.textContent = `${t("revision")} ${r.number} · ${t("by")} ${r.author} · op ${r.op} · ${formatTime(r.time)}`;
    hist.append(li);
  }
  const hh = document.createElement("h4"); hh.textContent = t("history");
  view.replaceChildren(h, meta, edit, body, hh, hist);
  view.hidden = false;
}

function openEditor(page) {
  state.editing = page;
  $("#page-title").value = page ? page.title : "";
  $("#page-kind").value = page ? page.kind : "concept";
  $("#page-summary").value = page ? page.summary : "";
  $("#page-body").value = page ? page.body : "";
  $("#page-editor").hidden = false;
  $("#page-view").hidden = true;
}

// ---------------------------------------------------------------- storage

async function renderStorage() {
  const info = await state.wiki.storageInfo();
  $("#storage-info").textContent = `${t("storage", formatBytes(info.usage), formatBytes(info.quota))} · ${info.persisted ? t("persisted") : t("notPersisted")}`;
}

// ---------------------------------------------------------------- wiring

function wire() {
  for (const b of document.querySelectorAll("#tabs button")) b.addEventListener("click", () => showTab(b.dataset.tab));
  $("#lang-toggle").addEventListener("click", () => {
    lang = lang === "zh" ? "en" : "zh";
    localStorage.setItem("llm-wiki.lang", lang);
    applyLanguage();
    refresh().catch(showError);
  });
  $("#wiki-select").addEventListener("change", (e) => openWiki(e.target.value).catch(showError));
  $("#wiki-new").addEventListener("click", () => {
    const name = prompt(t("askWikiName"));
    if (name && name.trim()) openWiki(name.trim()).catch(showError);
  });
  $("#wiki-delete").addEventListener("click", async () => {
    const name = state.wiki && state.wiki.name;
    if (!name || !confirm(t("confirmDelete", name))) return;
    try {
      state.wiki.close(); state.wiki = null;
      await Wiki.delete(name);
      const rest = (await Wiki.list()).filter((n) => n !== name);
      await openWiki(rest[0] || "default");
    } catch (e) { showError(e); }
  });
  $("#add-source").addEventListener("submit", async (e) => {
    e.preventDefault();
    const content = $("#source-content").value;
    if (!content.trim()) { setStatus(t("emptyContent"), "error"); return; }
    try {
      await addSource({ title: $("#source-title").value.trim(), key: $("#source-key").value.trim(), mime: $("#source-mime").value, content });
      $("#source-content").value = ""; $("#source-title").value = ""; $("#source-key").value = "";
      await refresh();
    } catch (err) { showError(err); }
  });
  $("#source-files").addEventListener("change", (e) => addFiles([...e.target.files]).catch(showError));
  const drop = $("#source-content");
  drop.addEventListener("dragover", (e) => e.preventDefault());
  drop.addEventListener("drop", (e) => {
    if (e.dataTransfer && e.dataTransfer.files.length) { e.preventDefault(); addFiles([...e.dataTransfer.files]).catch(showError); }
  });
  $("#compile").addEventListener("click", () => compile().catch(showError));
  $("#compile-cancel").addEventListener("click", () => state.compileController?.abort());
  $("#page-new").addEventListener("click", () => openEditor(null));
  $("#page-cancel").addEventListener("click", () => { $("#page-editor").hidden = true; });
  $("#page-editor").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const p = state.editing;
      const saved = await state.wiki.putPage({
        key: p ? p.key : undefined, baseRevision: p ? p.revision : undefined,
        title: $("#page-title").value, kind: $("#page-kind").value,
        summary: $("#page-summary").value, body: $("#page-body").value,
      });
      $("#page-editor").hidden = true;
      setStatus(t("pageSaved", saved.title));
      await renderPages();
      await viewPage(saved.key);
    } catch (err) { showError(err); }
  });
  $("#schema-save").addEventListener("click", async () => {
    try { await state.wiki.setSchema($("#schema-md").value); setStatus(t("schemaSaved")); } catch (e) { showError(e); }
  });
  $("#persist").addEventListener("click", async () => {
    try {
      const ok = await state.wiki.persist();
      if (!ok) setStatus(t("persistDenied"), "error");
      await renderStorage();
    } catch (e) { showError(e); }
  });
}

async function main() {
  applyLanguage();
  wire();
  await init();
  await openWiki(localStorage.getItem("llm-wiki.current") || "default");
  document.body.dataset.ready = "true";
}

main().catch(showError);
