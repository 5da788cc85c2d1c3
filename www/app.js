// The llm-wiki web app shell. Everything is stored in this browser (IndexedDB) by the wasm core;
// this file only wires the DOM to the `Wiki` class. Untrusted text is always set with textContent.
import init, { Wiki } from "./pkg/llm_wiki.js";
import { translate, pickLanguage } from "./i18n.js";
import { htmlToMarkdown } from "./build/convert.js";
import { withWriteLock, listen } from "./writer.js";
import { setStatus, showError } from "./status.js";
import { rebuildVectorIndex } from "./vector-index.js";

const $ = (sel) => document.querySelector(sel);
let lang = pickLanguage();
const t = (key, ...args) => translate(lang, key, ...args);

const state = { wiki: null, tab: "sources", editing: null, session: null };

/**
 * Runs a change to the wiki while holding the wiki's Web Lock, so one tab (or the extension's
 * popup and background) writes at a time (Decision 9); then tells the other pages to refresh.
 */
function write(fn, { embed = true } = {}) {
  const run = withWriteLock(state.wiki.name, fn, { onWait: () => setStatus(t("waitingForOtherTab")) });
  // Pages a change wrote get their endpoint embeddings right after it (issue #6: the indexes
  // follow every commit; the offline embedding is already in the commit itself).
  return embed ? run.then((r) => { queueEmbedding(); return r; }) : run;
}

let embedding = null;
let embedAgain = false;

/** Runs `embedNewPages` in the background, once at a time; a request during a run runs after it. */
function queueEmbedding() {
  if (embedding) { embedAgain = true; return; }
  embedding = (async () => {
    do {
      embedAgain = false;
      await embedNewPages().catch(() => {});
    } while (embedAgain);
    keepVectorIndex();
  })().finally(() => { embedding = null; });
}

listen((m) => {
  if (state.wiki && m.wiki === state.wiki.name && m.kind === "changed") {
    setStatus(t("otherTabChanged"));
    refresh().catch(showError);
  }
});

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
  // Where IndexedDB cannot be used (the wiki is then in memory), there is no list to read.
  const names = await Wiki.list().catch(() => []);
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
  settingsEdited = false;
  state.sourceCount = undefined; // until the sources list of this wiki is read
  state.wiki = await Wiki.open(name, {
    onVersionChange: () => setStatus(t("upgraded"), "error"),
    vectorIndex: vectorIndexOptions(),
    // Firefox private windows and some webviews cannot use IndexedDB: work in memory, and say so.
    memoryFallback: true,
  });
  localStorage.setItem("llm-wiki.current", name);
  // A wiki kept in memory is empty at every start by design: it is never remembered as one the
  // browser could clear.
  state.inMemory = (await state.wiki.storageInfo().catch(() => ({}))).backend === "memory";
  if (!state.inMemory) await noticeEvictions(name);
  await refreshWikiList(name);
  await refresh();
  keepVectorIndex();
}

// ---------------------------------------------------------------- eviction (issue #21)

// The browser may clear this origin's storage (eviction under storage pressure, "clear site
// data") while localStorage, or only it, survives. The app remembers, per wiki it knew, how many
// sources and pages it last showed (`llm-wiki.known`); a wiki that had some and now opens empty,
// or is missing from the list of databases, was cleared: the notice says so, with the date of
// the last vault export, and offers the import.
const KNOWN_KEY = "llm-wiki.known";

function knownWikis() {
  try {
    const known = JSON.parse(localStorage.getItem(KNOWN_KEY) || "{}");
    return known && typeof known === "object" ? known : {};
  } catch { return {}; }
}

function saveKnown(known) {
  try { localStorage.setItem(KNOWN_KEY, JSON.stringify(known)); } catch { /* storage full: nothing to remember with */ }
}

/** Records what the app last saw of wiki `name` (`{ sources }` or `{ pages }`), unless it is marked cleared. */
function rememberWiki(name, counts) {
  if (state.inMemory) return;
  const known = knownWikis();
  const entry = known[name] || { sources: 0, pages: 0 };
  if (entry.evicted) return; // what was lost stays on record until an import or a dismissal
  if (Object.entries(counts).every(([k, v]) => entry[k] === v)) return;
  known[name] = { ...entry, ...counts };
  saveKnown(known);
}

/** Forgets wiki `name` (deleted on purpose, or the user dismissed the notice). */
function forgetWiki(name) {
  const known = knownWikis();
  delete known[name];
  saveKnown(known);
}

/**
 * Marks the wikis the app knew with content that are gone: the open one (`current`) when it is
 * empty now with no history, any other when its database is no longer listed. Then shows the
 * notice.
 */
async function noticeEvictions(current) {
  const known = knownWikis();
  const had = (e) => e && !e.evicted && (e.sources > 0 || e.pages > 0);
  let changed = false;
  const names = Object.keys(known).filter((n) => had(known[n]));
  if (names.length) {
    const listed = await Wiki.list().catch(() => null);
    for (const name of names) {
      let gone;
      if (name === current) {
        // Empty and without a single operation: a new database, not one the user emptied (a
        // removal or a rollback the app did not re-count is an operation in its history).
        // Cheapest first: the page table, then the sources' records, then the history.
        gone = (await state.wiki.pages()).length === 0 && (await state.wiki.sources()).length === 0
          && (await state.wiki.operations()).length === 0;
      } else gone = Array.isArray(listed) && !listed.includes(name);
      if (gone) {
        known[name] = { ...known[name], evicted: { noticedAt: Date.now(), sources: known[name].sources, pages: known[name].pages } };
        changed = true;
      }
    }
  }
  if (changed) saveKnown(known);
  renderEvictionNotice();
}

/** The notice for the first cleared wiki (the open one first), or none. */
function renderEvictionNotice() {
  const box = $("#eviction-notice");
  const known = knownWikis();
  const current = state.wiki && state.wiki.name;
  const names = Object.keys(known).filter((n) => known[n].evicted).sort((a, b) => (a === current ? -1 : b === current ? 1 : a.localeCompare(b)));
  if (!names.length) { box.hidden = true; return; }
  const name = names[0];
  const lost = known[name].evicted;
  const exported = Number(localStorage.getItem(`llm-wiki.exported.${name}`) || 0);
  $("#eviction-text").textContent = t("evicted", name, lost.sources || 0, lost.pages || 0, exported ? formatTime(exported) : null);
  box.dataset.wiki = name;
  box.hidden = false;
}

