"""`python -m benchmarks abstention-fit`: fit the combined abstention gate and score it held out.

The rule is the 2026-12-01 amendment of benchmarks/abstention_rule.md, committed before the first run: a logistic
regression (scikit-learn, already a dependency; the read path applies the stored coefficients with numpy) over the
signals of memory_pipeline/search/confidence.py, scored leave-one-conversation-out on LoCoMo dev, by set on the
everyday notes (fitted on LoCoMo alone), and on benchmarks/never_stored_heldout.txt (never fitted on). `--write`
stores the model fitted on every row, with the bars the rule chose, in memory_pipeline/search/confidence.json.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.abstention import Asked, run
from benchmarks.common import HERE, append_results, load_average, machine, table
from memory_pipeline.search.confidence import FEATURES, MODEL_FILE, Signal, features

HELDOUT = HERE / "never_stored_heldout.txt"
GRID = [round(0.01 * i, 2) for i in range(100)]
LO_LOSS, HI_LOSS, NEVER_MAX = 0.005, 0.05, 0.10
LOCOMO = ("locomo", "probe", "cross")


def label(a: Asked) -> int | None:
    """1: answerable with its evidence among the shipped hits; 0: never stored; None: not a row."""
    if not a.hits:
        return None
    return 0 if a.never else 1 if a.found else None


def matrix(rows: Sequence[Asked]) -> tuple[np.ndarray, np.ndarray]:
    x = np.array([features(a.words, a.signals) for a in rows], float).reshape(-1, len(FEATURES))
    return x, np.array([label(a) for a in rows], float)


def fit(rows: Sequence[Asked]) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression

    x, y = matrix(rows)
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale < 1e-9] = 1.0
    lr = LogisticRegression(C=1.0, class_weight="balanced", max_iter=2000).fit((x - mean) / scale, y)
    return {"coef": lr.coef_[0].tolist(), "intercept": float(lr.intercept_[0]), "mean": mean.tolist(),
            "scale": scale.tolist()}  # fmt: skip


def score(model: dict[str, Any], rows: Sequence[Asked]) -> np.ndarray:
    x, _ = matrix(rows)
    z = (x - np.asarray(model["mean"])) / np.asarray(model["scale"]) @ np.asarray(model["coef"])
    return np.asarray(1.0 / (1.0 + np.exp(-(z + float(model["intercept"])))))


def held_out(rows: Sequence[Asked]) -> dict[int, float]:
    """Each gated row's probability from a model that never saw it: LoCoMo by conversation, everyday by set."""
    gated = [a for a in rows if label(a) is not None]
    out: dict[int, float] = {}
    convs = sorted({a.conv for a in gated if a.group in LOCOMO})
    for c in convs:
        train = [a for a in gated if a.conv != c and a.group != "heldout"]
        test = [a for a in gated if a.conv == c]
        out.update(zip(map(id, test), score(fit(train), test).tolist(), strict=True))
    everyday = [a for a in gated if a.group == "everyday"]
    if everyday:
        model = fit([a for a in gated if a.group in LOCOMO])
        out.update(zip(map(id, everyday), score(model, everyday).tolist(), strict=True))
    return out


def bars(p: dict[int, float], rows: Sequence[Asked]) -> tuple[float, float]:
    """(lo, hi): the highest bars on GRID with ≤ 0.5 % and ≤ 5 % of LoCoMo answerable rows below them."""
    ans = [p[id(a)] for a in rows if a.group == "locomo" and label(a) == 1]

    def below(g: float) -> float:
        return sum(v < g for v in ans) / max(len(ans), 1)

    lo = max((g for g in GRID if below(g) <= LO_LOSS), default=0.0)
    return lo, max((g for g in GRID if below(g) <= HI_LOSS and g >= lo), default=lo)


def outcomes(rows: Sequence[Asked], p: dict[int, float], lo: float, hi: float, groups: Sequence[str],
             never: bool) -> tuple[int, int, int, int]:  # fmt: skip
    """(asked, confident, weak, nothing) over one kind of row (a row with no shipped hit is nothing)."""
    sel = [a for a in rows if a.group in groups and (a.never if never else a.found)]
    ps = [p.get(id(a), 0.0) if a.hits else 0.0 for a in sel]
    return len(sel), sum(v >= hi for v in ps), sum(lo <= v < hi for v in ps), sum(v < lo for v in ps)


