"""What one domain folder (abstraction, journals, rollups, compaction, graph) adds to the code location.

Each domain's `definitions.py` exposes `DOMAIN: Domain`; `memory_pipeline.definitions` merges them, so
domains never edit each other's files.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

Resources = Mapping[str, Any]


@dataclass(frozen=True)
class Domain:
    assets: Sequence[Any] = ()
    asset_checks: Sequence[Any] = ()
    jobs: Sequence[Any] = ()
    schedules: Sequence[Any] = ()
    sensors: Sequence[Any] = ()
    # Extra resources (IO managers, domain config) derived from the shared ones (store, embedder, llm, …);
    # keys already present win, so tests and the CLI can override them.
    resources: Callable[[Resources], dict[str, Any]] = field(default=lambda shared: {})