// Test-only: `localStorage["llm-wiki.vectorIndex"]` = JSON `{ minRows, requireCheaper }` lowers the
// size from which the vector graph is built (tests/e2e/vector-graph.test.mjs). Absent: the defaults.
function vectorIndexOptions() {
  try { return JSON.parse(localStorage.getItem("llm-wiki.vectorIndex") || "null") ?? undefined; } catch { return undefined; }
}

// After vectors change (open, compile, embedding, import): build the vector graph in a worker if
// one is due. Never awaited: the UI does not wait, and search is exact meanwhile.
function keepVectorIndex() {
  const wiki = state.wiki;
  rebuildVectorIndex(wiki, (fn) => withWriteLock(wiki.name, fn)).then((r) => {
    if (r) console.info("vector graph", r);
  });
}

// ---------------------------------------------------------------- tabs

function showTab(tab) {
  if (tab === "settings") settingsEdited = false;
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
    case "graph": await renderGraphTab(); break;
    case "index": $("#index-md").textContent = await state.wiki.index(); break;
    case "log": await renderLog(); break;
    case "schema": $("#schema-md").value = await state.wiki.schema(); break;
    case "settings": await renderSettings(); break;
    case "ask": await renderSessions(); break;
    case "lint": break;
  }
  await renderStorage();
}

// ---------------------------------------------------------------- sources

async function renderSources() {
  const sources = await state.wiki.sources();
  // Sources holding instruction-like text get a badge (compiled as data all the same).
  const flagged = new Map((await state.wiki.sourceFlags()).map((f) => [f.key, f.instructionLike]));
  const tbody = $("#sources-table tbody");
  tbody.replaceChildren(...sources.map((s) => {
    const tr = document.createElement("tr");
    const title = document.createElement("a");
    title.href = "#"; title.textContent = s.title;
    title.addEventListener("click", (e) => { e.preventDefault(); viewSource(s.key).catch(showError); });
    const titleCell = document.createElement("span"); titleCell.append(title);
    if (flagged.has(s.key)) {
      const badge = document.createElement("span");
      badge.className = "badge warn"; badge.dataset.testid = "instruction-like";
      badge.textContent = t("instructionLike");
      badge.title = t("instructionLikeHint", flagged.get(s.key));
      titleCell.append(" ", badge);
    }
    const remove = document.createElement("button");
    remove.className = "danger"; remove.textContent = t("remove"); remove.dataset.testid = "remove-source";
    remove.addEventListener("click", () => removeSource(s).catch(showError));
    const cells = [titleCell, s.key, t(s.status.state) + (s.status.reason ? `: ${s.status.reason}` : ""), formatTime(s.addedAt), remove];
    for (const c of cells) {
      const td = document.createElement("td");
      if (c instanceof Node) td.append(c); else td.textContent = c;
      tr.append(td);
    }
    tr.dataset.key = s.key;
    return tr;
  }));
  state.sourceCount = sources.length;
  rememberWiki(state.wiki.name, { sources: sources.length });
  $("#sources-empty").hidden = sources.length > 0;
  $("#sources-table").hidden = sources.length === 0;
  await renderRecompileOffer();
}

/**
 * Sources whose pages the offline compiler wrote (their summary page still carries the `offline`
 * tag), with the number of offline pages in all. An LLM recompile rewrites the summary page and
 * clears the tag (issue #10).
 */
async function offlineCompiled() {
  const graph = await state.wiki.graph();
  const offline = graph.nodes.filter((n) => n.tags.includes("offline"));
  const sources = [...new Set(offline.filter((n) => n.kind === "source").flatMap((n) => n.sources))].sort();
  return { sources, pages: offline.length };
}

/**
 * With an endpoint configured and pages compiled offline, offers to recompile their sources: the
 * cost estimate first, then `compile({ force: true, sources })`. Human edits are kept (or the
 * update held as a proposal) by the compile itself (Decision 5).
 */
async function renderRecompileOffer() {
  const box = $("#recompile-offer");
  const config = await state.wiki.config();
  const { sources, pages } = config.provider === "offline" ? { sources: [], pages: 0 } : await offlineCompiled();
  const dismissed = sessionStorage.getItem(`llm-wiki.recompile-dismissed.${state.wiki.name}`) === sources.join("\n");
  if (!sources.length || dismissed || state.compileController) { box.hidden = true; return; }
  const model = config.compile && config.compile.model ? config.compile.model : config.model;
  box.dataset.sources = JSON.stringify(sources);
  $("#recompile-text").textContent = t("recompileOffer", pages, sources.length, model);
  if (box.hidden || box.dataset.shown !== sources.join("\n")) {
    $("#recompile-estimate").hidden = true;
    $("#recompile-go").hidden = true;
    $("#recompile-estimate-btn").hidden = false;
  }
  box.dataset.shown = sources.join("\n");
  box.hidden = false;
}

async function estimateRecompile() {
  const sources = JSON.parse($("#recompile-offer").dataset.sources || "[]");
  const estimate = await state.wiki.estimate({ force: true, sources });
  const el = $("#recompile-estimate");
  el.textContent = t("recompileCost", estimate.total, estimate.sources.length);
  el.hidden = false;
  $("#recompile-estimate-btn").hidden = true;
  $("#recompile-go").hidden = false;
}

/**
 * Removes a source after asking: its summary page and claims go (and the lines citing them); other
 * pages stay, without it in their sources; links to its summary page become plain text.
 */
