#!/usr/bin/env bash
# Runs the demo: installs what it needs, builds pkg/, serves www/ on localhost and prints the URL.
#   scripts/demo.sh [--port 8080]
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --demo
scripts/build.sh
echo "Open the URL below in a browser. Your wiki stays in that browser's IndexedDB. Ctrl-C stops the server."
exec node scripts/serve.mjs "$@"
