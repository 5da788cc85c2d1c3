// Writing to the wiki: every change runs under the wiki's Web Lock (Decision 9), and the indexes
// follow it — endpoint embeddings for the pages it wrote, then the vector graph when one is due.
import { withWriteLock } from "../writer.js";
import { setStatus } from "../status.js";
import { rebuildVectorIndex } from "../vector-index.js";
import { $ } from "./dom.js";
import { app, t } from "./session.js";
import { syncFolder } from "./folder.js";

/**
 * Runs a change to the wiki while holding the wiki's Web Lock, so one tab (or the extension's
 * popup and background) writes at a time (Decision 9); then tells the other pages to refresh.
 */
export function write(fn, { embed = true } = {}) {
  const run = withWriteLock(app.wiki.name, fn, { onWait: () => setStatus(t("waitingForOtherTab")) });
  // Pages a change wrote get their endpoint embeddings right after it (issue #6: the indexes
  // follow every commit; the offline embedding is already in the commit itself).
  // The folder mirror (if any) follows every change too (issue #24).
  const mirrored = run.then((r) => { syncFolder(); return r; });
  return embed ? mirrored.then((r) => { queueEmbedding(); return r; }) : mirrored;
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

// An embedding endpoint embeds new or changed pages after a compile or any other change (the
// built-in offline embedding does it in the commit itself). A failure leaves search on BM25 for those pages; it is reported, not fatal.
export async function embedNewPages(signal) {
  const status = await app.wiki.embeddingStatus();
  const wanted = (status.state === "ready" && status.missing > 0)
    || (status.state === "noVectors" && (await app.wiki.pages()).length > 0);
  if (!wanted) return;
  const progress = $("#compile-progress");
  try {
    await write(() => app.wiki.embedPages({
      signal, onProgress: (p) => { progress.textContent = t("embedding", p.done, p.total); },
    }), { embed: false });
  } catch (e) {
    if (!(e && e.code === "CANCELLED")) setStatus(`${$("#status").textContent} ${t("embeddingFailed", e.message)}`, "error");
  } finally {
    progress.textContent = "";
  }
}

// After vectors change (open, compile, embedding, import): build the vector graph in a worker if
// one is due. Never awaited: the UI does not wait, and search is exact meanwhile.
export function keepVectorIndex() {
  const wiki = app.wiki;
  rebuildVectorIndex(wiki, (fn) => withWriteLock(wiki.name, fn)).then((r) => {
    if (r) console.info("vector graph", r);
  });
}
