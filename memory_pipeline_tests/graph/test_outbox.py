"""The outbox (seed 004 §5): a drain that dies mid-way leaves no action lost and none applied twice."""

import os
import subprocess
import sys
from collections import Counter
from datetime import datetime
from pathlib import Path

import pytest

from memory_pipeline.faults import ENV as CRASH_ENV
from memory_pipeline.store import MemoryStore, outbox
from memory_pipeline.store.external_index import DirectoryIndex, OutboxAction
from memory_pipeline_tests.graph.helpers import make_workspace, memory

NOW = datetime(2026, 11, 1, 3, 30)


class SimulatedCrash(BaseException):
    """Like a kill: not an Exception, so nothing in the drain catches it."""


class CrashAfter:
    """Applies for real, then dies after the n-th apply — before the drain can mark the action done."""

    def __init__(self, inner: DirectoryIndex, n: int) -> None:
        self.inner, self.n, self.name, self.calls = inner, n, inner.name, 0

    def apply(self, action: OutboxAction) -> None:
        self.inner.apply(action)
        self.calls += 1
        if self.calls == self.n:
            raise SimulatedCrash()


def seeded(tmp_path: Path) -> tuple[MemoryStore, DirectoryIndex, list[str]]:
    store = make_workspace(tmp_path / "ws", [memory("x", "x", 10)])
    index = DirectoryIndex(tmp_path / "ws" / "indexes" / "vectors", "vectors")
    sources = [f"src-{i:02d}" for i in range(12)]
    for sid in sources:  # the external index holds the sources' vectors
        index.apply(OutboxAction(f"seed-{sid}", "vectors", "upsert", sid, {"v": [0.1]}))
    with store.transaction() as con:
        outbox.enqueue_compaction(
            con,
            index_names=["vectors"],
            summary_id="sum-1",
            summary_payload={"kind": "summary"},
            source_ids=sources,
            run_id="run-1",
            now=NOW,
        )
    with store.connect() as con:
        ids = [r[0] for r in con.execute("SELECT id FROM outbox ORDER BY id").fetchall()]
    assert len(ids) == 13
    return store, index, ids


def assert_exactly_once(store: MemoryStore, index: DirectoryIndex, ids: list[str]) -> None:
    with store.connect() as con:
        status = dict(con.execute("SELECT id, status FROM outbox").fetchall())
    assert status == {i: "done" for i in ids}  # none lost
    counts = Counter(index.applied_ids())
    assert all(counts[i] == 1 for i in ids), {i: counts[i] for i in ids if counts[i] != 1}  # none applied twice
    assert index.holds("sum-1")
    assert not any(index.holds(f"src-{i:02d}") for i in range(12))


def test_drain_after_a_crash_mid_drain_loses_nothing_and_repeats_nothing(tmp_path: Path) -> None:
    store, index, ids = seeded(tmp_path)
    crashing = CrashAfter(DirectoryIndex(index.root, "vectors"), n=5)
    with pytest.raises(SimulatedCrash):
        outbox.drain(store, {"vectors": crashing}, "drain-1", lambda: NOW, is_alive=lambda _: True, batch=4)
    with store.connect() as con:
        states = Counter(r[0] for r in con.execute("SELECT status FROM outbox").fetchall())
    assert states["done"] == 4 and states["claimed"] >= 1  # the 5th was applied, never marked done
    # a second drain while the first "is still alive" leaves its claims alone
    live = outbox.drain(
        store, {"vectors": DirectoryIndex(index.root, "vectors")}, "drain-2", lambda: NOW, lambda _: True
    )
    assert live.reclaimed == 0 and live.remaining == states["claimed"]
    # once the first drainer is dead, its claims are taken back and re-applied: the index dedupes the 5th
    result = outbox.drain(
        store, {"vectors": DirectoryIndex(index.root, "vectors")}, "drain-3", lambda: NOW, is_alive=lambda _: False
    )
    assert result.reclaimed == states["claimed"] and result.remaining == 0
    assert_exactly_once(store, index, ids)
    again = outbox.drain(
        store, {"vectors": DirectoryIndex(index.root, "vectors")}, "drain-4", lambda: NOW, lambda _: False
    )
    assert (again.applied, again.remaining) == (0, 0)


def test_a_failing_index_keeps_its_actions_pending_with_the_reason(tmp_path: Path) -> None:
    store, index, ids = seeded(tmp_path)

    class Broken:
        name = "vectors"

        def apply(self, action: OutboxAction) -> None:
            raise ConnectionError("vector store unreachable")

    result = outbox.drain(store, {"vectors": Broken()}, "d1", lambda: NOW, lambda _: False)
    assert result.failed == 13 and result.applied == 0 and result.remaining == 13
    with store.connect() as con:
        errors = {r[0] for r in con.execute("SELECT last_error FROM outbox").fetchall()}
    assert errors == {"ConnectionError: vector store unreachable"}
    assert outbox.drain(store, {}, "d2", lambda: NOW, lambda _: False).unknown_index == 13  # not configured: kept


@pytest.mark.slow
def test_sigkill_mid_drain_then_drain_again(tmp_path: Path) -> None:
    store, index, ids = seeded(tmp_path)
    script = (
        "import sys; from datetime import datetime; from pathlib import Path\n"
        "from memory_pipeline.store import outbox\n"
        "from memory_pipeline.store.external_index import DirectoryIndex\n"
        "from memory_pipeline.store import MemoryStore\n"
        "ws = Path(sys.argv[1])\n"
        "outbox.drain(MemoryStore(ws / 'memory.duckdb'), {'vectors': DirectoryIndex(ws / 'indexes' / 'vectors', "
        "'vectors')}, 'killed', datetime.utcnow, lambda _: True)\n"
    )
    env = {**os.environ, CRASH_ENV: outbox.CRASH_POINT}
    proc = subprocess.run([sys.executable, "-c", script, str(tmp_path / "ws")], env=env, timeout=120)
    assert proc.returncode == -9
    result = outbox.drain(
        store, {"vectors": DirectoryIndex(index.root, "vectors")}, "next", lambda: NOW, lambda _: False
    )
    assert result.reclaimed >= 1
    assert_exactly_once(store, index, ids)
