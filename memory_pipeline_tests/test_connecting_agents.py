"""docs/connecting-agents.md: every snippet that cannot run as a marked bash block (test_docs runs those) is at
least parsed — JSON, TOML, Python — and what it configures is run: the MCP server every host config names
answers `tools/list` with the page's tools, and the Claude Code hooks import the session they are given."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import threading
import time
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "connecting-agents.md"
CHECKOUT = "/path/to/memory_pipeline"  # the page's placeholder for the checkout
WORKSPACE = "/path/to/workspace"  # and for the workspace
CC_SESSION = ROOT / "memory_pipeline_tests" / "fixtures" / "transcript_imports" / "claude_code"
WAIT_S = 300  # every wait on a subprocess: minutes


def blocks(lang: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return [str(b) for b in re.findall(rf"^```{lang}\n(.*?)^```$", text, re.DOTALL | re.MULTILINE)]


def mcp_commands() -> list[list[str]]:
    """The server command of every MCP config on the page: JSON `mcpServers`, TOML `mcp_servers`, and the
    `claude mcp add` / `codex mcp add` lines (what follows `--`)."""
    out = []
    for block in blocks("json"):
        for server in json.loads(block).get("mcpServers", {}).values():
            out.append([server["command"], *server["args"]])
    for block in blocks("toml"):
        for server in tomllib.loads(block)["mcp_servers"].values():
            out.append([server["command"], *server["args"]])
    text = PAGE.read_text(encoding="utf-8")
    for line in re.findall(r"(?:claude|codex) mcp add [^`\n]+", text):
        words = shlex.split(line)
        out.append(words[words.index("--") + 1 :])
    return out


def hook_commands() -> dict[str, str]:
    [settings] = [json.loads(b) for b in blocks("json") if "hooks" in json.loads(b)]
    return {event: entry["hooks"][0]["command"] for event, [entry] in settings["hooks"].items()}


def test_the_pages_json_toml_and_python_parse_and_name_one_server_command() -> None:
    assert len(blocks("json")) == 2 and len(blocks("toml")) == 1
    for block in blocks("python"):
        compile(block, str(PAGE), "exec")
    commands = mcp_commands()
    assert len(commands) == 4  # Claude Desktop/Cursor JSON, Codex TOML, `claude mcp add`, `codex mcp add`
    assert all(c == [f"{CHECKOUT}/.venv/bin/memory-pipeline", "mcp"] for c in commands), commands
    assert set(hook_commands()) == {"PreCompact", "SessionEnd"}


def _alive(pid: int) -> bool:
    """Whether the background import (a child of no process of ours: its own session) still runs."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")  # a zombie has ended


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "ANTHROPIC_API_KEY"}
    return {**env, "MEMORY_PIPELINE_HOME": str(tmp_path / "ws"), "DAGSTER_HOME": str(tmp_path / "dagster_home"),
            "MEMORY_PIPELINE_EMBEDDER": "hashing-bow-256", "MEMORY_PIPELINE_JOURNAL_GIT": "0",
            "MEMORY_PIPELINE_LLM": "offline"}  # fmt: skip


@pytest.mark.slow  # starts the MCP server (a few seconds)
def test_the_configured_mcp_server_answers_tools_list(tmp_path: Path) -> None:
    command = [part.replace(CHECKOUT, str(ROOT)) for part in mcp_commands()[0]]
    hello = {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "docs", "version": "1"}}
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": hello},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    log = tmp_path / "mcp-stderr.txt"
    with log.open("w") as stderr:  # a file, not a pipe: a full pipe would stall the server
        proc = subprocess.Popen(command, env=_env(tmp_path), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                stderr=stderr, text=True)  # fmt: skip
    answers: dict[object, dict] = {}
    answered = threading.Event()

    def read() -> None:  # the replies, until the one to tools/list (or the server's end)
        assert proc.stdout is not None
        for raw in proc.stdout:
            reply = json.loads(raw)
            answers[reply.get("id")] = reply
            if reply.get("id") == 2:
                break
        answered.set()

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    try:
        assert proc.stdin is not None
        proc.stdin.write("".join(json.dumps(line) + "\n" for line in lines))
        proc.stdin.flush()
        # as an MCP host does, stdin stays open until the reply came (a closed stdin ends the server, and with it
        # a request still being answered)
        assert answered.wait(WAIT_S), "no reply to tools/list within the wait (minutes)"
        proc.stdin.close()
        proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=WAIT_S)
    err = log.read_text()
    tools = {t["name"] for t in answers[2]["result"]["tools"]}
    assert {"search", "context", "flush", "remember", "forget"} <= tools, (tools, err[-2000:])


