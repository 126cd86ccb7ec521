"""The state a night would commit, without committing it: the workspace's readable parts as they are (phase 1
written, its summaries pending and so unread), and the same with what phase 2 would change laid over them — the
summaries active, their sources archived — each read by the product's read path, as an agent's `context` call
reads it.

The state before is a scratch copy of the store (the index's files and the knowledge files hard-linked), its index
brought up to date with the vectors the night already stored (no text is embedded again when search and the night
use one model), so it is not read from a half-embedded delta. The state after is not a second copy: which rows
phase 2 would change is read here (the Archiver's guards, cluster by cluster, as its batches and their
one-by-one fallback would leave them), and those rows alone, in their new state, are indexed over the first
state's index as one more segment (`search.with_rows`: what the index's update after the night would write, the
rest shared), read by search through a fixed view (`search.ReadView`) beside the first state's store (phase 2
changes no column the read path reads there but the lifecycle, which search reads from the index; the shipped
read path reads no neighbouring turns, the one read of the store's lifecycle). The copy lives under the workspace
(one filesystem, so links work) and is removed afterwards; the workspace itself is never written."""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import date, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from memory_pipeline.abstraction import retention
from memory_pipeline.abstraction.outcomes import ARCHIVED_IMPORTANCE, ClusterOutcome
from memory_pipeline.statements import facts
from memory_pipeline.store.db import MemoryStore, utcnow
from memory_pipeline.store.repository import ARCHIVABLE

if TYPE_CHECKING:
    from memory_pipeline.search import ReadView

STORE_FILE = "memory.duckdb"
LINKED = ("knowledge", "memory", "archive", "raw", "topics")  # what the read path reads besides store and index
SCRATCH = ".retention"  # under the workspace: not a folder search or the journals read


@dataclass(frozen=True)
class Candidate:
    before: Path  # the workspace as it is (a scratch copy, its index up to date)
    archived: dict[str, str]  # source id → cluster id: the memories phase 2 would archive
    summaries: list[str]  # the summaries phase 2 would activate


def _link_or_copy(src: str, dst: str) -> object:
    try:
        os.link(src, dst)
        return dst
    except OSError:
        return shutil.copy2(src, dst)


def _copy_workspace(db: MemoryStore, home: Path, target: Path) -> None:
    target.mkdir(parents=True)
    with db.connect() as con:  # holding the connection keeps writers out while the file is copied
        con.execute("CHECKPOINT")
        shutil.copyfile(db.path, target / STORE_FILE)
    if (home / "index").is_dir():  # segments are written once and never changed: links (the copy's update adds)
        shutil.copytree(home / "index", target / "index", ignore=shutil.ignore_patterns("*.lock"),
                        copy_function=_link_or_copy)  # fmt: skip
    for name in LINKED:
        if (home / name).is_dir():
            shutil.copytree(home / name, target / name, copy_function=_link_or_copy, symlinks=True)


_MEMBERS_SQL = f"SELECT id FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[])) AND {ARCHIVABLE}"


def phase2_effect(con: Any, ready: list[ClusterOutcome], critical_floor: float) -> tuple[dict[str, str], list[str]]:
    """What phase 2 would change, read-only: (source id → cluster id, the summaries it activates). A cluster
    commits when every source passes the Archiver's guards (`repository.archive_clusters`: active, not a summary,
    not pinned or locked, below the critical floor), none is a source of an earlier cluster, and its summary is
    pending; else it fails alone, as the Archiver's one-by-one fallback leaves it."""
    members = sorted({m for o in ready for m in o.cluster.member_ids})
    ok = {str(r[0]) for r in con.execute(_MEMBERS_SQL, [members, critical_floor]).fetchall()}
    sids = [o.summary_id for o in ready if o.summary_id is not None]
    pending = {str(r[0]) for r in con.execute(
        "SELECT id FROM memories WHERE lifecycle = 'pending' AND id IN (SELECT unnest(?::VARCHAR[]))", [sids]
    ).fetchall()}  # fmt: skip
    archived: dict[str, str] = {}
    summaries: list[str] = []
    for o in ready:
        ids = o.cluster.member_ids
        if o.summary_id not in pending or len(set(ids)) != len(ids) or not all(m in ok and m not in archived
                                                                                 for m in ids):  # fmt: skip
            continue
        summaries.append(str(o.summary_id))
        archived.update(dict.fromkeys(ids, o.cluster.cluster_id))
    return archived, summaries


