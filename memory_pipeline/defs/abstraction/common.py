"""What the abstraction assets share beyond the domain's data (memory_pipeline/abstraction/outcomes.py): the
group, and whether a store lease's holder is still running in this Dagster instance."""

import dagster as dg

from memory_pipeline.store import lease

GROUP = "abstraction"


def _lease_alive(instance: dg.DagsterInstance, held: lease.Lease) -> bool:
    """A lease is live while its process is (on this host) and its Dagster run, if any, has not finished."""
    run = instance.get_run_by_id(held.holder)
    if run is not None and run.is_finished:
        return False
    return lease.pid_alive(held)
