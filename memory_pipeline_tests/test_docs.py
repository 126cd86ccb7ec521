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


def fleet_client_example() -> str:
    """The Python client of docs/fleet.md ("Serving a fleet"): the page's one ```python block using the SDK."""
    text = (ROOT / "docs" / "fleet.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)
    found = [b for b in blocks if "streamable_http_client" in b]
    assert len(found) == 1, f"docs/fleet.md: {len(found)} Python client examples"
    return str(found[0])


def test_the_fleet_pages_client_is_a_script_python_runs() -> None:
    compile(fleet_client_example(), "docs/fleet.md", "exec")  # no top-level `async with`: a script, not a REPL's


@pytest.mark.slow
def test_the_fleet_pages_client_runs_against_fleet_serve(tmp_path: Path) -> None:
    """One agent and its token made with the CLI, `fleet serve` started on a free port, the page's script run as it
    is against it; every wait is minutes, and the server is stopped whatever happens."""
    import signal
    import socket
    import sys
    import time

    import httpx2

    from memory_pipeline.resources.embedder import MINILM

    wait_s = 300
    env = {**os.environ, "MEMORY_PIPELINE_FLEET_ROOT": str(tmp_path / "fleet"),
           "MEMORY_PIPELINE_EMBEDDER": MINILM}  # the default, as a user runs it  # fmt: skip
    env.pop("ANTHROPIC_API_KEY", None)
    cli = [sys.executable, "-m", "memory_pipeline.cli"]
    subprocess.run([*cli, "agents", "add", "ada"], env=env, check=True, capture_output=True, timeout=wait_s)
    issued = subprocess.run([*cli, "agents", "token", "ada"], env=env, check=True, capture_output=True, text=True,
                            timeout=wait_s)  # fmt: skip
    token = issued.stdout.strip().splitlines()[-1]
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = int(s.getsockname()[1])
    log = tmp_path / "serve.log"
    with log.open("wb") as err:
        server = subprocess.Popen([*cli, "fleet", "serve", "--port", str(port), "--workers", "1"], env=env,
                                  stdout=err, stderr=err, start_new_session=True)  # fmt: skip
    try:
        deadline = time.monotonic() + wait_s
        while True:
            assert server.poll() is None, f"fleet serve exited {server.returncode}: {log.read_text()[-2000:]}"
            try:
                if httpx2.get(f"http://127.0.0.1:{port}/readyz", timeout=5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            assert time.monotonic() < deadline, f"fleet serve not ready in {wait_s} s: {log.read_text()[-2000:]}"
            time.sleep(0.3)
        ran = subprocess.run([sys.executable, "-c", fleet_client_example()], capture_output=True, text=True,
                             timeout=wait_s, env={**env, "MEMORY_URL": f"http://127.0.0.1:{port}/mcp",
                                                  "MEMORY_TOKEN": token})  # fmt: skip
        assert ran.returncode == 0, ran.stderr[-2000:]
        assert ran.stdout.strip() == "['ops-17']", ran.stdout
    finally:
        if server.poll() is None:
            server.terminate()
            try:
                server.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                server.kill()
                server.wait(timeout=wait_s)
        try:
            os.killpg(server.pid, signal.SIGKILL)  # a worker the command left
        except ProcessLookupError:
            pass
