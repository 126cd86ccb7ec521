"""The night's grade: does what replaces the archived memories say what they said, and only that?

Per distillation (accepted or refused by the judge): how many of its sources' distinct statements it says
(`verification.faithfulness.coverage`), how many of its sentences its sources do not support (`faithfulness.check`:
a value no source states, two statements fused, values of several reports told as one moment) and how many say
again what it already said (`faithfulness.repeated`).
Pooled over what the night would commit: coverage = statements said ÷ statements. A night stops before
anything is archived when that is below the floor (MEMORY_PIPELINE_GRADE_FLOOR; 0 turns the grade off), when it
would commit an unfaithful sentence, or when the judge refused more than 80 % of its distillations (at least
`RUNAWAY_AT` of them) and it would still archive the rest: a night whose summaries mostly lose what their
sources said has clustered unlike memories, and what little passes is not worth its archive. A night whose
every distillation was refused archives nothing anyway; its line says why. Pure: outcomes in, figures out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

WORST_SHOWN = 5
RUNAWAY_AT = 5  # distillations, at least, before a night's share of refusals stops it
RUNAWAY_SHARE = 0.8  # ... refused above this share (a sample night with the words-alone judge refuses half)


@dataclass(frozen=True)
class SummaryGrade:
    """One distillation held to its sources."""

    cluster_id: str
    said: int  # distinct statements of the sources it says
    statements: int
    unfaithful: int  # sentences its sources do not support
    accepted: bool  # passed the judge (else refused, the cluster left as it is)
    missed: tuple[str, ...] = ()  # the first statements it leaves out
    repeated: int = 0  # sentences that say again what an earlier sentence of it said

    @property
    def coverage(self) -> float:
        return self.said / self.statements if self.statements else 1.0


@dataclass
class NightGrade:
    floor: float
    summaries: list[SummaryGrade] = field(default_factory=list)

    @property
    def enabled(self) -> bool:
        return self.floor > 0

    @property
    def kept(self) -> list[SummaryGrade]:
        """The distillations the night would commit."""
        return [s for s in self.summaries if s.accepted]

    @property
    def refused(self) -> int:
        return len(self.summaries) - len(self.kept)

    @property
    def statements(self) -> int:
        return sum(s.statements for s in self.kept)

    @property
    def said(self) -> int:
        return sum(s.said for s in self.kept)

    @property
    def mostly_refused(self) -> bool:
        """Most of its distillations refused: the night clustered unlike memories (distinct events, look-alikes)."""
        return len(self.summaries) >= RUNAWAY_AT and self.refused > RUNAWAY_SHARE * len(self.summaries)

    @property
    def runaway(self) -> bool:
        """Mostly refused, and still about to archive what passed: stopped, as its clusters cannot be trusted. A
        night that would archive nothing has nothing to stop; its line says why nothing was compressed."""
        return self.mostly_refused and bool(self.kept)

    @property
    def coverage(self) -> float:
        return self.said / self.statements if self.statements else 1.0

    @property
    def unfaithful(self) -> int:
        """Unfaithful sentences in what the night would commit (the judge refuses them, so 0 unless it was off)."""
        return sum(s.unfaithful for s in self.kept)

    @property
    def repeated(self) -> int:
        """Sentences said twice in what the night would commit (the judge takes them out, so 0 unless it was off)."""
        return sum(s.repeated for s in self.kept)

    @property
    def passed(self) -> bool:
        return not self.enabled or (self.coverage >= self.floor and self.unfaithful == 0 and self.repeated == 0
                                    and not self.runaway)  # fmt: skip

    def worst(self, n: int = WORST_SHOWN) -> list[SummaryGrade]:
        return sorted(self.summaries, key=lambda s: (s.coverage, -s.statements, s.cluster_id))[:n]

    def line(self) -> str:
        """One line for the run's output and `status`."""
        if not self.enabled:
            return "grade: off (MEMORY_PIPELINE_GRADE_FLOOR=0): what the summaries say was not checked"
        verdict = "ok" if self.passed else "BLOCKED"
        why = (f" — most distillations refused ({self.refused} of {len(self.summaries)}): its clusters hold unlike "
               "memories" if self.mostly_refused else "")  # fmt: skip
        return (f"grade: coverage {self.coverage:.3f} {verdict} ({self.said} of {self.statements} source statements "
                f"said by the summaries kept, floor {self.floor:g}), {self.unfaithful} unfaithful sentences, "
                f"{self.repeated} said twice; "
                f"{len(self.summaries)} distillations, {self.refused} refused{why}")  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        return {
            "enabled": self.enabled,
            "floor": self.floor,
            "coverage": round(self.coverage, 4),
            "statements": self.statements,
            "said": self.said,
            "unfaithful_sentences": self.unfaithful,
            "repeated_sentences": self.repeated,
            "distillations": len(self.summaries),
            "refused": self.refused,
            "passed": self.passed,
            "summaries": [asdict(s) for s in self.summaries],
        }


def from_dict(data: dict[str, Any]) -> NightGrade:
    return NightGrade(float(data["floor"]), [SummaryGrade(**{**s, "missed": tuple(s.get("missed", ()))})
                                             for s in data.get("summaries", [])])  # fmt: skip


def night(grades: Sequence[SummaryGrade | None], floor: float) -> NightGrade:
    return NightGrade(floor, [g for g in grades if g is not None])


def status_line(record: dict[str, Any] | None) -> str:
    """`status`'s line for the last finished night, from its record (the report, or the BLOCKED row)."""
    figures = (record or {}).get("grade")
    if not figures:
        return "grade         no night graded yet"
    return "grade         " + from_dict(figures).line().removeprefix("grade: ")
