"""Hostile configuration and input: one line instead of a raw traceback.

Every case runs the CLI in this process (`memory_pipeline.cli.main`) and asserts the exit code, the one line on
stderr (never a traceback) and what the workspace holds before and after: the files, and the store's rows.
Bring-your-own embeddings (9), a SOUL.md that is not UTF-8 (10), `history` on several commits (11), malformed
environment settings (12), and text arguments, a damaged index, a closed stdin, a bad port and a fleet root that
cannot be written for the rest.
"""

from __future__ import annotations

import errno
import json
import math
import os
import sqlite3
import struct
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import numpy as np
import pytest

from memory_pipeline.cli import main
from memory_pipeline.context.sample import install_sample_knowledge
from memory_pipeline.embedding.spec import HASHING, MINILM
from memory_pipeline.operator.environment import check_environment, journal_retention_days
from memory_pipeline.search.arrays_file import read_arrays, write_arrays
from memory_pipeline.search.index import current_folder
from memory_pipeline.search.live import clear_cache, default_embedder
from memory_pipeline.settings import SettingsError

OPENAI = "text-embedding-3-small"  # 1536-d (embedding/models.json)
CREATED = "2026-11-01T10:00:00Z"


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty workspace; no key, no fault or hold point, the offline LLM and the fast built-in embedder."""
    ws = tmp_path / "ws"
    ws.mkdir()
    for var in list(os.environ):
        if var.startswith(("MEMORY_PIPELINE_", "COMPRESSION_", "NIGHTLY_CONSOLIDATION_")) or var == "ANTHROPIC_API_KEY":
            monkeypatch.delenv(var)
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(ws))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.setenv("MEMORY_PIPELINE_LLM", "offline")
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", HASHING)
    clear_cache()
    return ws


def files(root: Path) -> dict[str, bytes]:
    """Every regular file under `root` with its bytes (the search index is derived data, and left out)."""
    if not root.exists():
        return {}
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and p.relative_to(root).parts[0] != "index"
    }


def store_rows(home: Path) -> tuple[int, int]:
    """(memories, embeddings) in the workspace's store; (0, 0) without one."""
    path = home / "memory.duckdb"
    if not path.exists():
        return 0, 0
    with duckdb.connect(str(path), read_only=True) as con:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        if "memories" not in tables:
            return 0, 0
        memories = con.execute("SELECT count(*) FROM memories").fetchone()
        embeddings = con.execute("SELECT count(*) FROM embeddings").fetchone()
    return int(memories[0]) if memories else 0, int(embeddings[0]) if embeddings else 0


