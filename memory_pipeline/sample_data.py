"""Deterministic sample memory store of the agent "Helios".

Why: the demo, the tests and the benchmarks need a store that looks like what a
working agent accumulates after six weeks (trades, ops incidents, code reviews,
people, research, self-reflection) and that exercises every rule of the
abstraction engine, without a network, an API key or a model download.

The sample has three kinds of memories:

* paraphrase families: the same observation or causal lesson written again on
  different days in different words. The agent reuses its own vocabulary, so
  members clear cosine 0.82 with all-MiniLM-L6-v2 and form the clusters the
  nightly engine compresses;
* diverse singletons built from many frames and large slot pools, which should
  not cluster;
* special cases: critical (importance ≥ 2.5), pinned, locked and fresh (< 24 h)
  memories, some inside families, and one earlier compression run (an active
  summary whose archived sources carry the lineage).

Everything is drawn from ``random.Random(seed)`` and timestamps are relative to
``now``, so the same ``(now, seed)`` gives byte-identical output. What the agent
writes lives in data files (``memory_pipeline/sample/*.json``: families, rules,
frames, pools); ``memory_pipeline.sample.drafts`` decides who is written when, and
this module fills the slots and assigns ids and lineage.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from memory_pipeline.sample.drafts import (
    core_drafts,
    earlier_run,
    family_drafts,
    mark_specials,
    singleton_drafts,
)
from memory_pipeline.sample.memories import Draft, Filler

__all__ = [
    "DEFAULT_SEED",
    "generate_sample",
    "generate_sample_with_families",
    "write_sample_jsonl",
]

DEFAULT_SEED = 20261122


# ---------------------------------------------------------------------------
# Generation
# ---------------------------------------------------------------------------


def _as_utc(now: datetime) -> datetime:
    if now.tzinfo is None or now.utcoffset() is None:
        raise ValueError("now must be timezone-aware (UTC); got a naive datetime")
    return now.astimezone(UTC).replace(microsecond=0)


def _iso(ts: datetime) -> str:
    return ts.isoformat(timespec="seconds")


def _build(now: datetime, seed: int) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    now = _as_utc(now)
    rng = random.Random(seed)
    drafts = family_drafts(rng) + singleton_drafts(rng) + core_drafts(rng)
    mark_specials(rng, drafts)
    earlier = earlier_run(rng)
    drafts += earlier
    run_at = (now - timedelta(days=9)).replace(hour=3, minute=30, second=0)
    filler = Filler(rng)

    rows: list[tuple[datetime, int, Draft, str, list[str], list[str]]] = []
    seen: set[str] = set()
    for index, d in enumerate(drafts):
        when = run_at if d.role == "summary" else now - d.age
        cache: dict[str, str] = {}
        text = filler.fill(d.template, when, cache)
        for _ in range(20):  # never emit the same sentence twice (numbers aside)
            if _skeleton(text) not in seen:
                break
            cache = {}
            text = filler.fill(d.template, when, cache)
        seen.add(_skeleton(text))
        tags = _unique(filler.fill(t, when, cache) for t in d.tags)
        nexus = _unique(filler.fill(n, when, cache) for n in d.nexus)
        rows.append((when, index, d, text, tags, nexus))
    rows.sort(key=lambda r: (r[0], r[1]))

    records: list[dict[str, Any]] = []
    families: dict[str, list[str]] = {}
    record_of: dict[int, dict[str, Any]] = {}
    for number, (when, index, d, text, tags, nexus) in enumerate(rows, start=1):
        record: dict[str, Any] = {
            "id": f"m-{number:06d}",
            "content": text,
            "importance": d.importance,
            "categories": list(d.categories),
            "tags": tags,
            "nexus_keys": nexus,
            "kind": d.kind,
            "source": d.source,
            "session_id": f"s-{when:%Y%m%d}-{'abcd'[when.hour // 6]}" if d.source == "session" else None,
            "created_at": _iso(when),
            "pinned": d.pinned,
            "locked": d.locked,
            "lifecycle": d.lifecycle,
            "compressed_from": None,
            "archived_by": None,
            "archived_at": None,
            "prior_importance": None,
        }
        records.append(record)
        record_of[index] = record
        if d.family:
            families.setdefault(d.family, []).append(record["id"])

    sources = [record_of[i] for i, d in enumerate(drafts) if d.role == "archived-source"]
    summary = next(record_of[i] for i, d in enumerate(drafts) if d.role == "summary")
    source_ids = sorted(r["id"] for r in sources)
    fingerprint = hashlib.sha256(",".join(source_ids).encode()).hexdigest()
    words_in = sum(len(r["content"].split()) for r in sources)
    for r, d in zip(sources, (d for d in drafts if d.role == "archived-source"), strict=True):
        r["archived_by"] = f"cluster-{fingerprint[:16]}"
        r["archived_at"] = _iso(run_at)
        r["prior_importance"] = d.extra["prior_importance"]
    dates = sorted(r["created_at"] for r in sources)
    summary["compressed_from"] = {
        "source_ids": source_ids,
        "compression_ratio": round(words_in / len(summary["content"].split()), 2),
        "cluster_size": len(source_ids),
        "distilled_at": _iso(run_at),
        "source_date_range": [dates[0], dates[-1]],
    }
    return records, {key: families[key] for key in sorted(families)}


def _skeleton(text: str) -> str:
    return re.sub(r"[\d.,$%+-]+", "#", text.lower())


def _unique(items: Iterable[str]) -> list[str]:
    out: list[str] = []
    for item in items:
        if item not in out:
            out.append(item)
    return out


def generate_sample(now: datetime, seed: int = DEFAULT_SEED) -> list[dict[str, Any]]:
    """Build the sample memory store as JSON-ready dicts (see module docstring).

    Same ``now`` and ``seed`` → identical output; ``now`` must be tz-aware.
    """
    return _build(now, seed)[0]


def generate_sample_with_families(
    now: datetime, seed: int = DEFAULT_SEED
) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """The sample plus its paraphrase families (family key → member ids).

    Why: tests and benchmarks of the clustering can compare the clusters they
    find with the families the sample was written to contain.
    """
    return _build(now, seed)


def write_sample_jsonl(path: Path, now: datetime, seed: int = DEFAULT_SEED) -> int:
    """Write the sample as JSONL (one UTF-8 object per line); return the count."""
    records = generate_sample(now, seed)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8", newline="\n") as fh:
        for record in records:
            fh.write(json.dumps(record, ensure_ascii=False) + "\n")
    return len(records)


def earlier_night(records: Iterable[dict[str, Any]]) -> tuple[int, int]:
    """The sample's one earlier compression run: (its active summaries, the memories it archived). The demo says
    so, since `status` counts them with the night's own."""
    records = list(records)
    summaries = sum(1 for r in records if r.get("kind") == "summary" and not r.get("archived_at"))
    return summaries, sum(1 for r in records if r.get("archived_at"))


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m memory_pipeline.sample_data OUT.jsonl [--now ISO] [--seed N]``."""
    parser = argparse.ArgumentParser(description="Write the sample memory store as JSONL.")
    parser.add_argument("path", type=Path)
    parser.add_argument("--now", help="ISO-8601 reference time (default: current UTC time)")
    parser.add_argument("--seed", type=int, default=DEFAULT_SEED)
    args = parser.parse_args(argv)
    if args.now:
        now = datetime.fromisoformat(args.now.replace("Z", "+00:00"))
        if now.tzinfo is None:
            now = now.replace(tzinfo=UTC)
    else:
        now = datetime.now(UTC)
    count = write_sample_jsonl(args.path, now, args.seed)
    print(f"wrote {count} memories to {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
