"""The MCP tools README and docs/ name are the server's tools, read from the server's own tool list: a renamed or
added tool fails here until the pages say so."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import pytest

from memory_pipeline.settings import REPO_ROOT

PAGES = [REPO_ROOT / "README.md", *sorted((REPO_ROOT / "docs").glob("*.md"))]
NAMES = r"((?:`\w+`(?:,\s*and\s+|,\s*|\s+and\s+|\s+or\s+)?)+)"
# one tool named as such: "the MCP `search` tool", "the tool `flush`", "the MCP tool `context`"
ONE = re.compile(r"MCP `(\w+)` tool|\btool `(\w+)`|`(\w+)` MCP tool")
# every tool listed: "five tools: `search`, …", "the server's tools — `search`, …", "over MCP … (`search`, …"
ALL = re.compile(r"(?:\btools(?::| —)|over MCP\W[^(.]*\()\s*" + NAMES)
COUNT = re.compile(r"(?i)\b(two|three|four|five|six|seven|eight|nine|ten) tools\b")
WORDS = ("two", "three", "four", "five", "six", "seven", "eight", "nine", "ten")


@pytest.fixture(scope="module")
def tools(tmp_path_factory: pytest.TempPathFactory) -> set[str]:
    from memory_pipeline.mcp.server import build_server

    server = build_server(tmp_path_factory.mktemp("ws"), record_usage=False)
    return {t.name for t in anyio.run(server.list_tools)}


def _text(page: Path) -> str:
    return " ".join(page.read_text(encoding="utf-8").split())  # a name list may wrap


def test_every_tool_the_pages_name_is_one_the_server_has(tools: set[str]) -> None:
    named = {(page.name, name) for page in PAGES for m in ONE.finditer(_text(page)) for name in m.groups() if name}
    assert named, "no page names an MCP tool"
    assert {(page, name) for page, name in named if name not in tools} == set()


def test_every_list_of_the_tools_is_all_of_them(tools: set[str]) -> None:
    lists = [(page.name, m[0]) for page in PAGES for m in ALL.finditer(_text(page))]
    assert any(page == "README.md" for page, _ in lists), "the README lists the MCP tools"
    for page, found in lists:
        assert set(re.findall(r"`(\w+)`", found)) == tools, f"{page}: {found}"
    counts = [(page.name, m[1]) for page in PAGES for m in COUNT.finditer(_text(page))]
    assert counts and all(WORDS.index(word.lower()) + 2 == len(tools) for _, word in counts), counts
