"""What an agent may read, as search documents: store rows (memories, summaries) and workspace files
(journals, MEMORY.md, tier notes, Cores, Spheres, transcripts), chunked. No Dagster, no index here."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import duckdb
import pyarrow as pa

from memory_pipeline.search.junk import not_text, say_once
from memory_pipeline.search.pending import fingerprint
from memory_pipeline.store.workspace_files import Containment, NotRegularFile, read_regular_text

# Store rows an agent may read: active ones, and archived sources (retrievable, ranked lower: seed 000 §9.2).
READABLE_LIFECYCLES = ("active", "archived")
CHUNK_CHARS = 1200
# a file's day in its path: a journal's name (2026-10-08.md) or a transcript's folders (2026/10/08/...)
DATE_IN_PATH = re.compile(r"(\d{4})[-/](\d{2})[-/](\d{2})")
# when a transcript's session started, from its front matter
STARTED = re.compile(r"^started:\s*['\"]?([0-9T:+\-. Z]+?)['\"]?\s*$", re.MULTILINE)


@dataclass
class Doc:
    """One searchable unit. `key` is a memory id or `relative/path.md#chunk`."""

    key: str
    text: str
    kind: str  # memory kind (observation, summary, ...) or file kind (journal, memory_md, core, sphere, ...)
    source: str  # "store" or "file"
    tier: str  # active | archived | knowledge | working | episodic | semantic | archive | raw
    date: float  # epoch seconds (UTC)
    importance: float = 1.0
    categories: list[str] = field(default_factory=list)
    lifecycle: str = "active"
    archived_by: str = ""
    source_ids: list[str] = field(default_factory=list)
    path: str = ""
    usage: float = 0.0  # included_count_decay (seed 004 §9) at collection time

    @property
    def fingerprint(self) -> str:
        """What a change of which requires re-embedding: the text only (metadata is refreshed separately)."""
        return fingerprint(self.text)


def _epoch(value: datetime | None) -> float:
    if value is None:
        return 0.0
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    return value.timestamp()


_STORE_COLUMNS = (
    "id, content, kind, importance, categories, lifecycle, archived_by, compressed_from, summary_of, "
    "created_at, coalesce(included_count_decay, 0)"
)


def _row_doc(row: tuple[Any, ...]) -> Doc:
    rid, content, kind, importance, categories, lifecycle, archived_by, compressed_from, summary_of, created, use = row
    sources: list[str] = []
    if compressed_from:
        lineage = json.loads(compressed_from) if isinstance(compressed_from, str) else compressed_from
        sources = [str(s) for s in (lineage or {}).get("source_ids", [])]
    if summary_of:
        sources += [str(s) for s in summary_of if str(s) not in sources]
    return Doc(
        key=str(rid),
        text=str(content),
        kind=str(kind),
        source="store",
        tier="archived" if lifecycle == "archived" else "active",
        date=_epoch(created),
        importance=float(importance),
        categories=[str(c) for c in (categories or [])],
        lifecycle=str(lifecycle),
        archived_by=str(archived_by or ""),
        source_ids=sources,
        usage=float(use or 0.0),
    )


def store_docs(con: duckdb.DuckDBPyConnection, after_rowid: int | None = None) -> list[Doc]:
    """Readable memories; with `after_rowid`, only rows appended since (the fresh-write delta)."""
    where = "lifecycle IN ('active', 'archived')"
    params: list[Any] = []
    if after_rowid is not None:
        where += " AND rowid > ?"
        params.append(after_rowid)
    rows = con.execute(f"SELECT {_STORE_COLUMNS} FROM memories WHERE {where} ORDER BY rowid", params).fetchall()
    return [_row_doc(r) for r in rows]


def store_state(con: duckdb.DuckDBPyConnection) -> tuple[int, int]:
    """(watermark rowid, row count) of the memories table. The watermark is the max rowid, held below the
    first `pending` row: a summary pending at build time and activated later must still be in the delta."""
    watermark, rows, _readable = store_counts(con)
    return watermark, rows


def store_stamp(home: Path) -> list[int]:
    """(mtime ns, size, inode) of the store's database and WAL files: DuckDB writes every commit to one of them, so
    an unchanged stamp means an unchanged store (taken while a read-only connection holds the lock, no commit can
    fall between it and the reads that follow)."""
    out: list[int] = []
    for name in ("memory.duckdb", "memory.duckdb.wal"):
        try:
            st = os.stat(Path(home) / name)
            out += [st.st_mtime_ns, st.st_size, st.st_ino]
        except OSError:
            out += [0, 0, 0]
    return out


def store_counts(con: duckdb.DuckDBPyConnection) -> tuple[int, int, int]:
    """`store_state` and the count of readable memories, in one scan of the memories table."""
    row = con.execute(
        "SELECT coalesce(max(rowid), -1), count(*), min(rowid) FILTER (WHERE lifecycle = 'pending'), "
        "count(*) FILTER (WHERE lifecycle IN ('active', 'archived')) FROM memories"
    ).fetchone()
    if not row:
        return (-1, 0, 0)
    watermark = int(row[0]) if row[2] is None else min(int(row[0]), int(row[2]) - 1)
    return watermark, int(row[1]), int(row[3])


# Arrow: the columnar form of Doc (DOC_FIELDS in the order of Doc's fields), from the store without a Python object
# per row (a full build at 1M rows)
DOC_FIELDS = ("key", "text", "kind", "source", "tier", "date", "importance", "categories", "lifecycle", "archived_by",
              "source_ids", "path", "usage")  # fmt: skip
DOC_SCHEMA = pa.schema(
    [("key", pa.string()), ("text", pa.string()), ("kind", pa.string()), ("source", pa.string()),
     ("tier", pa.string()), ("date", pa.float64()), ("importance", pa.float64()),
     ("categories", pa.list_(pa.string())), ("lifecycle", pa.string()), ("archived_by", pa.string()),
     ("source_ids", pa.list_(pa.string())), ("path", pa.string()), ("usage", pa.float64())]
)  # fmt: skip
_STORE_ARROW = """
    SELECT CAST(id AS VARCHAR) AS key, content AS text, kind, 'store' AS source,
           CASE WHEN lifecycle = 'archived' THEN 'archived' ELSE 'active' END AS tier,
           coalesce(epoch_us(created_at) / 1e6, 0.0) AS date, CAST(importance AS DOUBLE) AS importance,
           coalesce(categories, []::VARCHAR[]) AS categories, lifecycle, coalesce(archived_by, '') AS archived_by,
           list_concat(lineage, list_filter(coalesce(summary_of, []::VARCHAR[]),
                                            lambda x: NOT list_contains(lineage, x))) AS source_ids,
           '' AS path, CAST(coalesce(included_count_decay, 0) AS DOUBLE) AS usage{stored}
    FROM (SELECT m.*, m.rowid AS _row, coalesce(CAST(json_extract(compressed_from, '$.source_ids') AS VARCHAR[]),
                                    []::VARCHAR[]) AS lineage{vector} FROM memories m{join})
    WHERE lifecycle IN ('active', 'archived') {extra} ORDER BY _row