async function removeSource(s) {
  if (!confirm(t("confirmRemoveSource", s.title))) return;
  const r = await write(() => state.wiki.removeSource(s.key));
  setStatus(t("sourceRemoved", s.title, r.updated.length, r.claimsRemoved.length));
  $("#source-view").hidden = true;
  await refresh();
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

async function addSource({ title, key, mime, content, original, originalMime }) {
  const url = /^https?:\/\//.test(key || "") ? key : undefined;
  if (mime === "text/html") {
    // Decision 2: HTML becomes markdown here, in JS; the original HTML is kept as the raw artifact.
    const converted = htmlToMarkdown(content, { url });
    for (const w of converted.warnings) setStatus(t("convertWarning", converted.title, w), "error");
    original = new TextEncoder().encode(content);
    originalMime = "text/html";
    title = title || converted.title;
    content = converted.markdown;
    mime = "text/markdown";
  }
  const report = await write(() => state.wiki.addSource({
    title: title || undefined, key: key || undefined, mime, content, url,
    original, originalMime: original ? originalMime : undefined,
    capturedAt: Date.now(),
  }));
  const shown = title || report.key;
  // The list first, then the message: whoever reads "Added" finds the row there.
  await renderSources();
  setStatus(report.outcome === "added" ? t("sourceAdded", shown)
    : report.outcome === "unchanged" ? t("sourceUnchanged", shown) : t("sourceCorrected", shown));
  return report;
}

async function addFiles(files) {
  for (const f of files) {
    if (/\.pdf$/i.test(f.name) || f.type === "application/pdf") {
      await addPdf(f);
      continue;
    }
    const mime = /\.(md|markdown)$/i.test(f.name) ? "text/markdown"
      : /\.html?$/i.test(f.name) ? "text/html" : "text/plain";
    await addSource({ title: "", key: `file:${f.name}`, mime, content: await f.text() });
  }
  await refresh();
}

/**
 * A PDF becomes a source: its text (pdf.js, pages joined by a blank line) as `text/plain`, the PDF
 * bytes kept as the raw artifact (Decision 2). A PDF without a text layer (a scan) is refused with
 * a message: there is no OCR.
 */
async function addPdf(file) {
  setStatus(t("readingPdf", file.name));
  const bytes = new Uint8Array(await file.arrayBuffer());
  const { pdfToText } = await import("./build/pdf.js");
  let pdf;
  try {
    pdf = await pdfToText(bytes);
  } catch (e) {
    setStatus(t("pdfFailed", file.name, e && e.message ? e.message : String(e)), "error");
    return;
  }
  if (!pdf.text.trim()) { setStatus(t("pdfNoText", file.name), "error"); return; }
  await addSource({
    title: pdf.title || file.name.replace(/\.pdf$/i, ""), key: `file:${file.name}`, mime: "text/plain",
    content: pdf.text, original: bytes, originalMime: "application/pdf",
  });
}

// ---------------------------------------------------------------- compile

async function compile(options = {}) {
  const controller = new AbortController();
  state.compileController = controller;
  $("#compile").disabled = true;
  $("#compile-cancel").hidden = false;
  const progress = $("#compile-progress");
  try {
    const bar = $("#compile-bar");
    bar.hidden = false; bar.value = 0;
    let total = 1, index = 0;
    const report = await write(() => state.wiki.compile({
      ...options,
      signal: controller.signal,
      onProgress: (p) => {
        if (p.stage === "source") {
          total = p.total; index = p.index;
          progress.textContent = t("compiling", p.index + 1, p.total, p.key);
        } else if (p.stage === "integrated") {
          progress.textContent = `${t("compiling", index + 1, total, p.key)} · ${p.done}/${p.total} ${p.page}`;
        }
        bar.value = (index + (p.stage === "committed" || p.stage === "failed" ? 1 : p.stage === "integrated" ? p.done / (p.total + 1) : 0)) / total;
      },
    }), { embed: false });
    bar.hidden = true;
    const pages = report.compiled.reduce((n, r) => n + r.created.length + r.updated.length, 0);
    // The list shows the new statuses before the message says the compile is done.
    await refresh();
    setStatus(report.compiled.length + report.failed.length === 0 ? t("nothingToCompile")
      : `${t("compileDone", report.compiled.length, report.failed.length, pages)} ${report.usage.calls ? t("usage", report.usage) : ""}`,
      report.failed.length ? "error" : "info");
    progress.textContent = "";
    if (report.compiled.length) await embedNewPages(controller.signal);
    if (report.compiled.length) keepVectorIndex();
  } catch (e) {
    if (e && e.code === "CANCELLED") setStatus(t("cancelled"), "error"); else showError(e);
    progress.textContent = "";
  } finally {
    $("#compile").disabled = false;
    $("#compile-cancel").hidden = true;
    state.compileController = null;
    await refresh();
  }
}

// An embedding endpoint embeds new or changed pages after a compile or any other change (the
// built-in offline embedding does it in the commit itself). A failure leaves search on BM25 for those pages; it is reported, not fatal.
async function embedNewPages(signal) {
  const status = await state.wiki.embeddingStatus();
  const wanted = (status.state === "ready" && status.missing > 0)
    || (status.state === "noVectors" && (await state.wiki.pages()).length > 0);
  if (!wanted) return;
  const progress = $("#compile-progress");
  try {
    await write(() => state.wiki.embedPages({
      signal, onProgress: (p) => { progress.textContent = t("embedding", p.done, p.total); },
    }), { embed: false });
  } catch (e) {
    if (!(e && e.code === "CANCELLED")) setStatus(`${$("#status").textContent} ${t("embeddingFailed", e.message)}`, "error");
  } finally {
    progress.textContent = "";
  }
}

// ---------------------------------------------------------------- pages

async function renderPages() {
  const pages = await state.wiki.pages();
  $("#pages-list").replaceChildren(...pages.map((p) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `#/page/${encodeURIComponent(p.key)}`; a.textContent = p.title;
    const kind = document.createElement("span"); kind.className = "kind"; kind.textContent = p.kind;
    const summary = document.createElement("span"); summary.className = "summary"; summary.textContent = p.summary;
    li.append(a, " ", kind, " ", summary);
    return li;
  }));
  $("#pages-empty").hidden = pages.length > 0;
}

