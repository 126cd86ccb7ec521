"""Where secrets still lie in a workspace: what was stored before a redaction rule existed (or while the workspace
kept text verbatim) stays there, and `memory-pipeline doctor --secrets` finds it with the rules of today.

Every file under the workspace and under DAGSTER_HOME is read, by what it is rather than where it lies: a DuckDB
file (the store, its backups) table by table, every text column; a SQLite file (Dagster's run and event storage)
the same way; a Parquet file column by column; the workspace's git history blob by blob and commit message by
commit message; any other file as text (line numbers), or as bytes when it is not text (byte offsets). The one
detector is `redaction.find`; a finding says where and what kind, never the secret.
"""

from __future__ import annotations

import os
import re
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memory_pipeline import redaction

DAGSTER_LABEL = "DAGSTER_HOME"
SQLITE_MAGIC, PARQUET_MAGIC, DUCKDB_MAGIC = b"SQLite format 3\x00", b"PAR1", b"DUCK"
STORE = "memory.duckdb"
ARROW_STREAM = b"\xff\xff\xff\xff"  # an Arrow stream's first message begins with this continuation marker
SNIFF = 8192  # bytes read to tell text from binary: a NUL among them is binary


@dataclass(frozen=True)
class Finding:
    """One secret: the file it lies in (relative to the workspace, or to DAGSTER_HOME), where in it, its kind."""

    place: str
    where: str
    kind: str

    def line(self) -> str:
        return f"{self.place}: {self.where}: {self.kind}"

    @property
    def area(self) -> str:
        """What the summary counts it under: the store, git history, DAGSTER_HOME, or the top-level folder."""
        if self.place == STORE:
            return "store"
        if self.where.startswith("commit "):
            return "git history"
        top, sep, _ = self.place.partition("/")
        return top if top == DAGSTER_LABEL else f"{top}/" if sep else top


@dataclass
class Scan:
    """What a scan found and what it read; `problems` are what it could not read (one line each)."""

    findings: list[Finding] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    files: int = 0
    rows: int = 0
    commits: int = 0


def kinds(text: str) -> list[str]:
    """The kinds of the secrets in `text` (the one detector, `redaction.find`), in order."""
    return [f.kind for f in redaction.find(text)] if text else []


def _line_of(text: str, at: int) -> int:
    return text.count("\n", 0, at) + 1


# --- databases -----------------------------------------------------------------------------------------------


def texts_of(value: Any) -> Iterator[tuple[str, str]]:
    """(where within the value, text) for a cell: a string, the strings of a list, or bytes read as UTF-8."""
    if isinstance(value, str):
        yield "", value
    elif isinstance(value, bytes | bytearray | memoryview):
        yield "", bytes(value).decode("utf-8", errors="replace")
    elif isinstance(value, list | tuple):
        for n, item in enumerate(value, 1):
            for inner, text in texts_of(item):
                yield f", item {n}{inner}", text


def _row_name(key_name: str | None, key: Any, rowid: Any) -> str:
    """The row by its primary key when that is a plain value holding no secret, else by its row number."""
    if key_name is not None and isinstance(key, str | int) and not kinds(str(key)) and len(str(key)) <= 80:
        return f"{key_name} {key!r}"
    return f"row {rowid}"


def duckdb_text_columns(con: Any) -> dict[str, tuple[list[str], str | None]]:
    """table → (its text columns: VARCHAR, VARCHAR[] and JSON; its one-column primary key, if any)."""
    columns: dict[str, list[str]] = {}
    for table, column, kind in con.execute(
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = 'main' ORDER BY table_name, ordinal_position"
    ).fetchall():
        if "VARCHAR" in kind or kind == "JSON" or kind.startswith("JSON"):
            columns.setdefault(table, []).append(column)
    keys = {t: c[0] for t, kind, c in con.execute(
        "SELECT table_name, constraint_type, constraint_column_names FROM duckdb_constraints()"
    ).fetchall() if kind == "PRIMARY KEY" and len(c) == 1}  # fmt: skip
    return {t: (cols, keys.get(t)) for t, cols in columns.items()}


