// Issue 22: what the app and the extension show beside the pages comes from the core, not from
// JS copies of wiki semantics. An answer in the Ask tab renders through `renderMarkdown` (the
// page renderer: citations resolved as pages resolve them, missing ones marked, markdown
// rendered and sanitised); `openContradictions` reads the ledger (not the callouts); `recall`
// (the clipper's "your wiki on this page") ranks and filters in Rust. Each assertion marked
// "core" pins a place where the old JS copy behaved differently.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { startServer, launch, watch, scriptedEndpoint, configure, api } from "./harness.mjs";

const S1 = "# Widgetron\n\nWidgetron is a gadget made by Acme Corp.\n\n## Acme Corp\n\nAcme Corp builds widgets in Ohio. It was founded in 1990.\n\n## Widgetron\n\nWidgetron was first released in 2015.\n";
const S3 = "# Widget history\n\n## Widgetron\n\nWidgetron was first released in 2016.\n";

let server, browser, endpoint, context, page, log;
before(async () => {
  server = await startServer();
  endpoint = await scriptedEndpoint();
  browser = await launch();
  context = await browser.newContext({ locale: "en-US" });
  page = await context.newPage();
  log = watch(page);
  await page.goto(server.url);
  await page.waitForSelector("body[data-ready=true]");
  await configure(page, `${endpoint.url}/v1`);
  const report = await api(page, "default", `
    await w.addSource({ key: "notes/widgetron.md", mime: "text/markdown", content: arg.S1 });
    await w.addSource({ key: "notes/widget-history.md", mime: "text/markdown", content: arg.S3 });
    return await w.compile();`, { S1, S3 });
  assert.equal(report.failed.length, 0, JSON.stringify(report.failed));
});
after(async () => { await context?.close(); await browser?.close(); server?.stop(); endpoint?.stop(); });

test("openContradictions reads the ledger: the record the Widgetron page's callout shows", { timeout: 60_000 }, async () => {
  const { open, view, none } = await api(page, "default", `
    return { open: await w.openContradictions(["Widgetron", "Widget history"]), view: await w.pageView("Widgetron"),
      none: await w.openContradictions(["Acme Corp", "no such page"]) };`);
  assert.equal(open.length, 1, JSON.stringify(open));
  const [x] = open;
  assert.deepEqual(x.pages.map((p) => p.key), ["Widgetron"]);
  assert.equal(x.sides.length, 2);
  assert.deepEqual(x.sides.map((s) => /2015/.test(s.text) || /2016/.test(s.text)), [true, true]);
  // The same record is rendered into the page as its callout (Decision 4).
  assert.ok(view.page.body.includes(`> [!contradiction] Sources disagree (${x.id})\n> ${x.description}\n`), view.page.body);
  assert.match(view.html, /data-callout="contradiction"/);
  assert.deepEqual(none, []);
});

test("recall: the pages about a text and their open records; common words alone recall nothing", { timeout: 60_000 }, async () => {
  const r = await api(page, "default", `return await w.recall("Widgetron release",
    "# Widgetron release\\n\\nWidgetron, the gadget Acme Corp makes, was first released in 2015; Acme Corp builds widgets in Ohio.\\n");`);
  assert.ok(r.pages.some((p) => p.key === "Widgetron" && p.summary.length > 0), JSON.stringify(r.pages));
  assert.deepEqual(r.contradictions.map((c) => c.pages[0].key), ["Widgetron"]);
  // core: numbers and single characters are not topic terms (the clipper's list counted "2015").
  const common = await api(page, "default", `return await w.recall("Notes", "# Notes\\n\\nIt was first in the 2015 and it is by the one that was in it.\\n");`);
  assert.deepEqual(common.pages, []);
});

test("an answer in the Ask tab renders through the core's page renderer", { timeout: 60_000 }, async () => {
  // A stored session whose answer cites a page with another case, a page that does not exist
  // (deleted since, say) and uses markdown the old JS parser left as text.
  await page.evaluate(() => {
    localStorage.setItem("llm-wiki.sessions.default", JSON.stringify([{ id: "s1", title: "Widgetron?", updated: 1, turns: [{
      question: "Widgetron?", answer: "It is **a gadget** [[widgetron|the Widgetron]], see [[Gone page]].\nReleased in 2015 <img src=x onerror=alert(1)>.\n\n1. first\n2. second",
      citations: ["Widgetron"], removed: 0, grounded: true,
    }] }]));
  });
  await page.click("#tabs button[data-tab=ask]");
  await page.click("#sessions a");
  const answer = page.locator("#conversation .turn .answer");
  await answer.locator("a.wikilink").waitFor();
  // core: the citation resolves case-insensitively to the page's key, with `data-page`.
  assert.equal(await answer.locator("a.wikilink").getAttribute("href"), "#/page/Widgetron");
  assert.equal(await answer.locator("a.wikilink").getAttribute("data-page"), "Widgetron");
  assert.equal(await answer.locator("a.wikilink").textContent(), "the Widgetron");
  // core: a citation of no page is marked missing, not linked.
  assert.equal(await answer.locator("span.wikilink.missing").count(), 1);
  // core: markdown renders (emphasis, a numbered list; soft breaks stay in one paragraph).
  assert.equal(await answer.locator("strong").textContent(), "a gadget");
  assert.equal(await answer.locator("ol > li").count(), 2);
  assert.equal(await answer.locator("p").count(), 1);
  // Still safe: raw HTML is text.
  assert.equal(await answer.locator("img").count(), 0);
  assert.match(await answer.textContent(), /<img src=x onerror=alert\(1\)>/);
  assert.deepEqual(log.errors, []);
});
