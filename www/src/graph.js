// The graph view: pages as nodes (coloured by kind, sized by links), wikilinks as edges, drawn with
// Cytoscape.js (canvas; bundled by scripts/build.sh into www/build/graph.js, loaded on first use).
// The data comes from the core's `wiki.graph()`: { nodes: [{ key, title, kind, tags }], edges: [{ from, to }] }.
import cytoscape from "cytoscape";

/** Colour per page kind (the legend uses the same). */
export const KIND_COLOURS = {
  source: "#7a869a",
  entity: "#2b59c3",
  concept: "#1b7f3b",
  comparison: "#9a5b00",
  overview: "#8e3ab8",
  analysis: "#b3261e",
};

const FONT = 'system-ui, -apple-system, "PingFang SC", "Noto Sans CJK SC", "WenQuanYi Zen Hei", "Microsoft YaHei", sans-serif';

/**
 * Draws `graph` into `container` and returns the Cytoscape instance (also kept as `container.cy`).
 * `onOpen(key)` runs when a node is clicked or tapped. Labels show when zoomed in enough to read
 * them, so a few hundred pages stay legible and fast.
 */
export function renderGraph(container, graph, { onOpen }) {
  if (container.cy) container.cy.destroy();
  const keys = new Set(graph.nodes.map((n) => n.key));
  const degree = new Map();
  for (const e of graph.edges) {
    degree.set(e.from, (degree.get(e.from) || 0) + 1);
    degree.set(e.to, (degree.get(e.to) || 0) + 1);
  }
  const elements = [
    ...graph.nodes.map((n) => ({
      group: "nodes",
      data: {
        id: n.key, label: n.title, kind: n.kind, degree: degree.get(n.key) || 0,
        colour: KIND_COLOURS[n.kind] || "#667",
      },
      classes: n.tags.includes("offline") ? "offline" : "",
    })),
    ...graph.edges.filter((e) => keys.has(e.from) && keys.has(e.to)).map((e) => ({
      group: "edges", data: { id: `${e.from}\u0000${e.to}`, source: e.from, target: e.to },
    })),
  ];
  const n = graph.nodes.length;
  const cy = cytoscape({
    container,
    elements,
    layout: { name: "preset" }, // positions come from the cose run below
    minZoom: 0.05,
    maxZoom: 4,
    wheelSensitivity: 0.3,
    textureOnViewport: n > 150,
    hideEdgesOnViewport: n > 150,
    style: [
      {
        selector: "node",
        style: {
          "background-color": "data(colour)",
          label: "data(label)",
          "font-family": FONT,
          "font-size": 11,
          color: "#1d1f23",
          "text-valign": "bottom",
          "text-margin-y": 3,
          "text-wrap": "ellipsis",
          "text-max-width": "140px",
          "min-zoomed-font-size": 7,
          width: "mapData(degree, 0, 20, 10, 34)",
          height: "mapData(degree, 0, 20, 10, 34)",
        },
      },
      { selector: "node.offline", style: { "border-width": 2, "border-style": "dashed", "border-color": "#9a5b00" } },
      {
        selector: "edge",
        style: {
          width: 1, "line-color": "#c4c8d4", "curve-style": "haystack", "haystack-radius": 0, opacity: 0.8,
        },
      },
      { selector: ".faded", style: { opacity: 0.15 } },
      { selector: "node.focus", style: { "border-width": 3, "border-color": "#1d1f23", "border-style": "solid", "z-index": 10 } },
      { selector: "edge.focus", style: { "line-color": "#2b59c3", width: 2, opacity: 1 } },
    ],
  });
  // cose is force-directed and fine up to a few hundred nodes; its iteration count shrinks as the
  // graph grows so the layout stays within seconds. Without animation it runs to the end here.
  if (n > 0) {
    cy.layout({
      name: "cose", animate: false, randomize: true, fit: true, padding: 20,
      numIter: n > 200 ? 250 : n > 100 ? 500 : 1000,
      nodeRepulsion: () => 400_000, idealEdgeLength: () => 80, edgeElasticity: () => 100, componentSpacing: 60,
      nodeDimensionsIncludeLabels: n <= 100,
    }).run();
    // A small graph fitted to the view would be blown up: keep it at about natural size.
    if (cy.zoom() > 1.2) { cy.zoom(1.2); cy.center(); }
  }
  cy.on("tap", "node", (e) => onOpen(e.target.id()));
  cy.on("mouseover", "node", (e) => {
    const hood = e.target.closedNeighborhood();
    cy.elements().not(hood).addClass("faded");
    hood.addClass("focus");
    container.style.cursor = "pointer";
  });
  cy.on("mouseout", "node", () => {
    cy.elements().removeClass("faded focus");
    container.style.cursor = "";
  });
  container.cy = cy;
  return cy;
}
