#!/usr/bin/env bash
# Run the uv that wrote uv.lock, e.g. `bash scripts/uv.sh lock` after editing pyproject.toml's dependencies.
# Uses `uv` from PATH when it is that version, else bootstraps it from PyPI into .uv/ (outside .venv, which
# `uv sync` keeps exactly to the lock). With no argument it prints uv's path; exit 1 if uv cannot be had here.
set -euo pipefail
cd "$(dirname "$0")/.."
UV_VERSION=0.13.9  # bump together with [tool.uv] required-version in pyproject.toml
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
  done
fi
UV=""
if command -v uv >/dev/null 2>&1 && [ "$(uv --version | cut -d' ' -f2)" = "$UV_VERSION" ]; then
  UV="$(command -v uv)"
elif [ -x .uv/bin/uv ] && [ "$(.uv/bin/uv --version | cut -d' ' -f2)" = "$UV_VERSION" ]; then
  UV="$PWD/.uv/bin/uv"
elif [ -n "$PY" ] && "$PY" -m venv .uv >&2 && .uv/bin/python -m pip install --quiet "uv==$UV_VERSION" >&2; then
  UV="$PWD/.uv/bin/uv"
else
  rm -rf .uv
  echo "uv $UV_VERSION could not be installed from PyPI" >&2
  exit 1
fi
if [ $# -eq 0 ]; then
  echo "$UV"
else
  UV_PYTHON_DOWNLOADS=never exec "$UV" "$@"
fi