"""


def store_table(con: duckdb.DuckDBPyConnection, extra: str = "", params: list[Any] | None = None, *,
                few: bool = False) -> pa.Table:
    """Readable memories as an Arrow table of DOC_SCHEMA (`extra`: more SQL conditions, starting with AND); `few`:
    an update's rows, read through `few_rows_arrow`."""
    sql = _STORE_ARROW.format(extra=extra, stored="", vector="", join="")
    table = few_rows_arrow(con, sql, params or []) if few else con.sql(sql, params=params or None).to_arrow_table()
    return table.select(list(DOC_FIELDS)).cast(DOC_SCHEMA)


def store_rows_with_vectors(
    con: duckdb.DuckDBPyConnection, model: str, extra: str, params: list[Any]
) -> tuple[pa.Table, pa.ChunkedArray]:
    """An update's few readable memories (as `store_table`) and each one's vector stored for `model` (null: none),
    in one query: the vectors' own query was ~1.8 ms of an update's reads."""
    sql = _STORE_ARROW.format(extra=extra, stored=", stored_vector", vector=", e.vector AS stored_vector",
                              join=" LEFT JOIN embeddings e ON e.memory_id = m.id AND e.model = ?")
    table = few_rows_arrow(con, sql, [model, *params])
    return table.select(list(DOC_FIELDS)).cast(DOC_SCHEMA), table.column("stored_vector")


