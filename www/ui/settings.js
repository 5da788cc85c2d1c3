// The Settings tab: the LLM endpoint, the model per operation, embeddings, the connection test
// and the exact OLLAMA_ORIGINS value for this app (field case F06).
import { Wiki } from "../pkg/llm_wiki.js";
import { setStatus, showError } from "../status.js";
import { $, h } from "./dom.js";
import { bump } from "./hooks.js";
import { app, t } from "./session.js";
import { write, keepVectorIndex } from "./writing.js";

const PURPOSES = ["compile", "query", "lint"];

// The form holds edits not yet saved: a refresh (another tab changed the wiki) must not
// overwrite what the user is typing. Cleared when the form is saved, the tab is opened again,
// another wiki is opened or a vault is imported.
let edited = false;
let presets = [];
// The stored settings: what the form does not show (per-operation caps, budgets) is taken from
// here on save, kept current even while the form holds edits.
let stored = {};

/** Forgets the form's unsaved edits: the next render fills it from the stored settings. */
export function settingsReplaced() { edited = false; }

// Fills the form from the stored settings, unless it holds edits. The form counts renders in
// flight (`pending`), forms filled (`rendered`), edits kept (`kept`) and failures: test hooks.
export async function renderSettings() {
  const form = $("#settings-form");
  bump(form, "pending");
  try {
    const list = Wiki.presets();
    const view = await app.wiki.config();
    presets = list;
    stored = view;
    // Checked after the read: a key pressed meanwhile is an edit too.
    if (edited) {
      bump(form, "kept");
    } else {
      const c = view; // ConfigView: the Config fields flattened, plus hasApiKey
      $("#cfg-preset").replaceChildren(...list.map((p) => h("option", { value: p.id, textContent: p.label, selected: p.id === (c.preset || c.provider) })));
      fillConfig(c, view.hasApiKey, view.embeddingsHasApiKey);
      bump(form, "rendered");
    }
    // F06: a local Ollama refuses origins it does not list; this is the exact value for this app
    // (for the extension, chrome-extension://<its id>).
    $("#cfg-origins").textContent = `OLLAMA_ORIGINS=${location.origin}`;
    await renderEmbeddingStatus();
  } catch (err) {
    bump(form, "failed"); // the caller shows the error
    throw err;
  } finally {
    bump(form, "pending", -1);
  }
}

// Where the configured embedding stands, and the action it needs: embed the pages that lack a
// vector, or — after a change of model — re-embed them all (the old vectors serve meanwhile).
async function renderEmbeddingStatus() {
  const s = await app.wiki.embeddingStatus();
  const button = $("#cfg-emb-run");
  const text = {
    ready: () => t("embReady", s.missing), noVectors: () => t("embNone"),
    reembedding: () => t("embReembedding", s.done, s.total), reembedRequired: () => t("embRequired", s.storedModel, s.storedDim),
  }[s.state]();
  $("#cfg-emb-status").textContent = text;
  const confirm = s.state === "reembedRequired" || s.state === "reembedding";
  button.hidden = !(confirm || s.state === "noVectors" || (s.state === "ready" && s.missing > 0));
  button.textContent = t(confirm ? "embReembed" : "embEmbed");
  button.onclick = async () => {
    button.disabled = true;
    try {
      const r = await write(() => app.wiki.embedPages({
        confirm, onProgress: (p) => { $("#cfg-emb-status").textContent = t("embedding", p.done, p.total); },
      }), { embed: false });
      setStatus(t("embDone", r.embedded, r.model));
      keepVectorIndex();
    } catch (err) { showError(err); } finally { button.disabled = false; await renderEmbeddingStatus(); }
  };
}

function fillConfig(c, hasKey, embeddingsHasKey) {
  $("#cfg-base-url").value = c.baseUrl || "";
  $("#cfg-model").value = c.model || "";
  $("#cfg-api-key").value = "";
  $("#cfg-api-key").placeholder = hasKey ? t("keyStored") : "";
  $("#cfg-context").value = c.contextWindow || "";
  $("#cfg-max-output").value = c.maxOutputTokens || "";
  $("#cfg-describe-images").checked = !!c.describeImages;
  for (const p of PURPOSES) $(`#cfg-model-${p}`).value = (c[p] && c[p].model) || "";
  const e = c.embeddings || {};
  $("#cfg-emb-provider").value = e.provider || "offline";
  $("#cfg-emb-model").value = e.model || "";
  $("#cfg-emb-url").value = e.baseUrl || "";
  $("#cfg-emb-key").value = "";
  $("#cfg-emb-key").placeholder = embeddingsHasKey ? t("keyStored") : t("embKeyPlaceholder");
  const preset = presets.find((p) => p.id === $("#cfg-preset").value);
  $("#cfg-preset-notes").textContent = preset ? preset.notes : "";
}

function configFromForm() {
  const preset = presets.find((p) => p.id === $("#cfg-preset").value);
  const c = { ...(preset ? preset.config : {}), preset: preset ? preset.id : undefined };
  c.baseUrl = $("#cfg-base-url").value.trim() || c.baseUrl;
  c.model = $("#cfg-model").value.trim() || c.model;
  const key = $("#cfg-api-key").value;
  if (key) c.apiKey = key;
  const ctx = Number($("#cfg-context").value); if (ctx) c.contextWindow = ctx;
  const out = Number($("#cfg-max-output").value); if (out) c.maxOutputTokens = out;
  c.describeImages = $("#cfg-describe-images").checked;
  // Model per operation: the other per-operation settings (output cap, budget) stay as stored.
  for (const p of PURPOSES) {
    const model = $(`#cfg-model-${p}`).value.trim();
    c[p] = { ...(stored[p] || {}), model: model || undefined };
  }
  const embeddings = { ...(stored.embeddings || {}), ...(c.embeddings || {}) };
  embeddings.provider = $("#cfg-emb-provider").value;
  embeddings.model = $("#cfg-emb-model").value.trim();
  embeddings.baseUrl = $("#cfg-emb-url").value.trim() || undefined;
  const embKey = $("#cfg-emb-key").value;
  if (embKey) embeddings.apiKey = embKey;
  c.embeddings = embeddings;
  return c;
}

async function testConnection() {
  const list = $("#cfg-report");
  list.replaceChildren();
  const report = await app.wiki.testConnection({ config: configFromForm() });
  for (const check of report.checks) {
    list.append(h("li", { className: check.status }, `${check.name}: ${check.status}${check.code ? " [" + check.code + "]" : ""} — ${check.detail}`));
  }
  if (report.origin && report.checks.some((c) => c.code === "LLM_ORIGIN_NOT_ALLOWED")) {
    list.append(h("li", { className: "failed" }, t("originHint", report.origin)));
  }
  if (report.models && report.models.length) {
    $("#cfg-models").replaceChildren(...report.models.map((m) => h("option", { value: m })));
  }
}

export function wireSettings() {
  $("#cfg-preset").addEventListener("change", () => {
    const preset = presets.find((p) => p.id === $("#cfg-preset").value);
    if (preset) fillConfig(preset.config, false, false);
  });
  for (const kind of ["input", "change"]) $("#settings-form").addEventListener(kind, () => { edited = true; });
  $("#settings-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    try {
      await write(() => app.wiki.setConfig(configFromForm()));
      setStatus(t("settingsSaved"));
      edited = false;
      await renderSettings();
    } catch (err) { showError(err); }
  });
  $("#cfg-test").addEventListener("click", () => testConnection().catch(showError));
}
