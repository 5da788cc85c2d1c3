// The Log tab (every operation, newest first, each with its rollback) and what the page history
// shares with it: a diff view and the rollback with its preview (Decision 7).
import { setStatus, showError } from "../status.js";
import { $, h } from "./dom.js";
import { app, t, formatTime } from "./session.js";
import { write } from "./writing.js";

/** Shows a unified diff in `pre`, one span per line (added, removed, hunk header). */
export function showDiff(pre, diff) {
  pre.replaceChildren(...diff.split("\n").map((line) => h("span", {
    className: line.startsWith("+") && !line.startsWith("+++") ? "diff-add"
      : line.startsWith("-") && !line.startsWith("---") ? "diff-del"
      : line.startsWith("@@") ? "diff-hunk" : "",
  }, line + "\n")));
  pre.dataset.testid = "revision-diff";
  pre.hidden = false;
}

/** Previews a rollback, asks, and rolls back. Resolves true when it was done. */
export async function rollbackOperation(opId) {
  try {
    const plan = await app.wiki.rollbackPreview(opId);
    const ops = plan.operations.map((o) => `  op ${o.id} ${o.kind}: ${o.summary}`).join("\n");
    const pages = plan.pages.map((p) => `  ${t("rollbackAction_" + p.action)} ${p.title || p.key}`).join("\n");
    if (!confirm(t("rollbackConfirm", ops, pages, plan.sources.length, plan.claims))) return false;
    const report = await write(() => app.wiki.rollback(opId));
    setStatus(t("rolledBack", plan.operations.length, report.operation.id));
    return true;
  } catch (err) { showError(err); return false; }
}

export async function renderLog() {
  const ops = await app.wiki.operations();
  $("#ops-list").replaceChildren(...ops.slice().reverse().map((o) => h("li", { dataset: { testid: "operation" } },
    `op ${o.id} · ${o.kind} · ${formatTime(o.time)} · ${o.summary} `,
    o.rolledBackBy
      ? h("span", { className: "rolled-back" }, t("rolledBackBy", o.rolledBackBy))
      : h("button", { dataset: { testid: "rollback" }, onclick: async () => { if (await rollbackOperation(o.id)) await renderLog(); } }, t("rollback")),
  )));
  $("#log-md").textContent = await app.wiki.log();
}
