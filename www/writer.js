// One writer per wiki across every page of an origin (Decision 9): the app's tabs, the extension's
// popup and its background service worker all write under the same Web Lock, and tell each other
// over the same BroadcastChannel. Works in pages and in workers (no DOM).

const channel = "BroadcastChannel" in globalThis ? new BroadcastChannel("llm-wiki") : null;

/** The Web Lock name of a wiki. */
export const lockName = (wiki) => `llm-wiki/${wiki}`;

/**
 * Runs `fn` holding the wiki's write lock; `onWait()` is called first when another page holds it.
 * Afterwards (also on error) the other pages are told the wiki changed, unless `announce` is
 * false (a folder mirror run writes no page).
 */
export async function withWriteLock(wiki, fn, { onWait, announce: tell = true } = {}) {
  const run = async () => {
    try { return await fn(); } finally { if (tell) announce(wiki, "changed"); }
  };
  const locks = globalThis.navigator && navigator.locks;
  if (!locks) return run();
  return locks.request(lockName(wiki), { ifAvailable: true }, async (lock) => {
    if (lock) return run();
    onWait?.();
    return locks.request(lockName(wiki), run);
  });
}

/** Posts `{ wiki, kind, ...data }` to the other pages of this origin. */
export function announce(wiki, kind, data = {}) {
  channel?.postMessage({ ...data, wiki, kind });
}

/** Calls `fn(message)` for every message of the other pages; returns a function that stops it. */
export function listen(fn) {
  if (!channel) return () => {};
  const handler = (e) => { if (e.data && typeof e.data.wiki === "string") fn(e.data); };
  channel.addEventListener("message", handler);
  return () => channel.removeEventListener("message", handler);
}
