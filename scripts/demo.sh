#!/usr/bin/env bash
# Set everything up, build the sample workspace and run the nightly consolidation on it.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/memory-pipeline demo
