"""Group `rollups`: compression_meta → cores → spheres (seed 002). Thin: the work is in `build`."""

from typing import Any

import dagster as dg

from memory_pipeline.defs.rollups.partitions import cores_partitions, spheres_partitions
from memory_pipeline.resources import LLMResource, MemoryStoreResource
from memory_pipeline.resources.store import POOL
from memory_pipeline.rollups import build
from memory_pipeline.rollups.counters import core_index, sphere_index
from memory_pipeline.rollups.llm_summary import LLMSummariser

GROUP = "rollups"
SESSIONS_KEY = dg.AssetKey("sessions")  # the journals domain's parsed sessions (store table `sessions`)


def summariser_for(
    context: dg.AssetExecutionContext, llm: LLMResource, store: MemoryStoreResource
) -> LLMSummariser | None:
    """The LLM summariser when the shared resource has a key (Messages API; batch mode is not used for the
    one call a Core needs), else None: the offline extractive path."""
    if not llm.uses_anthropic():
        return None
    from memory_pipeline.llm.ledger import FileLedger
    from memory_pipeline.llm.retry import RetryPolicy

    return LLMSummariser(
        llm.make_client(),
        llm.model,
        max_tokens=llm.max_tokens,
        temperature=llm.temperature,
        retry=RetryPolicy(
            max_retries=llm.max_retries,
            base_delay_s=llm.retry_base_delay_s,
            max_delay_s=llm.retry_max_delay_s,
            max_retry_after_s=llm.max_retry_after_s,
        ),
        ledger=FileLedger(store.reports_dir, context.run_id),
        prices=llm.prices(),
        secrets=(llm.api_key,),
    )


@dg.asset(
    group_name=GROUP,
    pool=POOL,
    kinds={"duckdb", "json"},
    deps=[SESSIONS_KEY],
    code_version="rollups-assign-1",
)
def compression_meta(context: dg.AssetExecutionContext, store: MemoryStoreResource) -> dg.MaterializeResult:
    """Every session's fixed place in the hierarchy (ordinal → session/core/sphere seq), oldest first; late
    sessions take the next free ordinals. Writes knowledge/state/compression_counters.json."""
    memory = store.open()
    added = build.assign_sessions(memory, store.home_path)
    counters = build.write_counters(memory, store.home_path)
    context.log.info(f"{added} new sessions assigned; counters {counters}")
    return dg.MaterializeResult(
        metadata={
            "sessions_assigned": added,
            "Session_seq": counters["Session_seq"],
            "Core_seq": counters["Core_seq"],
            "Sphere_seq": counters["Sphere_seq"],
            "counters_path": dg.MetadataValue.path(str(build.counters_path(store.home_path))),
        }
    )


def _metadata(built: list[build.Built], kind: str) -> dict[str, Any]:
    last = built[-1].document
    meta: dict[str, Any] = {
        f"{kind}s_built": len(built),
        "keys": ", ".join(b.key for b in built),
        "path": dg.MetadataValue.path(str(built[-1].path)),
        "compression_method": last["meta"]["compression_method"],
        "session_count": sum(b.document["session_count"] for b in built),
    }
    if kind == "core":
        meta["detail_retention"] = last["meta"]["detail_retention"]
        meta["milestones"] = sum(len(b.document.get("milestones", [])) for b in built)
        meta["late_sessions"] = sum(len(b.document.get("late_sessions", [])) for b in built)
    if "llm_error" in last["meta"]:
        meta["llm_error"] = last["meta"]["llm_error"]
    return meta


@dg.asset(
    group_name=GROUP,
    pool=POOL,
    kinds={"duckdb", "json"},
    partitions_def=cores_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[compression_meta],
    code_version="rollups-core-1",
)
def cores(context: dg.AssetExecutionContext, store: MemoryStoreResource, llm: LLMResource) -> dg.MaterializeResult:
    """Core memories: every 8 sessions compressed into knowledge/cores/<key>.json (validated against
    schemas/core.schema.json). Originals are only read."""
    # The Core's structure is seed 002's.
    memory = store.open()
    summariser = summariser_for(context, llm, store)
    built = []
    for key in sorted(context.partition_keys, key=core_index):
        built.append(build.build_core(memory, store.home_path, key, summariser))
        context.log.info(f"{key}: {built[-1].document['meta']['compression_method']} → {built[-1].path}")
    return dg.MaterializeResult(metadata=_metadata(built, "core"))


@dg.asset(
    group_name=GROUP,
    pool=POOL,
    kinds={"duckdb", "json"},
    partitions_def=spheres_partitions,
    backfill_policy=dg.BackfillPolicy.single_run(),
    deps=[dg.AssetDep(cores, partition_mapping=dg.AllPartitionMapping())],
    code_version="rollups-sphere-1",
)
def spheres(context: dg.AssetExecutionContext, store: MemoryStoreResource, llm: LLMResource) -> dg.MaterializeResult:
    """Sphere memories: every 8 Cores abstracted into knowledge/spheres/<key>.json (beliefs, patterns,
    relationship evolution), validated against schemas/sphere.schema.json."""
    memory = store.open()
    summariser = summariser_for(context, llm, store)
    built = []
    for key in sorted(context.partition_keys, key=sphere_index):
        built.append(build.build_sphere(memory, store.home_path, key, summariser))
        context.log.info(f"{key}: {built[-1].document['meta']['compression_method']} → {built[-1].path}")
    return dg.MaterializeResult(metadata=_metadata(built, "sphere"))


ASSETS = [compression_meta, cores, spheres]
rollup_assign = dg.define_asset_job(
    "rollup_assign", selection=[compression_meta],
    description="Records which Core and Sphere each session belongs to (compression_meta). Started by "
    "rollups_sensor when new sessions arrive; safe to re-run, so after a failure fix the cause in the step's log "
    "and launch it again.",
)
rollup_cores = dg.define_asset_job(
    "rollup_cores", selection=[cores], partitions_def=cores_partitions,
    description="Builds Core memories (8 sessions each) for the partitions rollups_sensor adds; `memory-pipeline "
    "rollups build` does the same from a shell. On failure re-materialize the failed Core partitions once the "
    "cause in the step's log is fixed; sessions are only read.",
)
rollup_spheres = dg.define_asset_job(
    "rollup_spheres", selection=[spheres], partitions_def=spheres_partitions,
    description="Builds Sphere memories (8 Cores each) once their Cores exist; started by rollups_sensor. On "
    "failure re-materialize the failed Sphere partitions once the cause in the step's log is fixed.",
)
JOBS = [rollup_assign, rollup_cores, rollup_spheres]
