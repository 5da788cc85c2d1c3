// The Pages tab: the list, a page rendered by the core (sanitised HTML, backlinks, attachments
// loaded on demand), its held compile proposal (Decision 5), its history with diffs, reverts and
// rollbacks, and the editor (a human edit is a revision, Decision 5).
import { setStatus, showError } from "../status.js";
import { $, h, pageLink } from "./dom.js";
import { app, t, formatTime } from "./session.js";
import { write } from "./writing.js";
import { showDiff, rollbackOperation } from "./log.js";
import { resolveConflict, syncFolder } from "./folder.js";

let viewing = null; // the page shown
let awaited; // a page asked for that is not here (yet): shown when it arrives
let editing = null; // the page in the editor, null for a new one
let nav = { route: () => {}, showTab: () => {} };

export async function renderPages() {
  const pages = await app.wiki.pages();
  $("#pages-list").replaceChildren(...pages.map((p) => h("li", {},
    pageLink(p.key, p.title), " ", h("span", { className: "kind" }, p.kind), " ", h("span", { className: "summary" }, p.summary))));
  $("#pages-empty").hidden = pages.length > 0;
  await refreshShownPage();
}

/**
 * The page on screen, again when it changed since it was drawn (an edit that came in from the
 * folder or another tab), and what waits beside it. Left as it is while its editor is open or
 * a merge is being written.
 */
async function refreshShownPage() {
  // A page asked for before it existed here (a link followed before a device's change
  // arrived): shown once it is there.
  if (awaited && $("#page-view").hidden && location.hash === `#/page/${encodeURIComponent(awaited)}`) {
    if (await app.wiki.page(awaited)) await viewPage(awaited);
    return;
  }
  if (!viewing || $("#page-view").hidden || !$("#page-editor").hidden || !$("#pv-conflict-text").hidden) return;
  const now = await app.wiki.page(viewing.key);
  if (!now || now.revision !== viewing.revision) await viewPage(viewing.key);
  else await showProposal(viewing.key);
}

/** A history link: `text`, running `fn` on click. */
const action = (text, fn, testid) => h("a", { href: "#", dataset: testid ? { testid } : undefined, onclick: (e) => { e.preventDefault(); fn(); } }, text);

export async function viewPage(key) {
  awaited = undefined;
  const view = await app.wiki.pageView(key);
  const article = $("#page-view");
  if (!view) { await viewGone(key); return; }
  const p = view.page;
  viewing = p;
  $("#pv-actions").hidden = false;
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
  backlinks.replaceChildren(...view.backlinks.map((b) => h("li", {}, pageLink(b.key, b.title))));
  if (!view.backlinks.length) backlinks.append(h("li", { className: "empty" }, t("noBacklinks")));
  const history = await app.wiki.history(p.key);
  $("#pv-history").replaceChildren(...history.map((r) => {
    const li = h("li", { dataset: { testid: "revision" } },
      `${t("revision")} ${r.number} · ${t("by")} ${r.author} · op ${r.op} · ${formatTime(r.time)} `,
      action(r.diff ? t("showDiff", r.added, r.removed) : t("noChange"), () => showDiff($("#pv-revision"), r.diff)));
    if (r.number !== p.revision && r.pageState) {
      li.append(" · ", action(t("revert"), async () => {
        try { await write(() => app.wiki.revert(p.key, r.number)); setStatus(t("reverted", r.number)); await viewPage(p.key); } catch (err) { showError(err); }
      }));
    }
    li.append(" · ", action(t("rollbackOp", r.op), async () => {
      if (await rollbackOperation(r.op)) await viewPage(p.key).catch(() => nav.showTab("pages"));
    }, "rollback-op"));
    return li;
  }));
  $("#pv-revision").hidden = true;
  $("#page-editor").hidden = true;
  article.hidden = false;
}

/**
 * A page that is not there, deleted on another device while this one edited it (the deletion
 * came later): its conflict, to leave it deleted or bring the edit back. Nothing else waits
 * for a page that is not there.
 */
