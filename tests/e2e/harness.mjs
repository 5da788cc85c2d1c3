// Shared set-up for the web app tests: the static server and headless Chromium (Debian's, through
// playwright-core; no browser download).
import { spawn } from "node:child_process";
import { mkdirSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

export const root = fileURLToPath(new URL("../..", import.meta.url));
export const artifacts = `${root}/test-results`;
mkdirSync(artifacts, { recursive: true });

export const CHROMIUM_ARGS = [
  "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
  "--disable-background-networking", "--disable-component-update", "--disable-sync",
  "--disable-quic", "--no-first-run",
];

/** Starts scripts/serve.mjs on a free port; resolves to { url, stop }. */
export function startServer() {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [`${root}/scripts/serve.mjs`, "--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/serving (http:\/\/\S+)/);
      if (m) resolve({ url: m[1], stop: () => child.kill() });
    });
    child.on("exit", (code) => reject(new Error(`server exited with ${code}`)));
  });
}

/**
 * The scripted LLM endpoint (tests/support/scripted_llm_server.rs): the one scripts/test.sh
 * started (LLM_WIKI_TEST_ENDPOINT), else a new one on a free port. Resolves to { url, stop }.
 */
export function scriptedEndpoint() {
  if (process.env.LLM_WIKI_TEST_ENDPOINT) return Promise.resolve({ url: process.env.LLM_WIKI_TEST_ENDPOINT, stop: () => {} });
  return new Promise((resolve, reject) => {
    const bin = `${process.env.CARGO_TARGET_DIR || `${root}/target`}/debug/examples/scripted-llm-server`;
    const child = spawn(bin, ["--port", "0"], { stdio: ["ignore", "pipe", "inherit"] });
    let out = "";
    child.stdout.on("data", (d) => {
      out += d;
      const m = out.match(/listening on (http:\/\/\S+)/);
      if (m) resolve({ url: m[1], stop: () => child.kill() });
    });
    child.on("error", (e) => reject(new Error(`start ${bin} (cargo build --example scripted-llm-server --features test-support): ${e.message}`)));
  });
}

/** Launches headless Chromium. */
export function launch() {
  return chromium.launch({ executablePath: process.env.CHROMIUM || "/usr/bin/chromium", headless: true, args: CHROMIUM_ARGS });
}

/** Collects console errors and failed requests of a page, for assertions and debugging. */
export function watch(page) {
  const log = { errors: [], requests: [] };
  page.on("console", (m) => { if (m.type() === "error") log.errors.push(m.text()); });
  page.on("pageerror", (e) => log.errors.push(String(e)));
  page.on("request", (r) => log.requests.push(r.url()));
  return log;
}

/**
 * Fills the app's endpoint settings without saving: the OpenAI-compatible preset at `baseUrl`,
 * model `scripted-chat`, a dummy key, a 16k context window, the models per operation (empty:
 * the main model), pictures described by the model or not (`describeImages`) and, when given,
 * the embeddings endpoint `{ provider, model, url }`.
 */
export async function fillEndpoint(page, baseUrl, { compileModel = "", queryModel = "", lintModel = "", embeddings, describeImages = false } = {}) {
  await page.selectOption("#cfg-preset", "openai");
  await page.fill("#cfg-base-url", baseUrl);
  await page.fill("#cfg-model", "scripted-chat");
  await page.fill("#cfg-api-key", "sk-test-not-a-real-key");
  await page.fill("#cfg-context", "16384");
  await page.fill("#cfg-model-compile", compileModel);
  await page.fill("#cfg-model-query", queryModel);
  await page.fill("#cfg-model-lint", lintModel);
  await page.setChecked("#cfg-describe-images", describeImages);
  if (embeddings) {
    await page.selectOption("#cfg-emb-provider", embeddings.provider);
    await page.fill("#cfg-emb-model", embeddings.model);
    await page.fill("#cfg-emb-url", embeddings.url);
  }
  // What was typed is what the form holds (nothing re-filled it meanwhile).
  const held = await page.$eval("#cfg-context", (e) => e.value);
  if (held !== "16384") throw new Error(`the context window field holds ${JSON.stringify(held)} after filling 16384`);
}

/** Opens the app's Settings tab, fills the endpoint settings (`fillEndpoint`) and saves them. */
export async function configure(page, baseUrl, options = {}) {
  // Opening the tab fills the form from the stored settings, asynchronously: filling before that
  // lands would have typed into a field that is then overwritten (or appended to: "1638416384").
  // A render still in flight from before (the one after a save) must land first too: wait for
  // one started by the click to fill the form, with none left running.
  // A render that fails (reading the settings threw) ends the wait with the error the app shows.
  const counts = () => page.$eval("#settings-form", (f) => ({ rendered: Number(f.dataset.rendered || 0), failed: Number(f.dataset.failed || 0) }));
  const before = await counts();
  await page.click("#tabs button[data-tab=settings]");
  await page.waitForFunction((n) => {
    const f = document.querySelector("#settings-form");
    if (Number(f.dataset.failed || 0) > n.failed) return true;
    return Number(f.dataset.rendered || 0) > n.rendered && Number(f.dataset.pending || 0) === 0;
  }, before);
  if ((await counts()).failed > before.failed) {
    throw new Error(`the settings tab failed to render: ${await page.textContent("#status")}`);
  }
  await fillEndpoint(page, baseUrl, options);
  await page.evaluate(() => { document.querySelector("#status").textContent = ""; });
  await page.click("#settings-form button[type=submit]");
  await page.waitForFunction(() => /Settings saved/.test(document.querySelector("#status").textContent));
}

/** Runs `fn` (the body of an async function of `w` and `arg`) on a second connection to `wiki` in
 * `page`, through the JS API, and returns its result. */
/**
 * The app in a new page of `context` (dialogs accepted), ready; with `wiki`, that wiki opened.
 * Resolves to { page, log } (`log` from `watch`).
 */
export async function openApp(context, url, wiki) {
  const page = await context.newPage();
  const log = watch(page);
  page.on("dialog", (d) => d.accept());
  await page.goto(url);
  await page.waitForSelector("body[data-ready=true]");
  if (wiki) {
    await page.evaluate((name) => localStorage.setItem("llm-wiki.current", name), wiki);
    await page.reload();
    await page.waitForSelector("body[data-ready=true]");
  }
  return { page, log };
}

export function api(page, wiki, fn, arg) {
  return page.evaluate(async ({ wiki, fn, arg }) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const w = await Wiki.open(wiki);
    try {
      // eslint-disable-next-line no-new-func
      return await new Function("w", "arg", `return (async () => { ${fn} })()`)(w, arg);
    } finally { w.close(); }
  }, { wiki, fn, arg });
}
