// The live-folder benchmark (issue #24): a wiki of BENCH_FOLDER_PAGES pages and
// BENCH_FOLDER_SOURCES sources mirrored into the origin-private file system of headless Chromium,
// through the product build (pkg/, scripts/build.sh). Prints, in one run:
// - the first mirror, beside the zip export of the same wiki (what a user does without it);
// - one run after 12 page edits (files written, time);
// - a pull over a mirror of BENCH_FOLDER_FILES files (the first, which hashes the mirror's own
//   page files once, and the steady state a poll costs), beside a plain JS walk that only stats
//   each file (size and mtime, all files of a directory at once: the floor any scan pays), of
//   the whole mirror and of its wiki/;
// - FileSystemObserver's delay from a write in another page to its callback;
// - the app without FileSystemObserver (polling): an edit saved in another page until the app
//   says it came in, over a folder of about BENCH_FOLDER_PAGES files.
// Usage: scripts/build.sh && node bench/folder.mjs
import { startServer, launch } from "../tests/e2e/harness.mjs";

const env = (k, d) => Number(process.env[k] ?? d);
const CFG = {
  pages: env("BENCH_FOLDER_PAGES", 1000),
  sources: env("BENCH_FOLDER_SOURCES", 100),
  files: env("BENCH_FOLDER_FILES", 10000),
};

const server = await startServer();
const browser = await launch();
try {
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${server.url}/style.css`); // a document of the origin, without the app
  const r = await page.evaluate(async (cfg) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    const now = () => performance.now();
    const opfs = await navigator.storage.getDirectory();
    for (const name of ["bench-mirror"]) await opfs.removeEntry(name, { recursive: true }).catch(() => {});
    await Wiki.delete("bench-folder");
    const w = await Wiki.open("bench-folder");
    const out = {};
    let t = now();
    const para = (i) => `第 ${i} 段：所有权与借用。Ownership moves a value; borrowing lends it. See [[Page ${(i * 7) % cfg.pages}]].\n\n`;
    for (let i = 0; i < cfg.sources; i++) {
      await w.addSource({ key: `notes/s${i}.md`, mime: "text/markdown", content: `# Source ${i}\n\n${para(i).repeat(20)}` });
    }
    for (let i = 0; i < cfg.pages; i++) {
      await w.putPage({ title: `Page ${i}`, kind: i % 3 ? "concept" : "entity", body: para(i).repeat(8) });
    }
    out.buildMs = now() - t;
    t = now();
    const zip = await w.exportVault();
    out.exportMs = now() - t;
    out.exportBytes = zip.length;
    const dir = await opfs.getDirectoryHandle("bench-mirror", { create: true });
    t = now();
    const first = await w.mirror(dir);
    out.firstMs = now() - t;
    out.firstFiles = first.written.length;
    for (let i = 0; i < 12; i++) {
      await w.putPage({ key: `Page ${(i * 11) % cfg.pages}`, body: `Edited ${i}.\n\n${para(i)}` });
    }
    t = now();
    const next = await w.mirror(dir);
    out.twelveMs = now() - t;
    out.twelveWritten = next.written;
    // Fill the mirror's folder up to cfg.files with raw files (a large raw store): a pull lists
    // only wiki/ and inbox/, a plain walk of the root lists them all.
    const walk = async (d) => {
      let n = 0;
      const files = [];
      for await (const h of d.values()) {
        if (h.kind === "directory") n += await walk(h); else files.push(h);
      }
      await Promise.all(files.map((h) => h.getFile())); // stat'ed together, as the core does
      return n + files.length;
    };
    const root = await dir.getDirectoryHandle("llm-wiki");
    const have = await walk(root);
    const extra = await (await root.getDirectoryHandle("raw")).getDirectoryHandle("extra", { create: true });
    for (let i = have; i < cfg.files; i++) {
      const s = await (await extra.getFileHandle(`n${i}.md`, { create: true })).createWritable();
      await s.write(`raw ${i}`); await s.close();
    }
    t = now();
    out.walkFiles = await walk(root);
    out.walkMs = now() - t;
    t = now();
    out.wikiFiles = await walk(await root.getDirectoryHandle("wiki"));
    out.wikiWalkMs = now() - t;
    t = now();
    const p1 = await w.mirrorPull(dir);
    out.pullFirstMs = now() - t;
    out.pullFirst = { listed: p1.listed, read: p1.read, op: p1.op ?? null };
    t = now();
    const p2 = await w.mirrorPull(dir);
    out.pullMs = now() - t;
    out.pull = { listed: p2.listed, read: p2.read, op: p2.op ?? null };
    w.close();
    return out;
  }, CFG);

  // FileSystemObserver: a write in a second page, reported to the first.
  let observer = "FileSystemObserver missing";
  const has = await page.evaluate(() => "FileSystemObserver" in globalThis);
  if (has) {
    await page.evaluate(async () => {
      const dir = await (await navigator.storage.getDirectory()).getDirectoryHandle("bench-mirror");
      window.__seen = [];
      const o = new FileSystemObserver((records) => { for (const _ of records) window.__seen.push(performance.timeOrigin + performance.now()); });
      await o.observe(dir, { recursive: true });
      window.__observer = o; // kept: a collected observer reports nothing
    });
    const other = await context.newPage();
    await other.goto(`${server.url}/style.css`);
    const delays = [];
    for (let i = 0; i < 5; i++) {
      const sent = await other.evaluate(async (i) => {
        const dir = await (await (await navigator.storage.getDirectory()).getDirectoryHandle("bench-mirror")).getDirectoryHandle("llm-wiki");
        const s = await (await dir.getFileHandle(`outside ${i}.md`, { create: true })).createWritable();
        await s.write(`edit ${i}`); await s.close();
        return performance.timeOrigin + performance.now();
      }, i);
      await page.waitForFunction(() => window.__seen.length > 0);
      const seen = await page.evaluate(() => window.__seen[0]);
      delays.push(Math.max(0, seen - sent));
      await page.waitForTimeout(300);
      await page.evaluate(() => { window.__seen.length = 0; });
    }
    delays.sort((a, b) => a - b);
    observer = `${delays[2].toFixed(0)} ms median (${delays.map((d) => d.toFixed(0)).join(", ")})`;
  }

  await context.close();

  // The app end to end without FileSystemObserver (it polls every 10 s while visible): an edit
  // saved in another page of the origin, until the app says it came in from the folder.
  const polled = await pollingApp();

  const s = (ms) => `${(ms / 1000).toFixed(2)} s`;
  console.log(`wiki: ${CFG.pages} pages, ${CFG.sources} sources (built in ${s(r.buildMs)})`);
  console.log("| measure | llm-wiki mirror | peer | goal |");
  console.log("|---|---|---|---|");
  console.log(`| first mirror (OPFS) | ${s(r.firstMs)}, ${r.firstFiles} files | zip export ${s(r.exportMs)}, ${(r.exportBytes / 1e6).toFixed(1)} MB | ≤ 10 s |`);
  console.log(`| run after 12 page edits | ${s(r.twelveMs)}, ${r.twelveWritten.length} files written | zip export ${s(r.exportMs)} (whole) | only changed files |`);
  console.log(`| pull, ${r.walkFiles}-file mirror, first | ${s(r.pullFirstMs)} (${r.pullFirst.listed} listed, ${r.pullFirst.read} read) | JS walk: root ${s(r.walkMs)}, wiki/ ${s(r.wikiWalkMs)} (${r.wikiFiles} files) | — |`);
  console.log(`| pull, ${r.walkFiles}-file mirror, steady (a poll) | ${s(r.pullMs)} (${r.pull.listed} listed, ${r.pull.read} read) | JS walk: root ${s(r.walkMs)}, wiki/ ${s(r.wikiWalkMs)} | ≤ 5 s |`);
  console.log(`| FileSystemObserver, write → callback | ${observer} | — | edit shown ≤ 3 s |`);
  console.log(`| app, polling, ${polled.files}-file folder: edit saved → shown | ${polled.delays} | — | ≤ 12 s |`);
  console.log(`files written after 12 edits: ${r.twelveWritten.join(", ")}`);
} finally {
  await browser.close();
  server.stop();
}

