// Compiling the pending sources (or a recompile of given ones) with progress, cancellation, the
// report in the status line, then the endpoint embeddings of the pages written.
import { setStatus, showError } from "../status.js";
import { $ } from "./dom.js";
import { app, t } from "./session.js";
import { write, embedNewPages, keepVectorIndex } from "./writing.js";

let controller = null;

/** True while a compile runs in this tab. */
export const compiling = () => controller !== null;

export async function compile(options = {}) {
  const ctl = new AbortController();
  controller = ctl;
  $("#compile").disabled = true;
  $("#compile-cancel").hidden = false;
  const progress = $("#compile-progress");
  try {
    const bar = $("#compile-bar");
    bar.hidden = false; bar.value = 0;
    let total = 1, index = 0;
    const report = await write(() => app.wiki.compile({
      ...options,
      signal: ctl.signal,
      onProgress: (p) => {
        if (p.stage === "describing") {
          progress.textContent = t("describing", p.name, p.index + 1, p.total);
          bar.value = 0;
          return;
        }
        if (p.stage === "source") {
          total = p.total; index = p.index;
          progress.textContent = t("compiling", p.index + 1, p.total, p.key);
        } else if (p.stage === "integrated") {
          progress.textContent = `${t("compiling", index + 1, total, p.key)} · ${p.done}/${p.total} ${p.page}`;
        }
        bar.value = (index + (p.stage === "committed" || p.stage === "failed" ? 1 : p.stage === "integrated" ? p.done / (p.total + 1) : 0)) / total;
      },
    }), { embed: false });
    bar.hidden = true;
    const pages = report.compiled.reduce((n, r) => n + r.created.length + r.updated.length, 0);
    // The list shows the new statuses before the message says the compile is done.
    await app.refresh();
    // Pictures described first (describeImages); one that was not is said, its source compiled
    // from its text alone.
    const images = report.images || { described: [], failed: [] };
    const pictures = [
      images.described.length ? t("picturesDescribed", images.described.length) : "",
      images.failed.length ? t("picturesNotDescribed", images.failed.map((f) => `${f.key} (${f.message})`).join("; ")) : "",
    ].filter(Boolean).join(" ");
    setStatus(report.compiled.length + report.failed.length === 0 && !pictures ? t("nothingToCompile")
      : `${t("compileDone", report.compiled.length, report.failed.length, pages)} ${report.usage.calls ? t("usage", report.usage) : ""} ${pictures}`.trim(),
      report.failed.length || images.failed.length ? "error" : "info");
    progress.textContent = "";
    if (report.compiled.length) await embedNewPages(ctl.signal);
    if (report.compiled.length) keepVectorIndex();
  } catch (e) {
    if (e && e.code === "CANCELLED") setStatus(t("cancelled"), "error"); else showError(e);
    progress.textContent = "";
  } finally {
    $("#compile").disabled = false;
    $("#compile-cancel").hidden = true;
    controller = null;
    await app.refresh();
  }
}

export function wireCompile() {
  $("#compile-cancel").addEventListener("click", () => controller?.abort());
}
