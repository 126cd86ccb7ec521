"""Parquet IO manager (pyarrow) for the daily `sessions` output: `<workspace>/parquet/<asset>/<day>/<table>.parquet`.

DuckDB reads the files directly, e.g. `SELECT * FROM read_parquet('data/workspace/parquet/sessions/*/turns.parquet')`.
Each file is written to a temp name, fsynced and renamed, so a reader never sees half a file.
"""

from __future__ import annotations

import os
from pathlib import Path

import dagster as dg
import pyarrow as pa
import pyarrow.parquet as pq


class ParquetIOManager(dg.ConfigurableIOManager):
    base_dir: str

    def _dir(self, context: dg.OutputContext | dg.InputContext) -> Path:
        key = context.asset_key.path
        partition = context.asset_partition_key if context.has_asset_partitions else "all"
        return Path(self.base_dir).joinpath(*key, partition)

    def handle_output(self, context: dg.OutputContext, obj: dict[str, pa.Table]) -> None:
        folder = self._dir(context)
        folder.mkdir(parents=True, exist_ok=True)
        for name, table in obj.items():
            target = folder / f"{name}.parquet"
            tmp = folder / f".{name}.parquet.tmp-{os.getpid()}"
            pq.write_table(table, tmp)
            with open(tmp, "rb") as fh:
                os.fsync(fh.fileno())
            os.replace(tmp, target)
        context.add_output_metadata({"parquet": dg.MetadataValue.path(str(folder))})

    def load_input(self, context: dg.InputContext) -> dict[str, pa.Table]:
        folder = self._dir(context)
        if not folder.is_dir():
            raise FileNotFoundError(f"no Parquet output at {folder}: materialise `sessions` for this day first")
        return {p.stem: pq.read_table(p) for p in sorted(folder.glob("*.parquet"))}
