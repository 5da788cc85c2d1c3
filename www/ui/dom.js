// The app's element helper: `h(tag, props, ...children)` builds an element. Text children are
// text nodes and props are set as properties, so untrusted text never becomes HTML; the only
// HTML the app assigns is what the core's renderer returns (`pageView`, `renderMarkdown`).

/** The first element matching `sel`. */
export const $ = (sel) => document.querySelector(sel);

/**
 * A new `tag` element. `props`: `onclick`-style keys add listeners, `dataset` is merged into the
 * data attributes, other keys are set as properties when the element has one (`className`,
 * `href`, `textContent`, `hidden`…), else as attributes. Children: nodes and strings, in
 * order (arrays are flattened; `null`, `undefined` and `false` are skipped).
 */
export function h(tag, props = {}, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else if (k === "dataset") Object.assign(el.dataset, v);
    else if (k in el) el[k] = v;
    else el.setAttribute(k, v);
  }
  el.append(...children.flat().filter((c) => c != null && c !== false));
  return el;
}

/**
 * A click handler for an in-app link to `href`: when the address is already that one (the page
 * or passage on screen), following it again still shows it afresh.
 */
const followAgain = (href) => (e) => {
  if (location.hash !== href) return;
  e.preventDefault();
  window.dispatchEvent(new HashChangeEvent("hashchange"));
};

/** A link to page `key` in the app (`#/page/<key>`) showing `text`. */
export function pageLink(key, text) {
  const href = `#/page/${encodeURIComponent(key)}`;
  return h("a", { href, onclick: followAgain(href) }, text);
}

/** A link that opens source `key` at lines `[first, last]` of `version` (the Sources tab's view). */
export function sourceLink(key, version, lines, text) {
  const href = `#/source/${encodeURIComponent(key)}/${lines[0]}-${lines[1]}${version ? `/${version}` : ""}`;
  return h("a", { href, onclick: followAgain(href), dataset: { testid: "source-link" } }, text);
}

/** Bytes in B, KB, MB… (one decimal above bytes); `?` when unknown. */
export function formatBytes(n) {
  if (n == null) return "?";
  const units = ["B", "KB", "MB", "GB", "TB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n.toFixed(i ? 1 : 0)} ${units[i]}`;
}
