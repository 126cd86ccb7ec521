"""Screened full threshold-graph build: an int8 screen, then the float64 verdict on every candidate.

The exact build (`clustering.threshold_edges`) spends its time in float32 GEMM. On CPUs with AMX or
AVX512-VNNI an int8 product runs several times faster, but numpy has no int8 BLAS; onnxruntime's
MatMulInteger (MLAS, AMX int8 kernels) does. `screened_threshold_edges` quantises the unit rows with one
global scale, finds every pair whose int8 product could reach the threshold under a rigorous error bound,
and decides those pairs exactly as the exact build does, so the edge set is identical (see
`benchmarks/screening.py` for whether it pays off).

Error bound. Rows v are float32 unit vectors, q = round(v / s) with one scale s = max|v| / 127, v̂ = s·q,
δ = v − v̂, r = ‖δ‖ (float64, per row). For a pair, v_i·v_j − v̂_i·v̂_j = δ_i·v_j + v̂_i·δ_j exactly, so by
Cauchy–Schwarz |v_i·v_j − s²·Q_ij| ≤ r_i‖v_j‖ + ‖v̂_i‖r_j, with Q_ij = q_i·q_j the integer product (exact:
int32 accumulation, no rounding; checked once per process against numpy). v_i·v_j differs from the float64
cosine `cosine64` by less than `recheck_window(d)` (it bounds float32 normalisation plus a float32 dot
product; here there is no float32 dot at all). With m_ij = r_i‖v_j‖ + ‖v̂_i‖r_j + recheck_window(d) (plus
a slack for float64 rounding), every pair with cosine64 ≥ t has s²·Q_ij ≥ t − m_ij. Each tile is scanned
at its strip's lowest integer threshold (built from the largest ‖v_j‖ and r_j, so no edge is missed);
each pair past it is then classified with its own m_ij: s²·Q < t − m_ij is no edge, s²·Q ≥ t + m_ij is
an edge, and the pairs in between are decided by `cosine64`, the float64 verdict of the exact build. Rows
that are not finite in float32 never get an edge, as in the exact build (their NaN compares false).

Two code widths. Without VNNI/AMX (e.g. AMD EPYC with AVX2), MLAS multiplies u8×s8 with VPMADDUBSW, which
sums adjacent pairs into int16 with saturation: 8-bit codes on both sides are not exact there. The column
(B) side then gets codes in ±64 with its own scale s_b = max|v| / 64, so a pair sum is at most
2·255·64 = 32640 and cannot saturate; the bound becomes |v_i·v_j − s_a·s_b·Q_ij| ≤ r_a,i‖v_j‖ + ‖v̂_a,i‖r_b,j
(v_i·v_j − v̂_a,i·v̂_b,j = δ_a,i·v_j + v̂_a,i·δ_b,j), with the real residuals of each side. Which width is
exact is probed once per process and tile shape; if neither is, InexactKernel is raised before any work.
"""

from __future__ import annotations

import math
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from memory_pipeline.similarity.clustering import (
    TILE_COLS,
    TILE_ROWS,
    cosine64,
    normalise,
    recheck_window,
    select_rows,
    strips,
    taken_once,
)

QMAX = 127  # symmetric int8 codes: |q| ≤ 127, so the u8 side (q + 128) stays in 1..255
# B-side code ranges, widest first: ±127 where the int8 product is exact (VNNI/AMX), else ±64, the widest
# whose u8×s8 pair sums (2·255·64 = 32640) fit int16, so a VPMADDUBSW kernel (AVX2, e.g. AMD EPYC) is exact
B_QMAX = (QMAX, 64)
_SLACK = 1e-9  # covers the float64 rounding of the per-row bounds (relative errors ~d·2^-53)
_MAX_DIM = (2**31 - 1) // (QMAX * QMAX)  # the int32 accumulator cannot overflow below this dimension
_CHECK_LOCK = threading.Lock()
_CHECKED: dict[tuple[int, int, int, int], bool] = {}  # (rows, cols, dim, b_qmax) → exact


def _onnxruntime() -> Any:
    try:
        import onnxruntime
    except ImportError as exc:  # optional: only the screening mode needs it
        raise ImportError(
            "screened_threshold_edges needs onnxruntime (pip install onnxruntime; it is in the dev extra). "
            "The exact build, clustering.threshold_edges, needs nothing extra."
        ) from exc
    return onnxruntime


