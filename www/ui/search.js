// The search box: hits as the user types (hybrid with the built-in embedding, BM25 with an
// endpoint's), each a link to its page; then, in their own group, the sources' passages that
// match, each a link that opens the source at that passage.
import { showError } from "../status.js";
import { $, h, pageLink, sourceLink } from "./dom.js";
import { app, t } from "./session.js";

let seq = 0;

async function runSearch(text) {
  const list = $("#search-results");
  const mine = ++seq;
  if (!text.trim()) { list.hidden = true; return; }
  // Hybrid with the built-in embedding (local, instant); with an endpoint's embeddings, BM25:
  // one endpoint call per keystroke would make the box wait on the network.
  const offline = ((await app.wiki.config()).embeddings || {}).provider === "offline";
  if (mine !== seq) return;
  const mode = offline ? "hybrid" : "bm25";
  const [results, pages, sources] = await Promise.all([
    app.wiki.search(text, { k: 8, mode, passages: true }), app.wiki.pages(), app.wiki.sources(),
  ]);
  if (mine !== seq) return; // a newer query is on its way
  const titles = new Map(pages.map((p) => [p.key, p]));
  const sourceTitles = new Map(sources.map((s) => [s.key, s.title]));
  const pageHits = results.hits.filter((hit) => hit.kind !== "passage");
  const passageHits = results.hits.filter((hit) => hit.kind === "passage");
  list.replaceChildren(...pageHits.map((hit) => {
    const p = titles.get(hit.key);
    return h("li", {}, pageLink(hit.key, p ? p.title : hit.key), " ", h("span", { className: "kind" }, p ? p.kind : ""));
  }));
  if (!pageHits.length) list.append(h("li", { className: "empty" }, t("noResults")));
  if (passageHits.length) {
    list.append(h("li", { className: "group", dataset: { testid: "search-sources" } }, t("fromSources")));
    for (const hit of passageHits) {
      const title = sourceTitles.get(hit.source) || hit.source;
      list.append(h("li", { className: "passage" },
        sourceLink(hit.source, hit.version, hit.lines, title),
        hit.heading ? h("span", { className: "kind" }, ` ${hit.heading}`) : null,
        h("span", { className: "kind" }, ` ${t("linesRange", hit.lines[0], hit.lines[1])}`)));
    }
  }
  list.hidden = false;
}

export function wireSearch() {
  let timer;
  $("#search").addEventListener("input", (e) => {
    clearTimeout(timer);
    timer = setTimeout(() => runSearch(e.target.value).catch(showError), 120);
  });
  $("#search-results").addEventListener("click", () => { $("#search-results").hidden = true; });
}