def few_rows_arrow(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> pa.Table:
    """A query's rows as Arrow, through a relation (`con.sql`): Arrow output of an `execute` result copies the rows
    and DuckDB 2 warns about it on every call. A relation is refused while the connection's last `execute` result
    is unread to its end (a `fetchone()` of a count): that result is run to its end first, as a new `execute`
    would. Binding the relation costs ~0.8 ms a query."""
    con.complete()
    return con.sql(sql, params=params or None).to_arrow_table()


def docs_table(docs: list[Doc]) -> pa.Table:
    """Columnar, without dataclasses.asdict (which deep-copies every list: 10× slower at 100k docs)."""
    return pa.table({n: pa.array([getattr(d, n) for d in docs], type=DOC_SCHEMA.field(n).type) for n in DOC_FIELDS})


def table_docs(table: pa.Table, with_text: bool = True, shared: bool = False) -> list[Doc]:
    """Doc objects of an Arrow table's rows (a table without `text` gives documents with empty text); `shared`:
    equal strings of a column other than key and text are one object (documents kept for the process's life)."""
    if table.num_rows == 0:
        return []
    cols = {n: table.column(n).to_pylist() for n in DOC_FIELDS if n in table.column_names}
    if shared:
        for name in ("kind", "source", "tier", "lifecycle", "archived_by", "path"):
            if name in cols:
                memo: dict[str, str] = {}
                cols[name] = [memo.setdefault(v, v) if v is not None else v for v in cols[name]]
    if not with_text or "text" not in cols:
        cols["text"] = [""] * table.num_rows
    for name in ("categories", "source_ids"):
        if name not in cols:
            cols[name] = [[] for _ in range(table.num_rows)]
    return [Doc(*row) for row in zip(*(cols[n] for n in DOC_FIELDS), strict=True)]  # DOC_FIELDS is Doc's order


def live_metadata(con: duckdb.DuckDBPyConnection, ids: list[str]) -> dict[str, tuple[str, float, str, float]]:
    """Current (lifecycle, importance, archived_by, usage) of some memories: archiving after the last build
    must change their rank at once, not at the next build."""
    if not ids:
        return {}
    rows = con.execute(
        "SELECT id, lifecycle, importance, coalesce(archived_by, ''), coalesce(included_count_decay, 0) "
        "FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[]))",
        [ids],
    ).fetchall()
    return {str(r[0]): (str(r[1]), float(r[2]), str(r[3]), float(r[4])) for r in rows}


# ------------------------------------------------------------------ files

# (folder under the workspace, glob, kind, tier); first match wins for a file.
FILE_SOURCES: tuple[tuple[str, str, str, str], ...] = (
    ("knowledge/journal", "*.md", "journal", "knowledge"),
    ("knowledge/memory", "*.md", "memory_md", "knowledge"),
    ("knowledge/cores", "*.json", "core", "knowledge"),
    ("knowledge/spheres", "*.json", "sphere", "knowledge"),
    ("knowledge", "**/*.md", "knowledge", "knowledge"),
    ("memory/working", "**/*.md", "note", "working"),
    ("memory/episodic", "**/*.md", "note", "episodic"),
    ("memory/semantic", "**/*.md", "note", "semantic"),
    ("memory/archive", "**/*.md", "note", "archive"),
    ("archive/journal", "*.md", "journal", "archive"),
    ("archive", "**/*.md", "knowledge", "archive"),  # knowledge files pruned by decay (seed 001 §8.5)
    ("raw/conversations", "**/*.md", "transcript", "raw"),
)


def iter_files(home: Path) -> Iterator[tuple[Path, str, str]]:
    """(path, kind, tier) of every readable file, each once. A file whose real location is outside the workspace
    (a symlink to /etc/passwd, or in a folder that links out) is skipped, and said once."""
    seen: set[Path] = set()
    try:  # one listing of the workspace rather than a stat per source (every query asks, most sources are absent)
        tops = {e.name for e in os.scandir(home) if e.is_dir()}
    except OSError:
        return
    inside = Containment(home)
    for folder, pattern, kind, tier in FILE_SOURCES:
        if folder.split("/", 1)[0] not in tops:
            continue
        base = home / folder
        if not base.is_dir():
            continue
        for path in sorted(base.glob(pattern)):
            if path in seen or path.name.startswith("."):
                continue
            seen.add(path)
            target = inside.outside(path)
            if target is not None:
                rel = path.relative_to(home).as_posix()
                say_once(("outside", str(home), rel, target),
                         f"search: {rel} leads outside the workspace (to {target}): not indexed")  # fmt: skip
                continue
            if path.is_file():
                yield path, kind, tier


def file_signature(home: Path) -> dict[str, tuple[float, int]]:
    """relative path → (mtime, size): cheap enough to compare on every query for the fresh-file delta."""
    out: dict[str, tuple[float, int]] = {}
    for path, _kind, _tier in iter_files(home):
        st = os.stat(path)
        out[path.relative_to(home).as_posix()] = (st.st_mtime, st.st_size)
    return out


def _json_text(value: Any) -> Iterator[str]:
    """The prose of a Core/Sphere document: every string value, keys as labels for short ones."""
    if isinstance(value, str):
        if value.strip():
            yield value.strip()
    elif isinstance(value, dict):
        for v in value.values():
            yield from _json_text(v)
    elif isinstance(value, list):
        for v in value:
            yield from _json_text(v)


def _strip_frontmatter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4 :].lstrip("\n")
    return text


