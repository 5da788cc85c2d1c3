// The Index and Schema tabs: index.md (the app writes it) and schema.md (the conventions the
// compiler follows; editing it steers the next compile).
import { setStatus, showError } from "../status.js";
import { $ } from "./dom.js";
import { app, t } from "./session.js";
import { write } from "./writing.js";

export async function renderIndex() { $("#index-md").textContent = await app.wiki.index(); }

export async function renderSchema() { $("#schema-md").value = await app.wiki.schema(); }

export function wireSchema() {
  $("#schema-save").addEventListener("click", async () => {
    try { await write(() => app.wiki.setSchema($("#schema-md").value)); setStatus(t("schemaSaved")); } catch (e) { showError(e); }
  });
}
