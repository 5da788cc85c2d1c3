// Every test hook of the app in one place: what the e2e tests (tests/e2e/) wait on or set, and
// nothing the product reads for itself. Each hook is a data attribute or a localStorage entry.

/** Marks `el` (default: the body) ready: `data-ready="true"`. */
export function markReady(el = document.body) {
  el.dataset.ready = "true";
}

/** Adds `by` to the counter `data-<name>` of `el` (the settings form counts its renders). */
export function bump(el, name, by = 1) {
  el.dataset[name] = String(Number(el.dataset[name] || 0) + by);
}

/** Counts one more finished action of the extension's popup (`body[data-done]`). */
export const actionDone = () => bump(document.body, "done");

/** Clears the drawn graph's description (`data-nodes`, `data-edges`, `data-layout-ms`). */
export function clearGraph(container) {
  for (const a of ["data-nodes", "data-edges", "data-layout-ms"]) container.removeAttribute(a);
}

/** Describes a drawn graph on its container: node and edge counts, layout time. */
export function describeGraph(container, cy, ms) {
  container.dataset.nodes = String(cy.nodes().length);
  container.dataset.edges = String(cy.edges().length);
  container.dataset.layoutMs = String(Math.round(ms));
}

/**
 * `localStorage["llm-wiki.vectorIndex"]` = JSON `{ minRows, requireCheaper }` lowers the size
 * from which the vector graph is built (tests/e2e/vector-graph.test.mjs). Absent: the defaults.
 */
export function vectorIndexOptions() {
  try { return JSON.parse(localStorage.getItem("llm-wiki.vectorIndex") || "null") ?? undefined; } catch { return undefined; }
}
