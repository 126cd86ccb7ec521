"""Embedding throughput of the configured model (all-MiniLM-L6-v2, numpy forward pass) on this machine:
memories per second on the sample workspace's texts, in batches as the `memory_embeddings` asset sends them."""

from __future__ import annotations

import argparse
import time
from datetime import UTC, datetime

from benchmarks import common


def run(n: int, batch_size: int) -> dict[str, object]:
    from memory_pipeline.embedding.minilm import MiniLMEncoder
    from memory_pipeline.sample_data import generate_sample

    texts = [m["content"] for m in generate_sample(datetime(2026, 11, 1, 3, 30, tzinfo=UTC))]
    texts = (texts * (n // len(texts) + 1))[:n]
    encoder = MiniLMEncoder()
    encoder.encode(texts[:8], batch_size=batch_size)  # load weights and tokenizer outside the timing
    common.reset_peak()
    base = common.rss_mib()
    t = time.perf_counter()
    vectors = encoder.encode(texts, batch_size=batch_size)
    seconds = time.perf_counter() - t
    chars = sum(len(x) for x in texts) / len(texts)
    return {
        "seconds": seconds,
        "per_s": n / seconds,
        "peak_mib": common.peak_rss_mib() - base,
        "dim": int(vectors.shape[1]),
        "avg_chars": chars,
    }


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(prog="python -m benchmarks embeddings")
    p.add_argument("--n", type=int, default=2000)
    p.add_argument("--batch-sizes", type=lambda s: [int(x) for x in s.split(",")], default=[64])
    args = p.parse_args(argv)
    env, load_before = common.machine(), common.load_average()
    rows = []
    for bs in args.batch_sizes:
        r = common.in_fresh_process("benchmarks.embeddings:run", None, n=args.n, batch_size=bs)
        if not r.get("ok"):
            raise SystemExit(f"embeddings benchmark failed: {r.get('error')}")
        rows.append(
            (
                f"{args.n:,}",
                bs,
                f"{r['avg_chars']:.0f}",
                common.fmt_s(r["seconds"]),
                f"{r['per_s']:.0f}",
                f"{r['peak_mib']:.0f}",
                common.load_average().split(" / ")[0],
            )
        )
        print(rows[-1], flush=True)
    body = "### MiniLMEncoder().encode throughput (sample workspace texts)\n\n" + common.table(
        ("memories", "batch size", "avg chars", "seconds", "memories/s", "peak MiB", "load (1 min)"), rows
    )
    common.append_results("embeddings", body, env, load_before)
