"""The connectivity proof (seed 004 §4.3): every key of an archived source stays reachable from an active
summary, or is listed there as dropped by the cap."""

import json
from pathlib import Path

import dagster as dg

from memory_pipeline.defs.abstraction.checks import keys_stay_reachable
from memory_pipeline.graph.queries import connectivity
from memory_pipeline.resources import MemoryStoreResource
from memory_pipeline_tests.graph.helpers import make_workspace, memory


def hand_made(tmp_path: Path, summary_keys: list[str], dropped: list[str], rolled: bool = True) -> Path:
    home = tmp_path / "ws"
    sources = [
        memory("s1", "timeout on charge", 10, keys=["err:timeout", "path:/v1/charge"], tags=["err/timeout"]),
        memory("s2", "timeout on refund", 10, keys=["err:timeout", "path:/v1/refund"], tags=["err/timeout"]),
    ]
    for s in sources:
        s.lifecycle, s.archived_by, s.prior_importance, s.importance = "archived", "c-1", 1.0, 0.5
    summary = memory(
        "sum", "payments API timeouts on charge and refund", 1, keys=summary_keys, tags=["err/timeout", "topic/gc"]
    )
    summary.kind = "summary"
    summary.compressed_from = {"source_ids": ["s1", "s2"], "cluster_id": "c-1", "dropped_nexus_keys": dropped}
    if rolled:
        summary.rolled_up_nexus_keys, summary.rolled_up_tags = summary_keys, summary.tags
    make_workspace(home, [*sources, summary])
    return home


def check(home: Path) -> dg.AssetCheckResult:
    return keys_stay_reachable(store=MemoryStoreResource(home=str(home)))


def test_check_fails_when_a_key_of_an_archived_source_would_be_lost(tmp_path: Path) -> None:
    home = hand_made(tmp_path, ["err:timeout", "path:/v1/charge"], dropped=[])
    with_loss = check(home)
    assert not with_loss.passed
    assert with_loss.metadata["lost"].value == 1
    assert "s2 key:path:/v1/refund" in with_loss.metadata["lost_examples"].value


def test_a_key_dropped_by_the_cap_is_reported_not_lost(tmp_path: Path) -> None:
    home = hand_made(tmp_path, ["err:timeout", "path:/v1/charge"], dropped=["path:/v1/refund"])
    result = check(home)
    assert result.passed
    assert result.metadata["dropped_by_cap"].value == 1 and result.metadata["sources_checked"].value == 2


def test_every_key_on_the_summary_passes_and_legacy_summaries_are_counted_apart(tmp_path: Path) -> None:
    ok = hand_made(tmp_path / "a", ["err:timeout", "path:/v1/charge", "path:/v1/refund"], dropped=[])
    assert check(ok).passed
    legacy = hand_made(tmp_path / "b", [], dropped=[], rolled=False)  # written before roll-ups existed
    from memory_pipeline.store import MemoryStore

    with MemoryStore(legacy / "memory.duckdb").connect() as con:
        c = connectivity(con)
    assert c.passed and c.legacy_sources == 2 and c.sources_checked == 0
    assert json.loads(json.dumps(c.lost)) == []
