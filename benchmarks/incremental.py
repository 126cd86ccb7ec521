"""An incremental night at 1,000,000 eligible memories with 10,000 new ones: the night's clustering step.

Synthetic vectors, in memory (not through DuckDB's eligibility query): the step timed is what the
`clusters` asset does after `eligible_memories` — checksums, matching the stored graph, the new rows'
edges against all N rows (O(new × N)), components, MemoryCluster records — plus, timed separately, loading
the stored graph from and writing the night's delta to a DuckDB file with the 1M-node graph in it.

The stored graph of last night's 990,000 memories is seeded from the generator's clusters (the edges
within each generated cluster, computed exactly) instead of a full 990k build (~1 h here). That is exact
because pairs from different generated clusters have cosine < 0.5 ≪ 0.82 in 384-d; the run checks it on
tonight's 10k × 1M exact pairs (every new edge must fall inside a generated cluster).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import common
from benchmarks.data import DIM, clustered_with_labels

THRESHOLD = 0.82
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


def within_cluster_edges(vectors: np.ndarray, owners: np.ndarray, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Exact edges among `rows` whose ends share a generated cluster."""
    from memory_pipeline.similarity.clustering import cosine64

    sub_owner = owners[rows]
    order = np.argsort(sub_owner, kind="stable")
    sorted_rows, sorted_owner = rows[order], sub_owner[order]
    bounds = np.flatnonzero(np.diff(sorted_owner)) + 1
    out_r, out_c = [], []
    for group in np.split(sorted_rows, bounds):
        if group.size < 2:
            continue
        i, j = np.triu_indices(group.size, k=1)
        a, b = group[i], group[j]
        keep = cosine64(vectors, a, b) >= THRESHOLD  # float64 verdict, as the build's
        out_r.append(np.minimum(a[keep], b[keep]))
        out_c.append(np.maximum(a[keep], b[keep]))
    return np.concatenate(out_r), np.concatenate(out_c)


def frame_for(ids: np.ndarray, rng: np.random.Generator) -> pd.DataFrame:
    n = ids.size
    return pd.DataFrame(
        {
            "id": ids,
            "importance": rng.uniform(0.5, 2.4, n),
            "categories": [["ops"]] * n,
            "token_count": rng.integers(10, 200, n),
            "created_at": pd.Timestamp("2026-10-01") + pd.to_timedelta(rng.integers(0, 86400 * 30, n), unit="s"),
        }
    )


