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
# Import-time dependencies of sglang.srt.server_args in 0.5.23, found by installing
# `sglang --no-deps` and adding what `import sglang.srt.server_args` missed, one at a
# time, then checking that each is really needed (import with it hidden fails).
# sglang/__init__.py pulls sglang.lang (aiohttp, pydantic, IPython) and
# sglang.srt.utils.common (orjson, psutil, pybase64, requests, triton, PIL, starlette).
# Pinned to the versions tested. triton is left unpinned: a CUDA torch brings the
# triton it needs (then this is a no-op); the CPU torch does not, and any recent one imports.
IMPORT_DEPS=(
  "numpy==2.4.6"
  "orjson==3.13.0"
  "psutil==7.2.2"
  "msgspec==0.23.0"
  "pybase64==1.5.1"
  "requests==2.34.2"
  "packaging==26.4"
  "pillow==13.0.0"
  "pyzmq==27.3.0"
  "tqdm==4.70.1"
  "ipython==9.18.1"
  "pydantic==2.14.4"
  "aiohttp==3.14.5"
  "starlette==1.10.0"
  "triton"
  # Not needed to import; SGLang's --config FILE.yaml merge needs it (a full SGLang has it
  # through transformers), and the integration test exercises --config.
  "PyYAML==6.0.4"
)

log() { printf 'setup-real-sglang: %s\n' "$*" >&2; }

start=$(date +%s)
mkdir -p "$(dirname "$DIR")"
DIR="$(cd "$(dirname "$DIR")" && pwd)/$(basename "$DIR")"
PY="$DIR/bin/python"
# The stamp names what was installed: a changed version or dependency list reinstalls.
RECIPE="$(printf '%s\n' "$SGLANG_VERSION" "$TORCH_VERSION" "${IMPORT_DEPS[@]}" | sha256sum | cut -c1-16)"
STAMP="$DIR/.inferops-recipe-$RECIPE"

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
  if ! "$PYTHON_BASE" -m venv "$DIR"; then
    log "cannot create a venv with $PYTHON_BASE (on Debian/Ubuntu: apt-get install python3-venv)"
    exit 1
  fi
fi

PIP=("$PY" -m pip install --quiet --disable-pip-version-check)

# torch==2.13.0 also matches a local build such as 2.13.0+cpu (PEP 440: local labels
# are ignored by == without one). Only if that resolves nothing, try the explicit +cpu.
torch_installed() {
  "$PY" -c "import importlib.metadata as m, sys; sys.exit(m.version('torch').split('+')[0] != sys.argv[1])" \
    "$TORCH_VERSION" >/dev/null 2>&1
}
if ! torch_installed; then
  log "installing torch==$TORCH_VERSION"
  if ! "${PIP[@]}" "torch==$TORCH_VERSION"; then
    log "torch==$TORCH_VERSION not found; trying torch==$TORCH_VERSION+cpu"
    "${PIP[@]}" "torch==$TORCH_VERSION+cpu"
  fi
fi

# The dependencies go in before sglang: pip then has no reason to list the dozens of
# sglang requirements that --no-deps leaves out as conflicts.
log "installing the import-time dependencies"
"${PIP[@]}" "${IMPORT_DEPS[@]}"
log "installing sglang==$SGLANG_VERSION --no-deps"
"${PIP[@]}" --no-deps "sglang==$SGLANG_VERSION"

if ! probe; then
  log "sglang.srt.server_args does not import in $DIR; the error:"
  "$PY" -c "import sglang.srt.server_args" >&2 || true
  exit 1
fi
rm -f "$DIR"/.inferops-recipe-*
touch "$STAMP"
log "ready in $(( $(date +%s) - start )) s: $("$PY" -c 'import importlib.metadata as m; print("sglang", m.version("sglang"), "torch", m.version("torch"))')"
echo "$PY"
