#!/usr/bin/env bash
# Runs every test: installs what they need (idempotently), then
# fmt, clippy (native and wasm32, -D warnings; with the test doubles and without), cargo test, the
# browser tests in headless Chromium and Firefox (wasm-pack test), the release build with its size,
# and the web app tests (Playwright).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PWD/node_modules/.bin:$PATH"
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-600}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}
# A run on a clean clone gains nothing from incremental caches, which took 3.4 GB of target/
# (native and wasm32). Set CARGO_INCREMENTAL=1 to keep them when re-running after small edits;
# switching the setting rebuilds this crate (scripts/bench.sh uses the same default).
export CARGO_INCREMENTAL=${CARGO_INCREMENTAL:-0}
# The browsers' profiles (chromedriver leaves one per wasm test binary, ~40-90 MB each) and other
# temporary files go in one directory, removed when the script exits.
TMPDIR=$(mktemp -d)
export TMPDIR
server_pid=""
cleanup() {
  if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
  rm -rf "$TMPDIR"
}
trap cleanup EXIT

start=$(date +%s)
step() { printf '\n\033[1;32m==> %s\033[0m (%ss)\n' "$*" "$(( $(date +%s) - start ))"; }

step "setup"
scripts/setup.sh

step "cargo fmt --check"
cargo fmt --all -- --check

# Every target with the test doubles (`--features test-support`: src/scripted/ and the operations'
# scripted replies), then the product without them (the library and the examples that do not
# need them), so the release build never depends on test code.
step "clippy (native)"
cargo clippy --all-targets --features test-support -- -D warnings
cargo clippy --lib --examples -- -D warnings

step "clippy (wasm32)"
cargo clippy --all-targets --features test-support --target wasm32-unknown-unknown -- -D warnings
cargo clippy --lib --target wasm32-unknown-unknown -- -D warnings

step "real-size corpus (bench/scale-sources.txt → target/scale-corpus/)"
# The toolchain's docs converted as the app converts them (headless Chromium); idempotent.
node scripts/scale-corpus.mjs
# Without it the real-size tests fail here rather than skip.
export LLM_WIKI_SCALE_REQUIRED=1

step "cargo test"
cargo test --features test-support

step "scripted LLM server (for the browser tests)"
# std-only HTTP server speaking the OpenAI, Ollama and Anthropic shapes with fault modes
# (tests/support/scripted_llm_server.rs). Port: LLM_WIKI_TEST_PORT, else a free one.
cargo build --example scripted-llm-server --features test-support
server_log=$(mktemp)
"${CARGO_TARGET_DIR:-target}/debug/examples/scripted-llm-server" \
  --port "${LLM_WIKI_TEST_PORT:-0}" --allow-origin http://allowed.example.test >"$server_log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
  grep -q '^listening on ' "$server_log" && break
  kill -0 "$server_pid" 2>/dev/null || { cat "$server_log" >&2; exit 1; }
  sleep 0.1
done
LLM_WIKI_TEST_ENDPOINT=$(sed -n 's/^listening on //p' "$server_log")
[ -n "$LLM_WIKI_TEST_ENDPOINT" ] || { echo "the scripted LLM server did not start" >&2; cat "$server_log" >&2; exit 1; }
export LLM_WIKI_TEST_ENDPOINT
echo "scripted LLM server: $LLM_WIKI_TEST_ENDPOINT"

step "browser tests: wasm-pack test --headless --chrome --firefox"
# The browser tests are tests/web*.rs (`--test 'web*'`). Without it cargo test would also build
# the native tools in examples/ for wasm32 and run the lib and *_native test binaries in each
# browser, all with no browser test in them. `web_compile` calls the scripted endpoint in-process.
wasm-pack test --headless --chrome --firefox -- --features test-support --test 'web*'

step "release build"
scripts/build.sh

step "web app tests (Playwright, headless Chromium)"
node --test --test-concurrency=1 tests/e2e/

step "all tests passed"
