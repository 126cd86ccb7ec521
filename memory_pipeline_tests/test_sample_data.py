"""The bundled sample store: deterministic, big enough, and covering every filter.

Why: the demo, the engine tests and the benchmarks all start from this sample,
so its shape (special cases, lineage, JSONL schema) is a contract. No embedding
here; clustering quality is measured separately (see data/sample/README.md).
"""

from __future__ import annotations

import json
from collections import Counter
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path

import pytest

from memory_pipeline.sample_data import (
    DEFAULT_SEED,
    generate_sample,
    generate_sample_with_families,
    write_sample_jsonl,
)

NOW = datetime(2026, 11, 22, 6, 0, tzinfo=UTC)
FIELDS = {
    "id",
    "content",
    "importance",
    "categories",
    "tags",
    "nexus_keys",
    "kind",
    "source",
    "session_id",
    "created_at",
    "pinned",
    "locked",
    "lifecycle",
    "compressed_from",
    "archived_by",
    "archived_at",
    "prior_importance",
}


@pytest.fixture(scope="module")
def sample() -> tuple[list[dict], dict[str, list[str]]]:
    return generate_sample_with_families(NOW)


@pytest.fixture(scope="module")
def records(sample: tuple[list[dict], dict[str, list[str]]]) -> list[dict]:
    return sample[0]


def _ts(value: str) -> datetime:
    return datetime.fromisoformat(value)


def _fresh(record: dict) -> bool:
    return _ts(record["created_at"]) > NOW - timedelta(hours=24)


def _eligible(record: dict) -> bool:
    """The engine's eligibility rule (seed 000 / DESIGN §5)."""
    return (
        record["importance"] < 2.5
        and not record["pinned"]
        and not record["locked"]
        and record["kind"] != "summary"
        and record["lifecycle"] == "active"
        and not _fresh(record)
    )


def test_same_seed_and_now_give_identical_output(records: list[dict]) -> None:
    assert generate_sample(NOW) == records
    assert generate_sample(NOW, seed=DEFAULT_SEED) == records


def test_other_seed_gives_other_sample(records: list[dict]) -> None:
    assert generate_sample(NOW, seed=DEFAULT_SEED + 1) != records


def test_timestamps_follow_now(records: list[dict]) -> None:
    later = NOW + timedelta(days=3)
    shifted = generate_sample(later)
    assert [r["id"] for r in shifted] == [r["id"] for r in records]
    delta = {_ts(b["created_at"]) - _ts(a["created_at"]) for a, b in zip(records, shifted, strict=True)}
    assert delta == {timedelta(days=3)}


def test_now_in_another_timezone_is_the_same_instant(records: list[dict]) -> None:
    eastern = NOW.astimezone(timezone(timedelta(hours=-5)))
    assert generate_sample(eastern) == records


def test_naive_now_is_rejected() -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        generate_sample(datetime(2026, 11, 22, 6, 0))


def test_size_ids_categories_and_span(records: list[dict]) -> None:
    assert len(records) >= 1500
    ids = [r["id"] for r in records]
    assert len(set(ids)) == len(ids)
    primary = Counter(r["categories"][0] for r in records)
    assert len(primary) >= 6
    assert {"trading", "ops", "coding", "people", "research", "meta"} <= set(primary)
    created = [_ts(r["created_at"]) for r in records]
    assert max(created) < NOW
    assert NOW - min(created) >= timedelta(days=30)
    assert all(t.utcoffset() == timedelta(0) for t in created)


def test_records_follow_the_import_schema(records: list[dict]) -> None:
    for r in records:
        assert set(r) == FIELDS, r["id"]
        assert isinstance(r["content"], str) and r["content"].strip()
        assert "{" not in r["content"], f"unfilled slot in {r['id']}: {r['content']}"
        assert isinstance(r["importance"], float)
        for key in ("categories", "tags", "nexus_keys"):
            assert isinstance(r[key], list) and all(isinstance(v, str) and v for v in r[key])
        assert r["categories"]
        assert r["kind"] in {"observation", "summary"}
        assert r["lifecycle"] in {"active", "archived"}
        assert isinstance(r["pinned"], bool) and isinstance(r["locked"], bool)
        assert (r["session_id"] is not None) == (r["source"] == "session")


