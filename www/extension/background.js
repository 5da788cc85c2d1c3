// The extension's service worker: runs the compiles the popup asks for, so a compile goes on after
// the popup closes. It opens the same wiki (the extension's origin, Decision 9), writes only under
// the wiki's Web Lock, posts progress over the BroadcastChannel and tells the app's tabs to refresh.
import init, { Wiki } from "./app/pkg/llm_wiki.js";
import { translate } from "./app/i18n.js";
import { withWriteLock, announce } from "./app/writer.js";

let ready = null;
const wasm = () => (ready ??= init());

async function compile({ wiki: name, sources, lang }) {
  await wasm();
  const wiki = await Wiki.open(name);
  // An extension service worker stops after 30 s without extension events; a model call can take
  // longer than that, so an extension API call every 20 s keeps it alive while compiling.
  const keepAlive = setInterval(() => chrome.runtime.getPlatformInfo(), 20_000);
  try {
    return await withWriteLock(name, () => wiki.compile({
      sources,
      onProgress: (p) => {
        if (p.stage === "source") announce(name, "progress", { text: translate(lang, "compiling", p.index + 1, p.total, p.key) });
        else if (p.stage === "integrated") announce(name, "progress", { text: `${translate(lang, "compiling", 1, 1, p.key)} · ${p.done}/${p.total} ${p.page}` });
      },
    }));
  } finally {
    clearInterval(keepAlive);
    wiki.close();
  }
}

chrome.runtime.onMessage.addListener((message, sender, reply) => {
  if (!message || message.type !== "compile" || sender.id !== chrome.runtime.id) return false;
  compile(message).then(
    (report) => reply({ ok: true, report }),
    (e) => reply({ ok: false, error: { code: e && e.code, message: e && e.message ? e.message : String(e) } }),
  );
  return true; // the reply comes later
});