def run(n: int, new: int, seed: int = 1) -> dict[str, Any]:
    from memory_pipeline.similarity import clustering
    from memory_pipeline.similarity import threshold_graph as tg
    from memory_pipeline.store import MemoryStore, edges

    t0 = time.perf_counter()
    vectors, owners = clustered_with_labels(n, seed=seed)
    ids = np.array([f"{i:08d}" for i in range(n)], dtype=object)  # sorted, like load_eligible's ORDER BY id
    rng = np.random.default_rng(seed)
    new_rows = np.sort(rng.choice(n, size=new, replace=False))
    old_rows = np.setdiff1d(np.arange(n), new_rows)
    ea, eb = within_cluster_edges(vectors, owners, old_rows)
    node = np.full(n, -1, dtype=np.int64)
    node[old_rows] = np.arange(old_rows.size)
    stored = tg.StoredGraph(
        model=MODEL,
        threshold=THRESHOLD,
        dim=DIM,
        nodes=np.arange(old_rows.size, dtype=np.int64),
        memory_ids=ids[old_rows],
        checksums=tg.vector_checksums(vectors[old_rows]),
        edge_a=node[ea],
        edge_b=node[eb],
        next_node=int(old_rows.size),
    )
    frame = frame_for(ids, rng)
    setup_s = time.perf_counter() - t0

    rate = common.gemm_rate()
    common.reset_peak()
    base = common.rss_mib()
    t = time.perf_counter()
    update = tg.update_graph(stored, ids, vectors, model=MODEL, threshold=THRESHOLD)
    graph_s = time.perf_counter() - t
    t = time.perf_counter()
    groups = update.components(3)
    found = clustering.build_clusters(frame, vectors, THRESHOLD, 3, set(), 7.0, groups=groups)
    clusters_s = time.perf_counter() - t
    peak = common.peak_rss_mib() - base

    # exactness of the seeded graph: every new edge (exact, 10k × 1M) lies inside a generated cluster
    new_pairs = int(update.stats["edges_added"])
    a_rows, b_rows = update.rows[-new_pairs:], update.cols[-new_pairs:]
    crossing = int((owners[a_rows] != owners[b_rows]).sum()) if new_pairs else 0
    r_exp, c_exp = within_cluster_edges(vectors, owners, np.arange(n))
    touching = np.isin(r_exp, new_rows) | np.isin(c_exp, new_rows)
    same_new_edges = int(touching.sum()) == new_pairs and crossing == 0

    # the store side: a DuckDB file holding last night's graph; load it, write tonight's delta
    with tempfile.TemporaryDirectory(dir=common.OUT) as tmp:
        store = MemoryStore(Path(tmp) / "memory.duckdb")
        store.migrate()
        seed_update = tg.GraphUpdate(
            mode=tg.FULL,
            reason="seed",
            n=int(old_rows.size),
            rows=node[ea],
            cols=node[eb],
            node_of_row=np.arange(old_rows.size, dtype=np.int64),
            drop_nodes=np.zeros(0, np.int64),
            add_rows=np.arange(old_rows.size, dtype=np.int64),
            add_edge_a=node[ea],
            add_edge_b=node[eb],
            next_node=int(old_rows.size),
            checksums=stored.checksums,
        )
        with store.transaction() as con:
            edges.save_graph(
                con, seed_update, ids[old_rows], model=MODEL, threshold=THRESHOLD, dim=DIM, now=pd.Timestamp.now()
            )
        t = time.perf_counter()
        with store.connect() as con:
            loaded = edges.load_graph(con)
        load_s = time.perf_counter() - t
        assert loaded is not None and loaded.edge_a.size == ea.size
        t = time.perf_counter()
        with store.transaction() as con:
            edges.save_graph(
                con,
                update,
                ids,
                model=MODEL,
                threshold=THRESHOLD,
                dim=DIM,
                now=pd.Timestamp.now(),
                base_generation=loaded.generation,
            )
        save_s = time.perf_counter() - t
    floor = new * n * DIM * 2 / rate
    return {
        "setup_s": setup_s,
        "graph_s": graph_s,
        "clusters_s": clusters_s,
        "load_s": load_s,
        "save_s": save_s,
        "peak_mib": peak,
        "floor_s": floor,
        "rate": rate,
        "stats": update.stats,
        "clusters": len(found),
        "exact": bool(same_new_edges),
        "crossing": crossing,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks incremental")
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--new", type=int, default=10_000)
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    common.OUT.mkdir(parents=True, exist_ok=True)
    r = common.in_fresh_process("benchmarks.incremental:run", None, n=args.n, new=args.new)
    if not r.get("ok"):
        raise SystemExit(f"incremental benchmark failed: {r.get('error')}")
    step = r["graph_s"] + r["clusters_s"]
    rows = [
        (
            f"{args.n:,}",
            f"{args.new:,}",
            common.fmt_s(r["graph_s"]),
            common.fmt_s(r["clusters_s"]),
            common.fmt_s(step),
            common.fmt_s(r["load_s"]),
            common.fmt_s(r["save_s"]),
            common.fmt_s(step + r["load_s"] + r["save_s"]),
            f"{r['peak_mib']:.0f}",
            common.fmt_s(r["floor_s"]),
            f"{r['graph_s'] / r['floor_s']:.2f}",
            f"{r['rate'] / 1e9:.0f}",
            f"{r['stats']['edges']:,}",
            f"{r['stats']['edges_added']:,}",
            f"{r['clusters']:,}",
            "yes" if r["exact"] else f"NO ({r['crossing']} crossing edges)",
            common.load_average().split(" / ")[0],
        )
    ]
    header = (
        "N eligible",
        "new",
        "graph update s",
        "components + records s",
        "clustering step s",
        "load stored graph s",
        "save delta s",
        "step incl. store I/O s",
        "peak MiB",
        "new×N GEMM floor s",
        "graph ÷ floor",
        "GEMM GFLOP/s",
        "edges",
        "new edges",
        "clusters ≥ 3",
        "seeded graph exact",
        "load (1 min)",
    )
    from memory_pipeline.similarity.threshold_graph import screen_available

    engine = "int8 screen + float64 verdict" if screen_available() else "float32 tiles + float64 re-check"
    body = (
        "### Incremental night (threshold 0.82, synthetic vectors in memory; see benchmarks/incremental.py)\n\n"
        + common.table(header, rows)
        + f"\n\nGraph update = checksums of all N vectors, matching the stored graph, the new rows' edges "
        f"against all N ({engine}), old edges remapped. Floor = new × N × d (float32) "
        f"multiply-adds at the measured GEMM rate. Setup (data + seeded graph, not timed): "
        f"{r['setup_s']:.0f} s. Stats: {r['stats']}."
    )
    common.append_results("incremental", body, env, load_before)
