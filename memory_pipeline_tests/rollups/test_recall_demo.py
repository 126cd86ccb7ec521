"""`recall` on the demo workspace answers the README's own question with the decision that search finds, not with
the sessions that only mention the certificate."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

QUESTION = "what did we decide about the status page certificate?"
DECISION = "move the status page certificate to automatic renewal"


def _recall(home: Path, dagster_home: Path, *argv: str) -> str:
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}
    for name in ("ANTHROPIC_API_KEY", "MEMORY_PIPELINE_EMBEDDER", "MEMORY_PIPELINE_JOURNAL_START"):
        env.pop(name, None)
    done = subprocess.run([sys.executable, "-m", "memory_pipeline.cli", "recall", *argv], env=env,
                          capture_output=True, text=True, timeout=600, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return done.stdout


@pytest.mark.slow
def test_the_readmes_question_is_answered_with_the_decision(demo_home: Path, tmp_path: Path) -> None:
    home = tmp_path / "ws"
    shutil.copytree(demo_home, home)
    out = _recall(home, tmp_path / "dagster_home", QUESTION)
    lines = out.splitlines()
    answer = next(i for i, line in enumerate(lines) if line.startswith(("answer from", "Nothing in memory")))
    assert lines[answer].startswith("answer from search"), out
    # the first hit is the decision itself: its passage is the line after the hit's own
    assert DECISION in lines[answer + 2], out
    assert "searched session" in out  # the tiers were still asked
