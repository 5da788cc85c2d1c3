// The one open wiki and what every tab needs of it: the `Wiki`, the interface language, the
// tab shown, `refresh()` and `openWiki()` (the shell's, set once by app.js). Each tab keeps its
// own state in its own module; this object holds only what they share.
import { translate, pickLanguage } from "../i18n.js";

export const app = {
  /** The open `Wiki`, or null while none is open. */
  wiki: null,
  /** The interface language, "en" or "zh". */
  lang: pickLanguage(),
  /** The tab shown. */
  tab: "sources",
  /** True when the open wiki is kept in memory (IndexedDB unusable here). */
  inMemory: false,
  /** Re-renders the tab shown and the footer (app.js sets it). */
  refresh: async () => {},
  /** Opens the wiki `name`, made on first use, as the one open (app.js sets it). */
  openWiki: async () => {},
};

/** The interface text `key` in the current language. */
export const t = (key, ...args) => translate(app.lang, key, ...args);

/** A time in the current language's format. */
export const formatTime = (ms) => new Date(ms).toLocaleString(app.lang === "zh" ? "zh-CN" : undefined);
