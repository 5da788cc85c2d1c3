// The browser may clear this origin's storage (eviction under storage pressure, "clear site
// data") while localStorage, or only it, survives (issue #21). The app remembers, per wiki it
// knew, how many sources and pages it last showed (`llm-wiki.known`); a wiki that had some and
// now opens empty, or is missing from the list of databases, was cleared: the notice says so,
// with the date of the last vault export, and offers the import.
import { Wiki } from "../pkg/llm_wiki.js";
import { showError } from "../status.js";
import { $ } from "./dom.js";
import { app, t, formatTime } from "./session.js";

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
export function rememberWiki(name, counts) {
  if (app.inMemory) return;
  const known = knownWikis();
  const entry = known[name] || { sources: 0, pages: 0 };
  if (entry.evicted) return; // what was lost stays on record until an import or a dismissal
  if (Object.entries(counts).every(([k, v]) => entry[k] === v)) return;
  known[name] = { ...entry, ...counts };
  saveKnown(known);
}

/** Forgets wiki `name` (deleted on purpose, or the user dismissed the notice). */
export function forgetWiki(name) {
  const known = knownWikis();
  delete known[name];
  saveKnown(known);
}

/**
 * Marks the wikis the app knew with content that are gone: the open one (`current`) when it is
 * empty now with no history, any other when its database is no longer listed. Then shows the
 * notice.
 */
export async function noticeEvictions(current) {
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
        gone = (await app.wiki.pages()).length === 0 && (await app.wiki.sources()).length === 0
          && (await app.wiki.operations()).length === 0;
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
export function renderEvictionNotice() {
  const box = $("#eviction-notice");
  const known = knownWikis();
  const current = app.wiki && app.wiki.name;
  const names = Object.keys(known).filter((n) => known[n].evicted).sort((a, b) => (a === current ? -1 : b === current ? 1 : a.localeCompare(b)));
  if (!names.length) { box.hidden = true; return; }
  const name = names[0];
  const lost = known[name].evicted;
  const exported = Number(localStorage.getItem(`llm-wiki.exported.${name}`) || 0);
  $("#eviction-text").textContent = t("evicted", name, lost.sources || 0, lost.pages || 0, exported ? formatTime(exported) : null);
  box.dataset.wiki = name;
  box.hidden = false;
}

let opening = null;

/** The opening of the wiki the notice's Import switched to, if any (an import waits for it). */
export const pendingOpen = () => opening;

/** Wires the notice's buttons; `openWiki(name)` opens another wiki. */
export function wireEviction(openWiki) {
  $("#eviction-import").addEventListener("click", () => {
    const name = $("#eviction-notice").dataset.wiki;
    // The file chooser needs this click's gesture: open it first, then switch to the wiki.
    $("#vault-import").click();
    if (name && app.wiki && name !== app.wiki.name) {
      opening = openWiki(name).catch(showError);
    }
  });
  $("#eviction-dismiss").addEventListener("click", () => {
    forgetWiki($("#eviction-notice").dataset.wiki);
    renderEvictionNotice();
    app.refresh().catch(showError);
  });
}
