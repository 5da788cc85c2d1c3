// A dependency-free static server for the demo and the browser tests.
//   /        -> www/   (the app)
//   /pkg/    -> pkg/   (wasm-pack output)
// Usage: node scripts/serve.mjs [--port 8080] [--host 127.0.0.1]
// Prints "serving http://HOST:PORT/" once listening (tests wait for that line).
import { createServer } from "node:http";
import { readFile, stat } from "node:fs/promises";
import { extname, join, normalize, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const root = resolve(fileURLToPath(new URL("..", import.meta.url)));
const args = process.argv.slice(2);
const opt = (name, dflt) => {
  const i = args.indexOf(name);
  return i >= 0 ? args[i + 1] : dflt;
};
const host = opt("--host", process.env.HOST || "127.0.0.1");
let port = Number(opt("--port", process.env.PORT || 8080));

const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json; charset=utf-8",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".md": "text/markdown; charset=utf-8",
  ".txt": "text/plain; charset=utf-8",
  ".ts": "text/plain; charset=utf-8",
  ".webmanifest": "application/manifest+json",
  ".map": "application/json",
};

function mapPath(urlPath) {
  const path = decodeURIComponent(urlPath.split("?")[0]);
  const [base, rest] = path.startsWith("/pkg/") ? ["pkg", path.slice(5)] : ["www", path.slice(1)];
  const dir = join(root, base);
  const file = normalize(join(dir, rest || "index.html"));
  return file.startsWith(dir) ? file : null;
}

const server = createServer(async (req, res) => {
  let file = mapPath(req.url || "/");
  try {
    if (!file) throw new Error("outside root");
    if ((await stat(file)).isDirectory()) file = join(file, "index.html");
    const body = await readFile(file);
    res.writeHead(200, {
      "content-type": types[extname(file)] || "application/octet-stream",
      "cache-control": "no-cache",
    });
    res.end(body);
  } catch {
    res.writeHead(404, { "content-type": "text/plain; charset=utf-8" });
    res.end("not found\n");
  }
});

server.on("error", (e) => {
  if (e.code === "EADDRINUSE" && !args.includes("--port")) {
    port += 1;
    server.listen(port, host);
  } else {
    console.error(e.message);
    process.exit(1);
  }
});
server.listen(port, host, () => {});
server.on("listening", () => console.log(`serving http://${host}:${server.address().port}/`));