def quote_name(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def table_rows(con: Any, table: str, columns: list[str], key: str | None) -> Iterator[tuple[Any, Any, tuple]]:
    """(rowid, key value, the text columns' values) for every row of `table`."""
    key_sql = quote_name(key) if key else "NULL"
    names = ", ".join(map(quote_name, columns))
    cur = con.execute(f"SELECT rowid, {key_sql}, {names} FROM {quote_name(table)}")  # noqa: S608
    while batch := cur.fetchmany(1000):
        for row in batch:
            yield row[0], row[1], tuple(row[2:])


def _scan_tables(con: Any, tables: dict[str, tuple[list[str], str | None]], place: str, scan: Scan) -> None:
    for table, (columns, key) in sorted(tables.items()):
        for rowid, key_value, values in table_rows(con, table, columns, key):
            scan.rows += 1
            for column, value in zip(columns, values, strict=True):
                for inner, text in texts_of(value):
                    for kind in kinds(text):
                        row = _row_name(key, key_value, rowid)
                        scan.findings.append(Finding(place, f"table {table}, column {column}{inner}, {row}", kind))


def scan_duckdb(path: Path, place: str, scan: Scan) -> None:
    import duckdb

    try:
        con = duckdb.connect(str(path), read_only=True)
    except duckdb.Error as exc:
        scan.problems.append(f"{place}: cannot be read now ({first_line(exc)})")
        return
    try:
        _scan_tables(con, duckdb_text_columns(con), place, scan)
    finally:
        con.close()


def sqlite_text_columns(con: sqlite3.Connection) -> dict[str, tuple[list[str], str | None]]:
    """table → (every column that may hold text or bytes, None): SQLite's columns take any value."""
    out: dict[str, tuple[list[str], str | None]] = {}
    for (table,) in con.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND sql NOT LIKE '%WITHOUT "
                                "ROWID%' AND name NOT LIKE 'sqlite_%'").fetchall():  # fmt: skip
        cols = [r[1] for r in con.execute(f"PRAGMA table_info({quote_name(table)})").fetchall()
                if not r[2] or any(t in r[2].upper() for t in ("CHAR", "TEXT", "CLOB", "BLOB", "JSON"))]  # fmt: skip
        if cols:
            out[table] = (cols, None)
    return out


def scan_sqlite(path: Path, place: str, scan: Scan) -> None:
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            _scan_tables(con, sqlite_text_columns(con), place, scan)
        finally:
            con.close()
    except sqlite3.Error as exc:
        scan.problems.append(f"{place}: cannot be read now ({first_line(exc)})")


def parquet_text_columns(table: Any) -> list[str]:
    import pyarrow as pa

    def texty(t: Any) -> bool:
        if pa.types.is_string(t) or pa.types.is_large_string(t):
            return True
        return bool((pa.types.is_list(t) or pa.types.is_large_list(t)) and texty(t.value_type))

    return [f.name for f in table.schema if texty(f.type)]


def scan_parquet(path: Path, place: str, scan: Scan) -> None:
    import pyarrow as pa
    import pyarrow.parquet as pq

    try:
        table = pq.read_table(path)
    except (pa.ArrowException, OSError) as exc:
        scan.problems.append(f"{place}: cannot be read as Parquet ({first_line(exc)})")
        return
    _scan_arrow_table(table, place, "", scan)


def _scan_arrow_table(table: Any, place: str, prefix: str, scan: Scan) -> None:
    scan.rows += table.num_rows
    for column in parquet_text_columns(table):
        for n, value in enumerate(table.column(column).to_pylist(), 1):
            for inner, text in texts_of(value):
                scan.findings += [Finding(place, f"{prefix}row {n}, column {column}{inner}", k) for k in kinds(text)]


# --- files ---------------------------------------------------------------------------------------------------


