// The JS API's reference is the TypeScript declarations wasm-bindgen generates; a copy is
// committed as docs/llm_wiki.d.ts (README and docs/api.md point to it). This test fails when the
// copy differs from the build's pkg/llm_wiki.d.ts (run scripts/build.sh first). After an API
// change, refresh it: cp pkg/llm_wiki.d.ts docs/llm_wiki.d.ts
import { test } from "node:test";
import assert from "node:assert/strict";
import { existsSync, readFileSync } from "node:fs";
import { root } from "./harness.mjs";

test("docs/llm_wiki.d.ts is the generated pkg/llm_wiki.d.ts", () => {
  const built = `${root}/pkg/llm_wiki.d.ts`;
  assert.ok(existsSync(built), "build first: scripts/build.sh");
  const want = readFileSync(built, "utf8").split("\n");
  const have = readFileSync(`${root}/docs/llm_wiki.d.ts`, "utf8").split("\n");
  const at = want.findIndex((line, i) => line !== have[i]);
  if (at >= 0 || want.length !== have.length) {
    const n = at >= 0 ? at : Math.min(want.length, have.length);
    assert.fail(`docs/llm_wiki.d.ts differs from the build at line ${n + 1}:\n  built:     ${want[n] ?? "(end)"}\n  committed: ${have[n] ?? "(end)"}\n`
      + "refresh it: cp pkg/llm_wiki.d.ts docs/llm_wiki.d.ts");
  }
});