async function viewGone(key) {
  const article = $("#page-view");
  const conflict = (await app.wiki.mirrorConflicts().catch(() => []))
    .find((c) => c.key === key && c.device && c.theirs);
  if (!conflict) { article.hidden = true; awaited = key; return; }
  viewing = { key, revision: undefined };
  $("#pv-title").textContent = key;
  $("#pv-meta").textContent = t("conflictDeletedMeta");
  $("#pv-actions").hidden = true;
  $("#pv-proposal").hidden = true;
  $("#pv-body").replaceChildren();
  $("#pv-backlinks").replaceChildren();
  $("#pv-history").replaceChildren();
  $("#pv-revision").hidden = true;
  $("#page-editor").hidden = true;
  showConflict(conflict);
  article.hidden = false;
}

// What waits beside the page: a compile's update held because it would drop the user's
// paragraphs (Decision 5), or a conflict with the folder's file (never stale).
async function showProposal(key) {
  const waiting = (await app.wiki.proposals()).filter((x) => x.key === key);
  showConflict(waiting.find((x) => x.kind === "conflict"));
  const box = $("#pv-proposal");
  const proposal = waiting.find((x) => x.kind === "update");
  box.hidden = !proposal;
  if (!proposal) return;
  // A stale proposal (the page changed since) can only be discarded.
  $("#pv-proposal-accept").hidden = proposal.stale;
  box.querySelector("p").textContent = t(proposal.stale ? "proposalStale" : "proposalHeld");
  $("#pv-proposal-dropped").replaceChildren(...proposal.dropped.map((text) => h("li", {}, text)));
  const pre = $("#pv-proposal-body");
  pre.textContent = proposal.proposed.body; pre.hidden = true;
  $("#pv-proposal-show").onclick = () => { pre.hidden = !pre.hidden; };
  $("#pv-proposal-accept").onclick = async () => {
    try { await write(() => app.wiki.acceptProposal(key)); setStatus(t("proposalAccepted")); await viewPage(key); } catch (err) { showError(err); }
  };
  $("#pv-proposal-reject").onclick = async () => {
    try { await write(() => app.wiki.rejectProposal(key)); setStatus(t("proposalRejected")); await viewPage(key); } catch (err) { showError(err); }
  };
}

/** `text` ending with a line break. */
const lines = (text) => (text.endsWith("\n") ? text : `${text}\n`);

/** Sets the text of `el` to the interface string `key`, and keeps it on a language switch. */
function label(el, key) {
  el.dataset.i18n = key;
  el.textContent = t(key);
}

