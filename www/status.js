// The status line of the app and of the extension's popup (both pages have a `#status` element):
// one message at a time, with a kind (`info` | `error`) as its class. Shared by www/app.js and
// www/extension/popup.js (scripts/build-extension.sh copies it into the extension).

/** Shows `message` in `#status`; `kind` becomes its class. */
export function setStatus(message, kind = "info") {
  const el = document.querySelector("#status");
  el.textContent = message;
  el.className = kind;
}

/** Shows an error (`[CODE] message` for the wiki's errors) in `#status`, and logs it. */
export function showError(e) {
  console.error(e);
  setStatus((e && e.code ? `[${e.code}] ` : "") + (e && e.message ? e.message : String(e)), "error");
}
