"""all-MiniLM-L6-v2 side by side: the numpy forward pass, ONNX Runtime fp32 and ONNX Runtime int8.

Per backend, each in a fresh process on the same texts: batch throughput (sentences/s and tokens/s) on the
sample workspace's memories and on 256-token chunks of their concatenation (journal-sized inputs), in batches as
the `memory_embeddings` asset sends them; single-query latency (p50 / p95 of `encode([text])`); and the FLOP
floor ratio — FLOPs per token × tokens/s ÷ the cores' peak for the ISA the kernel uses (fp32: FMA lanes of the
widest vector unit; int8: AMX, else VNNI, else AVX2). The load average is recorded beside every figure: the
machines are shared, so only figures of one run compare.
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks import common

BACKENDS = ("numpy", "onnx-fp32", "onnx-int8")
D, LAYERS, FFN = 384, 6, 1536


def flops_per_token(seq: float) -> float:
    """Multiply-adds ×2 per token of a length-`seq` input: QKV, output, two FFN matmuls, and the attention
    products (QKᵀ and AV, each seq × d per token)."""
    linear = 2 * (3 * D * D + D * D + 2 * D * FFN)
    attention = 2 * 2 * seq * D
    return LAYERS * (linear + attention)


def cpu_flags() -> tuple[set[str], float]:
    flags: set[str] = set()
    mhz = 0.0
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        key, _, value = line.partition(":")
        if key.strip() == "flags" and not flags:
            flags = set(value.split())
        elif key.strip() == "cpu MHz" and not mhz:
            mhz = float(value)
    return flags, mhz


def peak(kind: str) -> tuple[float, str]:
    """Peak ops/s of the usable cores for fp32 or int8, and how it was derived (2 vector FMA units a core)."""
    flags, mhz = cpu_flags()
    cores = len(os.sched_getaffinity(0))
    hz = mhz * 1e6
    if kind == "fp32":
        lanes, isa = (16, "AVX-512") if "avx512f" in flags else (8, "AVX2") if "avx2" in flags else (4, "SSE")
        per_cycle = lanes * 2 * 2  # FMA = 2 ops, 2 units
    elif "amx_int8" in flags:
        per_cycle, isa = 2048, "AMX int8"  # Intel's figure: 2,048 int8 ops/cycle a core (VNNI: 256)
    elif "avx512_vnni" in flags:
        per_cycle, isa = 64 * 2 * 2, "AVX-512 VNNI"
    else:
        per_cycle, isa = 32 * 2 * 2, "AVX2"
    return cores * hz * per_cycle, f"{isa}, {cores} cores × {mhz:.0f} MHz × {per_cycle} ops/cycle"


def _texts(n: int) -> list[str]:
    from memory_pipeline.sample_data import generate_sample

    texts = [m["content"] for m in generate_sample(datetime(2026, 11, 1, 3, 30, tzinfo=UTC))]
    return (texts * (n // len(texts) + 1))[:n]


def _chunks(n: int) -> list[str]:
    """`n` chunks of ~256 tokens each: consecutive sample memories joined (truncation cuts the last one)."""
    texts = _texts(8000)
    out, cur = [], []
    for t in texts:
        cur.append(t)
        if sum(len(x) for x in cur) > 1300:  # ~4-5 characters a token
            out.append(" ".join(cur))
            cur = []
            if len(out) == n:
                break
    return out


def _encoder(backend: str) -> Any:
    if backend == "numpy":
        from memory_pipeline.embedding.minilm import MiniLMEncoder

        return MiniLMEncoder()
    from memory_pipeline.embedding.onnx_minilm import OnnxMiniLMEncoder

    return OnnxMiniLMEncoder(variant="int8" if backend == "onnx-int8" else "fp32")


def run(backend: str, n: int, chunks: int, queries: int, batch_size: int) -> dict[str, Any]:
    from memory_pipeline.embedding.minilm import default_model_dir, load_tokenizer

    encoder = _encoder(backend)
    tok = load_tokenizer(default_model_dir(), 256)
    t0 = time.perf_counter()
    encoder.encode(["warm up", "load weights and tokenizer outside the timing"], batch_size=batch_size)
    load_s = time.perf_counter() - t0
    out: dict[str, Any] = {"load_s": load_s}
    for name, texts in (("memories", _texts(n)), ("chunks", _chunks(chunks))):
        lengths = [len(e.ids) for e in tok.encode_batch(texts)]
        common.reset_peak()
        base = common.rss_mib()
        t = time.perf_counter()
        encoder.encode(texts, batch_size=batch_size)
        seconds = time.perf_counter() - t
        out[name] = {
            "n": len(texts),
            "seconds": seconds,
            "per_s": len(texts) / seconds,
            "tokens_per_s": sum(lengths) / seconds,
            "avg_tokens": float(np.mean(lengths)),
            "flops": sum(flops_per_token(x) * x for x in lengths) / seconds,
            "peak_mib": common.peak_rss_mib() - base,
            "load": common.load_average().split(" / ")[0],
        }
    lat = []
    for q in _texts(queries + 50)[50:]:
        t = time.perf_counter()
        encoder.encode([q])
        lat.append(time.perf_counter() - t)
    out["query"] = {"p50_ms": 1e3 * float(np.percentile(lat, 50)), "p95_ms": 1e3 * float(np.percentile(lat, 95)),
                    "load": common.load_average().split(" / ")[0]}  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks embeddings", description=__doc__)
    p.add_argument("--n", type=int, default=1000, help="sample memories per backend")
    p.add_argument("--chunks", type=int, default=64, help="256-token chunks per backend")
    p.add_argument("--queries", type=int, default=200, help="single-query encodes per backend")
    p.add_argument("--batch-size", type=int, default=64)
    p.add_argument("--backends", default=",".join(BACKENDS), help=f"comma-separated, of: {', '.join(BACKENDS)}")
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    rows, qrows, results = [], [], {}
    for backend in [b.strip() for b in args.backends.split(",") if b.strip()]:
        if backend not in BACKENDS:
            raise SystemExit(f"--backends: unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
        r = common.in_fresh_process(
            "benchmarks.embeddings:run", None, backend=backend, n=args.n, chunks=args.chunks, queries=args.queries,
            batch_size=args.batch_size,
        )  # fmt: skip
        if not r.get("ok"):
            raise SystemExit(f"embeddings benchmark failed ({backend}): {r.get('error')}")
        results[backend] = r
        rate, how = peak("int8" if backend == "onnx-int8" else "fp32")
        for name in ("memories", "chunks"):
            w = r[name]
            speedup = w["per_s"] / results["numpy"][name]["per_s"] if "numpy" in results else float("nan")
            rows.append((
                backend, name, f"{w['n']:,}", f"{w['avg_tokens']:.0f}", f"{w['per_s']:.0f}",
                f"{w['tokens_per_s']:,.0f}", f"×{speedup:.2f}", f"{w['flops'] / rate:.3f}", f"{w['peak_mib']:.0f}",
                w["load"],
            ))  # fmt: skip
            print(rows[-1], flush=True)
        q = r["query"]
        qrows.append((backend, f"{r['load_s']:.2f}", f"{q['p50_ms']:.2f}", f"{q['p95_ms']:.2f}", q["load"]))
        print(qrows[-1], flush=True)
    body = (
        f"Texts: the sample workspace's memories (batch size {args.batch_size}) and 256-token chunks of them; "
        f"{args.queries} single-text queries. FLOP floor ratio = FLOPs/token × tokens/s ÷ peak "
        f"(fp32: {peak('fp32')[1]}; int8: {peak('int8')[1]}). Load = 1-minute load average after each figure.\n\n"
    )
    body += common.table(
        ("backend", "texts", "n", "avg tokens", "sentences/s", "tokens/s", "vs numpy", "FLOP floor ratio",
         "peak MiB", "load"),
        rows,
    )  # fmt: skip
    body += "\n\n" + common.table(("backend", "load s", "query p50 ms", "query p95 ms", "load"), qrows)
    common.append_results("embeddings: all-MiniLM-L6-v2, numpy vs ONNX Runtime fp32 vs int8", body, env, load_before)
