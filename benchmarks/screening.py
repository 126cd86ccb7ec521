"""The screening mode (int8 screen + float64 re-check) against the exact float32 build, in the same run.

Each build runs in a fresh process on the same vectors (benchmarks/data.py, saved once as .npy). The edge
sets are compared by a digest of the sorted pairs. `--million` also runs one full screened build at
1,000,000 rows; the exact build's 1M time is extrapolated (N²) from the sizes measured in the same run, and
the 1M screened edges are checked against the exact build on a sample of rows (`threshold_edges(rows=...)`,
every edge that touches a sampled row).
"""

from __future__ import annotations

import argparse
import hashlib
from typing import Any

import numpy as np

from benchmarks import common
from benchmarks.clustering import THRESHOLD, data_file
from benchmarks.data import DIM

SIZES = (100_000, 300_000)
MILLION = 1_000_000
SAMPLE_ROWS = 5_000  # rows of the 1M set whose edges are checked against the exact build


def _digest(rows: np.ndarray, cols: np.ndarray, n: int) -> str:
    keys = np.sort(rows.astype(np.int64) * n + cols.astype(np.int64))
    return hashlib.sha256(keys.tobytes()).hexdigest()[:16]


def run_exact(path: str) -> dict[str, Any]:
    from memory_pipeline.similarity.clustering import threshold_edges

    v = np.load(path)
    m = common.measured(lambda: threshold_edges(v, THRESHOLD))
    rows, cols = m.pop("value")
    return {**m, "edges": int(rows.size), "digest": _digest(rows, cols, len(v))}


def run_screened(path: str, sample: int = 0) -> dict[str, Any]:
    from memory_pipeline.similarity.clustering import threshold_edges
    from memory_pipeline.similarity.screening import screened_threshold_edges

    v = np.load(path)
    stats: dict[str, float] = {}
    m = common.measured(lambda: screened_threshold_edges(v, THRESHOLD, stats=stats))
    rows, cols = m.pop("value")
    out = {**m, **stats, "edges": int(rows.size), "digest": _digest(rows, cols, len(v))}
    if sample:  # the exact build's edges touching a random sample of rows, against ours restricted to them
        picked = np.sort(np.random.default_rng(1).choice(len(v), size=min(sample, len(v)), replace=False))
        in_sample = np.zeros(len(v), dtype=bool)
        in_sample[picked] = True
        touch = in_sample[rows] | in_sample[cols]
        er, ec = threshold_edges(v, THRESHOLD, rows=picked)
        out["sample_rows"] = int(picked.size)
        out["sample_edges"] = int(er.size)
        out["sample_identical"] = _digest(rows[touch], cols[touch], len(v)) == _digest(er, ec, len(v))
    return out


def _ort_version() -> str:
    try:
        import onnxruntime

        return f"onnxruntime {onnxruntime.__version__}"
    except ImportError:
        return "onnxruntime missing"


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks screening")
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",") if x], default=list(SIZES))
    p.add_argument("--million", action="store_true", help="also one full screened build at 1,000,000 rows")
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    env["python"] += f", {_ort_version()}"
    rows = []
    exact_s: dict[int, float] = {}
    rate = common.gemm_rate()
    for n in args.sizes:
        path = str(data_file(n))
        exact = common.in_fresh_process("benchmarks.screening:run_exact", None, path=path)
        ours = common.in_fresh_process("benchmarks.screening:run_screened", None, path=path)
        if not (exact.get("ok") and ours.get("ok")):
            raise RuntimeError(f"N={n}: exact {exact.get('error')}, screened {ours.get('error')}")
        exact_s[n] = exact["seconds"]
        rows.append(
            (
                f"{n:,}",
                common.fmt_s(exact["seconds"]),
                common.fmt_s(ours["seconds"]),
                f"{exact['seconds'] / ours['seconds']:.2f}×",
                f"{exact['peak_mib']:.0f} / {ours['peak_mib']:.0f}",
                f"{ours['edges']:,}",
                f"{int(ours['candidates']):,}",
                f"{int(ours['rechecked']):,}",
                f"{ours['margin']:.4f}",
                "identical" if ours["digest"] == exact["digest"] else "DIFFERENT",
                common.load_average().split(" / ")[0],
            )
        )
        print(rows[-1], flush=True)
    rate = max(rate, common.gemm_rate())
    header = (
        "N",
        "exact s",
        "screened s",
        "speed-up",
        "peak MiB exact / screened",
        "edges",
        "candidates",
        "re-checked in float64",
        "widest margin",
        "edge set",
        "load (1 min)",
    )
    body = [
        f"### Screened vs exact full build (threshold {THRESHOLD}, {DIM}-d, 2 threads each)\n",
        common.table(header, rows),
        "",
        "Exact: `clustering.threshold_edges` (float32 sgemm tiles). Screened: "
        "`screening.screened_threshold_edges` (onnxruntime MatMulInteger u8×s8 → int32 tiles, one global "
        "int8 scale, every pair within its rigorous error margin of the threshold decided by `cosine64`). "
        "Candidates: pairs past the int8 screen; re-checked: those the bound could not decide. Each build in "
        f"a fresh process, one run each. float32 GEMM rate in this run: {rate / 1e9:.0f} GFLOP/s.",
    ]
    if args.million:
        path = str(data_file(MILLION))
        ours = common.in_fresh_process("benchmarks.screening:run_screened", None, path=path, sample=SAMPLE_ROWS)
        if not ours.get("ok"):
            raise RuntimeError(f"1M screened build failed: {ours.get('error')}")
        largest = max(exact_s) if exact_s else 0
        extrapolated = exact_s[largest] * (MILLION / largest) ** 2 if largest else None
        floor = common.floor_seconds(MILLION, DIM, rate)
        million = [
            (
                "screened (measured)",
                common.fmt_s(ours["seconds"]),
                f"{ours['seconds'] / 60:.1f}",
                f"{ours['peak_mib']:.0f}",
                f"{ours['edges']:,}",
                f"{int(ours['candidates']):,} / {int(ours['rechecked']):,}",
            ),
            (
                f"exact (extrapolated N² from {largest:,})" if largest else "exact",
                common.fmt_s(extrapolated),
                f"{extrapolated / 60:.1f}" if extrapolated else "—",
                "—",
                "—",
                "—",
            ),
            ("float32 GEMM floor (N²·d/2 at the rate above)", common.fmt_s(floor), f"{floor / 60:.1f}", "—", "—", "—"),
        ]
        body += [
            "",
            f"### Full build at N = {MILLION:,} (target ≤ 20 min, exact output)\n",
            common.table(("build", "seconds", "minutes", "peak MiB", "edges", "candidates / re-checked"), million),
            "",
            f"Exactness at 1M: the exact build's edges touching {ours['sample_rows']:,} random rows "
            f"({ours['sample_edges']:,} edges, `threshold_edges(rows=...)`) are "
            f"{'identical to' if ours['sample_identical'] else 'DIFFERENT from'} the screened build's edges "
            f"touching them. Load (1 min) after the 1M build: {common.load_average().split(' / ')[0]}.",
        ]
    common.append_results("screening", "\n".join(body), env, load_before)
