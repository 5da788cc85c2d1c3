#!/usr/bin/env bash
# The browser benchmark (issue #11; not part of scripts/test.sh): installs what it needs, builds
# the product wasm (scripts/build.sh → pkg/, for its size) and the benchmark wasm
# (`--features bench` → target/bench-pkg/, never pkg/), the peers' bundle and the scripted LLM
# server and the real-size corpus (scripts/scale-corpus.mjs → target/scale-corpus/, for the
# `scale` phase), then runs bench/run.mjs in headless Chromium: prints tables, writes JSON
# (target/bench-results.json unless BENCH_OUT). Settings: BENCH_* variables, see BENCHMARKS.md.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PWD/node_modules/.bin:$PATH"
# As scripts/test.sh: both build the scripted LLM server (`--features test-support`, as there);
# the same setting shares its build.
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}

step() { printf '\n==> %s\n' "$*" >&2; }

step "setup (npm ci, wasm-pack, wasm-bindgen)"
scripts/setup.sh >&2

if [ "${BENCH_SKIP_BUILD:-0}" != 1 ]; then
  step "product build (pkg/, for the size)"
  scripts/build.sh >&2
  # Before the bench build overwrites target/wasm32-unknown-unknown/release/llm_wiki.wasm.
  if command -v twiggy >/dev/null; then
    twiggy top -n 40 "${CARGO_TARGET_DIR:-target}/wasm32-unknown-unknown/release/llm_wiki.wasm" > target/bench-twiggy.txt 2>&1 || true
  fi

  step "benchmark build (--features bench → target/bench-pkg/)"
  wasm-pack build --target web --release --out-dir target/bench-pkg --out-name llm_wiki --no-pack \
    -- --features bench 2>&1 | grep -v "^\[INFO\]: Optional" >&2 || true
  [ -f target/bench-pkg/llm_wiki_bg.wasm ] || { echo "no target/bench-pkg/llm_wiki_bg.wasm" >&2; exit 1; }
  # The same wasm-opt pass as the product (scripts/build.sh), so timings are of what ships.
  wasm-opt -Oz --strip-debug --strip-producers \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd \
    target/bench-pkg/llm_wiki_bg.wasm -o target/bench-pkg/llm_wiki_bg.opt.wasm
  mv target/bench-pkg/llm_wiki_bg.opt.wasm target/bench-pkg/llm_wiki_bg.wasm

  step "page bundle (bench/page.js + peers → bench/build/page.js)"
  esbuild bench/page.js --bundle --format=esm --log-level=warning --outfile=bench/build/page.js

  step "scripted LLM server"
  cargo build --example scripted-llm-server --features test-support >&2
fi

step "real-size corpus (bench/scale-sources.txt → target/scale-corpus/, for BENCH_PHASES=scale)"
# Idempotent: seconds when the list, the toolchain and the converter are unchanged.
node scripts/scale-corpus.mjs

step "run (headless Chromium)"
node bench/run.mjs