def file_kind(path: Path) -> str:
    """duckdb | sqlite | parquet | text | binary, from the file's first bytes."""
    with path.open("rb") as f:
        head = f.read(SNIFF)
    if head.startswith(SQLITE_MAGIC):
        return "sqlite"
    if head[8:12] == DUCKDB_MAGIC:
        return "duckdb"
    if head.startswith(PARQUET_MAGIC):
        return "parquet"
    if b"\x00" in head:
        return "binary"
    try:
        head.decode("utf-8")
    except UnicodeDecodeError as exc:
        if exc.start < len(head) - 4:  # not a character cut at the end of the sniffed bytes
            return "binary"
    return "text"


def scan_file(path: Path, place: str, scan: Scan) -> None:
    scan.files += 1
    try:
        kind = file_kind(path)
        if kind == "duckdb":
            return scan_duckdb(path, place, scan)
        if kind == "sqlite":
            return scan_sqlite(path, place, scan)
        if kind == "parquet":
            return scan_parquet(path, place, scan)
        data = path.read_bytes()
    except OSError as exc:
        scan.problems.append(f"{place}: cannot be read ({exc.strerror or exc})")
        return None
    if kind == "text":
        text = data.decode("utf-8", errors="replace")
        scan.findings += [Finding(place, f"line {_line_of(text, f.start)}", f.kind) for f in redaction.find(text)]
    elif not scan_pickle(data, place, scan):
        for at, text in printable_runs(data):
            scan.findings += [Finding(place, f"byte {at + f.start}", f.kind) for f in redaction.find(text)]
    return None


_PRINTABLE = re.compile(rb"[\t\n\r\x20-\x7e]{4,}")


def printable_runs(data: bytes) -> Iterator[tuple[int, str]]:
    """(byte offset, text) of each run of printable characters in a binary file: each is looked at alone, so
    two strings that merely lie side by side are not read as one (`name` then `token=…`)."""
    for m in _PRINTABLE.finditer(data):
        yield m.start(), m.group().decode("ascii")


def scan_pickle(data: bytes, place: str, scan: Scan) -> bool:
    """A pickle (Dagster's stored step outputs) read opcode by opcode, never loaded (loading runs code): each
    string it holds is looked at alone, and an Arrow stream in it (a table's bytes) row by row. False when
    `data` is not a whole pickle."""
    if len(data) < 2 or data[0] != 0x80 or not 2 <= data[1] <= 5:
        return False
    import pickletools

    try:
        ops = [(arg, at) for _, arg, at in pickletools.genops(data) if isinstance(arg, str | bytes)]
    except (ValueError, EOFError):
        return False
    for arg, at in ops:
        if isinstance(arg, bytes) and arg.startswith(ARROW_STREAM) and scan_arrow_stream(arg, place, at, scan):
            continue
        text = arg if isinstance(arg, str) else arg.decode("utf-8", errors="replace")
        scan.findings += [Finding(place, f"byte {at}", f.kind) for f in redaction.find(text)]
    return True


def scan_arrow_stream(data: bytes, place: str, at: int | None, scan: Scan) -> bool:
    """A table serialised as an Arrow stream, its text columns row by row; False when it is not one."""
    import pyarrow as pa

    try:
        table = pa.ipc.open_stream(data).read_all()
    except (pa.ArrowException, OSError):
        return False
    _scan_arrow_table(table, place, f"table at byte {at}, " if at is not None else "", scan)
    return True


def files_under(root: Path, skip: Path | None = None) -> Iterator[Path]:
    """Every regular file under `root`, links not followed, git's own folders left to `scan_git`."""
    for folder, dirs, names in os.walk(root):
        here = Path(folder)
        dirs[:] = sorted(d for d in dirs if d != ".git" and (skip is None or here / d != skip))
        for name in sorted(names):
            path = here / name
            if name == ".git" or path.is_symlink() or not path.is_file():
                continue
            yield path


# --- git -----------------------------------------------------------------------------------------------------


def run_git(repo: Path, *args: str, data: bytes | None = None) -> bytes:
    done = subprocess.run(["git", "-C", str(repo), *args], input=data, capture_output=True, check=False)
    if done.returncode != 0:
        lines = done.stderr.decode("utf-8", "replace").strip().splitlines()
        raise OSError(lines[-1] if lines else f"git {args[0]} failed")
    return done.stdout


