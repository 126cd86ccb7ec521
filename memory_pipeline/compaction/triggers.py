"""The seed's hybrid trigger model, evaluated in its priority order.

1. semantic hard limit (> 1200 tokens)  2. semantic risk (> 1020 = 85 % of the hard limit)
3. volume overload (working, then episodic)  4. weekly (age-based compaction due)

The weekly trigger is the seed's baseline: on its Sunday run it is "met" when some file is due by age
(a working file older than 7 days, or an episodic file older than 30 days). Without that, a weekly run with no
volume or semantic threshold met has nothing to do and ends with a report that says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from memory_pipeline.compaction.tiers import TierState

SOFT_LIMIT = 900
HARD_LIMIT = 1200
RISK_THRESHOLD = int(HARD_LIMIT * 0.85)  # 1020
WORKING_MAX_FILES = 10
WORKING_MAX_TOKENS = 4000
WORKING_MAX_AGE_DAYS = 10.0
EPISODIC_MAX_FILES = 20
EPISODIC_MAX_TOKENS = 8000
EPISODIC_MAX_AGE_DAYS = 45.0
WORKING_COMPACT_AFTER_DAYS = 7.0
EPISODIC_EXTRACT_AFTER_DAYS = 30.0

PRIORITY = ("semantic_hard_limit", "semantic_risk", "volume_overload", "weekly")


@dataclass(frozen=True)
class Threshold:
    """One evaluated threshold: `actual > limit` fires it."""

    name: str
    trigger: str  # which of PRIORITY it belongs to
    actual: float
    limit: float
    fired: bool

    def describe(self) -> str:
        op = ">" if self.fired else "≤"
        return f"{self.name}={self.actual:g} {op} {self.limit:g}"


@dataclass(frozen=True)
class Evaluation:
    thresholds: tuple[Threshold, ...]

    @property
    def fired(self) -> list[Threshold]:
        return [t for t in self.thresholds if t.fired]

    @property
    def fired_triggers(self) -> list[str]:
        """Fired triggers, highest priority first, each once."""
        names = {t.trigger for t in self.fired}
        return [p for p in PRIORITY if p in names]

    @property
    def primary(self) -> str | None:
        fired = self.fired_triggers
        return fired[0] if fired else None

    def primary_detail(self) -> str:
        if self.primary is None:
            return "none"
        return f"{self.primary} ({', '.join(t.describe() for t in self.fired if t.trigger == self.primary)})"

    def as_rows(self) -> list[dict[str, object]]:
        return [asdict(t) for t in self.thresholds]


def due_files(state: TierState) -> tuple[list[str], list[str]]:
    """Working files older than 7 days and episodic files older than 30 days (strictly: a file of exactly
    7 days is not compacted — seed: "never compact files less than 7 days old")."""
    working = [f.name for f in state.working.files if f.age_days > WORKING_COMPACT_AFTER_DAYS]
    episodic = [f.name for f in state.episodic.files if f.age_days > EPISODIC_EXTRACT_AFTER_DAYS]
    return working, episodic


def evaluate(state: TierState) -> Evaluation:
    """Every threshold with its actual value, in priority order."""
    w, e, tokens = state.working, state.episodic, state.semantic_tokens
    working_due, episodic_due = due_files(state)

    def t(name: str, trigger: str, actual: float, limit: float) -> Threshold:
        return Threshold(name, trigger, actual, limit, actual > limit)

    return Evaluation(
        (
            t("semantic_tokens_hard_limit", "semantic_hard_limit", tokens, HARD_LIMIT),
            t("semantic_tokens_risk", "semantic_risk", tokens, RISK_THRESHOLD),
            t("working_file_count", "volume_overload", w.file_count, WORKING_MAX_FILES),
            t("working_total_tokens", "volume_overload", w.total_tokens, WORKING_MAX_TOKENS),
            t("working_oldest_age_days", "volume_overload", w.oldest_age_days, WORKING_MAX_AGE_DAYS),
            t("episodic_file_count", "volume_overload", e.file_count, EPISODIC_MAX_FILES),
            t("episodic_total_tokens", "volume_overload", e.total_tokens, EPISODIC_MAX_TOKENS),
            t("episodic_oldest_age_days", "volume_overload", e.oldest_age_days, EPISODIC_MAX_AGE_DAYS),
            t("working_files_due_over_7_days", "weekly", len(working_due), 0),
            t("episodic_files_due_over_30_days", "weekly", len(episodic_due), 0),
        )
    )