@contextmanager
def candidate(
    db: MemoryStore,
    home: Path,
    outcomes: list[ClusterOutcome],
    critical_floor: float,
    refresh: Callable[[Path], Any],
) -> Iterator[Candidate]:
    """The state before (a scratch copy, removed on exit) and what phase 2 would change over it. `refresh` brings
    the copy's search index up to date."""
    scratch = home / SCRATCH
    shutil.rmtree(scratch, ignore_errors=True)  # what a killed night left (one night at a time: the lease)
    scratch.mkdir()
    folder = Path(tempfile.mkdtemp(prefix="night-", dir=scratch))
    try:
        before = folder / "before"
        _copy_workspace(db, home, before)
        refresh(before)  # the index as the workspace's own would be now
        ready = [o for o in outcomes if o.summary_id is not None and o.distillation is not None]
        with MemoryStore(before / STORE_FILE).connect() as con:
            archived, summaries = phase2_effect(con, ready, critical_floor)
        yield Candidate(before, archived, summaries)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
        with contextlib.suppress(OSError):
            scratch.rmdir()  # only when empty: another night's copies are left to it


def views(c: Candidate, embedder: tuple[Any, str] | None) -> tuple[ReadView, ReadView]:
    """The two states as search reads them: the copy as it is, and the same with the rows phase 2 changes in their
    new state — the summaries active (in the order they were written), then their sources archived (importance
    lowered, the cluster named) — indexed over it, as the index's update after the night would."""
    from memory_pipeline.search import read_view, store_rows, with_rows

    before = read_view(c.before, embedder)
    summaries = store_rows(c.before, c.summaries)
    for d in summaries:
        d.lifecycle, d.tier = "active", "active"
    sources = store_rows(c.before, c.archived)
    for d in sources:
        d.lifecycle, d.tier, d.importance = "archived", "archived", ARCHIVED_IMPORTANCE
        d.archived_by = c.archived[d.key]
    return before, with_rows(before, c.before, c.before.parent / "after-rows", summaries + sources, embedder)


def texts(home: Path, ids: list[str]) -> dict[str, str]:
    """The content of each memory in `ids` (read from a copy)."""
    with MemoryStore(home / STORE_FILE).connect() as con:
        rows = con.execute(
            "SELECT id, content FROM memories WHERE id IN (SELECT unnest(?::VARCHAR[]))", [ids]
        ).fetchall()
    return {str(r[0]): str(r[1]) for r in rows}


def idf_of(home: Path) -> Callable[[str], float]:
    """A word's idf over the readable memories of a copy (what search indexes of the store), counted in the
    store: log(1 + (N - df + 0.5) / (df + 0.5)), as BM25 reads it."""
    import math

    with MemoryStore(home / STORE_FILE).connect() as con:
        contents = [str(r[0]) for r in con.execute(
            "SELECT content FROM memories WHERE lifecycle IN ('active', 'archived')"
        ).fetchall()]  # fmt: skip
    df: dict[str, int] = {}
    for text in contents:
        for w in set(retention.words(text)):
            df[w] = df.get(w, 0) + 1
    n = len(contents)

    def idf(word: str) -> float:
        d = df.get(word.lower(), 0)
        return math.log(1.0 + (n - d + 0.5) / (d + 0.5))

    return idf


QUERY_BATCH = 32  # texts: a probe's question and, most often, the question as the embedder reads it


def memoised(encode: Callable[[list[str]], Any], known: list[str]) -> Callable[[list[str]], np.ndarray]:
    """`encode` with the vectors of `known` texts (what search embeds for each probe, in the order asked) computed
    in batches as they are first asked: a question missing brings the next QUERY_BATCH of `known` with it, so a
    probe's question is embedded once, not once per state and call, and the questions a time bound leaves unasked
    are never embedded. Any other text is embedded when asked and kept. Same model, same vectors: the read path
    answers exactly as it would."""
    texts = list(dict.fromkeys(known))
    where = {t: i for i, t in enumerate(texts)}
    memo: dict[str, np.ndarray] = {}

    def encode_known(batch: list[str]) -> np.ndarray:
        missing = [t for t in dict.fromkeys(batch) if t not in memo]
        ahead = [t for m in missing if m in where for t in texts[where[m] : where[m] + QUERY_BATCH] if t not in memo]
        todo = list(dict.fromkeys(missing + ahead))
        if todo:
            memo.update(zip(todo, np.asarray(encode(todo), dtype=np.float32), strict=True))
        return np.vstack([memo[t] for t in batch])

    return encode_known


def asker(home: Path, budget: int, embedder: tuple[Any, str] | None, today: date,
          view: ReadView | None = None) -> Callable[[str], str | None]:  # fmt: skip
    """The product's read path on a copy (search reading `view`, when given, in place of the copy's live state):
    `context` for the question within `budget` tokens, as its prompt text; None when the read path refuses the
    question (one the compiler cannot answer within the budget)."""
    from memory_pipeline.context import ContextError, compile_for_agent, default_search

    search = default_search(home, embedder, today=today, view=view)

    def ask(question: str) -> str | None:
        try:
            out, _ = compile_for_agent(home, question, budget_tokens=budget, search=search, today=today)
        except ContextError:
            return None
        return out.prompt

    return ask


