#!/usr/bin/env bash
# Set everything up (with the dev extra) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
.venv/bin/ruff check memory_pipeline memory_pipeline_tests
exec .venv/bin/python -m pytest -q "$@"