def _text_head(block: str, limit: int) -> tuple[str, ...]:
    """A paragraph whose start is mostly not text, as its lines of text before the first that is not (junk
    appended to a file without a blank line before it) and the rest; any other paragraph as it is."""
    if not not_text(block[:limit]):
        return (block,)
    lines = block.split("\n")
    n = next((i for i, line in enumerate(lines) if not_text(line)), len(lines))
    head = "\n".join(lines[:n]).strip()
    rest = "\n".join(lines[n:]).strip()
    return tuple(part for part in (head, rest) if part)


def _drop(dropped: list[str] | None, piece: str) -> None:
    if dropped is not None:
        dropped.append(piece)


def chunk_text(text: str, limit: int = CHUNK_CHARS, dropped: list[str] | None = None) -> list[str]:
    """Split at headings, then paragraphs, into chunks of at most ~`limit` characters (a long paragraph is cut).
    A paragraph, or a cut piece of one, that is mostly not text (`junk.not_text`) is left out, and appended to
    `dropped` when given."""
    blocks = [b.strip() for b in re.split(r"\n(?=#{1,6} )|\n\s*\n", text) if b.strip()]
    chunks: list[str] = []
    current = ""
    for block in (part for b in blocks for part in _text_head(b, limit)):
        while len(block) > limit:
            if current:
                chunks.append(current)
                current = ""
            piece, block = block[:limit], block[limit:]
            if not_text(piece):
                _drop(dropped, piece)
            else:
                chunks.append(piece)
        if not block:
            continue
        if not_text(block):
            _drop(dropped, block)
            continue
        if current and len(current) + len(block) + 2 > limit:
            chunks.append(current)
            current = ""
        current = f"{current}\n\n{block}" if current else block
    if current:
        chunks.append(current)
    return chunks


def file_docs(home: Path, rel: str, kind: str, tier: str) -> list[Doc]:
    """A workspace file's chunks as documents; none when it is not a regular file inside the workspace (said once)
    and without its pieces that are mostly not text (said once per file and size)."""
    path = home / rel
    try:
        raw = read_regular_text(path, root=home)
    except NotRegularFile as exc:
        say_once(("not-read", str(home), rel, exc.problem), f"search: {rel} {exc.problem}: not indexed")
        return []
    if path.suffix == ".json":
        try:
            text = "\n\n".join(_json_text(json.loads(raw)))
        except json.JSONDecodeError:
            text = raw
    else:
        text = _strip_frontmatter(raw)
    head = raw[: raw.find("\n---", 4)] if raw.startswith("---\n") else ""
    date = file_date(rel, head) or os.stat(path).st_mtime
    cats = [kind] if tier in ("knowledge", "raw") else [kind, tier]
    dropped: list[str] = []
    chunks = chunk_text(text, dropped=dropped)
    if dropped:
        size = sum(len(p) for p in dropped)
        say_once(("not-text", str(home), rel, str(len(raw))),
                 f"search: {rel}: {size:,} characters in {len(dropped)} piece(s) are not text (control characters, "
                 "bytes that are not UTF-8, no words): not indexed")  # fmt: skip
    return [
        Doc(key=f"{rel}#{i}", text=chunk, kind=kind, source="file", tier=tier, date=date, categories=cats, path=rel)
        for i, chunk in enumerate(chunks)
    ]


def file_date(rel: str, frontmatter: str) -> float | None:
    """The day a file's facts are of (an item is dated by its facts, not by when it was written or
    imported): a transcript's session start, else the date in its path; None when neither says."""
    started = STARTED.search(frontmatter)
    if started:
        try:
            return _epoch(datetime.fromisoformat(started.group(1).strip().replace("Z", "+00:00")))
        except ValueError:
            pass
    day = DATE_IN_PATH.search(rel)
    if day:
        try:
            return _epoch(datetime(int(day.group(1)), int(day.group(2)), int(day.group(3))))
        except ValueError:
            return None
    return None


def all_file_docs(home: Path) -> list[Doc]:
    docs: list[Doc] = []
    for path, kind, tier in iter_files(home):
        docs.extend(file_docs(home, path.relative_to(home).as_posix(), kind, tier))
    return docs