# --- a tiny ONNX model, encoded by hand so that only onnxruntime is needed (not the onnx package) ---------


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _field(number: int, payload: bytes | str | int) -> bytes:
    """One protobuf field: an int is a varint (wire type 0), bytes/str length-delimited (wire type 2)."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    data = payload.encode("utf-8") if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


_UINT8, _INT8, _INT32 = 2, 3, 6  # onnx TensorProto.DataType


def _value_info(name: str, elem_type: int, dims: tuple[str, ...]) -> bytes:
    shape = b"".join(_field(1, _field(2, d)) for d in dims)  # TensorShapeProto.dim{dim_param}
    tensor_type = _field(1, elem_type) + _field(2, shape)  # TypeProto.Tensor{elem_type, shape}
    return _field(1, name) + _field(2, _field(1, tensor_type))  # ValueInfoProto{name, type{tensor_type}}


def matmul_integer_model() -> bytes:
    """ModelProto bytes of Y[m, n] = MatMulInteger(A: uint8[m, k], B: int8[k, n], a_zero_point: uint8 scalar),
    with symbolic shapes so one session serves every tile."""
    node = b"".join(_field(1, x) for x in ("A", "B", "Z")) + _field(2, "Y") + _field(4, "MatMulInteger")
    graph = (
        _field(1, node)
        + _field(2, "screen")
        + _field(11, _value_info("A", _UINT8, ("m", "k")))
        + _field(11, _value_info("B", _INT8, ("k", "n")))
        + _field(11, _value_info("Z", _UINT8, ()))
        + _field(12, _value_info("Y", _INT32, ("m", "n")))
    )
    opset = _field(1, "") + _field(2, 13)
    return _field(1, 8) + _field(2, "memory_pipeline") + _field(7, graph) + _field(8, opset)


def _session() -> Any:
    ort = _onnxruntime()
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one session per strip thread, like the exact build's per-thread BLAS
    options.inter_op_num_threads = 1
    return ort.InferenceSession(matmul_integer_model(), options, providers=["CPUExecutionProvider"])


class _Screen:
    """One thread's session and reused buffers: the int32 tile and its mask."""

    def __init__(self, tile_rows: int, tile_cols: int) -> None:
        self.session = _session()
        self.zero = np.full((), 128, dtype=np.uint8)
        self.tile = np.empty(tile_rows * tile_cols, dtype=np.int32)
        self.mask = np.empty(tile_rows * tile_cols, dtype=bool)

    def product(self, a_u8: np.ndarray, b_t: np.ndarray) -> np.ndarray:
        """(a_u8 − 128) @ b_t as int32, written into the reused tile."""
        out = self.tile[: a_u8.shape[0] * b_t.shape[1]].reshape(a_u8.shape[0], b_t.shape[1])
        binding = self.session.io_binding()
        binding.bind_cpu_input("A", a_u8)
        binding.bind_cpu_input("B", b_t)
        binding.bind_cpu_input("Z", self.zero)
        binding.bind_output("Y", "cpu", 0, np.int32, out.shape, out.ctypes.data)
        self.session.run_with_iobinding(binding)
        return out


class InexactKernel(RuntimeError):
    """onnxruntime's int8 product is not exact on this CPU for any code width we try: use the float32 tiles."""


