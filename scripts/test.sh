#!/usr/bin/env bash
# Runs every test: installs what they need (idempotently), then
# fmt, clippy (native and wasm32, -D warnings), cargo test, the browser tests in headless Chromium
# and Firefox (wasm-pack test), the release build with its size, and the web app tests (Playwright).
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PWD/node_modules/.bin:$PATH"
export WASM_BINDGEN_TEST_TIMEOUT=${WASM_BINDGEN_TEST_TIMEOUT:-600}
export CARGO_TERM_COLOR=${CARGO_TERM_COLOR:-never}

start=$(date +%s)
step() { printf '\n\033[1;32m==> %s\033[0m (%ss)\n' "$*" "$(( $(date +%s) - start ))"; }

step "setup"
scripts/setup.sh

step "cargo fmt --check"
cargo fmt --all -- --check

step "clippy (native)"
cargo clippy --all-targets -- -D warnings

step "clippy (wasm32)"
cargo clippy --all-targets --target wasm32-unknown-unknown -- -D warnings

step "cargo test"
cargo test

step "browser tests: wasm-pack test --headless --chrome --firefox"
wasm-pack test --headless --chrome --firefox

step "release build"
scripts/build.sh

step "web app tests (Playwright, headless Chromium)"
node --test --test-concurrency=1 tests/e2e/

step "all tests passed"