@pytest.mark.slow  # the SessionEnd hook rebuilds a day's journal through the journal job (~30 s)
def test_the_claude_code_hooks_import_the_session_they_are_given(tmp_path: Path) -> None:
    """A session under a folder with spaces (`/Users/Jane Doe/.claude/…`) is imported, into the workspace the hook
    names (the MCP server's), not whatever MEMORY_PIPELINE_HOME the host's environment happens to hold."""
    session = tmp_path / "Jane Doe" / "project" / "3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c.jsonl"
    session.parent.mkdir(parents=True)
    lines = (CC_SESSION / session.name).read_text(encoding="utf-8").splitlines(keepends=True)
    session.write_text("".join(lines[:6]), encoding="utf-8")  # the session so far, before its compaction
    env = _env(tmp_path)  # its MEMORY_PIPELINE_HOME: another workspace, which must stay untouched
    home = tmp_path / "my workspace"

    def run(event: str) -> str:
        event_input = {"session_id": "3f2a9c1e-7b4d-4e8a-9c2f-5d6e7f8a9b0c", "transcript_path": str(session),
                       "cwd": str(tmp_path), "hook_event_name": event}  # fmt: skip
        command = hook_commands()[event].replace(CHECKOUT, str(ROOT))
        assert f"MEMORY_PIPELINE_HOME={WORKSPACE} " in command
        command = command.replace(WORKSPACE, shlex.quote(str(home)))
        done = subprocess.run(["bash", "-c", command], input=json.dumps(event_input), env=env, capture_output=True,
                              text=True, timeout=WAIT_S, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return done.stdout

    assert "1 new transcript(s)" in run("PreCompact")
    assert not (home / "knowledge" / "journal" / "2026-10-14.md").exists()  # --no-journals: compaction waits less
    session.write_text("".join(lines), encoding="utf-8")  # the session went on to its end
    said = run("SessionEnd")  # the hook hands the import to a process of its own and returns (its time budget)
    match = re.search(r"importing in the background \(pid (\d+)\) into workspace (.+);", said)
    assert match and Path(match.group(2)) == home, said
    log = home / "reports" / "background-imports.log"
    deadline = time.monotonic() + WAIT_S
    while not (log.is_file() and "rebuilding the journals of 2026-10-14" in log.read_text() and not _alive(
            int(match.group(1)))):  # fmt: skip
        assert time.monotonic() < deadline, f"the background import did not finish in {WAIT_S} s: {log.read_text()}"
        time.sleep(0.5)
    out = log.read_text()
    assert "0 new transcript(s), 1 updated" in out and "Traceback" not in out, out
    assert (home / "knowledge" / "journal" / "2026-10-14.md").is_file()
    assert not Path(env["MEMORY_PIPELINE_HOME"]).exists()


# The hosts' own command-line clients, from the npm registry (versions as tried by hand; a newer one is welcome)
CLIENTS = {"claude": "@anthropic-ai/claude-code@2.1.197", "codex": "@openai/codex@0.171.0"}
INSPECTOR = "@modelcontextprotocol/inspector@0.15.0"  # its CLI types each --tool-arg from the tool's schema


@pytest.fixture(scope="module")
def clients(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """`claude` and `codex` installed from npm into a folder of this test run; skipped, saying why, where npm or
    the registry is missing."""
    import shutil

    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not installed: the real claude and codex clients come from the npm registry")
    prefix = tmp_path_factory.mktemp("npm clients")
    wanted = [*CLIENTS.values(), INSPECTOR]
    done = subprocess.run([npm, "install", "--no-audit", "--no-fund", "--prefix", str(prefix), *wanted],
                          capture_output=True, text=True, timeout=WAIT_S, check=False)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"npm could not install {', '.join(wanted)}: {done.stderr.strip()[-300:]}")
    return {name: prefix / "node_modules" / ".bin" / name for name in [*CLIENTS, "mcp-inspector"]}


def _page_line(client: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    [line] = re.findall(rf"{client} mcp add [^`\n]+", text)
    return shlex.split(line)


@pytest.mark.slow  # installs the clients from npm and lets them start the server
@pytest.mark.parametrize("client", sorted(CLIENTS))
def test_the_real_clients_take_the_pages_mcp_add_line(clients: dict[str, Path], client: str, tmp_path: Path) -> None:
    """The page's `claude mcp add` / `codex mcp add`, run by the real client as written (the placeholders filled
    with paths that hold spaces): the client accepts it, configures the workspace, and its `mcp list` sees the
    server."""
    home = tmp_path / "my workspace"
    argv = [str(clients[client]), *_page_line(client)[1:]]
    argv = [a.replace(CHECKOUT, str(ROOT)).replace(WORKSPACE, str(home)) for a in argv]
    env = {**_env(tmp_path), "HOME": str(tmp_path / "user home"), "CODEX_HOME": str(tmp_path / "user home" / "codex")}
    Path(env["CODEX_HOME"]).mkdir(parents=True)
    added = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=WAIT_S, check=False)
    assert added.returncode == 0, added.stdout + added.stderr
    if client == "claude":
        config = json.loads((Path(env["HOME"]) / ".claude.json").read_text())["mcpServers"]["memory"]
        assert config["env"] == {"MEMORY_PIPELINE_HOME": str(home)} and config["args"] == ["mcp"]
    else:
        config = tomllib.loads((Path(env["CODEX_HOME"]) / "config.toml").read_text())["mcp_servers"]["memory"]
        assert config["env"] == {"MEMORY_PIPELINE_HOME": str(home)} and config["args"] == ["mcp"]
    listed = subprocess.run([str(clients[client]), "mcp", "list"], env=env, capture_output=True, text=True,
                            timeout=WAIT_S, check=False)  # fmt: skip
    assert listed.returncode == 0, listed.stdout + listed.stderr
    if client == "claude":  # it starts the server and asks it for its tools
        assert "memory:" in listed.stdout and "Connected" in listed.stdout, listed.stdout + listed.stderr
    else:
        assert "memory" in listed.stdout and "enabled" in listed.stdout, listed.stdout + listed.stderr


@pytest.mark.slow  # installs the Inspector from npm and lets it start the server
def test_the_inspector_cli_passes_a_budget_and_an_importance(clients: dict[str, Path], tmp_path: Path) -> None:
    """The MCP Inspector's CLI types `--tool-arg budget=1500` from the tool's schema: with `anyOf [integer, null]`
    it sent the string "1500" (refused); a plain integer schema makes it a number, used as the budget."""
    server = [part.replace(CHECKOUT, str(ROOT)) for part in mcp_commands()[0]]
    env = _env(tmp_path)
    Path(env["MEMORY_PIPELINE_HOME"]).mkdir()

    def call(tool: str, *args: str) -> dict:
        done = subprocess.run([str(clients["mcp-inspector"]), "--cli", *server, "--method", "tools/call",
                               "--tool-name", tool, *[a for arg in args for a in ("--tool-arg", arg)]],
                              env=env, capture_output=True, text=True, timeout=WAIT_S, check=False)  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        return json.loads(done.stdout)

    remembered = call("remember", "text=The retro is on Thursdays at 16:30.", "importance=2", "id=retro")
    assert not remembered.get("isError"), remembered
    context = call("context", "message=When is the retro?", "budget=1500")
    assert not context.get("isError") and context["structuredContent"]["budget"] == 1500, context


def _running(needle: str) -> list[int]:
    """Processes whose command line holds `needle` (the background import outlives the hook that started it)."""
    out = []
    for cmdline in Path("/proc").glob("[0-9]*/cmdline"):
        try:
            if needle.encode() in cmdline.read_bytes() and _alive(int(cmdline.parent.name)):
                out.append(int(cmdline.parent.name))
        except (OSError, ValueError):
            continue
    return out


@pytest.mark.slow  # the real Claude Code from npm ends a session and runs the page's hooks (a journal rebuild)
def test_the_real_claude_code_runs_the_pages_session_end_hook_within_its_budget(
    clients: dict[str, Path], tmp_path: Path
) -> None:
    """`claude -p`, answered by a local stand-in for the Messages API, ends its session and runs the page's
    SessionEnd hook under Claude Code's own budget (1.5 s for all SessionEnd hooks: a hook that takes longer is
    printed as "Hook cancelled"); the import it hands off writes the transcript and that day's journal, in the
    workspace the hook names, under a home folder whose path holds a space."""
    from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI

    user_home = tmp_path / "Jane Doe"
    project = tmp_path / "project"
    home = tmp_path / "my workspace"
    (user_home / ".claude").mkdir(parents=True)
    project.mkdir()
    [settings] = [json.loads(b) for b in blocks("json") if "hooks" in json.loads(b)]
    raw = json.dumps(settings).replace(CHECKOUT, str(ROOT)).replace(WORKSPACE, shlex.quote(str(home)))
    (user_home / ".claude" / "settings.json").write_text(raw, encoding="utf-8")
    fake = FakeAnthropicAPI()
    fake.reply_when(lambda system, user: True, "The retro is on Thursdays at 16:30.")
    with fake.serve() as base:
        env = {**_env(tmp_path), "HOME": str(user_home), "ANTHROPIC_BASE_URL": base, "ANTHROPIC_API_KEY": TEST_KEY,
               "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}  # fmt: skip
        done = subprocess.run([str(clients["claude"]), "-p", "When is the retro?"], cwd=project, env=env,
                              capture_output=True, text=True, timeout=WAIT_S, check=False)  # fmt: skip
    assert done.returncode == 0 and "Thursdays at 16:30" in done.stdout, done.stdout + done.stderr
    assert any(s.key_ok and s.body and s.body.get("stream") for s in fake.requests("messages")), fake.seen
    assert "Hook cancelled" not in done.stderr and "hook" not in done.stderr.lower(), done.stderr
    [session] = (user_home / ".claude" / "projects").glob("*/*.jsonl")
    deadline = time.monotonic() + WAIT_S
    while _running(session.stem) or not (home / "knowledge" / "journal").is_dir():
        assert time.monotonic() < deadline, f"the background import of {session} did not end in {WAIT_S} s"
        time.sleep(0.5)
    log = (home / "reports" / "background-imports.log").read_text(encoding="utf-8")
    assert "1 new transcript(s)" in log and "Traceback" not in log, log
    assert len(list((home / "knowledge" / "journal").glob("*.md"))) == 1, log
    assert not Path(env["MEMORY_PIPELINE_HOME"]).exists()
