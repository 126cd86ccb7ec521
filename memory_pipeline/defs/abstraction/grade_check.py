"""The night's grade: what replaces the archived memories says what they said, and only that (blocking)."""

from typing import Any

import dagster as dg

from memory_pipeline.abstraction import candidate, grade
from memory_pipeline.abstraction.outcomes import ClusterOutcome
from memory_pipeline.defs.abstraction.memory_writer import compressed_memories
from memory_pipeline.resources import EngineConfig, MemoryStoreResource
from memory_pipeline.resources.store import POOL


def _figures(g: grade.NightGrade) -> dict[str, Any]:
    worst = [{"cluster": s.cluster_id, "coverage": round(s.coverage, 3), "statements": s.statements,
              "accepted": s.accepted, "left_out": list(s.missed)} for s in g.worst()]  # fmt: skip
    return {
        "grade": "on" if g.enabled else "off",
        "coverage": round(g.coverage, 4),
        "statements": g.statements,
        "statements_said": g.said,
        "unfaithful_sentences": g.unfaithful,
        "repeated_sentences": g.repeated,
        "distillations": len(g.summaries),
        "refused": g.refused,
        "mostly_refused": g.mostly_refused,
        "floor": g.floor,
        "worst": dg.MetadataValue.json(worst),
    }


@dg.asset_check(
    asset=compressed_memories,
    blocking=True,
    pool=POOL,
    description="What the night writes, held to what it replaces, before anything is archived: every "
    "distillation is graded on coverage — the share of its sources' distinct statements (observations, "
    "lessons, instructions, decisions) some sentence of it says — on faithfulness — sentences stating a "
    "value, name or range no source states together, fusing two statements into one, or telling several "
    "reports as one moment — and on sentences that say again what it already said. Pooled coverage of the "
    "summaries it would keep below MEMORY_PIPELINE_GRADE_FLOOR (default 0.9; 0 turns the grade off), an unfaithful "
    "or repeated sentence in one of them, "
    "or more than 80 % of at least 5 distillations refused while the rest would be archived stops the night before "
    "`archive_updates`: nothing is archived and its pending summaries are removed. Such a night usually "
    "clustered unlike memories together; the metadata names the distillations that left most out.",
)
def abstraction_grade(
    context: dg.AssetCheckExecutionContext,
    store: MemoryStoreResource,
    engine: EngineConfig,
    compressed_memories: list[ClusterOutcome],
) -> dg.AssetCheckResult:
    g = grade.night([o.grade for o in compressed_memories], engine.grade_floor)
    context.log.info(g.line())
    if not g.passed:
        _, removed = candidate.block_night(store.open(), context.run.run_id, "grade", g.to_dict())
        context.log.error(f"{g.line()}: nothing archived, {removed} pending summaries removed")
    return dg.AssetCheckResult(
        passed=g.passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata=_figures(g),
        description=None if g.passed else (
            f"{g.line()}. Nothing was archived. The night's clusters hold unlike memories (see the worst "
            "distillations); tighten clustering (COMPRESSION_SIMILARITY_THRESHOLD) or rerun with "
            "MEMORY_PIPELINE_GRADE_FLOOR lowered to accept the night"
        ),
    )
