"""One extractor over one day's sessions, by the LLM or offline (seed 001 §8.3), and the day's replacement of
their memories. The `session_memories` asset only loads the day and reports; the rules live here so they can be
read and tested without a Dagster run: a session whose LLM answer fails validation falls back offline alone, and
a day's LLM calls all happen before its one transaction opens."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memory_pipeline.journals import tables
from memory_pipeline.journals.extractors import EXTRACTORS, Extractor
from memory_pipeline.journals.llm_extractors import LLMExtractionFailed, LLMSessionExtractor, llm_extractor, version_for
from memory_pipeline.store.db import MemoryStore, atomic, utcnow


@dataclass
class ExtractorRun:
    """One extractor over the day: each session's candidates, and which sessions fell back offline and why."""

    name: str
    mode: str  # llm | offline
    found: dict[str, list] = field(default_factory=dict)
    fallbacks: dict[str, str] = field(default_factory=dict)
    calls: int = 0

    def groups(self, transcripts: list) -> list[tuple[Extractor, list]]:
        """(extractor version, its sessions): the LLM version's sessions and the offline fallbacks apart, since
        each version replaces only its own memories."""
        offline = EXTRACTORS[self.name]
        if self.mode == "offline":
            return [(offline, transcripts)]
        llm_sessions = [t for t in transcripts if t.session_id not in self.fallbacks]
        fell_back = [t for t in transcripts if t.session_id in self.fallbacks]
        return [(llm_extractor(self.name), llm_sessions), (offline, fell_back)]

    def summary(self, distiller: str, defined: str) -> dict[str, object]:
        """What ran, for the day's metadata (the caller adds the fallbacks themselves)."""
        return {
            "mode": self.mode,
            "version": version_for(self.name, self.mode == "llm"),
            "code_version_defined": defined,
            "distiller": distiller if self.mode == "llm" else "offline",
            "llm_calls": self.calls,
            "fallback_sessions": len(self.fallbacks),
        }


def version_warnings(names: Sequence[str], use_llm: bool, defined: dict[str, str]) -> list[str]:
    """The asset's code_version is fixed when the location loads; say so when this run's `llm` resource runs
    another version, since the memories' source (not the code_version) then tells which ran."""
    return [
        f"{name}: this run's `llm` resource runs version {version_for(name, use_llm)}, the code location "
        f"was loaded with {defined[name]} (the asset's code_version); the memories' source says which ran"
        for name in names
        if version_for(name, use_llm) != defined[name]
    ]


def extract(
    name: str, transcripts: list, asker: LLMSessionExtractor | None, warn: Callable[[str], Any]
) -> ExtractorRun:
    """Each session by the LLM when there is an `asker`, offline when there is none or its answer failed."""
    run = ExtractorRun(name, "llm" if asker else "offline")
    before = asker.calls if asker else 0
    for t in transcripts:
        if asker is not None:
            try:
                run.found[t.session_id] = asker.find(name, t)
                continue
            except LLMExtractionFailed as exc:
                run.fallbacks[t.session_id] = str(exc)
                warn(f"{name}: session {t.session_id}: LLM extraction failed ({exc}); offline instead")
        run.found[t.session_id] = EXTRACTORS[name].find(t)
    run.calls = (asker.calls - before) if asker else 0
    return run


def merged(run: ExtractorRun, parts: list[tables.ExtractionOutcome]) -> tables.ExtractionOutcome:
    """One outcome per extractor; its source is the version this run chose (fallbacks are in the metadata)."""
    source = llm_extractor(run.name).source if run.mode == "llm" else EXTRACTORS[run.name].source
    out = tables.ExtractionOutcome(run.name, source, kept_archived=[])
    for p in parts:
        out.produced += p.produced
        out.inserted += p.inserted
        out.unchanged += p.unchanged
        out.reactivated += p.reactivated
        out.superseded += p.superseded
        out.kept_archived += p.kept_archived
    return out


def extract_day(
    db: MemoryStore,
    names: Sequence[str],
    transcripts: list,
    asker: LLMSessionExtractor | None,
    run_id: str,
    warn: Callable[[str], Any],
) -> list[tuple[ExtractorRun, tables.ExtractionOutcome]]:
    """The selected extractors over one day, then one transaction that replaces exactly their memories for the
    day's sessions: the LLM calls happen before it opens, and a failure rolls the whole day back."""
    runs = [extract(name, transcripts, asker, warn) for name in names]
    now = utcnow()
    outcomes = []
    with db.connect() as con, atomic(con):
        for run in runs:
            parts = [
                tables.replace_extracted(con, extractor, subset, run.found, now, run_id)
                for extractor, subset in run.groups(transcripts)
                if subset
            ]
            outcomes.append((run, merged(run, parts)))
    return outcomes


def lineage_note(kept: list[str]) -> str:
    """The lineage check's verdict: replaced memories already archived into a summary stay as they are."""
    if not kept:
        return "no replaced memory was archived into a summary"
    return (f"{len(kept)} replaced memor{'y was' if len(kept) == 1 else 'ies were'} already archived into "
            "a summary: kept as they are, so the summary keeps its lineage")  # fmt: skip


def outcome_metadata(o: tables.ExtractionOutcome) -> dict[str, object]:
    """A day's replacement in numbers (`kept_archived`: replaced memories left as they are, being archived)."""
    return {
        "source": o.source,
        "memories": o.produced,
        "inserted": o.inserted,
        "unchanged": o.unchanged,
        "reactivated": o.reactivated,
        "superseded": o.superseded,
        "kept_archived": len(o.kept_archived or []),
    }
