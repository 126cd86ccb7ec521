"""Parquet IO manager (pyarrow) for the daily `sessions` output: `<workspace>/parquet/<asset>/<day>/<table>.parquet`.

The output is `{partition key: {table name: pa.Table}}` for the run's partitions — one day, or every day of a
single-run backfill — and an input loads the same mapping for the partitions the step reads.
DuckDB reads the files directly, e.g. `SELECT * FROM read_parquet('data/workspace/parquet/sessions/*/turns.parquet')`.
Each file is written to a temp name, fsynced and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq

from memory_pipeline.operator.partition_keys import time_part

UNPARTITIONED = "all"


def _keys(context: dg.OutputContext | dg.InputContext) -> list[str]:
    return list(context.asset_partition_keys) if context.has_asset_partitions else [UNPARTITIONED]


class ParquetIOManager(dg.ConfigurableIOManager):
    base_dir: str

    def _dir(self, context: dg.OutputContext | dg.InputContext, partition: str) -> Path:
        # base_dir is the agent's workspace in a fleet: the folder is named by the day alone
        return Path(self.base_dir).joinpath(*context.asset_key.path, time_part(partition))

    def handle_output(self, context: dg.OutputContext, obj: dict[str, dict[str, pa.Table]]) -> None:
        keys = _keys(context)
        if sorted(obj) != sorted(keys):
            raise ValueError(
                f"{context.asset_key.to_user_string()}: output has partitions {sorted(obj)}, the run materialises "
                f"{sorted(keys)}"
            )
        for key in keys:
            folder = self._dir(context, key)
            folder.mkdir(parents=True, exist_ok=True)
            for name, table in obj[key].items():
                target = folder / f"{name}.parquet"
                tmp = folder / f".{name}.parquet.tmp-{os.getpid()}"
                pq.write_table(table, tmp)
                with open(tmp, "rb") as fh:
                    os.fsync(fh.fileno())
                os.replace(tmp, target)
        first = self._dir(context, keys[0])
        context.add_output_metadata({"parquet": dg.MetadataValue.path(str(first if len(keys) == 1 else first.parent))})

    def load_input(self, context: dg.InputContext) -> dict[str, dict[str, pa.Table]]:
        out = {}
        for key in _keys(context):
            folder = self._dir(context, key)
            if not folder.is_dir():
                raise FileNotFoundError(f"no Parquet output at {folder}: materialise `sessions` for {key} first")
            out[key] = {p.stem: pq.read_table(p) for p in sorted(folder.glob("*.parquet"))}
        return out
