"""AtomEnricher (seed 000): causal patterns as subject/action/outcome/consequences atoms."""

import dagster as dg

from memory_pipeline.abstraction.atoms import enrich
from memory_pipeline.abstraction.outcomes import AtomResults, ClusterOutcome
from memory_pipeline.defs.abstraction.common import GROUP
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL


@dg.asset(group_name=GROUP, pool=POOL, kinds={"duckdb"}, owners=OWNERS, tags={"component": "AtomEnricher"})
def atoms(
    context: dg.AssetExecutionContext,
    store: MemoryStoreResource,
    embedder: EmbedderResource,
    engine: EngineConfig,
    llm: LLMResource,
    archive_updates: list[ClusterOutcome],
) -> dg.Output[AtomResults]:
    """Causal abstractions become {subject, action, outcome, consequences} atoms; a matching atom is
    strengthened (+0.1, capped at 1.0) instead of duplicated. Failures here never undo compression."""
    from memory_pipeline.llm import runs as llm_runs

    distiller = llm.get_distiller(
        reports_dir=store.reports_dir,
        run_id=context.run.run_id,
        rate_limit_per_min=engine.rate_limit_per_min,
        max_cost_usd=engine.max_cost_usd,
        log=context.log.info,
    )
    causal = [o for o in archive_updates if o.status == "compressed" and o.distillation and o.distillation.is_causal]
    extractions = llm_runs.extract_all(distiller, [o.distillation.abstraction for o in causal if o.distillation])
    results = enrich(store.open(), causal, extractions, embedder.encode_text, context.run.run_id, engine.now,
                     context.log.warning)  # fmt: skip
    return dg.Output(
        results,
        metadata={
            "atoms_created": results.created,
            "atoms_strengthened": results.strengthened,
            "not_causal": results.not_causal,
            "errors": len(results.errors),
            **llm_runs.step_metadata(distiller),
        },
    )
