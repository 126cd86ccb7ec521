"""P3's source: issue 17's hybrid search as the compiler's `Search`, and its usage spool as `RecordUsage`.
(Placeholder until the search domain lands: no P3 and no usage recording.)"""

from __future__ import annotations

from pathlib import Path

from memory_pipeline.context.compiler import Search
from memory_pipeline.context.service import RecordUsage


def default_search(home: Path) -> Search | None:
    return None


def usage_recorder(home: Path) -> RecordUsage | None:
    return None
