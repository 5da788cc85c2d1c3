// Keeps a wiki's vector graph current without blocking the page: when `wiki.vectorRebuildJob()`
// has a job (enough vectors and no graph yet, or a large delta), the graph is built in a module
// Web Worker (www/hnsw-worker.js) and installed under the wiki's write lock. One rebuild at a
// time per page, and across pages of the origin (a Web Lock). Search stays correct meanwhile and
// if anything fails: the exact scan serves every vector the graph does not cover.

let running = null;
let pending = null;

/**
 * Rebuilds the vector graph of `wiki` if one is due; `write(fn)` runs `fn` under the wiki's write
 * lock (www/writer.js). Resolves to `null` when nothing was due, else `{ outcome: "installed" |
 * "stale", verdict, efSearch, recall, evaluations, rows, ms }`. Never rejects: failures are logged
 * (the exact scan keeps serving) and resolve to `null`. A call while a rebuild runs is folded
 * into one more check after it, for the wiki of the latest call (the app may have switched
 * wikis meanwhile); a "stale" install (the vectors were compacted or rebuilt during the build)
 * is retried, up to three builds per wiki.
 */
export function rebuildVectorIndex(wiki, write) {
  pending = { wiki, write };
  if (running) return running;
  running = (async () => {
    let last = null;
    try {
      let builds = 0;
      let current = null;
      while (pending) {
        const next = pending;
        pending = null;
        if (!current || next.wiki !== current.wiki) builds = 0;
        current = next;
        if (current.wiki.closed) continue;
        last = await once(current.wiki, current.write);
        if (last) builds++;
        if (last && last.outcome === "stale" && builds < 3 && !pending) pending = current;
      }
    } catch (e) {
      console.warn("vector graph rebuild failed; the exact scan keeps serving", e);
      last = null;
    } finally {
      running = null;
      pending = null;
    }
    return last;
  })();
  return running;
}

async function once(wiki, write) {
  const locks = globalThis.navigator && navigator.locks;
  const run = async () => {
    const job = await wiki.vectorRebuildJob();
    if (!job) return null;
    const started = performance.now();
    const built = await buildInWorker(job);
    const ms = Math.round(performance.now() - started);
    if (wiki.closed) return null;
    const outcome = await write(() => wiki.installVectorGraph(job.jobId, built.bytes ?? null));
    const { bytes, ...figures } = built;
    return { outcome, ...figures, ms };
  };
  if (!locks) return run();
  // Another page of this origin rebuilding the same wiki: leave it to that page.
  return locks.request(`llm-wiki/${wiki.name}/vector-graph`, { ifAvailable: true }, (lock) => (lock ? run() : null));
}

function buildInWorker(job) {
  return new Promise((resolve, reject) => {
    const worker = new Worker(new URL("./hnsw-worker.js", import.meta.url), { type: "module" });
    const done = (fn, value) => { worker.terminate(); fn(value); };
    worker.onmessage = (e) => (e.data && e.data.error ? done(reject, new Error(e.data.error)) : done(resolve, e.data));
    worker.onerror = (e) => { e.preventDefault?.(); done(reject, new Error(e.message || "the graph worker failed to start")); };
    worker.postMessage({ vectors: job.vectors, dim: job.dim, params: job.params, options: job.options }, [job.vectors.buffer]);
  });
}
