"""Versioner: versions of one fact, found before anything is embedded or clustered, so that the night's summaries
state the present first. The plan is checked (a runaway rule stops the night) before `validity_updates` writes."""

from typing import Any

import dagster as dg

from memory_pipeline.abstraction import judged_versions, versions
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.defs.abstraction.cortex_dedupe import exact_duplicates
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store import validity

RUNAWAY_FLOOR = 10  # fewer supersessions than this never count as a runaway, whatever the share


@dg.asset(group_name=GROUP, kinds={"duckdb"}, owners=OWNERS, tags={"component": "Versioner"}, deps=[exact_duplicates])
def fact_versions(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, engine: EngineConfig, embedder: EmbedderResource,
    llm: LLMResource,
) -> dg.Output[versions.VersionPlan]:
    """Memories that state another value of a fact a later memory states: which one supersedes which. Offline,
    by the masked-text rule, then by attribute and value (a fact restated in other words; MiniLM judging the
    attribute phrases the words leave undecided); with Claude (the Messages API; not a batch night), each group
    of near statements is also judged by the model (its answer validated; an invalid one, or none, leaves the
    group to the offline rule). Read only: the check below decides whether `validity_updates` may write them."""
    stats: judged_versions.JudgeStats | None = None
    judging = llm.uses_anthropic() and not llm.uses_batch()  # a batch would hold the night at its first step
    with store.open().connect() as con:
        rows, undone = validity.fact_rows(con), validity.undone_pairs(con)
        plan = versions.plan(rows, undone, embedder.judge_encoder())
        groups = _candidates(con, embedder, rows) if judging else []
    if judging:  # the store is not held open while the model is asked
        plan, stats = _judged(context, store, engine, llm, rows, undone, plan, groups)
    context.log.info(f"Versioner: {len(plan.supersessions)} supersession(s) among {plan.facts_read} statements of "
                     f"fact ({plan.groups} facts stated more than once)")  # fmt: skip
    if stats is not None:
        context.log.info(f"Versioner: {stats.line()}")
    return dg.Output(plan, metadata={**_metadata(plan), **(stats.metadata() if stats else {})})


def _candidates(con: Any, embedder: EmbedderResource, rows: list[validity.FactRow]) -> list[list[validity.FactRow]]:
    said = judged_versions.statements(rows)
    own = embedder.encode if embedder.can_encode else None
    vectors = judged_versions.statement_vectors(con, embedder.model, said, own, embedder.encode_text)
    return judged_versions.candidate_groups(said, vectors)


def _judged(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, engine: EngineConfig, llm: LLMResource,
    rows: list[validity.FactRow], undone: set[tuple[str, str]], offline: versions.VersionPlan,
    groups: list[list[validity.FactRow]],
) -> tuple[versions.VersionPlan, judged_versions.JudgeStats]:
    """Claude's judgement of the night's candidate groups, under the run's rate limit, cost cap and ledger."""
    from memory_pipeline.llm.version_judge import ClaudeVersionJudge, user_message

    distiller = llm.get_distiller(
        reports_dir=store.reports_dir, run_id=context.run.run_id, rate_limit_per_min=engine.rate_limit_per_min,
        max_cost_usd=engine.max_cost_usd, log=context.log.info,
    )  # fmt: skip
    judge = ClaudeVersionJudge(distiller)
    cache = judged_versions.ReplyCache(store.reports_dir / judged_versions.CACHE_FILE)
    plan, stats = judged_versions.judged_plan(
        offline, groups, judge.ask, undone, cache=cache, log=context.log.info,
        request_key=lambda members: cache.key(llm.model, user_message(members)),
    )  # fmt: skip
    cache.save()
    plan.facts_read = max(plan.facts_read, judged_versions.read_count(rows))
    return plan, stats


def _metadata(plan: versions.VersionPlan) -> dict[str, Any]:
    largest = plan.largest()
    return {
        "supersessions": len(plan.supersessions),
        "facts_read": plan.facts_read,
        "facts_with_versions": plan.groups,
        "superseded_share": round(plan.share(), 4),
        "largest": dg.MetadataValue.md("\n".join(f"- `{k}`: {n}" for k, n in largest) or "none"),
    }


@dg.asset_check(
    asset=fact_versions,
    blocking=True,
    description="A night supersedes at most a set share of the facts it reads (MEMORY_PIPELINE_MAX_SUPERSEDED_SHARE, "
    "default 0.5; ten or fewer supersessions always pass): more is a runaway rule, and the night stops before "
    "anything is marked superseded.",
)
def supersessions_bounded(engine: EngineConfig, fact_versions: versions.VersionPlan) -> dg.AssetCheckResult:
    count, share = len(fact_versions.supersessions), fact_versions.share()
    passed = count <= RUNAWAY_FLOOR or share <= engine.max_superseded_share
    worst = ", ".join(f"'{k}' ({n})" for k, n in fact_versions.largest(3))
    return dg.AssetCheckResult(
        passed=passed,
        severity=dg.AssetCheckSeverity.ERROR,
        metadata={"supersessions": count, "share": round(share, 4), "max_share": engine.max_superseded_share},
        description=None if passed else (
            f"{count} supersessions would mark {share:.0%} of {fact_versions.facts_read} statements of fact superseded"
            f" (at most {engine.max_superseded_share:.0%}); most in: {worst}. Nothing was marked; raise "
            "MEMORY_PIPELINE_MAX_SUPERSEDED_SHARE to accept them"
        ),
    )


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "Versioner"})
def validity_updates(
    context: dg.AssetExecutionContext, store: MemoryStoreResource, engine: EngineConfig,
    fact_versions: versions.VersionPlan,
) -> dg.MaterializeResult:
    """The supersessions, in one transaction: each older value marked superseded by the newer one, valid until
    the newer holds (when it was stated, or the later start it states); logged with the run, so a rollback takes
    them back."""
    with store.open().transaction() as con:
        written = validity.apply(con, fact_versions.supersessions, context.run.run_id, engine.now())
    context.log.info(f"Versioner: memories marked superseded: {written}")
    return dg.MaterializeResult(metadata={"superseded": written})
