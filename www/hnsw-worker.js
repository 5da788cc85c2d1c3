// The Web Worker side of a vector graph rebuild: builds and calibrates the HNSW graph with the
// wasm core's `buildHnswGraph` off the page's thread (wasm here has no threads; a build takes
// seconds to a minute). Message in: `{ vectors: Float32Array, dim, params, options }` (the
// fields of `wiki.vectorRebuildJob()`); message out: the `GraphBuildResult` (`bytes` transferred)
// or `{ error }`. One job per worker; www/vector-index.js starts it and installs the result.
import init, { buildHnswGraph } from "./pkg/llm_wiki.js";

const ready = init();

self.onmessage = async (e) => {
  try {
    await ready;
    const { vectors, dim, params, options } = e.data;
    const r = buildHnswGraph(vectors, dim, params, options);
    self.postMessage(r, r.bytes ? [r.bytes.buffer] : []);
  } catch (err) {
    self.postMessage({ error: String((err && err.message) || err) });
  }
};
