"""Tables and text histograms for materialisation metadata: small enough to read at a glance in the UI.

No Dagster import: these return plain markdown strings.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

BAR = "█"


def histogram(values: Sequence[float], edges: Sequence[float]) -> list[tuple[str, int]]:
    """Counts per bin `[edges[i], edges[i+1])`; the last bin is open (`≥ edges[-1]`), values below the first
    edge get their own `< edges[0]` bin. Empty bins are kept so runs compare bin by bin."""
    if not edges or any(b <= a for a, b in zip(edges, edges[1:], strict=False)):
        raise ValueError(f"histogram edges must be strictly increasing, got {list(edges)}")
    labels = [f"{_num(lo)}–{_num(hi)}" for lo, hi in zip(edges, edges[1:], strict=False)] + [f"≥ {_num(edges[-1])}"]
    counts = [0] * len(labels)
    below = 0
    for v in values:
        if math.isnan(v):
            continue
        if v < edges[0]:
            below += 1
            continue
        i = next((j for j in range(len(edges) - 1) if v < edges[j + 1]), len(edges) - 1)
        counts[i] += 1
    rows = list(zip(labels, counts, strict=True))
    return [(f"< {_num(edges[0])}", below), *rows] if below else rows


def text_histogram(title: str, values: Sequence[float], edges: Sequence[float], width: int = 20) -> str:
    """A fenced block of bars, e.g. `4–6   ███████ 12`; the longest bar is `width` characters."""
    rows = histogram(values, edges)
    if not any(n for _, n in rows):
        return f"{title}: none this run"
    peak = max((n for _, n in rows), default=0)
    pad = max((len(label) for label, _ in rows), default=0)
    lines = [f"{title} (n={sum(n for _, n in rows)})"]
    for label, n in rows:
        bar = BAR * (round(n / peak * width) if peak else 0)
        lines.append(f"{label.ljust(pad)}  {bar}{' ' if bar else ''}{n}")
    return "```\n" + "\n".join(lines) + "\n```"


def markdown_table(rows: Sequence[Mapping[str, object]], columns: Sequence[str], limit: int = 50) -> str:
    """A markdown table of the first `limit` rows; pipes in cells are escaped so a reason cannot break it."""
    if not rows:
        return "_none_"
    lines = ["| " + " | ".join(columns) + " |", "|" + "|".join(" --- " for _ in columns) + "|"]
    for row in rows[:limit]:
        lines.append("| " + " | ".join(_cell(row.get(c, "")) for c in columns) + " |")
    if len(rows) > limit:
        lines.append(f"| … {len(rows) - limit} more |" + " |" * (len(columns) - 1))
    return "\n".join(lines)


def _cell(value: object) -> str:
    if isinstance(value, float):
        value = f"{value:.2f}"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _num(x: float) -> str:
    return f"{x:g}"
