// The Lint tab: the deterministic checks, the LLM checks after their token estimate, and each
// finding's fix (a contradiction's asks for the note that settles it).
import { setStatus, showError } from "../status.js";
import { $, h, pageLink } from "./dom.js";
import { app, t } from "./session.js";
import { write } from "./writing.js";

/** The LLM checks: the token estimate first, then (if the user agrees) one call per page group. */
async function runLlmLint() {
  const estimate = await app.wiki.lintEstimate();
  if (!estimate.groups.length) { setStatus(t("lintLlmNothing")); return; }
  if (!confirm(t("lintLlmConfirm", estimate.groups.length, estimate.total))) return;
  setStatus(t("lintLlmRunning"));
  await runLint({ llm: true });
  setStatus(t("lintLlmDone"));
}

async function applyFix(f) {
  try {
    const options = {};
    if (f.fix.action === "resolveContradiction") {
      const note = prompt(t("askNote"));
      if (note === null) return;
      options.note = note;
    }
    await write(() => app.wiki.applyFix(f.id, options));
    setStatus(t("fixed"));
    await runLint();
  } catch (e) { showError(e); }
}

async function runLint(options) {
  // The LLM checks write (their findings, what the endpoint accepts): under the write lock.
  const findings = options && options.llm ? await write(() => app.wiki.lint(options)) : await app.wiki.lint(options);
  const count = (s) => findings.filter((f) => f.severity === s).length;
  $("#lint-summary").textContent = findings.length ? t("lintSummary", count("error"), count("warning"), count("info")) : t("lintClean");
  $("#lint-findings").replaceChildren(...findings.map((f) => h("li", { className: `finding ${f.severity}`, dataset: { kind: f.kind } },
    h("span", { className: "kind" }, f.kind), " ",
    f.page ? [pageLink(f.page, f.page), ": "] : null,
    f.message,
    f.fix ? [" ", h("button", { dataset: { testid: "apply-fix" }, onclick: () => applyFix(f) }, t("fix"))] : null,
  )));
}

export function wireLint() {
  $("#lint-run").addEventListener("click", () => runLint().catch(showError));
  $("#lint-llm").addEventListener("click", () => runLlmLint().catch(showError));
}
