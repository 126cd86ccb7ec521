#!/usr/bin/env bash
# Set everything up, build the sample workspace and run the nightly consolidation on it, then read it back.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
code=0
.venv/bin/memory-pipeline demo || code=$?
echo
echo "== reading memory back: memory-pipeline search (the demo left its index up to date) =="
.venv/bin/memory-pipeline search "price alert on TIA" -k 5
echo
echo "== what the agent would be given: memory-pipeline context --explain =="
.venv/bin/memory-pipeline context "Market order on JTO/USDT again: what stop-loss?" --budget 2000 --explain
exit "$code"
