#!/usr/bin/env bash
# Builds the release wasm package into pkg/ (wasm-pack, --target web), optimises it with npm's
# binaryen wasm-opt (never Debian's wasm-opt 108, which emits broken modules), and prints its size.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="${CARGO_HOME:-$HOME/.cargo}/bin:$PATH"

wasm-pack build --target web --release --out-dir pkg --out-name llm_wiki --no-pack 2>&1 \
  | grep -v "^\[INFO\]: Optional" || true
[ -f pkg/llm_wiki_bg.wasm ] || { echo "wasm-pack produced no pkg/llm_wiki_bg.wasm" >&2; exit 1; }

WASM_OPT=node_modules/.bin/wasm-opt
if [ -x "$WASM_OPT" ]; then
  "$WASM_OPT" -Oz --strip-debug --strip-producers \
    --enable-bulk-memory --enable-nontrapping-float-to-int --enable-sign-ext \
    --enable-mutable-globals --enable-reference-types --enable-multivalue --enable-simd \
    pkg/llm_wiki_bg.wasm -o pkg/llm_wiki_bg.opt.wasm
  mv pkg/llm_wiki_bg.opt.wasm pkg/llm_wiki_bg.wasm
else
  echo "note: $WASM_OPT missing (run scripts/setup.sh); size is before wasm-opt" >&2
fi

# The app's JS libraries, bundled for the browser: HTML → markdown (Readability + Turndown), the
# graph view (Cytoscape.js), PDF → text (pdf.js), Word, EPUB, PowerPoint and OpenDocument → HTML
# (mammoth, fflate), Excel → HTML tables (ExcelJS) and OCR (tesseract.js). The last five load on
# first use.
for module in convert graph pdf documents sheets ocr; do
  node_modules/.bin/esbuild "www/src/$module.js" --bundle --format=esm --minify --log-level=warning \
    --outfile="www/build/$module.js"
done
# OCR (tesseract.js): its worker, the LSTM-only cores (plain, SIMD, relaxed SIMD: the worker picks
# what the browser runs) and the 4.0.0_best_int models shipped, served from this origin (no CDN).
rm -rf www/build/ocr
mkdir -p www/build/ocr/lang
cp node_modules/tesseract.js/dist/worker.min.js www/build/ocr/
cp node_modules/tesseract.js-core/tesseract-core{,-simd,-relaxedsimd}-lstm.wasm.js www/build/ocr/
for lang in eng chi_sim chi_tra; do
  cp "node_modules/@tesseract.js-data/$lang/4.0.0_best_int/$lang.traineddata.gz" www/build/ocr/lang/
done
# pdf.js's worker, CMaps (CJK text) and standard font data, served from this origin (no CDN).
rm -rf www/build/pdfjs
mkdir -p www/build/pdfjs
cp node_modules/pdfjs-dist/build/pdf.worker.min.mjs www/build/pdfjs/pdf.worker.mjs
cp -r node_modules/pdfjs-dist/cmaps node_modules/pdfjs-dist/standard_fonts www/build/pdfjs/
# Its image decoders (JBIG2, CCITT fax, JPEG 2000): most scanned PDFs hold their pages so, and OCR
# needs them drawn.
cp -r node_modules/pdfjs-dist/wasm www/build/pdfjs/

raw=$(wc -c < pkg/llm_wiki_bg.wasm)
gz=$(gzip -9 -c pkg/llm_wiki_bg.wasm | wc -c)
glue=$(gzip -9 -c pkg/llm_wiki.js | wc -c)
awk -v raw="$raw" -v gz="$gz" -v glue="$glue" 'BEGIN {
  printf "release wasm: %d bytes raw (%.1f KB), %d bytes gzipped (%.1f KB); JS glue %d bytes gzipped\n",
    raw, raw / 1024, gz, gz / 1024, glue }'

# The browser extension ships the same app and package (www/extension/app/, git-ignored).
scripts/build-extension.sh
