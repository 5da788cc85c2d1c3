// Interface strings, English and Chinese. Keys are used by data-i18n attributes and t().
export const strings = {
  en: {
    appName: "llm-wiki", wiki: "Wiki", newWiki: "New wiki", deleteWiki: "Delete wiki",
    sources: "Sources", pages: "Pages", index: "Index", log: "Log", schema: "Schema",
    addSource: "Add a source", titlePlaceholder: "Title (optional)", keyPlaceholder: "Key or URL (optional)",
    plainText: "Plain text", contentPlaceholder: "Paste markdown or text, or drop .md / .txt files here",
    add: "Add", chooseFiles: "Choose files…", title: "Title", key: "Key", status: "Status", added: "Added",
    noSources: "No sources yet.", newPage: "New page", noPages: "No pages yet. Compile sources, or write one.",
    summaryPlaceholder: "One-line summary", save: "Save", cancel: "Cancel", edit: "Edit", history: "History",
    schemaHelp: "schema.md holds the conventions the compiler follows. Editing it steers the next compile.",
    persist: "Keep data persistent", persisted: "persistent", notPersisted: "not persistent",
    storage: (u, q) => `Storage: ${u} of ${q} used`,
    askWikiName: "Name of the new wiki:", confirmDelete: (n) => `Delete the wiki "${n}" and everything in it?`,
    sourceAdded: (t) => `Added "${t}".`, sourceUnchanged: (t) => `"${t}" is unchanged: nothing to do.`,
    sourceCorrected: (t) => `"${t}" was corrected: a new version is pending compile.`,
    pending: "pending", compiled: "compiled", failed: "failed",
    pageSaved: (t) => `Saved "${t}".`, schemaSaved: "schema.md saved.",
    upgraded: "This wiki was upgraded or deleted in another tab. Reload this page.",
    revision: "revision", by: "by", emptyContent: "Paste some text or choose a file first.",
    persistDenied: "The browser did not grant persistent storage; export your vault regularly.",
    compile: "Compile", compiling: (i, n, key) => `Compiling ${i}/${n}: ${key}`,
    compileDone: (c, f, p) => `Compiled ${c} source(s), ${f} failed; ${p} page(s) written.`,
    nothingToCompile: "Nothing to compile: every source is compiled and unchanged.",
    cancelled: "Compile cancelled; sources compiled before stay.",
    convertWarning: (t, w) => `"${t}": ${w}`,
  },
  zh: {
    appName: "llm-wiki", wiki: "知识库", newWiki: "新建知识库", deleteWiki: "删除知识库",
    sources: "资料", pages: "页面", index: "索引", log: "日志", schema: "规范",
    addSource: "添加资料", titlePlaceholder: "标题（可选）", keyPlaceholder: "键或网址（可选）",
    plainText: "纯文本", contentPlaceholder: "粘贴 Markdown 或文本，或把 .md / .txt 文件拖到这里",
    add: "添加", chooseFiles: "选择文件…", title: "标题", key: "键", status: "状态", added: "添加时间",
    noSources: "还没有资料。", newPage: "新建页面", noPages: "还没有页面。编译资料，或自己写一页。",
    summaryPlaceholder: "一句话摘要", save: "保存", cancel: "取消", edit: "编辑", history: "历史",
    schemaHelp: "schema.md 记录编译时遵循的约定。修改它会影响下一次编译。",
    persist: "保持数据持久", persisted: "已持久化", notPersisted: "未持久化",
    storage: (u, q) => `存储：已用 ${u}，共 ${q}`,
    askWikiName: "新知识库的名称：", confirmDelete: (n) => `删除知识库“${n}”及其全部内容？`,
    sourceAdded: (t) => `已添加“${t}”。`, sourceUnchanged: (t) => `“${t}”没有变化，无需处理。`,
    sourceCorrected: (t) => `“${t}”已更正：新版本等待编译。`,
    pending: "待编译", compiled: "已编译", failed: "失败",
    pageSaved: (t) => `已保存“${t}”。`, schemaSaved: "schema.md 已保存。",
    upgraded: "此知识库已在另一个标签页中升级或删除，请重新加载本页。",
    revision: "修订", by: "作者", emptyContent: "请先粘贴文本或选择文件。",
    persistDenied: "浏览器未授予持久存储；请定期导出知识库。",
    compile: "编译", compiling: (i, n, key) => `正在编译 ${i}/${n}：${key}`,
    compileDone: (c, f, p) => `已编译 ${c} 个资料，失败 ${f} 个；写入 ${p} 个页面。`,
    nothingToCompile: "没有需要编译的资料：所有资料都已编译且未变化。",
    cancelled: "编译已取消；之前编译完成的资料保留。",
    convertWarning: (t, w) => `“${t}”：${w}`,
  },
};

export function pickLanguage() {
  const saved = localStorage.getItem("llm-wiki.lang");
  if (saved === "en" || saved === "zh") return saved;
  return (navigator.language || "en").toLowerCase().startsWith("zh") ? "zh" : "en";
}