def check_exact_integer_product(screen: _Screen, rows: int, cols: int, dim: int, b_qmax: int = QMAX) -> bool:
    """Whether this kernel's product of A codes in ±QMAX and B codes in ±b_qmax is exact for this shape:
    one extreme-valued tile against numpy's exact integer product (the bound assumes exactness)."""
    rng = np.random.default_rng(12345)
    a = rng.choice(np.array([-QMAX, QMAX, -QMAX + 1, 0, 1, QMAX - 1], dtype=np.int16), size=(rows, dim))
    # rows and columns at the extremes: the worst case for a saturating kernel is u8 255 (code +QMAX) against
    # ±b_qmax. With a single row (or column) the second extreme must not overwrite the first: a one-row probe
    # of −QMAX only (u8 1) cannot saturate, and once passed every one-row strip of an incremental night.
    a[0] = QMAX
    if rows > 1:
        a[-1] = -QMAX
    b = rng.choice(np.array([-b_qmax, b_qmax, 0, 5, -(b_qmax // 2)], dtype=np.int8), size=(dim, cols))
    b[:, 0] = b_qmax
    if cols > 1:
        b[:, -1] = -b_qmax
    got = screen.product((a + 128).astype(np.uint8), b)
    sample = np.unique(np.r_[0, min(1, rows - 1), rows // 2, rows - 1])  # a strip may be a single row
    want = a[sample].astype(np.int64) @ b.astype(np.int64)
    return bool(np.array_equal(got[sample], want))


def _exact_cached(screen: _Screen, rows: int, cols: int, dim: int, b_qmax: int) -> bool:
    key = (rows, cols, dim, b_qmax)
    with _CHECK_LOCK:
        known = _CHECKED.get(key)
    if known is None:
        known = check_exact_integer_product(screen, rows, cols, dim, b_qmax)
        with _CHECK_LOCK:
            _CHECKED[key] = known
    return known


def choose_code_width(screen: _Screen, shapes: list[tuple[int, int]], dim: int) -> int:
    """The widest B-side code range (±b_qmax, from `B_QMAX`) whose int8 product is exact on this CPU for
    every tile shape the build will use; cached per process. Raises InexactKernel when none is."""
    for b_qmax in B_QMAX:
        if all(_exact_cached(screen, rows, cols, dim, b_qmax) for rows, cols in shapes):
            return b_qmax
    raise InexactKernel(
        "onnxruntime's int8 product is not exact on this CPU even with int16-safe codes "
        f"(B side ±{B_QMAX[-1]}); the int8 screen cannot guarantee the exact edge set here"
    )


class Quantised:
    """The int8 codes of the unit rows, what each pair's error bound needs (per row: r_a, r_b, ‖v‖, ‖v̂_a‖)
    and the per-row integer threshold of the screen. The A side (rows) has codes in ±QMAX, the B side
    (columns) in ±b_qmax: with b_qmax = 64 a VPMADDUBSW-style kernel's u8×s8 pair sums (≤ 2·255·64 = 32640)
    cannot saturate int16."""

    def __init__(self, v32: np.ndarray, threshold: float, chunk: int = 16384, b_qmax: int = QMAX) -> None:
        n, dim = v32.shape
        self.finite = np.isfinite(v32).all(axis=1)
        v32[~self.finite] = 0  # non-finite rows: code 0, and `classify` never lets them through
        amax = float(np.abs(v32).max()) if v32.size else 0.0
        self.b_qmax = b_qmax
        self.scale = amax / QMAX if amax > 0 else 1.0  # A side
        self.scale_b = amax / b_qmax if amax > 0 else 1.0
        self.s2 = self.scale * self.scale_b
        self.threshold = threshold
        self.codes_u8 = np.empty((n, dim), dtype=np.uint8)  # the A side: q_a + 128 (zero point 128)
        self.codes_t = np.empty((dim, n), dtype=np.int8)  # the B side: q_b transposed, columns sliced per tile
        self.residual = np.empty(n, dtype=np.float64)  # r_a = ‖v − v̂_a‖
        self.residual_b = np.empty(n, dtype=np.float64)  # r_b = ‖v − v̂_b‖
        self.code_norm = np.empty(n, dtype=np.float64)  # ‖v̂_a‖
        self.norm = np.empty(n, dtype=np.float64)  # ‖v‖ (1 up to float32 normalisation, 0 for zero rows)
        for k in range(0, n, chunk):  # in chunks: a 1M set never needs a float64 copy
            x = v32[k : k + chunk].astype(np.float64)
            qa = np.clip(np.rint(x / self.scale), -QMAX, QMAX)
            xa = qa * self.scale
            self.residual[k : k + chunk] = np.sqrt(np.einsum("ij,ij->i", x - xa, x - xa))
            self.code_norm[k : k + chunk] = np.sqrt(np.einsum("ij,ij->i", xa, xa))
            self.norm[k : k + chunk] = np.sqrt(np.einsum("ij,ij->i", x, x))
            self.codes_u8[k : k + chunk] = (qa + 128).astype(np.uint8)
            if b_qmax == QMAX:
                self.residual_b[k : k + chunk] = self.residual[k : k + chunk]
                self.codes_t[:, k : k + chunk] = qa.T.astype(np.int8)
            else:
                qb = np.clip(np.rint(x / self.scale_b), -b_qmax, b_qmax)
                xb = qb * self.scale_b
                self.residual_b[k : k + chunk] = np.sqrt(np.einsum("ij,ij->i", x - xb, x - xb))
                self.codes_t[:, k : k + chunk] = qb.T.astype(np.int8)
        self.window = recheck_window(dim) + _SLACK
        # the row's widest margin, against any column: r_a,i·V + ‖v̂_a,i‖·R with V = max ‖v_j‖, R = max r_b,j
        widest = self.residual * self.norm.max() + self.code_norm * self.residual_b.max() + self.window
        # screen: s²·Q ≥ t − margin ⇒ Q ≥ floor((t − margin)/s²) − 1 (one extra step against rounding)
        self.low = np.clip(np.floor((threshold - widest) / self.s2) - 1, -(2**31), 2**31 - 1).astype(np.int64)
        self.widest = float(widest.max()) if n else 0.0

    def column_block(self, j0: int, j1: int) -> np.ndarray:
        return np.ascontiguousarray(self.codes_t[:, j0:j1])

    def classify(self, r: np.ndarray, c: np.ndarray, products: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(candidate, sure) masks of pairs (r, c) with integer products Q: the pair's own margin
        m = r_a,r·‖v_c‖ + ‖v̂_a,r‖·r_b,c + window; candidate iff s²·Q ≥ t − m, sure edge iff s²·Q ≥ t + m."""
        margin = self.residual[r] * self.norm[c] + self.code_norm[r] * self.residual_b[c] + self.window
        approx = self.s2 * products.astype(np.float64)
        # a row that is not finite in float32 never gets an edge in the exact build (NaN compares false)
        candidate = (approx >= self.threshold - margin) & self.finite[r] & self.finite[c]
        sure = candidate & (approx >= self.threshold + margin)
        return candidate, sure


def screened_threshold_edges(
    vectors: np.ndarray,
    threshold: float,
    tile_rows: int = TILE_ROWS,
    tile_cols: int = TILE_COLS,
    workers: int | None = None,
    stats: dict[str, float] | None = None,
    rows: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """All pairs i < j with cosine(i, j) ≥ threshold (the float64 verdict of `cosine64`), as two int64 index
    arrays: the same edge set as `clustering.threshold_edges(vectors, threshold, rows=rows)` — with `rows`,
    only the pairs with an end in `rows`, each once (an incremental night).

    `stats`, if given, receives candidates (pairs past the screen), rechecked (decided in float64), the
    widest screening margin and b_qmax (the column codes' range this CPU's kernel is exact for). Needs
    onnxruntime (imported here, not at module import). Raises InexactKernel, before any work, when the
    kernel is exact for no code range (callers fall back to `clustering.threshold_edges`).
    """
    if not math.isfinite(threshold):
        raise ValueError(f"threshold must be a finite number, got {threshold!r}")
    n = int(vectors.shape[0])
    empty = np.zeros(0, dtype=np.int64)
    if n < 2:
        return empty, empty
    v32 = normalise(vectors)
    dim = int(v32.shape[1])
    if dim == 0 or dim > _MAX_DIM:
        raise ValueError(f"vectors must have 1..{_MAX_DIM} dimensions for the int8 screen, got {dim}")
    rows, in_rows = select_rows(n, rows)
    if rows is not None and rows.size == 0:
        return empty, empty
    tr = max(1, min(tile_rows, n if rows is None else rows.size))
    tc = max(1, min(tile_cols, n))
    probe = _Screen(tr, tc)
    b_qmax = choose_code_width(probe, sorted({(tr, tc), (1, tc), (tr, 1), (1, 1)}), dim)
    quant = Quantised(v32, float(threshold), b_qmax=b_qmax)
    local = threading.local()
    counts = {"candidates": 0, "rechecked": 0}
    count_lock = threading.Lock()

    def strip_edges(item: tuple[np.ndarray | slice, int]) -> tuple[list[np.ndarray], list[np.ndarray]]:
        strip, first = item
        row_ids = np.arange(strip.start, strip.stop) if isinstance(strip, slice) else strip
        if not hasattr(local, "screen"):
            local.screen = _Screen(tr, tc)
        screen = local.screen
        a = quant.codes_u8[strip]
        scan_at = np.int32(quant.low[strip].min())  # the strip's lowest row threshold
        out_r: list[np.ndarray] = []
        out_c: list[np.ndarray] = []
        found = checked = 0
        for j0 in range(first, n, tc):
            width = min(n, j0 + tc) - j0
            tile = screen.product(a, quant.column_block(j0, j0 + width))
            mask = screen.mask[: tile.size].reshape(tile.shape)
            np.greater_equal(tile, scan_at, out=mask)  # one scalar compare (measured: cheaper than row maxima)
            flat = np.flatnonzero(mask)
            if flat.size == 0:
                continue
            products = tile.ravel()[flat]
            r = row_ids[flat // width]
            c = flat % width + j0
            once = taken_once(r, c, in_rows)
            r, c, products = r[once], c[once], products[once]
            candidate, sure = quant.classify(r, c, products)
            found += int(candidate.sum())
            near = np.flatnonzero(candidate & ~sure)
            checked += near.size
            keep = sure
            if near.size:
                keep = sure.copy()
                keep[near] = cosine64(vectors, r[near], c[near]) >= threshold
            if keep.any():
                out_r.append(np.minimum(r[keep], c[keep]))
                out_c.append(np.maximum(r[keep], c[keep]))
        with count_lock:
            counts["candidates"] += found
            counts["rechecked"] += checked
        return out_r, out_c

    work = list(strips(n, rows, tr))
    if workers is None:
        workers = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    threads = max(1, min(workers, len(work)))
    if threads > 1:
        with ThreadPoolExecutor(threads) as pool:
            results = list(pool.map(strip_edges, work))
    else:
        results = [strip_edges(item) for item in work]
    if stats is not None:
        stats.update(counts, margin=quant.widest, b_qmax=b_qmax)
    out_r = [a for r_list, _ in results for a in r_list]
    out_c = [a for _, c_list in results for a in c_list]
    if not out_r:
        return empty, empty
    return np.concatenate(out_r).astype(np.int64, copy=False), np.concatenate(out_c).astype(np.int64, copy=False)
