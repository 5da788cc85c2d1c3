#!/usr/bin/env bash
# Installs what the demo and the tests need, idempotently: seconds when everything is present.
# Only package registries are used (crates.io, npm, Debian); nothing downloads a binary elsewhere.
#   scripts/setup.sh            everything (tests)
#   scripts/setup.sh --demo     only what the demo needs (no browsers, no drivers)
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

demo_only=false
[ "${1:-}" = "--demo" ] && demo_only=true

log() { printf '\033[1;34m[setup]\033[0m %s\n' "$*"; }

# The wasm-bindgen version pinned with `=` in Cargo.toml; the CLI must match it exactly.
WASM_BINDGEN_VERSION=$(sed -n 's/^wasm-bindgen = "=\([0-9.]*\)".*/\1/p' Cargo.toml)
WASM_PACK_VERSION=0.15.1
GECKODRIVER_VERSION=0.37.1

if ! rustup target list --installed | grep -qx wasm32-unknown-unknown; then
  log "adding the wasm32-unknown-unknown target"
  rustup target add wasm32-unknown-unknown
fi
# rust-docs: the toolchain's HTML docs, the real-size suite's input (scripts/scale-corpus.mjs).
for component in clippy rustfmt rust-docs; do
  if ! rustup component list --installed | grep -q "^$component"; then
    log "adding rustup component $component"
    rustup component add "$component"
  fi
done

if [ "$(wasm-bindgen --version 2>/dev/null | awk '{print $2}')" != "$WASM_BINDGEN_VERSION" ]; then
  log "installing wasm-bindgen-cli $WASM_BINDGEN_VERSION (several minutes on two cores, once)"
  # Not --locked: its lockfile wants a webpki-roots version the registry mirror lacks.
  cargo install wasm-bindgen-cli --version "=$WASM_BINDGEN_VERSION" --force
fi
if [ "$(wasm-pack --version 2>/dev/null | awk '{print $2}')" != "$WASM_PACK_VERSION" ]; then
  log "installing wasm-pack $WASM_PACK_VERSION (several minutes, once)"
  cargo install wasm-pack --version "=$WASM_PACK_VERSION" --locked --force
fi

apt_missing=()
if ! $demo_only; then
  command -v chromium >/dev/null || apt_missing+=(chromium)
  command -v chromedriver >/dev/null || apt_missing+=(chromium-driver)
  command -v firefox-esr >/dev/null || apt_missing+=(firefox-esr)
  # A CJK font, so screenshots of Chinese pages are readable.
  [ -e /usr/share/fonts/truetype/wqy/wqy-zenhei.ttc ] || apt_missing+=(fonts-wqy-zenhei)
fi
command -v gzip >/dev/null || apt_missing+=(gzip)
if [ ${#apt_missing[@]} -gt 0 ]; then
  log "installing Debian packages: ${apt_missing[*]}"
  SUDO=""
  [ "$(id -u)" = 0 ] || SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${apt_missing[@]}" >/dev/null
fi

if ! $demo_only; then
  if [ "$(geckodriver --version 2>/dev/null | head -n1 | awk '{print $2}')" != "$GECKODRIVER_VERSION" ]; then
    log "installing geckodriver $GECKODRIVER_VERSION from crates.io"
    cargo install geckodriver --version "=$GECKODRIVER_VERSION" --locked --force
  fi
fi

# npm packages (binaryen's wasm-opt, esbuild, playwright-core, the app's libraries), from the lockfile.
if [ ! -f node_modules/.package-lock.json ] || ! cmp -s package-lock.json node_modules/.llm-wiki-lock; then
  log "installing npm packages (npm ci)"
  npm ci --no-audit --no-fund --loglevel=error
  cp package-lock.json node_modules/.llm-wiki-lock
fi
log "ready"
