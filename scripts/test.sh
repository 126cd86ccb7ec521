#!/usr/bin/env bash
# Set everything up (with the dev extra) and run the test suite. Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh dev
.venv/bin/ruff check memory_pipeline memory_pipeline_tests benchmarks
# Types: configured in pyproject.toml [tool.mypy] (see docs/decisions/0002-mypy.md); about 30 s cold, a few s with its cache.
.venv/bin/mypy memory_pipeline benchmarks
# Two pytest-xdist workers (MEMORY_PIPELINE_TEST_WORKERS; 0 runs in this process), each taking a whole file at a
# time, so a file's module fixtures (real servers, shared workspaces) start once.
workers=(-n "${MEMORY_PIPELINE_TEST_WORKERS:-2}" --dist loadfile --no-loadscope-reorder)
# Tests marked `slow` (real subprocesses killed mid-run, concurrent runs) run in CI (CI=true) or with
# RUN_SLOW=1; locally the default suite skips them to stay fast.
if [ "${CI:-}" = "true" ] || [ "${RUN_SLOW:-}" = "1" ]; then
  exec .venv/bin/python -m pytest -q --durations=25 "${workers[@]}" "$@"
fi
exec .venv/bin/python -m pytest -q --durations=25 "${workers[@]}" -m "not slow" "$@"