def test_importance_mostly_in_normal_band(records: list[dict]) -> None:
    active = [r["importance"] for r in records if r["lifecycle"] == "active"]
    normal = [i for i in active if 0.5 <= i <= 2.4]
    assert len(normal) / len(active) > 0.95


def test_no_sentence_is_repeated(records: list[dict]) -> None:
    contents = Counter(r["content"] for r in records)
    assert contents.most_common(1)[0][1] == 1


def test_families(sample: tuple[list[dict], dict[str, list[str]]]) -> None:
    records, families = sample
    by_id = {r["id"]: r for r in records}
    assert 40 <= len(families) <= 80
    in_family = [i for ids in families.values() for i in ids]
    assert len(in_family) == len(set(in_family))
    for key, ids in families.items():
        assert 3 <= len(ids) <= 15, key
        members = [by_id[i] for i in ids]
        # Written on different days, in different words.
        assert len({m["created_at"][:10] for m in members}) == len(members), key
        assert len({m["content"] for m in members}) == len(members), key
    clusterable = [ids for ids in families.values() if sum(_eligible(by_id[i]) for i in ids) >= 3]
    assert len(clusterable) >= 30
    singletons = [r for r in records if r["id"] not in set(in_family)]
    assert len(singletons) > len(in_family)


def test_special_cases(sample: tuple[list[dict], dict[str, list[str]]]) -> None:
    records, families = sample
    in_family = {i for ids in families.values() for i in ids}
    critical = [r for r in records if r["importance"] >= 2.5]
    pinned = [r for r in records if r["pinned"]]
    locked = [r for r in records if r["locked"]]
    fresh = [r for r in records if _fresh(r)]
    assert len(critical) >= 10 and any(r["id"] in in_family for r in critical)
    assert len(pinned) >= 5 and any(r["id"] in in_family for r in pinned)
    assert len(locked) >= 3 and any(r["id"] in in_family for r in locked)
    assert len(fresh) >= 10 and any(r["id"] in in_family for r in fresh)
    assert all(r["lifecycle"] == "active" for r in critical + pinned + locked + fresh)


def test_earlier_summary_lineage(records: list[dict]) -> None:
    by_id = {r["id"]: r for r in records}
    summaries = [r for r in records if r["kind"] == "summary"]
    assert len(summaries) == 1
    summary = summaries[0]
    assert summary["lifecycle"] == "active"
    assert "compressed" in summary["categories"]
    lineage = summary["compressed_from"]
    sources = [by_id[i] for i in lineage["source_ids"]]
    assert 3 <= len(sources) == lineage["cluster_size"] <= 4
    assert lineage["compression_ratio"] >= 1.5
    dates = sorted(s["created_at"] for s in sources)
    assert lineage["source_date_range"] == [dates[0], dates[-1]]
    assert _ts(lineage["distilled_at"]) == _ts(summary["created_at"])
    assert _ts(dates[-1]) < _ts(lineage["distilled_at"])
    assert summary["importance"] == max(1.0, max(s["prior_importance"] for s in sources))
    for source in sources:
        assert source["lifecycle"] == "archived"
        assert source["importance"] == 0.5
        assert source["archived_by"] and source["archived_by"] == sources[0]["archived_by"]
        assert source["archived_at"] == lineage["distilled_at"]
        assert source["prior_importance"] is not None and source["prior_importance"] > 0.5
    archived = {r["id"] for r in records if r["lifecycle"] == "archived"}
    assert archived == set(lineage["source_ids"])
    others = [r for r in records if r["id"] not in archived]
    assert all(r["archived_by"] is r["archived_at"] is r["prior_importance"] is None for r in others)


def test_write_sample_jsonl(tmp_path: Path, records: list[dict]) -> None:
    path = tmp_path / "nested" / "sample.jsonl"
    count = write_sample_jsonl(path, NOW)
    assert count == len(records)
    lines = path.read_text(encoding="utf-8").splitlines()
    assert len(lines) == count
    assert [json.loads(line) for line in lines] == records
    second = tmp_path / "again.jsonl"
    write_sample_jsonl(second, NOW)
    assert second.read_bytes() == path.read_bytes()