def run(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def one_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err, err
    assert len(lines) == 1, f"expected one line on stderr, got {lines!r}"
    return lines[0]


# ---------------------------------------------------------------------------------------------------------------
# 12. Every environment setting is checked before a command starts: one line naming it, nothing written.


@dataclass(frozen=True)
class EnvCase:
    name: str
    env: dict[str, str]
    message: str  # a fragment of the one line, after "configuration error: "


ENV_CASES = [
    EnvCase("negative retention", {"MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS": "-3"},
            "MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS='-3': must be ≥ 0"),
    EnvCase("retention not a number", {"MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS": "ninety"},
            "MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS='ninety': expected a whole number"),
    EnvCase("unknown time zone", {"MEMORY_PIPELINE_JOURNAL_TZ": "Mars/Olympus"},
            "MEMORY_PIPELINE_JOURNAL_TZ='Mars/Olympus': expected an IANA time zone"),
    EnvCase("cron that is prose", {"NIGHTLY_CONSOLIDATION_CRON": "every night"},
            "NIGHTLY_CONSOLIDATION_CRON='every night': expected a five-field cron string"),
    EnvCase("unknown LLM mode", {"MEMORY_PIPELINE_LLM": "claude"},
            "MEMORY_PIPELINE_LLM='claude': expected one of auto, offline, anthropic, batch"),
    EnvCase("journal start not a date", {"MEMORY_PIPELINE_JOURNAL_START": "last year"},
            "MEMORY_PIPELINE_JOURNAL_START='last year': expected a date as YYYY-MM-DD"),
    EnvCase("zero concurrent runs", {"MEMORY_PIPELINE_MAX_CONCURRENT_RUNS": "0"},
            "MEMORY_PIPELINE_MAX_CONCURRENT_RUNS='0': must be ≥ 1"),
    EnvCase("decay rate not a number", {"MEMORY_PIPELINE_DECAY_RATE": "fast"},
            "MEMORY_PIPELINE_DECAY_RATE='fast': expected a number"),
    EnvCase("webhook not http", {"MEMORY_PIPELINE_WEBHOOK_URL": "ftp://hooks.example"},
            "MEMORY_PIPELINE_WEBHOOK_URL='ftp://hooks.example': expected an http:// or https:// URL"),
    EnvCase("engine threshold above 1", {"COMPRESSION_SIMILARITY_THRESHOLD": "3"},
            "COMPRESSION_SIMILARITY_THRESHOLD='3': must be ≤ 1"),
    EnvCase("unknown embedder model", {"MEMORY_PIPELINE_EMBEDDER": OPENAI},
            f"MEMORY_PIPELINE_EMBEDDER={OPENAI}: unknown model"),
    EnvCase("imported without a name", {"MEMORY_PIPELINE_EMBEDDER": "imported:"},
            "MEMORY_PIPELINE_EMBEDDER=imported: needs a model name"),
]  # fmt: skip


@pytest.mark.parametrize("case", ENV_CASES, ids=lambda c: c.name)
@pytest.mark.parametrize("command", [["status"], ["search", "docker"], ["monthly", "--dry-run"]])
def test_a_malformed_setting_is_one_line_naming_it_and_nothing_runs(
    case: EnvCase, command: list[str], home: Path, monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    install_sample_knowledge(home)
    before = files(home)
    for var, value in case.env.items():
        monkeypatch.setenv(var, value)
    code, out, err = run(command, capsys)
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.startswith("configuration error: ") and case.message in line, line
    assert files(home) == before and current_folder(home) is None  # nothing ran: not even an index was built


def test_retention_is_read_when_used_not_at_import_and_a_valid_one_is_accepted() -> None:
    from memory_pipeline.defs.journals.knowledge_files import ArchiveConfig
    from memory_pipeline.journals.monthly import retention_days

    assert ArchiveConfig().retention_days is None  # no environment read while the definitions load
    assert journal_retention_days({}) == 90 and retention_days({"MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS": "0"}) == 0
    with pytest.raises(SettingsError, match="RETENTION_DAYS='-1'"):
        retention_days({"MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS": "-1"})
    check_environment({"MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS": "30", "MEMORY_PIPELINE_JOURNAL_TZ": "Europe/Paris",
                       "NIGHTLY_CONSOLIDATION_CRON": "30 3 * * 1-5", "MEMORY_PIPELINE_EMBEDDER": f"imported:{OPENAI}"})


# ---------------------------------------------------------------------------------------------------------------
# 9. Bring-your-own embeddings: search uses an index, and a vector with no direction is refused at import.


def vector(value: float, dim: int = 1536) -> list[float]:
    return [value] * dim


def jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def memory(mid: str, content: str, emb: list[float] | None = None) -> dict:
    row: dict = {"id": mid, "content": content, "importance": 1.0, "created_at": CREATED}
    if emb is not None:
        row.update(embedding=emb, embedding_model=OPENAI)
    return row


@dataclass(frozen=True)
class VectorCase:
    name: str
    bad: list[float] | str  # a JSON text for values json.dumps would not write (NaN, 1e400)
    message: str


VECTOR_CASES = [
    VectorCase("all zeros", vector(0.0), "is all zeros"),
    VectorCase("absurd norm", vector(1e38), "length 3.92e+39 is outside 1e-06–1e+06"),
    VectorCase("vanishing norm", vector(1e-12), "is outside 1e-06–1e+06"),
    VectorCase("NaN", "[" + ", ".join(["NaN"] * 1536) + "]", "must be a finite number"),
    VectorCase("overflows float64", "[" + ", ".join(["1e400"] * 1536) + "]", "must be a finite number"),
]


@pytest.mark.parametrize("case", VECTOR_CASES, ids=lambda c: c.name)
def test_an_import_with_a_vector_of_no_direction_is_rejected_naming_file_row_and_field(
    case: VectorCase, home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    good = json.dumps(memory("m-good", "Deploys go out on Tuesdays.", vector(0.01)))
    bad = json.dumps(memory("m-bad", "Rollback with the blue-green switch.", vector(0.5)))
    if isinstance(case.bad, str):
        bad = bad.replace(json.dumps(vector(0.5)), case.bad)
    else:
        bad = bad.replace(json.dumps(vector(0.5)), json.dumps(case.bad))
    path = tmp_path / "in.jsonl"
    path.write_text(good + "\n" + bad + "\n", encoding="utf-8")
    before = store_rows(home), files(home)
    code, out, err = run(["import", str(path)], capsys)
    assert code == 2 and out == ""
    first = err.splitlines()[0]
    assert "Traceback" not in err and first.startswith(f"error: import of {path} rejected, nothing was written: ")
    assert f"{path}:2: field 'embedding': " in first and case.message in first, first
    assert store_rows(home) == before[0] == (0, 0)  # the good line is not written either
    assert {k for k in files(home) if not k.startswith("memory.duckdb")} == set(before[1])  # (an empty store may be)


def test_a_brain_db_vector_of_zeros_is_rejected_naming_its_embeddings_row(
    home: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    db = tmp_path / "brain.db"
    with sqlite3.connect(db) as con:
        con.execute("CREATE TABLE memories (id TEXT, content TEXT, importance REAL, created_at TEXT)")
        con.execute("CREATE TABLE embeddings (memory_id TEXT, model TEXT, vector BLOB)")
        con.execute("INSERT INTO memories VALUES ('m1', 'Deploys go out on Tuesdays.', 1.0, ?)", [CREATED])
        con.execute("INSERT INTO embeddings VALUES ('m1', ?, ?)", [OPENAI, struct.pack("<1536f", *vector(0.0))])
    code, out, err = run(["import", str(db)], capsys)
    assert code == 2 and out == "" and "Traceback" not in err
    assert f"{db}: embeddings row 1: field 'vector': is all zeros" in err.splitlines()[0]
    assert store_rows(home) == (0, 0)


@pytest.mark.parametrize(
    ("env", "model"),
    [
        ({"MEMORY_PIPELINE_EMBEDDER": f"imported:{OPENAI}"}, MINILM),  # nothing can embed a query in its space
        ({"MEMORY_PIPELINE_EMBEDDER": f"imported:{OPENAI}",
          "MEMORY_PIPELINE_EMBEDDER_PLUGIN": "memory_pipeline.embedding.plugins.example:toy_1536"}, OPENAI),
        ({"MEMORY_PIPELINE_EMBEDDER": HASHING}, HASHING),
        ({}, MINILM),
    ],
)  # fmt: skip
def test_search_embeds_with_the_nights_setting(env: dict[str, str], model: str, home: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:  # fmt: skip
    monkeypatch.delenv("MEMORY_PIPELINE_EMBEDDER")
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    encode, name = default_embedder()
    assert name == model and np.asarray(encode(["docker disk"])).shape[0] == 1
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", OPENAI)
    monkeypatch.delenv("MEMORY_PIPELINE_EMBEDDER_PLUGIN", raising=False)
    with pytest.raises(SettingsError, match=f"MEMORY_PIPELINE_EMBEDDER={OPENAI}: unknown model"):
        default_embedder()  # a configuration error, never a silent keyword fallback


def test_with_imported_vectors_search_uses_an_index_and_finds_the_exact_match(
    home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", f"imported:{OPENAI}")  # the README's own step
    rows = [memory(f"m{i}", text, [0.01 * (i + 1)] * 1536) for i, text in enumerate(
        ["Prune Docker layers nightly on the CI runners.", "Deploys go out on Tuesdays after the standup."])]
    code, out, _ = run(["import", str(jsonl(tmp_path / "in.jsonl", rows))], capsys)
    assert code == 0 and "imported 2 memories (2 with vectors)" in out and store_rows(home) == (2, 2)
    code, out, err = run(["search", "--rebuild", "prune Docker layers", "--json"], capsys)
    assert code == 0 and "imported:imported" not in out + err and "index rebuilt" in err
    answer = json.loads(out)
    assert answer["mode"] == "index" and "rebuilt" not in answer["notice"] and answer["hits"][0]["id"] == "m0"
    code, out, _ = run(["search", "prune Docker layers", "--json"], capsys)  # a second call: the same index
    assert code == 0 and json.loads(out)["notice"] == "" and json.loads(out)["hits"][0]["id"] == "m0"
    assert store_rows(home) == (2, 2)


# ---------------------------------------------------------------------------------------------------------------
# 10. A SOUL.md with one latin-1 byte is in P0, decoded as search decodes it.


def test_a_soul_md_with_a_latin1_byte_stays_in_p0_and_in_the_manifest(
    home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", MINILM)  # relevance is calibrated for it
    install_sample_knowledge(home)
    soul = home / "knowledge" / "identity" / "SOUL.md"
    soul.write_bytes(soul.read_bytes() + "\nCaf\xe9 rule: answer in one line.\n".encode("latin-1"))
    before = soul.read_bytes()
    code, out, err = run(["context", "hello there", "--json"], capsys)
    assert code == 0 and "Traceback" not in err
    data = json.loads(out)
    assert "Caf\ufffd rule: answer in one line." in data["prompt"]
    entry = next(e for e in data["manifest"] if e.get("path") == "knowledge/identity/SOUL.md")
    assert entry["included"] is True, entry
    code, out, _ = run(["search", "never invent a number", "--json"], capsys)
    assert code == 0 and json.loads(out)["hits"][0]["id"] == "knowledge/identity/SOUL.md"  # and search has it
    assert soul.read_bytes() == before


# ---------------------------------------------------------------------------------------------------------------
# 11. history: one change per commit.


def git(repo: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True, timeout=60)


@pytest.fixture
def knowledge_repo(home: Path) -> Path:
    """Eight commits, each a journal of its own and a new MEMORY.md line, all holding the phrase."""
    git(home, "init", "-q")
    git(home, "config", "user.email", "t@localhost")
    git(home, "config", "user.name", "t")
    for day in range(1, 9):
        journal = home / "knowledge" / "journal" / f"2026-11-0{day}.md"
        journal.parent.mkdir(parents=True, exist_ok=True)
        journal.write_text(f"- Decided: prune Docker layers nightly (day {day})\n", encoding="utf-8")
        md = home / "knowledge" / "memory" / "MEMORY.md"
        md.parent.mkdir(parents=True, exist_ok=True)
        md.write_text((md.read_text(encoding="utf-8") if md.exists() else "") + f"- line {day}\n", encoding="utf-8")
        git(home, "add", "-A")
        git(home, "commit", "-q", "-m", f"extract: journal 2026-11-0{day}", "-m", f"Sessions: ses_{day}")
    return home


def test_history_lists_one_change_per_commit(knowledge_repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = files(knowledge_repo)
    code, out, err = run(["history", "prune", "Docker", "layers", "nightly"], capsys)
    assert code == 0 and err == ""
    assert out.strip().endswith("(extract: journal 2026-11-01): knowledge/journal/2026-11-01.md; sessions: ses_1")
    assert "2026-11-02" not in out  # no later commit glued into the first one's files
    code, out, _ = run(["history", "--file", "knowledge/memory/MEMORY.md"], capsys)
    lines = out.strip().splitlines()
    assert code == 0 and len(lines) == 8
    assert [line.split("  ")[2] for line in lines] == [f"extract: journal 2026-11-0{d}" for d in range(8, 0, -1)]
    assert all(line.endswith(f"(sessions: ses_{d})") for line, d in zip(lines, range(8, 0, -1), strict=True))
    assert files(knowledge_repo) == before


# ---------------------------------------------------------------------------------------------------------------
# Raw tracebacks instead of one line.


@dataclass(frozen=True)
class LineCase:
    name: str
    argv: list[str]
    message: str
    code: int = 2
    setup: Callable[[Path, pytest.MonkeyPatch], None] = field(default=lambda home, mp: None)


def closed_stdin(home: Path, mp: pytest.MonkeyPatch) -> None:
    mp.setattr(sys, "stdin", None)  # what Python makes of `flush - <&-`


LINE_CASES = [
    LineCase("search with a non-UTF-8 byte", ["search", "disk\udcff full"],
             "error: the query argument is not valid UTF-8 text (byte 0xff at character 5); pass it as UTF-8"),
    LineCase("context with a non-UTF-8 byte", ["context", "\udce9t\udce9"],
             "error: the message argument is not valid UTF-8 text (byte 0xe9 at character 1); pass it as UTF-8"),
    LineCase("flush - with stdin closed", ["flush", "-"],
             "error: stdin is closed: pipe the turns in (… | memory-pipeline flush -) or give a FILE",
             setup=closed_stdin),
    LineCase("mcp on port 99999", ["mcp", "--transport", "http", "--port", "99999"],
             "error: --port 99999: expected a TCP port from 1 to 65535"),
    LineCase("mcp on port 0", ["mcp", "--transport", "http", "--port", "0"],
             "error: --port 0: expected a TCP port from 1 to 65535"),
]  # fmt: skip


@pytest.mark.parametrize("case", LINE_CASES, ids=lambda c: c.name)
def test_bad_input_is_one_line_and_writes_nothing(
    case: LineCase, home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    install_sample_knowledge(home)
    case.setup(home, monkeypatch)
    before = files(home), store_rows(home)
    code, out, err = run(case.argv, capsys)
    assert code == case.code and out == ""
    assert one_line(err) == case.message
    assert (files(home), store_rows(home)) == before


def _arrays(folder: Path) -> Path:
    """The arrays file (vectors, postings, texts) of the index version's (only) segment."""
    (entry,) = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["segments"]
    return folder.parent / "segments" / entry["name"] / "arrays.bin"


def _vectors(folder: Path) -> np.ndarray:
    return read_arrays(_arrays(folder))[1]["vectors"]


def _with_vectors(folder: Path, vectors: np.ndarray) -> None:
    stats, arrays, _ = read_arrays(_arrays(folder))
    kept = {name: np.array(a) for name, a in arrays.items()}
    _arrays(folder).unlink()
    write_arrays(_arrays(folder), {**kept, "vectors": vectors}, stats)


def damage_rows(folder: Path) -> None:
    vectors = _vectors(folder)
    _with_vectors(folder, np.array(vectors[: len(vectors) // 2]))


def damage_dimension(folder: Path) -> None:
    _with_vectors(folder, np.ones((len(_vectors(folder)), 7), dtype=np.float32))


def damage_truncate(folder: Path) -> None:
    data = _arrays(folder).read_bytes()
    _arrays(folder).write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("damage", [damage_rows, damage_dimension, damage_truncate], ids=lambda f: f.__name__)
def test_a_damaged_index_is_rebuilt_and_says_so(
    damage: Callable[[Path], None], home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_EMBEDDER", MINILM)  # relevance is calibrated for it
    install_sample_knowledge(home)
    code, out, _ = run(["search", "--rebuild", "deploy", "--json"], capsys)
    assert code == 0
    folder = current_folder(home)
    assert folder is not None
    docs = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["docs"]
    damage(folder)
    clear_cache()  # a new process, as a CLI call is
    code, out, err = run(["search", "deploy", "--json"], capsys)
    assert code == 0 and "Traceback" not in err
    answer = json.loads(out)
    assert answer["mode"] == "index" and answer["hits"][0]["id"] == "knowledge/procedures/deploy-runbook.md"
    assert "search index" in answer["notice"] and "index built now" in answer["notice"], answer["notice"]
    assert "damaged" in answer["notice"] or "unreadable" in answer["notice"]
    rebuilt = current_folder(home)
    assert rebuilt is not None and rebuilt != folder
    assert _vectors(rebuilt).shape[0] == docs


# ---------------------------------------------------------------------------------------------------------------
# The fleet CLI: a fleet root that is a file, a read-only file system, a full disk.


@pytest.fixture
def fleet(tmp_path: Path, home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "fleet"
    root.mkdir()
    monkeypatch.setenv("MEMORY_PIPELINE_FLEET_ROOT", str(root))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "no_instance"))  # the partition sync only notes it
    return root


def test_a_fleet_root_that_is_a_file_is_one_line(
    fleet: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    regular = tmp_path / "not-a-dir"
    regular.write_text("x\n", encoding="utf-8")
    monkeypatch.setenv("MEMORY_PIPELINE_FLEET_ROOT", str(regular))
    for argv in (["agents", "add", "alpha"], ["agents", "remove", "alpha"], ["agents", "list"]):
        code, out, err = run(argv, capsys)
        assert code == 2 and out == ""
        assert one_line(err) == (f"error: MEMORY_PIPELINE_FLEET_ROOT={regular}: is a file, not a directory; "
                                 "point it at the fleet's shared folder")  # fmt: skip
    assert regular.read_text(encoding="utf-8") == "x\n"


def read_only(*args: object, **kwargs: object) -> None:
    """What mkdir and rename do on a file system mounted read-only (as root, a chmod would not stop them)."""
    raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(args[0]))


def test_a_read_only_fleet_root_is_one_line_and_the_agent_stays(
    fleet: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    with monkeypatch.context() as mp:
        mp.setattr(Path, "mkdir", read_only)
        code, out, err = run(["agents", "add", "alpha"], capsys)
    assert code == 2 and out == ""
    assert one_line(err) == f"error: cannot create the agents folder {fleet / 'agents'}: Read-only file system"
    assert files(fleet) == {} and not (fleet / "agents").exists()
    code, out, _ = run(["agents", "add", "alpha"], capsys)
    assert code == 0 and out.startswith("added alpha")
    before = files(fleet)
    with monkeypatch.context() as mp:
        mp.setattr(os, "rename", read_only)
        code, out, err = run(["agents", "remove", "alpha"], capsys)
    assert code == 2 and out == ""
    line = one_line(err)
    assert line.startswith(f"error: cannot move agent 'alpha''s workspace to {fleet / 'archive'}/alpha@")
    assert line.endswith(": Read-only file system")
    assert files(fleet) == before and (fleet / "agents" / "alpha" / "agent.json").is_file()


def test_an_add_that_fills_the_disk_leaves_no_temp_folder(
    fleet: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_FAIL_AT", "agent_add_write")  # ENOSPC after the store, before the marker
    code, out, err = run(["agents", "add", "alpha"], capsys)
    assert code == 2 and out == ""
    assert one_line(err) == (f"error: cannot create the workspace of agent 'alpha' in {fleet / 'agents'}: "
                             "No space left on device")  # fmt: skip
    assert sorted(p.name for p in (fleet / "agents").iterdir()) == []  # no .adding-alpha-<pid>/ left behind
    monkeypatch.delenv("MEMORY_PIPELINE_FAIL_AT")
    code, out, _ = run(["agents", "list"], capsys)
    assert code == 0 and out.startswith("no agents in")
    code, out, _ = run(["agents", "add", "alpha"], capsys)  # and a retry on a disk with room works
    assert code == 0 and (fleet / "agents" / "alpha" / "memory.duckdb").is_file()


def test_the_vector_norm_bounds_are_what_the_message_says() -> None:
    from memory_pipeline.store.records import VECTOR_NORM_RANGE, RecordError, check_vector

    assert VECTOR_NORM_RANGE == (1e-6, 1e6)
    check_vector([1e-6, 0.0], "x:1", "embedding")  # the bounds themselves are accepted
    check_vector([1e6], "x:1", "embedding")
    for bad in ([math.inf], [math.nan, 1.0], [0.0, 0.0], [2e6]):
        with pytest.raises(RecordError):
            check_vector(bad, "x:1", "embedding")