def git_repositories(home: Path) -> list[Path]:
    """The folders under `home` that hold a git repository (`.git` folder, or file for a worktree), one per
    object store."""
    repos = [Path(folder) for folder, dirs, names in os.walk(home) if ".git" in dirs or ".git" in names]
    repos = [r for r in repos if ".git" not in r.relative_to(home).parts]
    seen: set[str] = set()
    out = []
    for repo in sorted(repos):
        try:
            common = os.path.realpath(repo / run_git(repo, "rev-parse", "--git-common-dir").decode().strip())
        except OSError:
            continue
        if common not in seen:
            seen.add(common)
            out.append(repo)
    return out


def _blobs(repo: Path) -> Iterator[tuple[str, str, bytes]]:
    """(blob id, the path it was first seen at, its bytes) for every blob any ref or reflog reaches."""
    listing = run_git(repo, "rev-list", "--all", "--reflog", "--objects").decode("utf-8", "replace")
    paths = {}
    for line in listing.splitlines():
        sha, _, path = line.partition(" ")
        if path and sha not in paths:
            paths[sha] = path
    if not paths:
        return
    out = run_git(repo, "cat-file", "--batch", data="".join(f"{s}\n" for s in paths).encode())
    at = 0
    while at < len(out):
        header_end = out.index(b"\n", at)
        sha, kind, size = out[at:header_end].decode().split()
        body = out[header_end + 1 : header_end + 1 + int(size)]
        at = header_end + 1 + int(size) + 1
        if kind == "blob":
            yield sha, paths[sha], body


def _first_commit(repo: Path, blob: str) -> str:
    found = run_git(repo, "log", "--all", "--reverse", "--format=%h", f"--find-object={blob}").decode().split()
    return found[0] if found else "unreachable"


def scan_git(repo: Path, label: str, scan: Scan) -> None:
    """Every blob and commit message of the repository at `repo` (labelled `label`, relative to the workspace)."""
    prefix = "" if label in ("", ".") else f"{label}/"
    try:
        log = run_git(repo, "log", "--all", "--reflog", "--format=%h%x1f%B%x1e").decode("utf-8", "replace")
        for entry in log.split("\x1e"):
            sha, _, message = entry.strip("\n").partition("\x1f")
            if sha:
                scan.commits += 1
                scan.findings += [Finding(f"{prefix}.git", f"commit {sha} message, line {_line_of(message, f.start)}",
                                          f.kind) for f in redaction.find(message)]  # fmt: skip
        for sha, path, body in _blobs(repo):
            text = body.decode("utf-8", errors="replace")
            found = redaction.find(text)
            if found:
                commit = _first_commit(repo, sha)
                scan.findings += [Finding(f"{prefix}.git", f"commit {commit}, file {path}, line "
                                          f"{_line_of(text, f.start)}", f.kind) for f in found]  # fmt: skip
    except (OSError, ValueError) as exc:
        scan.problems.append(f"{prefix}.git: its history cannot be read ({first_line(exc)})")


# --- the whole workspace -------------------------------------------------------------------------------------


def first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0]


def _relative(path: Path, root: Path, label: str) -> str:
    rel = path.relative_to(root).as_posix()
    return f"{label}/{rel}" if label else rel


def scan_workspace(home: Path, dagster_home: Path | None) -> Scan:
    """Every place of the workspace `home` and of the run history at `dagster_home` (skipped when missing)."""
    scan = Scan()
    inside = dagster_home is not None and dagster_home.resolve().is_relative_to(home.resolve())
    for path in files_under(home, dagster_home if inside else None):
        scan_file(path, _relative(path, home, ""), scan)
    if shutil.which("git") is not None:
        for repo in git_repositories(home):
            scan_git(repo, _relative(repo, home, ""), scan)
    elif any(".git" in dirs or ".git" in names for _, dirs, names in os.walk(home)):
        scan.problems.append(".git: git is not installed, so the history was not read")
    if dagster_home is not None and dagster_home.is_dir():
        for path in files_under(dagster_home):
            scan_file(path, _relative(path, dagster_home, DAGSTER_LABEL), scan)
    return scan