def report(rows: Sequence[Asked], model: dict[str, Any], lo: float, hi: float,
           p: dict[int, float]) -> tuple[str, bool]:  # fmt: skip
    heads = ["rows (held out by)", "asked", "confident", "weak (marked)", "nothing", "figure", "bound", "met"]
    body, met = [], []

    def row(name: str, groups: Sequence[str], never: bool, bound: str, ok: object) -> None:
        n, c, w, z = outcomes(rows, p, lo, hi, groups, never)
        fig = c / max(n, 1) if never else z / max(n, 1)
        good = ok(fig, z) if callable(ok) else True
        met.append(good)
        what = "never-stored answered" if never else "answerable loss"
        body.append([name, str(n), str(c), str(w), str(z), f"{what} {fig:.3f}", bound, "yes" if good else "no"])

    row("LoCoMo answerable (conversation)", ["locomo"], False, "≤ 0.010", lambda f, z: f <= 0.01)
    row("LoCoMo probes + cross (conversation)", ["probe", "cross"], True, "≤ 0.100", lambda f, z: f <= NEVER_MAX)
    row("LoCoMo probes only (conversation)", ["probe"], True, "-", None)
    row("everyday answerable (set)", ["everyday"], False, "≤ 1 question", lambda f, z: z <= 1)
    row("everyday never-stored (set)", ["everyday"], True, "≤ 0.100", lambda f, z: f <= NEVER_MAX)
    row("held-out never-stored (written before the fit)", ["heldout"], True, "≤ 0.100", lambda f, z: f <= NEVER_MAX)
    passes = all(met)
    weights = ", ".join(f"{f} {c:+.2f}" for f, c in zip(FEATURES, model["coef"], strict=True))
    leaks = [a.text for a in rows if a.group in ("everyday", "heldout") and a.never and p.get(id(a), 0.0) >= hi]
    text = (f"Rule: `benchmarks/abstention_rule.md` (2026-12-01 amendment). Bars from LoCoMo's held-out scores: lo "
            f"{lo:.2f}, hi {hi:.2f}. {'Passes: the gate ships on.' if passes else 'Misses: the gate ships off.'}\n\n"
            + table(heads, body) + f"\n\nStandardised weights of the model fitted on every row: {weights}; "
            f"intercept {float(model['intercept']):+.2f}.\n\n- everyday and held-out never-stored answered "
            f"confidently: {', '.join(sorted(leaks)) or 'none'}\n")  # fmt: skip
    return text, passes


def _signal(d: dict[str, Any]) -> Signal:
    return Signal(**{**d, "words": frozenset(d["words"])})


def load_rows(path: Path) -> list[Asked]:
    out = []
    for d in json.loads(path.read_text(encoding="utf-8")):
        d["hits"] = [(s, frozenset(w)) for s, w in d["hits"]]
        d["parts"] = [tuple(x) for x in d["parts"]]
        d["signals"] = [_signal(s) for s in d["signals"]]
        out.append(Asked(**d))
    return out


def save_rows(rows: Sequence[Asked], path: Path) -> None:
    def plain(a: Asked) -> dict[str, object]:
        return {**vars(a), "hits": [[s, sorted(w)] for s, w in a.hits],
                "signals": [{**vars(s), "words": sorted(s.words)} for s in a.signals]}  # fmt: skip

    path.write_text(json.dumps([plain(a) for a in rows]), encoding="utf-8")


def main(argv: list[str]) -> None:
    from memory_pipeline.evaluation.locomo_transcripts import default_locomo_path

    parser = argparse.ArgumentParser(prog="python -m benchmarks abstention-fit", description=__doc__)
    parser.add_argument("--data", type=Path, default=default_locomo_path())
    parser.add_argument("--conversations", default="", help="comma-separated sample ids (default: all)")
    parser.add_argument("--rows", type=Path, default=None,
                        help="each question's signals: read from here when the file exists, else asked and written")
    parser.add_argument("--write", action="store_true", help=f"store the fitted model in {MODEL_FILE.name}")
    args = parser.parse_args(argv)
    env, load = machine(), load_average()
    if args.rows and args.rows.exists():
        rows = load_rows(args.rows)
    else:
        heldout = [q for q in HELDOUT.read_text().splitlines() if q.strip() and not q.startswith("#")]
        rows = run(args.data, [c for c in args.conversations.split(",") if c] or None, near=False, heldout=heldout)
        if args.rows:
            save_rows(rows, args.rows)
    p = held_out(rows)
    lo, hi = bars(p, rows)
    model = fit([a for a in rows if label(a) is not None and a.group != "heldout"])
    text, passes = report(rows, model, lo, hi, p | dict(zip(
        [id(a) for a in rows if a.group == "heldout" and label(a) is not None],
        score(model, [a for a in rows if a.group == "heldout" and label(a) is not None]).tolist(), strict=True)))
    if args.write:
        MODEL_FILE.write_text(json.dumps({"features": list(FEATURES), **model, "lo": lo, "hi": hi,
                                          "enabled": passes}, indent=1) + "\n", encoding="utf-8")  # fmt: skip
    append_results("abstention-fit: one gate over all the signals", text, env, load)
