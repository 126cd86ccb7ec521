"""What the abstraction assets share beyond the domain's data (memory_pipeline/abstraction/outcomes.py): the
group, whether a store lease's holder is still running in this Dagster instance, and whether this process runs
the whole of its run (so that its heartbeat speaks for the run)."""

from pathlib import Path

import dagster as dg

from memory_pipeline.store import lease

GROUP = "abstraction"


def _lease_alive(instance: dg.DagsterInstance, held: lease.Lease, store_path: Path | None = None) -> bool:
    """A lease is live while its Dagster run, if any, has not finished and its holder proves it is alive: by its
    heartbeat when it beats (any host), else by its process (this host) until the lease expires."""
    run = instance.get_run_by_id(held.holder)
    if run is not None and run.is_finished:
        return False
    return lease.holder_alive(held, lease.read_beat(store_path, held.holder))


def runs_whole_night_here(context: dg.AssetExecutionContext | dg.OpExecutionContext) -> bool:
    """True when this process executes the run's other steps too (the in-process executor: the CLI, a night on
    a Celery worker, a Kubernetes run pod). Only such a process can beat for the run from start to end. With a
    process per step (the multiprocess or Celery step executor) each step's process plans that step alone, the
    run between two steps has no process of its own, and Dagster's run status decides instead."""
    return len(context.get_step_execution_context().execution_plan.step_keys_to_execute) > 1
