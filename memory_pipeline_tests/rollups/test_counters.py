"""The seed's progression table, exactly: counters, compression_meta and keys for sessions 1, 8, 9, 16, 64, 65."""

import json
from datetime import datetime

import pytest

from memory_pipeline.rollups.counters import (
    Counters,
    core_index,
    core_key_at,
    core_ordinals,
    counters_payload,
    position,
    sphere_core_keys,
    sphere_index,
    write_json_atomic,
)

# session n → (its compression_meta, its Core, its Sphere, the counters once it is written)
TABLE = [
    (1, (0, 0, 0), "core_000_000", "sphere_000", (1, 0, 0)),
    (8, (7, 0, 0), "core_000_000", "sphere_000", (0, 1, 0)),  # Core_000 closes: Session_seq resets
    (9, (0, 1, 0), "core_000_001", "sphere_000", (1, 1, 0)),
    (16, (7, 1, 0), "core_000_001", "sphere_000", (0, 2, 0)),
    (64, (7, 7, 0), "core_000_007", "sphere_000", (0, 0, 1)),  # Sphere_000 closes: Core_seq resets
    (65, (0, 0, 1), "core_001_000", "sphere_001", (1, 0, 1)),
]


@pytest.mark.parametrize(("n", "meta", "core", "sphere", "after"), TABLE)
def test_progression_table(n: int, meta: tuple, core: str, sphere: str, after: tuple) -> None:
    pos = position(n)
    assert (pos.session_seq, pos.core_seq, pos.sphere_seq) == meta
    assert (pos.core_id, pos.sphere_id) == (core, sphere)
    c = Counters.after(n)
    assert (c.session_seq, c.core_seq, c.sphere_seq) == after
    assert n in core_ordinals(core)


def test_seed_rows_before_the_first_core() -> None:
    # "Start" 0/0/0, "Episode 2" 1/0/0, "Episode 8" 7/0/0 — the counters before session n+1 is written
    assert Counters.after(0) == Counters(0, 0, 0, 0)
    assert (Counters.after(1).session_seq, Counters.after(7).session_seq) == (1, 7)
    assert Counters.after(15).closed_cores == 1 and Counters.after(16).closed_cores == 2
    assert Counters.after(63).closed_spheres == 0 and Counters.after(64).closed_spheres == 1


def test_keys_round_trip_and_bad_keys_are_named() -> None:
    assert [core_key_at(i) for i in (0, 7, 8, 17)] == ["core_000_000", "core_000_007", "core_001_000", "core_002_001"]
    assert all(core_index(core_key_at(i)) == i for i in range(200))
    assert list(core_ordinals("core_001_000")) == list(range(65, 73))
    assert sphere_core_keys("sphere_001")[0] == "core_001_000" and len(sphere_core_keys("sphere_001")) == 8
    assert sphere_index("sphere_012") == 12
    with pytest.raises(ValueError, match="core_000_008"):
        core_index("core_000_008")
    with pytest.raises(ValueError, match="sphere_1"):
        sphere_index("sphere_1")
    with pytest.raises(ValueError, match="≥ 1"):
        position(0)


def test_counters_file_is_written_whole(tmp_path) -> None:
    path = tmp_path / "knowledge" / "state" / "compression_counters.json"
    write_json_atomic(path, counters_payload(9, 1, 0, datetime(2026, 1, 1, 15, 0)))
    data = json.loads(path.read_text())
    assert (data["Session_seq"], data["Core_seq"], data["Sphere_seq"]) == (1, 1, 0)
    assert data["last_update"] == "2026-01-01T15:00:00"
    assert [p.name for p in path.parent.iterdir()] == ["compression_counters.json"]  # no temp file left
