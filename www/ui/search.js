// The search box: hits as the user types (hybrid with the built-in embedding, BM25 with an
// endpoint's), each a link to its page.
import { showError } from "../status.js";
import { $, h, pageLink } from "./dom.js";
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
  const [results, pages] = await Promise.all([app.wiki.search(text, { k: 8, mode }), app.wiki.pages()]);
  if (mine !== seq) return; // a newer query is on its way
  const titles = new Map(pages.map((p) => [p.key, p]));
  list.replaceChildren(...results.hits.map((hit) => {
    const p = titles.get(hit.key);
    return h("li", {}, pageLink(hit.key, p ? p.title : hit.key), " ", h("span", { className: "kind" }, p ? p.kind : ""));
  }));
  if (!results.hits.length) list.append(h("li", { className: "empty" }, t("noResults")));
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
