"""The commands README and docs/ show are run as a user runs them, on a workspace `memory-pipeline demo` built.

A block is marked by the line `<!-- doc-test: expect "PHRASE" -->` right before a ```bash fence: the test runs
the block with bash from the checkout, against a copy of the demo workspace, and checks that it exits 0 and
that PHRASE is in what it printed. So a renamed flag or an example whose output changed fails here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
MARK = re.compile(r'^<!-- doc-test: expect "(?P<phrase>[^"]+)" -->$')


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    phrase: str
    script: str


def marked_blocks(pages: list[Path] = PAGES) -> list[Block]:
    """Every marked block; a marker not followed by a ```bash fence is an error naming its line."""
    out = []
    for page in pages:
        lines = page.read_text(encoding="utf-8").splitlines()
        for i, line in enumerate(lines):
            m = MARK.match(line.strip())
            if not m:
                continue
            where = f"{page.relative_to(ROOT)}:{i + 1}"
            if i + 1 >= len(lines) or lines[i + 1].strip() != "```bash":
                raise AssertionError(f"{where}: a doc-test marker must be followed by a ```bash block")
            end = next((j for j in range(i + 2, len(lines)) if lines[j].strip() == "```"), None)
            if end is None:
                raise AssertionError(f"{where}: the marked block is never closed")
            out.append(Block(str(page.relative_to(ROOT)), i + 1, m["phrase"], "\n".join(lines[i + 2 : end])))
    return out


BLOCKS = marked_blocks()


def test_the_pages_mark_runnable_blocks() -> None:
    assert len(BLOCKS) >= 4 and any(b.page == "README.md" for b in BLOCKS)
    for b in BLOCKS:
        assert b.script.strip() and "…" not in b.script, f"{b.page}:{b.line}: a placeholder cannot run"


@pytest.mark.slow
@pytest.mark.parametrize("block", BLOCKS, ids=[f"{b.page}:{b.line}" for b in BLOCKS])
def test_a_marked_block_runs_and_prints_what_the_page_says(block: Block, demo_home: Path, tmp_path: Path) -> None:
    """`demo_home`: the session's one `memory-pipeline demo` (memory_pipeline_tests/ui/demo_ui.py)."""
    home = tmp_path / "ws"
    shutil.copytree(demo_home, home)
    env = {**os.environ, "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(tmp_path / "dagster_home")}
    env.pop("ANTHROPIC_API_KEY", None)
    done = subprocess.run(["bash", "-euo", "pipefail", "-c", block.script], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=600, check=False)  # fmt: skip
    printed = done.stdout + done.stderr
    assert done.returncode == 0, f"{block.page}:{block.line} exited {done.returncode}:\n{printed[-2000:]}"
    assert block.phrase in printed, f"{block.page}:{block.line}: {block.phrase!r} not in:\n{printed[-2000:]}"
