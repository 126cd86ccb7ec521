"""Drafts of the sample memories: which family member, singleton frame or rule is written on which day.

Why separate from the filler: these functions fix the shape of the sample (family sizes, ages, the
special cases every eligibility filter needs); the words come from ``memory_pipeline/sample/*.json``.
"""

from __future__ import annotations

import random
from datetime import timedelta

from memory_pipeline.sample.memories import (
    CORE,
    EARLIER_SOURCES,
    EARLIER_SUMMARY,
    FAMILIES,
    FRAMES,
    SINGLETON_COUNTS,
    SOURCES,
    Draft,
    Family,
    Frame,
    frame_capacity,
)

# Oldest day a memory may be written on; the sample spans at least this many days.
SPAN_DAYS = 44
CRITICAL = 2.5


def _clip(value: float, lo: float = 0.5, hi: float = 2.4) -> float:
    return round(min(hi, max(lo, value)), 2)


def _old_age(rng: random.Random, day: int) -> timedelta:
    """An age on calendar-ish day ``day`` (≥ 1), always at least 26 h old."""
    return timedelta(days=day, hours=rng.uniform(2.0, 22.0))


def _member_combos(rng: random.Random, fam: Family, k: int) -> list[tuple[int, int]]:
    """Pick k distinct (head, tail) pairs, each head repeated so members link.

    Why: MiniLM scores members sharing a head at ~0.9 and those sharing only the
    meaning at ~0.7, so every head is used at least twice where possible and
    consecutive heads share a tail: the family then forms one component.
    """
    heads = list(range(len(fam.heads)))
    tails = list(range(len(fam.tails)))
    rng.shuffle(heads)
    rng.shuffle(tails)
    chosen: list[tuple[int, int]] = []
    ti = 0
    for h in heads:
        for _ in range(2):
            pair = (h, tails[ti % len(tails)])
            if pair not in chosen:
                chosen.append(pair)
            ti += 1
    rest = [(h, t) for h in heads for t in tails if (h, t) not in chosen]
    rng.shuffle(rest)
    chosen.extend(rest)
    return chosen[:k]


def family_drafts(rng: random.Random) -> list[Draft]:
    drafts: list[Draft] = []
    sizes = (3, 4, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 11, 12, 13, 14, 15)
    for fam in FAMILIES:
        combos = len(fam.heads) * len(fam.tails)
        k = min(combos, 15, rng.choice(sizes))
        k = max(k, 3)
        base = rng.uniform(1.1, 1.9) if fam.causal else rng.uniform(0.7, 1.5)
        # Ages ≥ 2 days apart put every member on its own calendar date.
        days = [2 * d for d in rng.sample(range(1, (SPAN_DAYS - 4) // 2), k)]
        cats = list(fam.categories)
        for (h, t), day in zip(_member_combos(rng, fam, k), days, strict=True):
            drafts.append(
                Draft(
                    template=f"{fam.heads[h]} {fam.tails[t]}",
                    categories=cats,
                    tags=list(fam.tags) + (["lesson"] if fam.causal else []),
                    nexus=list(fam.nexus),
                    importance=_clip(rng.gauss(base, 0.22)),
                    source=rng.choice(
                        ("reflection", "session", "agent") if fam.causal else ("session", "agent", "session")
                    ),
                    age=_old_age(rng, day),
                    family=fam.key,
                )
            )
    return drafts


def singleton_drafts(rng: random.Random) -> list[Draft]:
    drafts: list[Draft] = []
    for category, count in SINGLETON_COUNTS.items():
        frames = FRAMES[category]
        left = {i: frame_capacity(f) for i, f in enumerate(frames)}
        if count > sum(left.values()):
            raise ValueError(f"sample pools for {category!r} hold only {sum(left.values())} distinct memories")
        order: list[Frame] = []
        while len(order) < count:  # round-robin so every frame is used evenly
            for i, frame in enumerate(frames):
                if left[i] and len(order) < count:
                    left[i] -= 1
                    order.append(frame)
        rng.shuffle(order)
        for frame in order:
            day = min(SPAN_DAYS, int(SPAN_DAYS * rng.random() ** 1.25) + 1)
            drafts.append(
                Draft(
                    template=frame.text,
                    categories=[category],
                    tags=list(frame.tags),
                    nexus=list(frame.nexus),
                    importance=_clip(rng.triangular(0.5, 2.2, 0.9)),
                    source=rng.choice(SOURCES[category]),
                    age=_old_age(rng, day),
                )
            )
    return drafts


def core_drafts(rng: random.Random) -> list[Draft]:
    drafts = []
    for category, text, importance, pinned, locked in CORE:
        drafts.append(
            Draft(
                template=text,
                categories=[category, "rules"] if importance >= CRITICAL else [category],
                tags=["rule"] if importance >= CRITICAL else ["preferences"],
                nexus=[f"rule:{category}"],
                importance=importance,
                source="session",
                age=_old_age(rng, rng.randint(10, SPAN_DAYS)),
                pinned=pinned,
                locked=locked,
                special=True,
            )
        )
    return drafts


def mark_specials(rng: random.Random, drafts: list[Draft]) -> None:
    """Put critical / pinned / locked / fresh cases inside families and singletons.

    Why: every eligibility filter of the engine must have something to exclude,
    including members of a family that would otherwise be compressed. Each
    family gets at most one special member and keeps ≥ 5 eligible members.
    """
    by_family: dict[str, list[Draft]] = {}
    for d in drafts:
        if d.family:
            by_family.setdefault(d.family, []).append(d)
    big = [key for key, members in by_family.items() if len(members) >= 7]
    rng.shuffle(big)
    plan = ["critical"] * 5 + ["pinned"] * 3 + ["locked"] * 2 + ["fresh"] * 5
    if len(big) < len(plan):
        raise ValueError(f"need {len(plan)} families with ≥ 7 members for the special cases, have {len(big)}")
    for kind, key in zip(plan, big, strict=False):
        member = rng.choice(by_family[key])
        member.special = True
        if kind == "critical":
            member.importance = round(rng.uniform(2.55, 2.95), 2)
        elif kind == "pinned":
            member.pinned = True
        elif kind == "locked":
            member.locked = True
        else:
            member.age = timedelta(hours=rng.uniform(1.0, 22.0))
    singles = [d for d in drafts if not d.family and not d.special]
    for d in rng.sample(singles, 14):
        d.age = timedelta(hours=rng.uniform(0.3, 23.0))
        d.special = True


def earlier_run(rng: random.Random) -> list[Draft]:
    """Sources and summary of a compression that happened nine days ago."""
    drafts = []
    for text in EARLIER_SOURCES:
        prior = _clip(rng.uniform(0.9, 1.9))
        drafts.append(
            Draft(
                template=text,
                categories=["ops"],
                tags=["backup", "nas-01", "usb"],
                nexus=["host:nas-01", "job:nightly-backup"],
                importance=0.5,
                source=rng.choice(("heartbeat", "agent")),
                age=_old_age(rng, rng.randint(16, SPAN_DAYS)),
                lifecycle="archived",
                role="archived-source",
                extra={"prior_importance": prior},
            )
        )
    priors = [d.extra["prior_importance"] for d in drafts]
    drafts.append(
        Draft(
            template=EARLIER_SUMMARY,
            categories=["ops", "compressed"],
            tags=["backup", "nas-01", "usb", "compressed"],
            nexus=["host:nas-01", "job:nightly-backup"],
            importance=max(1.0, max(priors)),
            source="abstraction-engine",
            age=timedelta(days=9),  # replaced by the 03:30 run time below
            kind="summary",
            role="summary",
        )
    )
    return drafts
