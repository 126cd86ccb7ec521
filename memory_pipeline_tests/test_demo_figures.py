"""What the README says the demo prints is what it prints, and `scripts/demo.sh` does no work twice."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memory_pipeline.settings import REPO_ROOT

INDEX_LINE = re.compile(r"search index (?:built|updated): [\d,]+ documents \([\d,]+ embedded\)")


def test_the_demo_script_searches_the_index_the_demo_left_without_rebuilding_it() -> None:
    """`memory-pipeline demo` brings the index up to date itself; a rebuild after it embedded everything again."""
    script = (REPO_ROOT / "scripts" / "demo.sh").read_text(encoding="utf-8")
    searches = [line for line in script.splitlines() if "memory-pipeline search" in line and "echo" not in line]
    assert searches, "demo.sh no longer reads memory back with `search`"
    assert not [line for line in searches if "--rebuild" in line], searches


def test_the_readme_quotes_the_index_lines_of_the_demo() -> None:
    quoted = INDEX_LINE.findall(" ".join((REPO_ROOT / "README.md").read_text(encoding="utf-8").split()))
    assert [q.split(":")[0] for q in quoted] == ["search index built", "search index updated"]


@pytest.mark.slow
def test_the_readme_figures_are_what_the_demo_printed(demo_home: Path) -> None:
    """`demo_home`: the session's one `memory-pipeline demo`; its output is kept beside it (ui/demo_ui.py)."""
    printed = (demo_home.parent.parent / "demo-build.log").read_text(encoding="utf-8", errors="replace")
    readme = " ".join((REPO_ROOT / "README.md").read_text(encoding="utf-8").split())
    assert INDEX_LINE.findall(readme) == INDEX_LINE.findall(printed)
    report = re.search(r"abstractions_created\s+(\d+)", printed)
    archived = re.search(r"memories_archived\s+(\d+)", printed)
    shipped = re.search(r"among them (\d+) summar\w+ of an earlier night and the (\d+) memories", printed)
    assert report and archived and shipped, printed[-2000:]
    night, store = (report[1], archived[1]), (int(report[1]) + int(shipped[1]), int(archived[1]) + int(shipped[2]))
    assert f"({night[0]} abstractions, {night[1]} archived)" in readme
    assert f"the store's ({store[0]} and {store[1]})" in readme
    assert f"summaries {store[0]} active" in readme and f"archived={store[1]}" in readme  # the `status` block