async function viewPage(key) {
  const view = await state.wiki.pageView(key);
  const article = $("#page-view");
  if (!view) { article.hidden = true; return; }
  const p = view.page;
  state.viewing = p;
  $("#pv-title").textContent = p.title;
  $("#pv-meta").textContent = `${p.kind} · ${t("revision")} ${p.revision} · ${formatTime(p.updated)}${p.tags.length ? " · #" + p.tags.join(" #") : ""}`;
  // The core's renderer returns sanitised HTML (no raw HTML, handlers or script URLs; nothing fetched).
  const body = $("#pv-body");
  body.innerHTML = view.html;
  for (const a of body.querySelectorAll("a.wikilink")) {
    if (a.classList.contains("missing")) a.title = t("missingLink");
  }
  for (const img of body.querySelectorAll("img[data-asset]")) loadAsset(img);
  await showProposal(p.key);
  const backlinks = $("#pv-backlinks");
  backlinks.replaceChildren(...view.backlinks.map((b) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = `#/page/${encodeURIComponent(b.key)}`; a.textContent = b.title;
    li.append(a);
    return li;
  }));
  if (!view.backlinks.length) {
    const li = document.createElement("li"); li.className = "empty"; li.textContent = t("noBacklinks");
    backlinks.append(li);
  }
  const history = await state.wiki.history(p.key);
  $("#pv-history").replaceChildren(...history.map((r) => {
    const li = document.createElement("li");
    li.dataset.testid = "revision";
    const show = document.createElement("a");
    show.href = "#"; show.textContent = r.diff ? t("showDiff", r.added, r.removed) : t("noChange");
    show.addEventListener("click", (e) => {
      e.preventDefault();
      showDiff($("#pv-revision"), r.diff);
    });
    li.append(`${t("revision")} ${r.number} · ${t("by")} ${r.author} · op ${r.op} · ${formatTime(r.time)} `, show);
    if (r.number !== p.revision && r.pageState) {
      const back = document.createElement("a");
      back.href = "#"; back.textContent = t("revert");
      back.addEventListener("click", async (e) => {
        e.preventDefault();
        try { await write(() => state.wiki.revert(p.key, r.number)); setStatus(t("reverted", r.number)); await viewPage(p.key); } catch (err) { showError(err); }
      });
      li.append(" · ", back);
    }
    const undo = document.createElement("a");
    undo.href = "#"; undo.textContent = t("rollbackOp", r.op); undo.dataset.testid = "rollback-op";
    undo.addEventListener("click", async (e) => {
      e.preventDefault();
      if (await rollbackOperation(r.op)) await viewPage(p.key).catch(() => showTab("pages"));
    });
    li.append(" · ", undo);
    return li;
  }));
  $("#pv-revision").hidden = true;
  $("#page-editor").hidden = true;
  article.hidden = false;
}

// A compile's update held because it would drop the user's paragraphs (Decision 5).
async function showProposal(key) {
  const box = $("#pv-proposal");
  const proposal = (await state.wiki.proposals()).find((x) => x.key === key);
  box.hidden = !proposal;
  if (!proposal) return;
  // A stale proposal (the page changed since) can only be discarded.
  $("#pv-proposal-accept").hidden = proposal.stale;
  box.querySelector("p").textContent = t(proposal.stale ? "proposalStale" : "proposalHeld");
  $("#pv-proposal-dropped").replaceChildren(...proposal.dropped.map((text) => {
    const li = document.createElement("li"); li.textContent = text; return li;
  }));
  const pre = $("#pv-proposal-body");
  pre.textContent = proposal.proposed.body; pre.hidden = true;
  $("#pv-proposal-show").onclick = () => { pre.hidden = !pre.hidden; };
  $("#pv-proposal-accept").onclick = async () => {
    try { await write(() => state.wiki.acceptProposal(key)); setStatus(t("proposalAccepted")); await viewPage(key); } catch (err) { showError(err); }
  };
  $("#pv-proposal-reject").onclick = async () => {
    try { await write(() => state.wiki.rejectProposal(key)); setStatus(t("proposalRejected")); await viewPage(key); } catch (err) { showError(err); }
  };
}

async function loadAsset(img) {
  const bytes = await state.wiki.asset(img.dataset.asset);
  if (!bytes) return;
  img.src = URL.createObjectURL(new Blob([bytes], { type: img.dataset.mime || "application/octet-stream" }));
}

