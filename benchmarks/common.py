"""What every benchmark shares: the machine header, measuring a call in a fresh process (seconds and peak
memory), the GEMM rate, appending results to benchmarks/results/runs/<date>.md, and matplotlib when installed."""

from __future__ import annotations

import json
import multiprocessing as mp
import os
import platform
import re
import resource
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
RUNS = HERE / "results" / "runs"
OUT = HERE / "out"  # scratch data (git-ignored)


def load_average() -> str:
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} / {five:.2f} / {fifteen:.2f}"


_VENDORS = {"AuthenticAMD": "AMD", "GenuineIntel": "Intel"}  # /proc/cpuinfo vendor_id


def machine() -> dict[str, str]:
    """Date, CPU, cores, memory, the BLAS that numpy really uses (threadpoolctl) and the OPENBLAS_* env."""
    from threadpoolctl import threadpool_info

    cpu = platform.processor() or platform.machine()
    vendor, flags = "unknown", set[str]()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and cpu in (platform.processor(), platform.machine()):
                cpu = value.strip()
            elif key.strip() == "vendor_id" and vendor == "unknown":
                vendor = _VENDORS.get(value.strip(), value.strip())
            elif key.strip() == "flags" and not flags:
                flags = set(value.split())
    except OSError:
        pass
    int8 = [f for f in ("avx2", "avx512_vnni", "avx_vnni", "amx_int8") if f in flags]
    mem_gib = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30
    blas = [
        f"{i.get('internal_api')} {i.get('version')} ({i.get('architecture')}, {i.get('threading_layer')}, "
        f"{i.get('num_threads')} threads)"
        for i in threadpool_info()
        if i.get("user_api") == "blas"
    ]
    openblas_env = {k: v for k, v in os.environ.items() if k.startswith("OPENBLAS_")}
    versions = []
    for name in ("numpy", "scipy", "sklearn", "duckdb", "dagster"):
        try:
            versions.append(f"{name} {__import__(name).__version__}")
        except ImportError:
            pass
    return {
        "date": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "CPU vendor": f"{vendor} ({cpu}; int8-relevant flags: {', '.join(int8) or 'none'})",
        "machine": f"{cpu}, {os.cpu_count()} cores, {mem_gib:.0f} GiB, {platform.system()} {platform.release()}",
        "python": f"{platform.python_version()}; " + ", ".join(versions),
        "BLAS (threadpoolctl)": "; ".join(blas) or "none found",
        "OPENBLAS_* variables": json.dumps(openblas_env) if openblas_env else "none set",
        "commit": _git_commit(),
    }


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=HERE, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=HERE, capture_output=True, text=True)
        return out.stdout.strip() + (" + uncommitted changes" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def _status(field: str) -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def rss_mib() -> float:
    return _status("VmRSS")


def reset_peak() -> None:
    """Reset this process's RSS high-water mark to its current RSS (Linux: clear_refs 5)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        pass


def peak_rss_mib() -> float:
    """Peak RSS of this process (VmHWM: unlike getrusage's ru_maxrss, it does not inherit the parent's
    RSS at fork time across exec)."""
    return _status("VmHWM") or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def gemm_rate(dim: int = 384, rows: int = 4096, cols: int = 16384, repeats: int = 3) -> float:
    """float32 GEMM rate (FLOP/s), best of `repeats`, on the tile-like product the clustering does."""
    rng = np.random.default_rng(0)
    a = rng.standard_normal((rows, dim), dtype=np.float32)
    b = rng.standard_normal((cols, dim), dtype=np.float32)
    out = np.empty((rows, cols), dtype=np.float32)
    np.matmul(a, b.T, out=out)
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        np.matmul(a, b.T, out=out)
        best = min(best, time.perf_counter() - t)
    return 2.0 * rows * cols * dim / best


def floor_seconds(n: int, dim: int, rate: float) -> float:
    """The hardware floor of an exact all-pairs build: N²/2 pairs × d multiply-adds at the GEMM rate."""
    return n * n * dim / rate


def _child(target: str, kwargs: dict[str, Any], conn: Any) -> None:
    module, name = target.rsplit(":", 1)
    fn = getattr(__import__(module, fromlist=[name]), name)
    try:
        result = fn(**kwargs)
        conn.send({"ok": True, **result})
    except MemoryError as exc:
        conn.send({"ok": False, "error": f"MemoryError: {exc}"})
    except Exception as exc:  # reported in the table, not raised
        conn.send({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
    finally:
        conn.close()


def in_fresh_process(target: str, timeout_s: float | None = None, **kwargs: Any) -> dict[str, Any]:
    """Run `module:function(**kwargs)` in a spawned process (clean peak-RSS accounting); the function
    returns a dict (typically seconds and peak MiB above its own baseline)."""
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_child, args=(target, kwargs, child))
    proc.start()
    child.close()
    result: dict[str, Any] = {"ok": False, "error": "no result"}
    if parent.poll(timeout_s):
        try:
            result = parent.recv()
        except EOFError:
            result = {"ok": False, "error": "worker died (out of memory?)"}
    else:
        proc.kill()
        result = {"ok": False, "error": f"timed out after {timeout_s:.0f}s"}
    proc.join()
    return result


def measured(fn: Callable[[], Any]) -> dict[str, Any]:
    """Seconds and peak RSS above the process's RSS just before the call (run it in a fresh process)."""
    reset_peak()
    base = rss_mib()
    t = time.perf_counter()
    value = fn()
    seconds = time.perf_counter() - t
    return {"seconds": seconds, "peak_mib": max(0.0, peak_rss_mib() - base), "value": value}


def table(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |"]
    lines += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(lines)


def without_machine_paths(text: str, temp: str | None = None, home: str | None = None) -> str:
    """`text` with this machine's temporary folder and home folder named, not spelled out: a run record is
    read on other machines, and a path of this one says nothing there."""
    import tempfile

    roots = [(temp or tempfile.gettempdir(), "<temp>"), ("/tmp", "<temp>"), ("/var/folders", "<temp>"),
             (home or str(Path.home()), "~")]  # fmt: skip
    for root, name in sorted(roots, key=lambda r: -len(r[0])):
        root = root.rstrip("/")
        if len(root) > 1:
            text = re.sub(rf"{re.escape(root)}(?=/|\s|$|[),;.])", name, text)
    return text


def append_results(title: str, body: str, env: dict[str, str], load_before: str) -> None:
    """Append one benchmark's section to the day's run file, results/runs/<date>.md (and echo it); the current
    table in RESULTS.md is updated by hand from it."""
    head = [f"## {title} — {env['date']}", ""]
    head += [f"- {k}: {v}" for k, v in env.items() if k != "date"]
    head += [f"- load average (1/5/15 min) before: {load_before}; after: {load_average()}", ""]
    text = without_machine_paths("\n".join(head) + body.rstrip() + "\n\n")
    day = RUNS / f"{env['date'][:10]}.md"
    if not day.exists():
        RUNS.mkdir(parents=True, exist_ok=True)
        day.write_text(
            f"# Benchmark runs of {env['date'][:10]}\n\nEach section as `python -m benchmarks` appended it. "
            "The current figures are in [`../../RESULTS.md`](../../RESULTS.md).\n\n"
        )
    with day.open("a", encoding="utf-8") as f:
        f.write(text)
    shown = day.relative_to(HERE.parent) if day.is_relative_to(HERE.parent) else day
    sys.stdout.write(text + f"(appended to {shown})\n")
    sys.stdout.flush()


NO_MATPLOTLIB = ("plot not drawn: matplotlib is not installed (`pip install matplotlib`, or `bash scripts/setup.sh "
                 "dev` for the dev extra); the results above are written")


def pyplot() -> Any | None:
    """matplotlib.pyplot (headless), or None with one line saying how to get it: it is in the dev extra only,
    and a benchmark's results are written before its plot, so a run without it loses nothing but the picture."""
    try:
        import matplotlib
    except ImportError:
        print(NO_MATPLOTLIB, flush=True)
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def fmt_s(x: float | None) -> str:
    return "—" if x is None else (f"{x:.3f}" if x < 1 else f"{x:.2f}" if x < 100 else f"{x:.0f}")