// The page changed both here and in the folder, or here and on another device: keep one side,
// or save a merge. The choice is made on the other version shown here; if a newer one came in
// meanwhile, the core refuses it and the box shows the newer one. A deletion on one device
// against an edit on the other: the edit was kept on every device, and the person keeps the
// page or deletes it (or, when the page is deleted since, leaves it so or brings the other
// version back).
function showConflict(conflict) {
  const box = $("#pv-conflict");
  box.hidden = !conflict;
  if (!conflict) return;
  const device = conflict.device;
  // The edit was kept over a deletion (`theirs` is empty), or the page is deleted since.
  const editKept = device && conflict.deleted && !conflict.theirs;
  const deletionKept = device && conflict.deleted && !!conflict.theirs;
  $("#pv-conflict-held").textContent = !device ? t("conflictHeld")
    : editKept ? t("conflictDeletedKept", device)
    : deletionKept ? t("conflictDeletedGone", device)
    : t("conflictDeviceHeld", device);
  // Left by a sync tool: which one, and where the other version is.
  const tool = $("#pv-conflict-tool");
  tool.hidden = !conflict.tool;
  tool.textContent = conflict.tool ? t("conflictTool", conflict.tool, conflict.copy) : "";
  const theirs = $("#pv-conflict-theirs-text");
  theirs.textContent = conflict.theirs; theirs.hidden = true;
  // The merge starts from both versions, marked as a version control tool marks them.
  const [here, there] = device ? [t("conflictThePage"), t("conflictTheOther")] : [t("conflictThisApp"), t("conflictTheFolder")];
  const merge = $("#pv-conflict-text");
  merge.value = conflict.mine === undefined ? conflict.theirs
    : `<<<<<<< ${here}\n${lines(conflict.mine)}=======\n${lines(conflict.theirs)}>>>>>>> ${there}\n`;
  merge.hidden = true;
  const show = $("#pv-conflict-show");
  const mine = $("#pv-conflict-mine");
  const take = $("#pv-conflict-theirs");
  const mergeButton = $("#pv-conflict-merge");
  label(show, device ? "conflictShowOther" : "conflictShow");
  label(mine, editKept ? "conflictKeepPage" : deletionKept ? "conflictLeaveDeleted" : device ? "conflictKeepShown" : "conflictMine");
  label(take, editKept ? "conflictDeleteIt" : deletionKept ? "conflictBringBack" : device ? "conflictTakeOther" : "conflictTheirs");
  label(mergeButton, "conflictMerge");
  // Nothing to show or merge against a deletion.
  show.hidden = !!editKept;
  mergeButton.hidden = editKept || deletionKept;
  take.classList.toggle("danger", !!editKept);
  const decide = async (choice) => {
    await resolveConflict(conflict.key, choice, conflict.theirs);
    await viewPage(conflict.key); // ended, or still there with what the folder holds now
  };
  show.onclick = () => { theirs.hidden = !theirs.hidden; };
  mine.onclick = () => decide({ keep: "mine" });
  // The other version is the deletion: the page is deleted, and the pull that follows ends
  // the conflict here and on the other devices.
  take.onclick = editKept
    ? async () => {
      if (!confirm(t("confirmDeletePage", conflict.key))) return;
      try {
        await write(() => app.wiki.deletePage(conflict.key));
        setStatus(t("pageDeleted", conflict.key));
        await syncFolder();
        await renderPages();
      } catch (err) { showError(err); }
    }
    : () => decide({ keep: "theirs" });
  mergeButton.onclick = () => {
    if (merge.hidden) { merge.hidden = false; label(mergeButton, "conflictSaveMerge"); return; }
    decide({ keep: "merge", text: merge.value });
  };
}

async function loadAsset(img) {
  const bytes = await app.wiki.asset(img.dataset.asset);
  if (!bytes) return;
  img.src = URL.createObjectURL(new Blob([bytes], { type: img.dataset.mime || "application/octet-stream" }));
}

function openEditor(page) {
  editing = page;
  $("#page-title").value = page ? page.title : "";
  $("#page-kind").value = page ? page.kind : "concept";
  $("#page-summary").value = page ? page.summary : "";
  $("#page-body").value = page ? page.body : "";
  $("#page-editor").hidden = false;
  $("#page-view").hidden = true;
}

/** Wires the tab; `route()` follows the address, `showTab(name)` opens a tab. */
export function wirePages(navigation) {
  nav = navigation;
  $("#page-new").addEventListener("click", () => openEditor(null));
  $("#page-cancel").addEventListener("click", () => { $("#page-editor").hidden = true; });
  $("#page-editor").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      const p = editing;
      const saved = await write(() => app.wiki.putPage({
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
  $("#pv-edit").addEventListener("click", () => openEditor(viewing));
  $("#pv-rename").addEventListener("click", async () => {
    const p = viewing; const title = prompt(t("askNewTitle"), p.title);
    if (!title || title === p.title) return;
    try { const r = await write(() => app.wiki.renamePage(p.key, title)); setStatus(t("pageRenamed", title)); await renderPages(); location.hash = `#/page/${encodeURIComponent(r.page.key)}`; nav.route(); } catch (e) { showError(e); }
  });
  $("#pv-delete").addEventListener("click", async () => {
    const p = viewing;
    if (!confirm(t("confirmDeletePage", p.title))) return;
    try { await write(() => app.wiki.deletePage(p.key)); setStatus(t("pageDeleted", p.title)); $("#page-view").hidden = true; await renderPages(); } catch (e) { showError(e); }
  });
}