@dataclass(frozen=True)
class ProbeSettings:
    floor: float
    probes: int  # 0: no probe, the night passes
    budget: int
    seed: int
    critical_floor: float
    seconds: float = 0.0  # the probes stop being asked once this long has passed (0: no bound)


def probe_seconds(cap: float, share: float, night_so_far: float | None) -> float:
    """The probes' time bound (0: none): at most `cap` seconds, and at most `share` of the time the night has taken
    so far (the probes' cost then stays a fixed share of the night at any store size)."""
    bounds = [b for b in (cap, share * night_so_far if share > 0 and night_so_far else 0.0) if b > 0]
    return min(bounds) if bounds else 0.0


def grade_night(
    db: MemoryStore,
    home: Path,
    outcomes: list[ClusterOutcome],
    settings: ProbeSettings,
    run_id: str,
    now: datetime,
    embedder: tuple[Any, str] | None,
    refresh: Callable[[Path], Any],
    progress: Callable[[int], Callable[[int], Any]] | None = None,
) -> retention.Retention:
    """The night's retention: probes from a seeded sample of the memories it would archive, each asked of the
    state before and of the state it would commit. `progress(total)` gives what hears each probe done."""
    t0 = time.monotonic()
    ready = [o for o in outcomes if o.summary_id is not None and o.distillation is not None]
    if settings.probes <= 0 or not ready:
        r = retention.tally(run_id, [], settings.floor, settings.budget, 0)
    else:
        from memory_pipeline.search import query_texts

        with candidate(db, home, ready, settings.critical_floor, refresh) as c:
            chosen = retention.sample(sorted(c.archived), settings.probes, settings.seed)
            found = texts(c.before, chosen)
            idf = idf_of(c.before)
            names = facts.known_names(found.values())
            built = [retention.build_probe(m, c.archived[m], found[m], idf, names) for m in chosen if m in found]
            probes = [p for p in built if p is not None]
            day = now.date()
            before, after = views(c, embedder)
            known = [t for p in probes for t in query_texts(before, p.question)]  # each probe's, in the order asked
            ask_with = None if embedder is None else (memoised(embedder[0], known), embedder[1])
            outcomes_ = retention.measure(probes, asker(c.before, settings.budget, ask_with, day, before),
                                          asker(c.before, settings.budget, ask_with, day, after),
                                          None if progress is None else progress(len(probes)),
                                          t0 + settings.seconds if settings.seconds > 0 else None)  # fmt: skip
            r = retention.tally(run_id, outcomes_, settings.floor, settings.budget, len(c.archived))
            r.built = len(probes)
    r.seconds = round(time.monotonic() - t0, 2)
    r.finished_at = utcnow().isoformat() + "Z"
    return r


def stop_night(db: MemoryStore, r: retention.Retention, started_at: datetime | None = None) -> tuple[int, int]:
    """A night below the retention floor ends here (`block_night`)."""
    r.blocked = True
    return block_night(db, r.run_id, "knowledge_retention", r.to_dict(), started_at)


def block_night(db: MemoryStore, run_id: str, check: str, figures: dict[str, Any],
                started_at: datetime | None = None) -> tuple[int, int]:  # fmt: skip
    """A night a blocking check stops ends here, in one transaction: its pending summaries are reconciled as an
    interrupted night's are (none of their sources is archived, so each is removed), its run row says BLOCKED
    with the check's figures, and its lease is released. Returns (summaries activated, summaries removed)."""
    import json

    from memory_pipeline.store import lease
    from memory_pipeline.store import repository as repo

    with db.transaction() as con:
        activated, removed = repo.reconcile_pending(con)
        row = con.execute("SELECT started_at, verdict, report FROM consolidation_runs WHERE run_id = ?",
                          [run_id]).fetchall()  # fmt: skip
        started = row[0][0] if row else (started_at or utcnow())
        record = json.loads(row[0][2]) if row and row[0][1] == "BLOCKED" and row[0][2] else {}  # both checks
        record.update({"run_id": run_id, "verdict": "BLOCKED", check: figures})
        con.execute("INSERT OR REPLACE INTO consolidation_runs VALUES (?, ?, ?, 'BLOCKED', ?)",
                    [run_id, started, utcnow(), json.dumps(record)])  # fmt: skip
        lease.release(con, run_id)
    return len(activated), len(removed)
