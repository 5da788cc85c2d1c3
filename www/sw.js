// Offline app shell: the app's own files are served from a cache when the network is away.
// Only same-origin GET requests are handled; the LLM endpoint (another origin) is never cached.
const CACHE = "llm-wiki-shell-v7";
// The graph view, PDF, Word, EPUB and Office import and the vector graph worker load on first use; they are cached up front so they work offline too.
const SHELL = ["./", "./index.html", "./app.js", "./i18n.js", "./writer.js", "./status.js", "./vector-index.js", "./hnsw-worker.js", "./style.css", "./build/convert.js",
  "./ui/ask.js", "./ui/compile.js", "./ui/documents.js", "./ui/dom.js", "./ui/eviction.js", "./ui/folder.js", "./ui/footer.js", "./ui/graph.js", "./ui/hooks.js", "./ui/lint.js", "./ui/log.js", "./ui/pages.js", "./ui/search.js", "./ui/session.js", "./ui/settings.js", "./ui/sources.js", "./ui/writing.js",
  "./build/graph.js", "./build/pdf.js", "./build/documents.js", "./build/sheets.js", "./build/ocr.js", "./build/pdfjs/pdf.worker.mjs",
  "./pkg/llm_wiki.js", "./pkg/llm_wiki_bg.wasm"];

self.addEventListener("install", (e) => {
  e.waitUntil(caches.open(CACHE).then((c) => c.addAll(SHELL)).catch(() => {}));
  self.skipWaiting();
});

self.addEventListener("activate", (e) => {
  e.waitUntil(caches.keys().then((keys) => Promise.all(keys.filter((k) => k !== CACHE).map((k) => caches.delete(k)))));
  self.clients.claim();
});

// Network first (a new build is picked up at once), the cache when offline.
self.addEventListener("fetch", (e) => {
  const url = new URL(e.request.url);
  if (e.request.method !== "GET" || url.origin !== self.location.origin) return;
  e.respondWith(
    fetch(e.request)
      .then((r) => {
        if (r.ok) { const copy = r.clone(); caches.open(CACHE).then((c) => c.put(e.request, copy)); }
        return r;
      })
      .catch(() => caches.match(e.request).then((r) => r || caches.match("./index.html"))),
  );
});
