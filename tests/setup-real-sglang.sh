#!/usr/bin/env bash
# Create (idempotently) a small Python venv holding SGLang's real argument parser:
# torch (CPU or CUDA build, whatever plain pip resolves for torch==2.13.0), sglang==0.5.23
# installed WITHOUT its dependencies, and only the packages that
# `sglang.srt.server_args` needs at import time. Enough to run
# `ServerArgs.add_cli_args(argparse.ArgumentParser())`; not enough to serve a model.
#
# Usage: tests/setup-real-sglang.sh [DIR]      (default: .cache/sglang-real)
# Prints the venv's python path on the last line of stdout; progress goes to stderr.
# Used by tests/integration/test_real_sglang_parser.py through INFEROPS_REAL_SGLANG_PYTHON.
set -euo pipefail

DIR="${1:-.cache/sglang-real}"
PYTHON_BASE="${PYTHON_BASE:-/usr/bin/python3}"
SGLANG_VERSION="${SGLANG_VERSION:-0.5.23}"
TORCH_VERSION="${TORCH_VERSION:-2.13.0}"
# Import-time dependencies of sglang.srt.server_args (found by importing it with
# `pip install --no-deps sglang` and adding what was missing, one at a time).
IMPORT_DEPS=(
  "numpy<3"
  "msgspec"
  "psutil"
  "pybase64"
  "requests"
  "packaging"
  "pillow"
  "pyzmq"
  "tqdm"
  "ipython"
)

log() { printf 'setup-real-sglang: %s\n' "$*" >&2; }

start=$(date +%s)
mkdir -p "$(dirname "$DIR")"
DIR="$(cd "$(dirname "$DIR")" && pwd)/$(basename "$DIR")"
PY="$DIR/bin/python"
STAMP="$DIR/.inferops-sglang-${SGLANG_VERSION}-torch-${TORCH_VERSION}"

probe() {
  "$PY" - <<'PYEOF' >/dev/null 2>&1
import argparse
from sglang.srt.server_args import ServerArgs
ServerArgs.add_cli_args(argparse.ArgumentParser())
PYEOF
}

if [[ -x "$PY" && -f "$STAMP" ]] && probe; then
  log "already set up in $DIR"
  echo "$PY"
  exit 0
fi

if [[ ! -x "$PY" ]]; then
  log "creating venv $DIR with $PYTHON_BASE"
  "$PYTHON_BASE" -m venv "$DIR"
fi

PIP=("$PY" -m pip install --quiet --disable-pip-version-check)

# torch==2.13.0 also matches a local build such as 2.13.0+cpu (PEP 440: local labels
# are ignored by == without one). Only if that resolves nothing, try the explicit +cpu.
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  log "installing torch==$TORCH_VERSION"
  if ! "${PIP[@]}" "torch==$TORCH_VERSION"; then
    log "torch==$TORCH_VERSION not found; trying torch==$TORCH_VERSION+cpu"
    "${PIP[@]}" "torch==$TORCH_VERSION+cpu"
  fi
fi

log "installing sglang==$SGLANG_VERSION (--no-deps) and import-time deps"
"${PIP[@]}" --no-deps "sglang==$SGLANG_VERSION"
"${PIP[@]}" "${IMPORT_DEPS[@]}"

if ! probe; then
  log "sglang.srt.server_args does not import in $DIR; the error:"
  "$PY" -c "import sglang.srt.server_args" >&2 || true
  exit 1
fi
touch "$STAMP"
log "ready in $(( $(date +%s) - start )) s: $("$PY" -c 'import importlib.metadata as m; print("sglang", m.version("sglang"), "torch", m.version("torch"))')"
echo "$PY"