function route() {
  if (!state.wiki) return;
  const tab = location.hash.match(/^#\/(sources|pages|graph|ask|lint|index|log|schema|settings)$/);
  if (tab) { showTab(tab[1]); return; }
  const m = location.hash.match(/^#\/page\/(.+)$/);
  if (!m) return;
  if (state.tab !== "pages") showTab("pages");
  viewPage(decodeURIComponent(m[1])).catch(showError);
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

// ---------------------------------------------------------------- graph

/** The graph of pages and links (Cytoscape.js, loaded on first use). Click a node to open it. */
async function renderGraphTab() {
  // data-nodes / data-edges / data-layout-ms describe the drawn graph: cleared until it is redrawn.
  for (const a of ["data-nodes", "data-edges", "data-layout-ms"]) $("#graph").removeAttribute(a);
  const [{ renderGraph, KIND_COLOURS }, graph] = await Promise.all([import("./build/graph.js"), state.wiki.graph()]);
  if (state.tab !== "graph") return;
  const container = $("#graph");
  $("#graph-empty").hidden = graph.nodes.length > 0;
  container.hidden = graph.nodes.length === 0;
  $("#graph-summary").textContent = t("graphSummary", graph.nodes.length, graph.edges.length);
  const kinds = [...new Set(graph.nodes.map((n) => n.kind))].sort();
  $("#graph-legend").replaceChildren(...kinds.map((k) => {
    const li = document.createElement("li");
    const dot = document.createElement("span"); dot.className = "dot"; dot.style.background = KIND_COLOURS[k] || "#667";
    li.append(dot, k);
    return li;
  }));
  const started = performance.now();
  const cy = renderGraph(container, graph, {
    onOpen: (key) => { location.hash = `#/page/${encodeURIComponent(key)}`; },
  });
  container.dataset.nodes = String(cy.nodes().length);
  container.dataset.edges = String(cy.edges().length);
  container.dataset.layoutMs = String(Math.round(performance.now() - started));
}

// ---------------------------------------------------------------- search

let searchSeq = 0;
async function runSearch(text) {
  const list = $("#search-results");
  const seq = ++searchSeq;
  if (!text.trim()) { list.hidden = true; return; }
  // Hybrid with the built-in embedding (local, instant); with an endpoint's embeddings, BM25:
  // one endpoint call per keystroke would make the box wait on the network.
  const offline = ((await state.wiki.config()).embeddings || {}).provider === "offline";
  if (seq !== searchSeq) return;
  const mode = offline ? "hybrid" : "bm25";
  const [results, pages] = await Promise.all([state.wiki.search(text, { k: 8, mode }), state.wiki.pages()]);
  if (seq !== searchSeq) return; // a newer query is on its way
  const titles = new Map(pages.map((p) => [p.key, p]));
  list.replaceChildren(...results.hits.map((h) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    const p = titles.get(h.key);
    a.href = `#/page/${encodeURIComponent(h.key)}`;
    a.textContent = p ? p.title : h.key;
    const kind = document.createElement("span"); kind.className = "kind"; kind.textContent = p ? p.kind : "";
    li.append(a, " ", kind);
    return li;
  }));
  if (!results.hits.length) {
    const li = document.createElement("li"); li.className = "empty"; li.textContent = t("noResults"); list.append(li);
  }
  list.hidden = false;
}

// ---------------------------------------------------------------- ask

function sessionsKey() { return `llm-wiki.sessions.${state.wiki.name}`; }
function loadSessions() {
  try { return JSON.parse(localStorage.getItem(sessionsKey()) || "[]"); } catch { return []; }
}
function saveSessions(list) {
  localStorage.setItem(sessionsKey(), JSON.stringify(list.slice(0, 50)));
}

/** Safe HTML for markdown of an answer (or of the app's own text): the core's page renderer. */
async function answerHtml(markdown) {
  return (await state.wiki.renderMarkdown(markdown)).html;
}

function renderSessions() {
  const sessions = loadSessions();
  $("#sessions").replaceChildren(...sessions.map((s) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.href = "#"; a.textContent = s.title;
    a.addEventListener("click", (e) => { e.preventDefault(); state.session = s.id; renderConversation().catch(showError); });
    if (s.id === state.session) li.className = "active";
    li.append(a);
    return li;
  }));
  return renderConversation();
}

function currentSession() {
  return loadSessions().find((s) => s.id === state.session);
}

let conversationShown = 0; // the latest render: an older one still rendering is dropped

async function renderConversation() {
  const mine = ++conversationShown;
  const session = currentSession();
  const turns = [];
  for (const [i, turn] of (session ? session.turns : []).entries()) turns.push(await turnElement(turn, i));
  if (mine === conversationShown) $("#conversation").replaceChildren(...turns);
}

async function turnElement(turn, index) {
  const div = document.createElement("div");
  div.className = "turn";
  const q = document.createElement("p"); q.className = "question"; q.textContent = turn.question;
  // An answer that rests on no page of the wiki (`grounded: false`) is marked as such.
  const ungrounded = turn.grounded === false;
  const a = document.createElement("div"); a.className = `answer markdown${ungrounded ? " ungrounded" : ""}`; a.innerHTML = await answerHtml(turn.answer);
  if (ungrounded) a.dataset.testid = "answer-ungrounded";
  div.append(q, a);
  const meta = document.createElement("p"); meta.className = "meta";
  const bits = [];
  if (ungrounded) bits.push(t(turn.declined ? "declinedNote" : "ungroundedNote"));
  if (turn.extractive) bits.push(t("extractiveNote"));
  if (turn.removed) bits.push(t("removedCitations", turn.removed));
  if (turn.usage && turn.usage.calls) bits.push(t("usage", turn.usage));
  meta.textContent = bits.join(" · ");
  div.append(meta);
  if (turn.saved) {
    const s = document.createElement("p"); s.className = "meta"; s.innerHTML = await answerHtml(t("savedAs", turn.saved)); div.append(s);
  } else if (!ungrounded && turn.citations && turn.citations.length) {
    const b = document.createElement("button"); b.textContent = t("saveToWiki"); b.dataset.testid = "save-answer";
    b.addEventListener("click", async () => {
      try {
        const page = await write(() => state.wiki.saveAnswer(turn.question, turn.raw));
        updateTurn(index, { saved: page.key });
        await renderConversation();
      } catch (e) { showError(e); }
    });
    div.append(b);
  }
  return div;
}

function updateTurn(index, patch) {
  const sessions = loadSessions();
  const s = sessions.find((x) => x.id === state.session);
  Object.assign(s.turns[index], patch);
  s.updated = Date.now();
  saveSessions(sessions);
}

async function ask(question) {
  let sessions = loadSessions();
  let session = sessions.find((s) => s.id === state.session);
  if (!session) {
    session = { id: `s${Date.now()}`, title: question.slice(0, 60), turns: [], updated: Date.now() };
    sessions.unshift(session);
    state.session = session.id;
  }
  const history = session.turns.slice(-6).map((x) => ({ question: x.question, answer: x.answer }));
  const box = $("#conversation");
  const live = document.createElement("div"); live.className = "turn";
  const q = document.createElement("p"); q.className = "question"; q.textContent = question;
  const a = document.createElement("div"); a.className = "answer streaming";
  live.append(q, a);
  box.append(live);
  const controller = new AbortController();
  state.askController = controller;
  $("#ask-cancel").hidden = false;
  let streamed = "";
  try {
    const writeBack = $("#ask-writeback").checked;
    const call = () => state.wiki.ask(question, {
      history, writeBack, signal: controller.signal,
      onToken: (t) => { streamed += t; a.textContent = streamed; },
    });
    // A question without write-back writes no wiki content: it runs beside another tab's
    // compile instead of waiting minutes for its lock. What it may store — the endpoint's
    // structured-output mode, a cache written with an optimistic check — loses nothing but
    // that cache entry if it races another writer.
    const answer = writeBack ? await write(call) : await call();
    session.turns.push({
      question, answer: answer.answer, citations: answer.citations, removed: answer.removedCitations.length,
      extractive: answer.extractive, usage: answer.usage, saved: answer.saved || null, raw: answer,
      grounded: answer.grounded, declined: answer.declined,
    });
    session.updated = Date.now();
    sessions = [session, ...sessions.filter((s) => s.id !== session.id)];
    saveSessions(sessions);
    await renderSessions();
  } catch (e) {
    live.remove();
    if (!(e && e.code === "CANCELLED")) showError(e);
  } finally {
    $("#ask-cancel").hidden = true;
  }
}

// ---------------------------------------------------------------- history and log

/** Shows a unified diff in `pre`, one span per line (added, removed, hunk header). */
function showDiff(pre, diff) {
  pre.replaceChildren(...diff.split("\n").map((line) => {
    const span = document.createElement("span");
    span.className = line.startsWith("+") && !line.startsWith("+++") ? "diff-add"
      : line.startsWith("-") && !line.startsWith("---") ? "diff-del"
      : line.startsWith("@@") ? "diff-hunk" : "";
    span.textContent = line + "\n";
    return span;
  }));
  pre.dataset.testid = "revision-diff";
  pre.hidden = false;
}

/** Previews a rollback, asks, and rolls back. Resolves true when it was done. */
async function rollbackOperation(opId) {
  try {
    const plan = await state.wiki.rollbackPreview(opId);
    const ops = plan.operations.map((o) => `  op ${o.id} ${o.kind}: ${o.summary}`).join("\n");
    const pages = plan.pages.map((p) => `  ${t("rollbackAction_" + p.action)} ${p.title || p.key}`).join("\n");
    if (!confirm(t("rollbackConfirm", ops, pages, plan.sources.length, plan.claims))) return false;
    const report = await write(() => state.wiki.rollback(opId));
    setStatus(t("rolledBack", plan.operations.length, report.operation.id));
    return true;
  } catch (err) { showError(err); return false; }
}

async function renderLog() {
  const ops = await state.wiki.operations();
  $("#ops-list").replaceChildren(...ops.slice().reverse().map((o) => {
    const li = document.createElement("li");
    li.dataset.testid = "operation";
    li.append(`op ${o.id} · ${o.kind} · ${formatTime(o.time)} · ${o.summary} `);
    if (o.rolledBackBy) {
      const s = document.createElement("span"); s.className = "rolled-back"; s.textContent = t("rolledBackBy", o.rolledBackBy);
      li.append(s);
    } else {
      const b = document.createElement("button"); b.textContent = t("rollback"); b.dataset.testid = "rollback";
      b.addEventListener("click", async () => { if (await rollbackOperation(o.id)) await renderLog(); });
      li.append(b);
    }
    return li;
  }));
  $("#log-md").textContent = await state.wiki.log();
}

// ---------------------------------------------------------------- lint

/** The LLM checks: the token estimate first, then (if the user agrees) one call per page group. */
async function runLlmLint() {
  const estimate = await state.wiki.lintEstimate();
  if (!estimate.groups.length) { setStatus(t("lintLlmNothing")); return; }
  if (!confirm(t("lintLlmConfirm", estimate.groups.length, estimate.total))) return;
  setStatus(t("lintLlmRunning"));
  await runLint({ llm: true });
  setStatus(t("lintLlmDone"));
}

async function runLint(options) {
  // The LLM checks write (their findings, what the endpoint accepts): under the write lock.
  const findings = options && options.llm ? await write(() => state.wiki.lint(options)) : await state.wiki.lint(options);
  const count = (s) => findings.filter((f) => f.severity === s).length;
  $("#lint-summary").textContent = findings.length ? t("lintSummary", count("error"), count("warning"), count("info")) : t("lintClean");
  $("#lint-findings").replaceChildren(...findings.map((f) => {
    const li = document.createElement("li");
    li.className = `finding ${f.severity}`;
    li.dataset.kind = f.kind;
    const badge = document.createElement("span"); badge.className = "kind"; badge.textContent = f.kind;
    li.append(badge, " ");
    if (f.page) {
      const a = document.createElement("a"); a.href = `#/page/${encodeURIComponent(f.page)}`; a.textContent = f.page;
      li.append(a, ": ");
    }
    li.append(f.message);
    if (f.fix) {
      const b = document.createElement("button"); b.textContent = t("fix"); b.dataset.testid = "apply-fix";
      b.addEventListener("click", async () => {
        try {
          const options = {};
          if (f.fix.action === "resolveContradiction") {
            const note = prompt(t("askNote"));
            if (note === null) return;
            options.note = note;
          }
          await write(() => state.wiki.applyFix(f.id, options));
          setStatus(t("fixed"));
          await runLint();
        } catch (e) { showError(e); }
      });
      li.append(" ", b);
    }
    return li;
  }));
}

// ---------------------------------------------------------------- settings

// The settings form holds edits not yet saved: a refresh (another tab changed the wiki) must not
// overwrite what the user is typing. Cleared when the form is saved, the tab is opened again,
// another wiki is opened or a vault is imported.
let settingsEdited = false;

// Fills the settings form from the stored settings, unless it holds edits. The form's data
// attributes count renders in flight (`pending`), forms filled (`rendered`) and edits kept
// (`kept`): the e2e tests wait on them.
async function renderSettings() {
  const form = $("#settings-form");
  const bump = (name, by = 1) => { form.dataset[name] = String(Number(form.dataset[name] || 0) + by); };
  bump("pending");
  try {
    const presets = Wiki.presets();
    const view = await state.wiki.config();
    state.presets = presets;
    // What the form does not show (per-operation caps, budgets) is taken from here on save:
    // kept current even while the form holds edits.
    state.config = view;
    // Checked after the read: a key pressed meanwhile is an edit too.
    if (settingsEdited) {
      bump("kept");
    } else {
      const c = view; // ConfigView: the Config fields flattened, plus hasApiKey
      const select = $("#cfg-preset");
      select.replaceChildren(...presets.map((p) => {
        const o = document.createElement("option");
        o.value = p.id; o.textContent = p.label; o.selected = p.id === (c.preset || c.provider);
        return o;
      }));
      fillConfig(c, view.hasApiKey, view.embeddingsHasApiKey);
      bump("rendered");
    }
    // F06: a local Ollama refuses origins it does not list; this is the exact value for this app
    // (for the extension, chrome-extension://<its id>).
    $("#cfg-origins").textContent = `OLLAMA_ORIGINS=${location.origin}`;
    await renderEmbeddingStatus();
  } catch (err) {
    bump("failed"); // the caller shows the error
    throw err;
  } finally {
    bump("pending", -1);
  }
}

// Where the configured embedding stands, and the action it needs: embed the pages that lack a
// vector, or — after a change of model — re-embed them all (the old vectors serve meanwhile).
async function renderEmbeddingStatus() {
  const s = await state.wiki.embeddingStatus();
  const button = $("#cfg-emb-run");
  const text = {
    ready: () => t("embReady", s.missing), noVectors: () => t("embNone"),
    reembedding: () => t("embReembedding", s.done, s.total), reembedRequired: () => t("embRequired", s.storedModel, s.storedDim),
  }[s.state]();
  $("#cfg-emb-status").textContent = text;
  const confirm = s.state === "reembedRequired" || s.state === "reembedding";
  button.hidden = !(confirm || s.state === "noVectors" || (s.state === "ready" && s.missing > 0));
  button.textContent = t(confirm ? "embReembed" : "embEmbed");
  button.onclick = async () => {
    button.disabled = true;
    try {
      const r = await write(() => state.wiki.embedPages({
        confirm, onProgress: (p) => { $("#cfg-emb-status").textContent = t("embedding", p.done, p.total); },
      }), { embed: false });
      setStatus(t("embDone", r.embedded, r.model));
      keepVectorIndex();
    } catch (err) { showError(err); } finally { button.disabled = false; await renderEmbeddingStatus(); }
  };
}

const PURPOSES = ["compile", "query", "lint"];

function fillConfig(c, hasKey, embeddingsHasKey) {
  $("#cfg-base-url").value = c.baseUrl || "";
  $("#cfg-model").value = c.model || "";
  $("#cfg-api-key").value = "";
  $("#cfg-api-key").placeholder = hasKey ? t("keyStored") : "";
  $("#cfg-context").value = c.contextWindow || "";
  $("#cfg-max-output").value = c.maxOutputTokens || "";
  for (const p of PURPOSES) $(`#cfg-model-${p}`).value = (c[p] && c[p].model) || "";
  const e = c.embeddings || {};
  $("#cfg-emb-provider").value = e.provider || "offline";
  $("#cfg-emb-model").value = e.model || "";
  $("#cfg-emb-url").value = e.baseUrl || "";
  $("#cfg-emb-key").value = "";
  $("#cfg-emb-key").placeholder = embeddingsHasKey ? t("keyStored") : t("embKeyPlaceholder");
  const preset = (state.presets || []).find((p) => p.id === $("#cfg-preset").value);
  $("#cfg-preset-notes").textContent = preset ? preset.notes : "";
}

function configFromForm() {
  const preset = state.presets.find((p) => p.id === $("#cfg-preset").value);
  const c = { ...(preset ? preset.config : {}), preset: preset ? preset.id : undefined };
  c.baseUrl = $("#cfg-base-url").value.trim() || c.baseUrl;
  c.model = $("#cfg-model").value.trim() || c.model;
  const key = $("#cfg-api-key").value;
  if (key) c.apiKey = key;
  const ctx = Number($("#cfg-context").value); if (ctx) c.contextWindow = ctx;
  const out = Number($("#cfg-max-output").value); if (out) c.maxOutputTokens = out;
  // Model per operation: the other per-operation settings (output cap, budget) stay as stored.
  const stored = state.config || {};
  for (const p of PURPOSES) {
    const model = $(`#cfg-model-${p}`).value.trim();
    c[p] = { ...(stored[p] || {}), model: model || undefined };
  }
  const embeddings = { ...(stored.embeddings || {}), ...(c.embeddings || {}) };
  embeddings.provider = $("#cfg-emb-provider").value;
  embeddings.model = $("#cfg-emb-model").value.trim();
  embeddings.baseUrl = $("#cfg-emb-url").value.trim() || undefined;
  const embKey = $("#cfg-emb-key").value;
  if (embKey) embeddings.apiKey = embKey;
  c.embeddings = embeddings;
  return c;
}

async function testConnection() {
  const list = $("#cfg-report");
  list.replaceChildren();
  const report = await state.wiki.testConnection({ config: configFromForm() });
  for (const check of report.checks) {
    const li = document.createElement("li");
    li.className = check.status;
    li.textContent = `${check.name}: ${check.status}${check.code ? " [" + check.code + "]" : ""} — ${check.detail}`;
    list.append(li);
  }
  if (report.origin && report.checks.some((c) => c.code === "LLM_ORIGIN_NOT_ALLOWED")) {
    const li = document.createElement("li"); li.className = "failed"; li.textContent = t("originHint", report.origin);
    list.append(li);
  }
  if (report.models && report.models.length) {
    $("#cfg-models").replaceChildren(...report.models.map((m) => { const o = document.createElement("option"); o.value = m; return o; }));
  }
}

// ---------------------------------------------------------------- vault

async function exportVault() {
  const bytes = await state.wiki.exportVault();
  const name = `${state.wiki.name}-${new Date().toISOString().slice(0, 10)}.zip`;
  const a = document.createElement("a");
  a.href = URL.createObjectURL(new Blob([bytes], { type: "application/zip" }));
  a.download = name;
  document.body.append(a); a.click(); a.remove();
  localStorage.setItem(`llm-wiki.exported.${state.wiki.name}`, String(Date.now()));
  setStatus(t("exported", name));
  await renderStorage();
}

async function importVault(file) {
  // The eviction notice's Import switches to the cleared wiki while the file chooser is open:
  // the import goes into that wiki, once it is open.
  await state.opening;
  const bytes = new Uint8Array(await file.arrayBuffer());
  const report = await write(() => state.wiki.importVault(bytes));
  forgetWiki(state.wiki.name); // restored: what it holds now is what the app knows of it
  renderEvictionNotice();
  setStatus(t("imported", report));
  settingsEdited = false; // the imported settings replace any edit
  await refresh();
  keepVectorIndex();
}

// ---------------------------------------------------------------- storage

async function renderStorage() {
  const info = await state.wiki.storageInfo();
  const last = Number(localStorage.getItem(`llm-wiki.exported.${state.wiki.name}`) || 0);
  const pages = (await state.wiki.pages()).length;
  rememberWiki(state.wiki.name, { pages });
  const reminder = $("#backup-reminder");
  reminder.hidden = !(pages > 0 && Date.now() - last > 7 * 24 * 3600 * 1000);
  reminder.textContent = t("backupReminder");
  const inMemory = info.backend === "memory";
  const banner = $("#memory-banner");
  banner.hidden = !inMemory;
  banner.textContent = inMemory ? t("memoryOnly") : "";
  $("#storage-info").textContent = inMemory
    ? t("storageMemory")
    : `${t("storage", formatBytes(info.usage), formatBytes(info.quota))} · ${info.persisted ? t("persisted") : t("notPersisted")}`;
}

/**
 * Asks for persistent storage when the wiki's first source is being added (issue #21): called
 * synchronously from the drop, click or submit handler, before any await, while the user's
 * gesture is still active (it has expired after the conversion's awaits). The footer shows the
 * answer; a refusal is not an error here.
 */
function persistOnFirstSource() {
  if (state.sourceCount !== 0 || !navigator.storage || !navigator.storage.persist) return;
  navigator.storage.persist().then(() => renderStorage()).catch(() => {});
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
      forgetWiki(name);
      const rest = (await Wiki.list()).filter((n) => n !== name);
      await openWiki(rest[0] || "default");
    } catch (e) { showError(e); }
  });
  $("#add-source").addEventListener("submit", async (e) => {
    e.preventDefault();
    persistOnFirstSource();
    const content = $("#source-content").value;
    if (!content.trim()) { setStatus(t("emptyContent"), "error"); return; }
    try {
      await addSource({ title: $("#source-title").value.trim(), key: $("#source-key").value.trim(), mime: $("#source-mime").value, content });
      $("#source-content").value = ""; $("#source-title").value = ""; $("#source-key").value = "";
      await refresh();
    } catch (err) { showError(err); }
  });
  // The click that opens the file chooser carries the gesture; the change after it may not.
  $("#source-files").addEventListener("click", () => persistOnFirstSource());
  $("#source-files").addEventListener("change", (e) => { persistOnFirstSource(); addFiles([...e.target.files]).catch(showError); });
  const drop = $("#source-content");
  drop.addEventListener("dragover", (e) => e.preventDefault());
  drop.addEventListener("drop", (e) => {
    if (e.dataTransfer && e.dataTransfer.files.length) {
      e.preventDefault();
      persistOnFirstSource();
      addFiles([...e.dataTransfer.files]).catch(showError);
    }
  });
  $("#eviction-import").addEventListener("click", () => {
    const name = $("#eviction-notice").dataset.wiki;
    // The file chooser needs this click's gesture: open it first, then switch to the wiki.
    $("#vault-import").click();
    if (name && state.wiki && name !== state.wiki.name) {
      state.opening = openWiki(name).catch(showError);
    }
  });
  $("#eviction-dismiss").addEventListener("click", () => {
    forgetWiki($("#eviction-notice").dataset.wiki);
    renderEvictionNotice();
    refresh().catch(showError);
  });
  $("#compile").addEventListener("click", () => compile().catch(showError));
  $("#recompile-estimate-btn").addEventListener("click", () => estimateRecompile().catch(showError));
  $("#recompile-go").addEventListener("click", () => {
    const sources = JSON.parse($("#recompile-offer").dataset.sources || "[]");
    $("#recompile-offer").hidden = true;
    compile({ force: true, sources }).catch(showError);
  });
  $("#recompile-dismiss").addEventListener("click", () => {
    const sources = JSON.parse($("#recompile-offer").dataset.sources || "[]");
    sessionStorage.setItem(`llm-wiki.recompile-dismissed.${state.wiki.name}`, sources.join("\n"));
    $("#recompile-offer").hidden = true;
  });
  $("#graph-fit").addEventListener("click", () => $("#graph").cy?.fit(undefined, 20));
  $("#compile-cancel").addEventListener("click", () => state.compileController?.abort());
  $("#page-new").addEventListener("click", () => openEditor(null));
  $("#page-cancel").addEventListener("click", () => { $("#page-editor").hidden = true; });
  $("#page-editor").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const p = state.editing;
      const saved = await write(() => state.wiki.putPage({
        key: p ? p.key : undefined, baseRevision: p ? p.revision : undefined,
        title: $("#page-title").value, kind: $("#page-kind").value,
        summary: $("#page-summary").value, body: $("#page-body").value,
      }));
      $("#page-editor").hidden = true;
      setStatus(t("pageSaved", saved.title));
      await renderPages();
      await viewPage(saved.key);
    } catch (err) { showError(err); }
  });
  $("#cfg-preset").addEventListener("change", () => {
    const preset = state.presets.find((p) => p.id === $("#cfg-preset").value);
    if (preset) fillConfig(preset.config, false, false);
  });
  for (const kind of ["input", "change"]) $("#settings-form").addEventListener(kind, () => { settingsEdited = true; });
  $("#settings-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await write(() => state.wiki.setConfig(configFromForm()));
      setStatus(t("settingsSaved"));
      settingsEdited = false;
      await renderSettings();
    } catch (err) { showError(err); }
  });
  $("#cfg-test").addEventListener("click", () => testConnection().catch(showError));
  $("#pv-edit").addEventListener("click", () => openEditor(state.viewing));
  $("#pv-rename").addEventListener("click", async () => {
    const p = state.viewing; const title = prompt(t("askNewTitle"), p.title);
    if (!title || title === p.title) return;
    try { const r = await write(() => state.wiki.renamePage(p.key, title)); setStatus(t("pageRenamed", title)); await renderPages(); location.hash = `#/page/${encodeURIComponent(r.page.key)}`; route(); } catch (e) { showError(e); }
  });
  $("#pv-delete").addEventListener("click", async () => {
    const p = state.viewing;
    if (!confirm(t("confirmDeletePage", p.title))) return;
    try { await write(() => state.wiki.deletePage(p.key)); setStatus(t("pageDeleted", p.title)); $("#page-view").hidden = true; await renderPages(); } catch (e) { showError(e); }
  });
  $("#vault-export").addEventListener("click", () => exportVault().catch(showError));
  let searchTimer;
  $("#search").addEventListener("input", (e) => {
    clearTimeout(searchTimer);
    searchTimer = setTimeout(() => runSearch(e.target.value).catch(showError), 120);
  });
  $("#search-results").addEventListener("click", () => { $("#search-results").hidden = true; });
  $("#ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const question = $("#question").value.trim();
    if (!question) return;
    $("#question").value = "";
    ask(question).catch(showError);
  });
  $("#ask-cancel").addEventListener("click", () => state.askController?.abort());
  $("#session-new").addEventListener("click", () => { state.session = null; renderSessions().catch(showError); });
  $("#lint-run").addEventListener("click", () => runLint().catch(showError));
  $("#lint-llm").addEventListener("click", () => runLlmLint().catch(showError));
  $("#vault-import").addEventListener("change", (e) => { if (e.target.files[0]) importVault(e.target.files[0]).catch(showError); });
  window.addEventListener("hashchange", route);
  $("#schema-save").addEventListener("click", async () => {
    try { await write(() => state.wiki.setSchema($("#schema-md").value)); setStatus(t("schemaSaved")); } catch (e) { showError(e); }
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
  route();
}

main().catch(showError);

// An offline app shell: the site keeps working without a network once loaded.
// (Not in the extension: its files are packaged, and its own service worker is background.js.)
if ("serviceWorker" in navigator && /^https?:$/.test(location.protocol)) {
  navigator.serviceWorker.register("./sw.js").catch(() => {});
}
