// The Ask tab: questions answered from the wiki with streamed, cited answers, kept in sessions
// (this browser's localStorage, per wiki), each answer rendered by the core like a page
// (`renderMarkdown`: its citations are links to the pages they name) and savable as a page.
import { showError } from "../status.js";
import { $, h, pageLink, sourceLink } from "./dom.js";
import { app, t } from "./session.js";
import { write } from "./writing.js";

let current = null; // the id of the session shown, or null for a new one
let controller = null; // the question being answered
let shown = 0; // the latest conversation render (an older one still rendering is dropped)

const sessionsKey = () => `llm-wiki.sessions.${app.wiki.name}`;

function loadSessions() {
  try { return JSON.parse(localStorage.getItem(sessionsKey()) || "[]"); } catch { return []; }
}

function saveSessions(list) {
  localStorage.setItem(sessionsKey(), JSON.stringify(list.slice(0, 50)));
}

/** Starts a new session (the next question opens it). */
export function newSession() { current = null; return renderSessions(); }

export function renderSessions() {
  const sessions = loadSessions();
  $("#sessions").replaceChildren(...sessions.map((s) => h("li", { className: s.id === current ? "active" : undefined },
    h("a", { href: "#", onclick: (e) => { e.preventDefault(); current = s.id; renderConversation().catch(showError); } }, s.title))));
  return renderConversation();
}

async function renderConversation() {
  const mine = ++shown;
  const session = loadSessions().find((s) => s.id === current);
  const turns = [];
  for (const [i, turn] of (session ? session.turns : []).entries()) turns.push(await turnElement(turn, i));
  if (mine === shown) $("#conversation").replaceChildren(...turns);
}

/** Safe HTML for markdown of an answer (or of the app's own text): the core's page renderer. */
const markdownHtml = async (markdown) => (await app.wiki.renderMarkdown(markdown)).html;

async function turnElement(turn, index) {
  // An answer that rests on no page of the wiki (`grounded: false`) is marked as such.
  const ungrounded = turn.grounded === false;
  const a = h("div", { className: `answer markdown${ungrounded ? " ungrounded" : ""}`, innerHTML: await markdownHtml(turn.answer) });
  if (ungrounded) a.dataset.testid = "answer-ungrounded";
  const bits = [];
  if (ungrounded) bits.push(t(turn.declined ? "declinedNote" : "ungroundedNote"));
  // Asked in another language than the wiki's text: the offline search cannot match it.
  if (turn.declined && turn.raw && turn.raw.crossLingual) bits.push(t("crossLingualNote"));
  if (turn.extractive && !turn.declined) bits.push(t("extractiveNote"));
  if (turn.removed) bits.push(t("removedCitations", turn.removed));
  if (turn.usage && turn.usage.calls) bits.push(t("usage", turn.usage));
  // Source passages the answer cites ([^s1] footnotes): each opens the source at that passage.
  const cited = (turn.raw && turn.raw.sourceCitations) || [];
  const sourcesList = cited.length ? h("div", { className: "source-citations", dataset: { testid: "source-citations" } },
    h("p", { className: "meta" }, t("sourceCitations")),
    h("ul", {}, cited.map((c) => h("li", {}, `[${c.id}] `,
      sourceLink(c.source, c.version, c.lines, c.heading ? `${c.sourceTitle} › ${c.heading}` : c.sourceTitle),
      ` (${t("linesRange", c.lines[0], c.lines[1])})`)))) : null;
  // A declined question lists the pages that come closest to it.
  const closest = (turn.declined && turn.raw && turn.raw.suggestions) || [];
  const suggestions = closest.length ? h("div", { className: "suggestions", dataset: { testid: "suggestions" } },
    h("p", { className: "meta" }, t("closestPages")),
    h("ul", {}, closest.map((key) => h("li", {}, pageLink(key, key))))) : null;
  const div = h("div", { className: "turn" }, h("p", { className: "question" }, turn.question), a, sourcesList, suggestions, h("p", { className: "meta" }, bits.join(" · ")));
  if (turn.saved) {
    div.append(h("p", { className: "meta", innerHTML: await markdownHtml(t("savedAs", turn.saved)) }));
  } else if (!ungrounded && ((turn.citations && turn.citations.length) || cited.length)) {
    div.append(h("button", {
      dataset: { testid: "save-answer" },
      onclick: async () => {
        try {
          const page = await write(() => app.wiki.saveAnswer(turn.question, turn.raw));
          updateTurn(index, { saved: page.key });
          await renderConversation();
        } catch (e) { showError(e); }
      },
    }, t("saveToWiki")));
  }
  return div;
}

function updateTurn(index, patch) {
  const sessions = loadSessions();
  const s = sessions.find((x) => x.id === current);
  Object.assign(s.turns[index], patch);
  s.updated = Date.now();
  saveSessions(sessions);
}

async function ask(question) {
  let sessions = loadSessions();
  let session = sessions.find((s) => s.id === current);
  if (!session) {
    session = { id: `s${Date.now()}`, title: question.slice(0, 60), turns: [], updated: Date.now() };
    sessions.unshift(session);
    current = session.id;
  }
  const history = session.turns.slice(-6).map((x) => ({ question: x.question, answer: x.answer }));
  const a = h("div", { className: "answer streaming" });
  const live = h("div", { className: "turn" }, h("p", { className: "question" }, question), a);
  $("#conversation").append(live);
  const ctl = new AbortController();
  controller = ctl;
  $("#ask-cancel").hidden = false;
  let streamed = "";
  try {
    const writeBack = $("#ask-writeback").checked;
    const call = () => app.wiki.ask(question, {
      history, writeBack, signal: ctl.signal,
      onToken: (tok) => { streamed += tok; a.textContent = streamed; },
    });
    // A question without write-back writes no wiki content: it runs beside another tab's
    // compile instead of waiting minutes for its lock. What it may store — the endpoint's
    // structured-output mode, a cache written with an optimistic check — loses nothing but
    // that cache entry if it races another writer.
    const answer = writeBack ? await write(call) : await call();
    session.turns.push({
      question, answer: answer.answer, citations: answer.citations, removed: answer.removedCitations.length,
      extractive: answer.extractive, usage: answer.usage, saved: answer.saved || null, raw: answer,
      grounded: answer.grounded, declined: answer.declined,
    });
    session.updated = Date.now();
    sessions = [session, ...sessions.filter((s) => s.id !== session.id)];
    saveSessions(sessions);
    await renderSessions();
  } catch (e) {
    live.remove();
    if (!(e && e.code === "CANCELLED")) showError(e);
  } finally {
    $("#ask-cancel").hidden = true;
  }
}

export function wireAsk() {
  $("#ask-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const question = $("#question").value.trim();
    if (!question) return;
    $("#question").value = "";
    ask(question).catch(showError);
  });
  $("#ask-cancel").addEventListener("click", () => controller?.abort());
  $("#session-new").addEventListener("click", () => { newSession().catch(showError); });
}