/** The app, its observer removed, mirroring a wiki of CFG.pages pages; five outside edits timed. */
async function pollingApp() {
  const context = await browser.newContext();
  await context.addInitScript(() => {
    window.showDirectoryPicker = async () => (await navigator.storage.getDirectory()).getDirectoryHandle("bench-app", { create: true });
    FileSystemHandle.prototype.queryPermission = async () => "granted";
    FileSystemHandle.prototype.requestPermission = async () => "granted";
    delete window.FileSystemObserver;
  });
  const editor = await context.newPage();
  await editor.goto(`${server.url}/style.css`);
  await editor.evaluate(async (pages) => {
    const { default: init, Wiki } = await import("/pkg/llm_wiki.js");
    await init();
    await (await navigator.storage.getDirectory()).removeEntry("bench-app", { recursive: true }).catch(() => {});
    await Wiki.delete("default");
    const w = await Wiki.open("default");
    for (let i = 0; i < pages; i++) await w.putPage({ title: `Page ${i}`, kind: "concept", body: `Body ${i}.` });
    w.close();
  }, CFG.pages);
  const app = await context.newPage();
  await app.goto(server.url);
  await app.waitForSelector("body[data-ready=true]");
  await app.click("#folder-use");
  await app.waitForFunction(() => /up to date/.test(document.querySelector("#folder-status").textContent), null, { timeout: 120_000 });
  await app.evaluate(() => {
    window.__came = [];
    new MutationObserver(() => {
      if (/From the folder/.test(document.querySelector("#status").textContent)) window.__came.push(performance.timeOrigin + performance.now());
    }).observe(document.querySelector("#status"), { childList: true, characterData: true, subtree: true });
  });
  const files = await editor.evaluate(async () => {
    const count = async (d) => { let n = 0; for await (const h of d.values()) n += h.kind === "directory" ? await count(h) : 1; return n; };
    return count(await (await navigator.storage.getDirectory()).getDirectoryHandle("bench-app"));
  });
  const delays = [];
  for (let i = 0; i < 5; i++) {
    await app.evaluate(() => { window.__came.length = 0; });
    const sent = await editor.evaluate(async (i) => {
      const dir = await (await (await (await navigator.storage.getDirectory()).getDirectoryHandle("bench-app")).getDirectoryHandle("llm-wiki")).getDirectoryHandle("wiki");
      const h = await (await dir.getDirectoryHandle("concept")).getFileHandle(`Page ${i * 37}.md`);
      const text = (await (await h.getFile()).text()).replace(/Body \d+\./, `Edited outside ${i}.`);
      const s = await h.createWritable(); await s.write(text); await s.close();
      return performance.timeOrigin + performance.now();
    }, i);
    await app.waitForFunction(() => window.__came.length > 0, null, { timeout: 30_000 });
    delays.push((await app.evaluate(() => window.__came[0])) - sent);
  }
  await context.close();
  const sorted = [...delays].sort((a, b) => a - b);
  return { files, delays: `${(sorted[2] / 1000).toFixed(2)} s median, max ${(sorted[4] / 1000).toFixed(2)} s (${delays.map((d) => (d / 1000).toFixed(1)).join(", ")})` };
}
