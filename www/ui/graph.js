// The Graph tab: the pages and their links (Cytoscape.js, loaded on first use); a click on a
// node opens its page.
import { $, h } from "./dom.js";
import { clearGraph, describeGraph } from "./hooks.js";
import { app, t } from "./session.js";

export async function renderGraphTab() {
  // The container's description of the drawn graph is cleared until it is redrawn.
  clearGraph($("#graph"));
  const [{ renderGraph, KIND_COLOURS }, graph] = await Promise.all([import("../build/graph.js"), app.wiki.graph()]);
  if (app.tab !== "graph") return;
  const container = $("#graph");
  $("#graph-empty").hidden = graph.nodes.length > 0;
  container.hidden = graph.nodes.length === 0;
  $("#graph-summary").textContent = t("graphSummary", graph.nodes.length, graph.edges.length);
  const kinds = [...new Set(graph.nodes.map((n) => n.kind))].sort();
  $("#graph-legend").replaceChildren(...kinds.map((k) => h("li", {}, h("span", { className: "dot", style: `background: ${KIND_COLOURS[k] || "#667"}` }), k)));
  const started = performance.now();
  const cy = renderGraph(container, graph, {
    onOpen: (key) => { location.hash = `#/page/${encodeURIComponent(key)}`; },
  });
  describeGraph(container, cy, performance.now() - started);
}

export function wireGraph() {
  $("#graph-fit").addEventListener("click", () => $("#graph").cy?.fit(undefined, 20));
}
