#!/usr/bin/env bash
# Assembles the browser extension in www/extension/ (load it unpacked from there): the same app as
# its page, copied into www/extension/app/ with the release package and the bundled modules (HTML →
# markdown, the graph view, PDF → text). scripts/build.sh runs it last; run it alone after changing only the app or the extension.
# www/extension/app/ is build output (git-ignored).
set -euo pipefail
cd "$(dirname "$0")/.."

for f in pkg/llm_wiki.js pkg/llm_wiki_bg.wasm www/build/convert.js www/build/graph.js www/build/pdf.js www/build/documents.js www/build/sheets.js www/build/ocr.js; do
  [ -f "$f" ] || { echo "missing $f: run scripts/build.sh" >&2; exit 1; }
done
app=www/extension/app
rm -rf "$app"
mkdir -p "$app/pkg" "$app/build"
cp www/index.html www/app.js www/i18n.js www/writer.js www/status.js www/vector-index.js www/hnsw-worker.js www/style.css "$app/"
cp -r www/ui "$app/"
# The graph view and PDF import (loaded on first use), with pdf.js's worker, CMaps and fonts.
cp -r www/build/convert.js www/build/graph.js www/build/pdf.js www/build/documents.js www/build/sheets.js www/build/ocr.js www/build/ocr www/build/pdfjs "$app/build/"
cp pkg/llm_wiki.js pkg/llm_wiki_bg.wasm "$app/pkg/"
echo "extension: www/extension/ (load unpacked; $(du -sk www/extension | cut -f1) KB)"
