"""Every threshold just below and just above its limit, and the seed's priority order."""

from datetime import UTC, datetime
from pathlib import Path

import pytest

from memory_pipeline.compaction import governance, triggers
from memory_pipeline.compaction.tiers import FileInfo, TierState, TierVolume, measure
from memory_pipeline_tests.compaction.conftest import NOW, note, semantic_text

T = datetime(2026, 11, 1, tzinfo=UTC)


def tier(name: str, files: int = 0, tokens: int = 0, oldest: float = 0.0, ages: tuple[float, ...] = ()) -> TierVolume:
    infos = tuple(FileInfo(f"{name}-{i}.md", 1, a) for i, a in enumerate(ages))
    return TierVolume(name, files or len(infos), tokens, max([oldest, *ages]), infos)


def state(semantic: int = 0, working: TierVolume | None = None, episodic: TierVolume | None = None) -> TierState:
    return TierState(T, working or tier("working"), episodic or tier("episodic"), tier("semantic"), tier("archive"),
                     "openclaw.md", semantic, {"openclaw.md": semantic})


CASES = [  # (threshold, trigger, state at the limit, state one step above it)
    ("semantic_tokens_hard_limit", "semantic_hard_limit", state(semantic=1200), state(semantic=1201)),
    ("semantic_tokens_risk", "semantic_risk", state(semantic=1020), state(semantic=1021)),
    ("working_file_count", "volume_overload", state(working=tier("working", files=10)),
     state(working=tier("working", files=11))),
    ("working_total_tokens", "volume_overload", state(working=tier("working", tokens=4000)),
     state(working=tier("working", tokens=4001))),
    ("working_oldest_age_days", "volume_overload", state(working=tier("working", oldest=10.0)),
     state(working=tier("working", oldest=10.01))),
    ("episodic_file_count", "volume_overload", state(episodic=tier("episodic", files=20)),
     state(episodic=tier("episodic", files=21))),
    ("episodic_total_tokens", "volume_overload", state(episodic=tier("episodic", tokens=8000)),
     state(episodic=tier("episodic", tokens=8001))),
    ("episodic_oldest_age_days", "volume_overload", state(episodic=tier("episodic", oldest=45.0)),
     state(episodic=tier("episodic", oldest=45.01))),
    ("working_files_due_over_7_days", "weekly", state(working=tier("working", ages=(7.0,))),
     state(working=tier("working", ages=(7.01,)))),
    ("episodic_files_due_over_30_days", "weekly", state(episodic=tier("episodic", ages=(30.0,))),
     state(episodic=tier("episodic", ages=(30.01,)))),
]


@pytest.mark.parametrize(("name", "trigger", "below", "above"), CASES, ids=[c[0] for c in CASES])
def test_threshold_just_below_and_just_above(name: str, trigger: str, below: TierState, above: TierState) -> None:
    at_limit = {t.name: t for t in triggers.evaluate(below).thresholds}
    over = {t.name: t for t in triggers.evaluate(above).thresholds}
    assert not at_limit[name].fired and triggers.evaluate(below).fired_triggers in ([], ["semantic_risk"])
    assert over[name].fired and trigger in triggers.evaluate(above).fired_triggers
    assert len(over) == 10  # every threshold is reported with its actual value, fired or not


@pytest.mark.parametrize(("tokens", "soft", "hard"), [(900, "OK", "OK"), (901, "WARNING", "OK"),
                                                       (1200, "WARNING", "OK"), (1201, "WARNING", "WARNING")])
def test_soft_and_hard_limit_status(tokens: int, soft: str, hard: str) -> None:
    assert governance.limit_status(tokens) == {"soft_limit": soft, "hard_limit": hard}


@pytest.mark.parametrize("tokens", [1020, 1021, 1200, 1201])
def test_semantic_tokens_are_measured_from_the_file(home: Path, tokens: int) -> None:
    note(home, "semantic", "openclaw.md", semantic_text(tokens), 1)
    note(home, "semantic", "whatsapp-bot.md", semantic_text(300), 1)  # a smaller file: not the one that drives
    s = measure(home, NOW)
    assert s.semantic_tokens == tokens and s.semantic_file == "openclaw.md"
    fired = triggers.evaluate(s).fired_triggers
    assert ("semantic_risk" in fired) == (tokens > 1020)
    assert ("semantic_hard_limit" in fired) == (tokens > 1200)


def test_the_largest_semantic_file_drives_the_semantic_triggers(home: Path) -> None:
    """Every semantic file has the seed's limits, so the fullest one decides risk / hard limit (Tier C)."""
    note(home, "semantic", "openclaw.md", semantic_text(400), 1)
    note(home, "semantic", "whatsapp-bot.md", semantic_text(1201), 1)
    s = measure(home, NOW)
    assert (s.semantic_file, s.semantic_tokens) == ("whatsapp-bot.md", 1201)
    assert s.semantic_file_tokens == {"openclaw.md": 400, "whatsapp-bot.md": 1201}
    assert triggers.evaluate(s).primary == "semantic_hard_limit"
    note(home, "semantic", "openclaw.md", semantic_text(1201), 1)  # a tie goes to the default file
    assert measure(home, NOW).semantic_file == "openclaw.md"


def test_working_volume_measured_from_files(home: Path) -> None:
    for i in range(11):
        note(home, "working", f"n{i:02d}.md", "A short note about the deploy.\n", age_days=i * 0.5)
    note(home, "working", "2026-10-20-notes.md", "A dated note.\n", age_days=0)  # the name's date wins
    s = measure(home, NOW)
    assert s.working.file_count == 12
    assert s.working.oldest_age_days == pytest.approx(12 + 3.5 / 24, abs=1e-3)
    rows = {t.name: t for t in triggers.evaluate(s).thresholds}
    assert rows["working_file_count"].fired and rows["working_oldest_age_days"].fired


def test_priority_order_when_several_fire() -> None:
    everything = state(semantic=1300, working=tier("working", files=11, ages=(12.0,)),
                       episodic=tier("episodic", tokens=9000))
    ev = triggers.evaluate(everything)
    assert ev.fired_triggers == ["semantic_hard_limit", "semantic_risk", "volume_overload", "weekly"]
    assert ev.primary == "semantic_hard_limit"
    assert triggers.evaluate(state(semantic=1100, working=tier("working", files=11))).primary == "semantic_risk"
    assert triggers.evaluate(state(working=tier("working", files=11, ages=(8.0,)))).primary == "volume_overload"
    assert triggers.evaluate(state(episodic=tier("episodic", ages=(31.0,)))).primary == "weekly"
    assert triggers.evaluate(state()).primary is None


def test_classification_before_extraction() -> None:
    assert governance.classify(500, 2, 1) == {"working_to_episodic": "B", "episodic_to_semantic": "B", "run": "B"}
    assert governance.classify(1021, 2, 1)["episodic_to_semantic"] == "C"
    assert governance.classify(1021, 2, 1)["run"] == "C"
    hard = governance.classify(1201, 1, 0)
    assert hard["semantic_hard_limit"] == "C" and hard["working_to_episodic"] == "B" and hard["run"] == "C"
    assert governance.classify(100, 0, 0) == {"run": "none"}
