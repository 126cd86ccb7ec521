"""AtomEnricher (seed 000): causal patterns as subject/action/outcome/consequences atoms."""

from dataclasses import dataclass, field

import dagster as dg

from memory_pipeline.abstraction.atoms import AtomIndex, ExistingAtom
from memory_pipeline.abstraction.report import (
    CompressionError,
)
from memory_pipeline.defs.abstraction.common import (
    ATOM_ACTION_THRESHOLD,
    ATOM_CONFIDENCE_NEW,
    ATOM_CONFIDENCE_STEP,
    ATOM_SUBJECT_THRESHOLD,
    GROUP,
    ClusterOutcome,
    _error,
)
from memory_pipeline.operator.metadata import OWNERS
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import atomic


@dataclass
class AtomResults:
    created: int = 0
    strengthened: int = 0
    not_causal: int = 0
    errors: list[CompressionError] = field(default_factory=list)


def _has_fields(extracted: dict[str, str], *names: str) -> bool:
    return all(isinstance(extracted.get(n), str) and extracted[n].strip() for n in names)


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
    db = store.open()
    run_id = context.run.run_id
    results = AtomResults()
    causal = [o for o in archive_updates if o.status == "compressed" and o.distillation and o.distillation.is_causal]
    extractions = llm_runs.extract_all(distiller, [o.distillation.abstraction for o in causal if o.distillation])
    usable = [i for i, e in enumerate(extractions) if isinstance(e, dict) and _has_fields(e, "subject", "action")]
    flat = embedder.encode([str(extractions[i][f]) for i in usable for f in ("subject", "action")])  # type: ignore
    field_vectors = {i: (flat[2 * k], flat[2 * k + 1]) for k, i in enumerate(usable)}
    with db.connect() as con:
        existing = [ExistingAtom(r.id, r.subject, r.action) for r in repo.all_atoms(con).itertuples()]
        index = AtomIndex(existing, embedder.encode)
        for i, (o, extracted) in enumerate(zip(causal, extractions, strict=True)):
            assert o.distillation is not None
            try:
                if isinstance(extracted, BaseException):
                    raise extracted
                if extracted is None:
                    results.not_causal += 1
                    continue
                if i not in field_vectors:
                    raise ValueError(f"extracted atom lacks a subject or an action: {extracted!r}")
                subject, action = field_vectors[i]
                match = index.match(subject, action, ATOM_SUBJECT_THRESHOLD, ATOM_ACTION_THRESHOLD)
                with atomic(con):
                    if match:
                        repo.strengthen_atom(con, match, ATOM_CONFIDENCE_STEP, o.summary_id or "", run_id, engine.now())
                        results.strengthened += 1
                    else:
                        origin = f"distilled:{o.distillation.distiller}"
                        atom_id = repo.create_atom(
                            con, extracted, ATOM_CONFIDENCE_NEW, origin, o.summary_id or "", run_id, engine.now()
                        )
                        index.add(atom_id, subject, action)
                        results.created += 1
            except Exception as exc:
                results.errors.append(_error(o.cluster.cluster_id, "enrich", exc))
                context.log.warning(f"AtomEnricher: cluster {o.cluster.cluster_id}: {exc}")
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
