// The footer: where the wiki is kept and how full the origin is, persistence, the backup
// reminder, and the vault export and import (Decision 10).
import { setStatus, showError } from "../status.js";
import { $, formatBytes, h } from "./dom.js";
import { app, t } from "./session.js";
import { write, keepVectorIndex } from "./writing.js";
import { rememberWiki, forgetWiki, renderEvictionNotice, pendingOpen } from "./eviction.js";
import { settingsReplaced } from "./settings.js";

export async function renderStorage() {
  const info = await app.wiki.storageInfo();
  const last = Number(localStorage.getItem(`llm-wiki.exported.${app.wiki.name}`) || 0);
  const pages = (await app.wiki.pages()).length;
  rememberWiki(app.wiki.name, { pages });
  const reminder = $("#backup-reminder");
  reminder.hidden = !(pages > 0 && Date.now() - last > 7 * 24 * 3600 * 1000);
  reminder.textContent = t("backupReminder");
  const inMemory = info.backend === "memory";
  const banner = $("#memory-banner");
  banner.hidden = !inMemory;
  banner.textContent = inMemory ? t("memoryOnly") : "";
  $("#storage-info").textContent = inMemory
    ? t("storageMemory")
    : `${t("storage", formatBytes(info.usage), formatBytes(info.quota))} · ${info.persisted ? t("persisted") : t("notPersisted")}`;
}

async function exportVault() {
  const bytes = await app.wiki.exportVault();
  const name = `${app.wiki.name}-${new Date().toISOString().slice(0, 10)}.zip`;
  const a = h("a", { href: URL.createObjectURL(new Blob([bytes], { type: "application/zip" })), download: name });
  document.body.append(a); a.click(); a.remove();
  localStorage.setItem(`llm-wiki.exported.${app.wiki.name}`, String(Date.now()));
  setStatus(t("exported", name));
  await renderStorage();
}

async function importVault(file) {
  // The eviction notice's Import switches to the cleared wiki while the file chooser is open:
  // the import goes into that wiki, once it is open.
  await pendingOpen();
  const bytes = new Uint8Array(await file.arrayBuffer());
  const report = await write(() => app.wiki.importVault(bytes));
  forgetWiki(app.wiki.name); // restored: what it holds now is what the app knows of it
  renderEvictionNotice();
  setStatus(t("imported", report));
  settingsReplaced(); // the imported settings replace any edit
  await app.refresh();
  keepVectorIndex();
}

export function wireFooter() {
  $("#vault-export").addEventListener("click", () => exportVault().catch(showError));
  $("#vault-import").addEventListener("change", (e) => { if (e.target.files[0]) importVault(e.target.files[0]).catch(showError); });
  $("#persist").addEventListener("click", async () => {
    try {
      const ok = await app.wiki.persist();
      if (!ok) setStatus(t("persistDenied"), "error");
      await renderStorage();
    } catch (e) { showError(e); }
  });
}
