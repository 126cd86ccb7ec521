"""Plan and carry out one compaction: evaluate first, classify, then act only where allowed.

Order of decisions (seed 003): measure → evaluate triggers in priority order → classify (Tier B / C) before
any extraction → gates (first run, dry run, hard limit, risk, cooldown) → working → episodic → episodic →
semantic → metadata. Every gate that "requires confirmation" is satisfied by one explicit approval
(run config `approved: true`), which no sensor or schedule ever sets.
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Protocol

from memory_pipeline.compaction import extract, fileops, governance, routing, triggers
from memory_pipeline.compaction.tiers import (
    DEFAULT_SEMANTIC_FILE,
    META_FILE,
    TierState,
    aware_utc,
    ensure_tiers,
    measure,
    memory_root,
    read_text,
    tier_files,
)
from memory_pipeline.tokens import estimate_tokens

OFFLINE = "offline"


@dataclass(frozen=True)
class Options:
    approved: bool = False
    dry_run: bool = False
    source: str = "manual"  # manual | weekly | sensor:<name>
    semantic_file: str = DEFAULT_SEMANTIC_FILE  # the default (fallback) semantic file
    domains: dict[str, tuple[str, ...]] = field(default_factory=lambda: dict(routing.DEFAULT_VOCABULARY))


class Extractor(Protocol):
    """Where summaries and candidate insights come from: the offline extractor or `LLMExtractor`."""

    name: str

    def summarise(self, name: str, text: str) -> extract.EpisodicSummary: ...

    def extract_insights(self, name: str, text: str) -> list[governance.SemanticEntry]: ...


class OfflineExtractor:
    name = OFFLINE

    def summarise(self, name: str, text: str) -> extract.EpisodicSummary:
        return extract.summarise(name, text)

    def extract_insights(self, name: str, text: str) -> list[governance.SemanticEntry]:
        return extract.extract_insights(name, text)


@dataclass
class Fallback:
    """The LLM path failed for one file; the offline extractor did that file instead."""

    step: str  # working_to_episodic | episodic_to_semantic
    file: str
    extractor: str
    reason: str


@dataclass
class Plan:
    now: datetime
    options: Options
    state: TierState
    evaluation: triggers.Evaluation
    working_due: list[str]
    episodic_due: list[str]
    classification: dict[str, str]
    cooldown: governance.Cooldown
    first_run: bool
    run_working: bool = False
    run_semantic: bool = False
    blocked: list[str] = field(default_factory=list)
    no_action_reason: str | None = None
    run_id: str = ""  # the run that made the plan: later steps act only on their own run's plan
    files_previous_run: int = 0  # files across tiers + archive after the previous executed run (meta file)
    semantic_appends: dict[str, str] = field(default_factory=dict)  # semantic file → last append (meta file)

    @property
    def mode(self) -> str:
        return "execute" if (self.run_working or self.run_semantic) else "dry_run"


def options_for(
    approved: bool, dry_run: bool, source: str, semantic_file: str, domains: dict[str, list[str]] | None
) -> Options:
    """A run's options from its config. `domains` None keeps the built-in routing vocabulary; a malformed one
    raises ValueError here, before anything is measured."""
    if domains is None:
        return Options(approved, dry_run, source, semantic_file)
    return Options(approved, dry_run, source, semantic_file, routing.validate_vocabulary(domains))


def meta_path(home: Path) -> Path:
    return memory_root(home) / META_FILE


def plan(home: Path, now: datetime, options: Options) -> Plan:
    """Evaluate before executing (the seed's dry-run-first rule); nothing is written here."""
    now = aware_utc(now)
    ensure_tiers(home)
    state = measure(home, now, options.semantic_file)
    evaluation = triggers.evaluate(state)
    working_due, episodic_due = triggers.due_files(state)
    meta = governance.read_meta(meta_path(home))
    p = Plan(
        now=now,
        options=options,
        state=state,
        evaluation=evaluation,
        working_due=working_due,
        episodic_due=episodic_due,
        classification=governance.classify(state.semantic_tokens, len(working_due), len(episodic_due)),
        cooldown=governance.cooldown(meta, now),
        first_run=meta is None,
        files_previous_run=int(str((meta or {}).get("fileCount", 0) or 0)),
        semantic_appends={str(k): str(v) for k, v in dict((meta or {}).get("semanticAppends") or {}).items()},
    )
    if evaluation.primary is None:
        p.no_action_reason = "no threshold met: " + "; ".join(t.describe() for t in evaluation.thresholds)
        return p
    whole_run_blocked = False
    if options.dry_run:
        p.blocked.append("dry run requested: evaluated only")
        whole_run_blocked = True
    if p.first_run and not options.approved:
        p.blocked.append("first run on this workspace: confirmation required (run with approved: true)")
        whole_run_blocked = True
    if state.semantic_tokens > triggers.HARD_LIMIT and not options.approved:
        p.blocked.append(
            f"semantic hard limit: {state.semantic_file} has {state.semantic_tokens} > {triggers.HARD_LIMIT} "
            "tokens — Tier C, no automatic execution (run with approved: true)"
        )
        whole_run_blocked = True
    if whole_run_blocked:
        return _finish(p)
    p.run_working = bool(working_due)
    if episodic_due:
        p.run_semantic = True
        if state.semantic.skipped:
            p.run_semantic = False
            names = ", ".join(f"semantic/{s.name}" for s in state.semantic.skipped)
            p.blocked.append(f"{names} cannot be read, so duplicates cannot be checked: episodic → semantic waits")
        if p.classification.get("episodic_to_semantic") == "C" and not options.approved:
            p.run_semantic = False
            p.blocked.append(
                f"semantic risk: {state.semantic_tokens} > {triggers.RISK_THRESHOLD} tokens — episodic → semantic "
                "is Tier C and needs approved: true"
            )
        if p.cooldown.status == "WARNING" and not options.approved:
            p.run_semantic = False
            p.blocked.append(
                f"cooldown: last compaction {p.cooldown.hours_since} h ago (< 24 h) — semantic compaction needs "
                "approved: true"
            )
    return _finish(p)


def _finish(p: Plan) -> Plan:
    if p.run_working or p.run_semantic:
        return p
    if p.blocked:
        p.no_action_reason = "blocked: " + "; ".join(p.blocked)
    else:
        p.no_action_reason = (
            f"{p.evaluation.primary_detail()} fired, but no file is old enough to move "
            f"(working > {triggers.WORKING_COMPACT_AFTER_DAYS:g} d, "
            f"episodic > {triggers.EPISODIC_EXTRACT_AFTER_DAYS:g} d)"
        )
    return p


# --- working → episodic ---


@dataclass
class Compacted:
    source: str
    episodic: str
    archived: str | None
    bullets: int
    recovered: bool = False
    extractor: str = OFFLINE
    domain: str = ""  # the explicit domain carried into the summary's `Domain:` line
    note: str = ""  # e.g. an explicit domain that could not be used (the archived original keeps it)


@dataclass
class WorkingResult:
    """What `episodic_summaries` hands on: the files compacted and the LLM fallbacks among them."""

    compacted: list[Compacted] = field(default_factory=list)
    fallbacks: list[Fallback] = field(default_factory=list)
    extractor: str = OFFLINE


def _run_extractor(
    step: str, name: str, extractor: Extractor | None, call: str, text: str, fallbacks: list[Fallback]
) -> tuple[object, str]:
    """The LLM path for one file, else (or on any failure of it) the offline extractor; the failure's reason
    is kept for the report."""
    offline = OfflineExtractor()
    if extractor is not None and extractor.name != OFFLINE:
        try:
            return getattr(extractor, call)(name, text), extractor.name
        except Exception as exc:  # noqa: BLE001 - any LLM failure: fall back for this file, say why
            fallbacks.append(Fallback(step, name, extractor.name, f"{type(exc).__name__}: {exc}"))
    return getattr(offline, call)(name, text), OFFLINE


def compact_working(
    home: Path, p: Plan, write: bool, extractor: Extractor | None = None, fallbacks: list[Fallback] | None = None
) -> list[Compacted]:
    """Each due working file: (1) its summary → episodic/<name> atomically, (2) the original → archive.
    A crash between the two leaves both; the next run recognises its own summary (same `# Compiled:`
    header and mtime) and only finishes the move. With `write=False`, the same decisions, no writes.
    `extractor` (the LLM) is asked only for summaries this call writes."""
    root = memory_root(home)
    fallbacks = fallbacks if fallbacks is not None else []
    out: list[Compacted] = []
    for name in p.working_due:
        source = root / "working" / name
        text = read_text(source)
        target = root / "episodic" / name
        recovered = False
        if target.exists():
            head = target.read_text(encoding="utf-8").splitlines()[:1]
            if head == [f"# Compiled: {name}"] and target.stat().st_mtime == source.stat().st_mtime:
                recovered = True
            else:
                target = fileops.unique_path(target.parent, source.stem, source.suffix or ".md")
        archived = fileops.unique_path(root / "archive", *fileops.archive_name(source, p.now)).name
        note, domain = "", ""
        try:
            explicit = routing.explicit_domain(text, name)
            domain = explicit.domain if explicit else ""
        except routing.RoutingError as exc:
            note = f"{exc}; not carried into the summary"
        if recovered:
            existing = read_text(target)
            bullets, used = len(extract._section(existing, "Summary")), "recovered"
        else:
            raw, used = _run_extractor(
                "working_to_episodic", name, extractor if write else None, "summarise", text, fallbacks
            )
            assert isinstance(raw, extract.EpisodicSummary)
            summary = extract.EpisodicSummary(raw.source_name, raw.summary, raw.decisions, raw.insights, domain)
            bullets = len(summary.summary)
        if write:
            if not recovered:
                fileops.atomic_write(target, summary.render().encode("utf-8"))
                stat = source.stat()
                os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the note's age keeps counting
            archived = fileops.move_to_archive(source, root / "archive", p.now).name
        out.append(Compacted(name, target.name, archived, bullets, recovered, used, domain, note))
    return out


# --- episodic → semantic ---


@dataclass
class InsightOutcome:
    episodic: str
    title: str
    status: str  # appended | would_append (dry run) | rejected | duplicate | held | already_present
    reason: str = ""
    errors: list[dict[str, object]] = field(default_factory=list)
    entry: str = ""
    semantic_file: str = ""  # where it goes (or would go)
    routed_by: str = ""  # frontmatter | domain line | keywords | default
    extractor: str = OFFLINE


@dataclass
class SemanticFileStatus:
    """One semantic file before and after this step: the seed's limits apply to each file."""

    tokens_before: int = 0
    tokens_after: int = 0
    appended: int = 0
    held: int = 0
    duplicates: int = 0

    def as_dict(self) -> dict[str, object]:
        return {**asdict(self), **governance.limit_status(self.tokens_after)}


@dataclass
class SemanticResult:
    outcomes: list[InsightOutcome] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # episodic files left in place: an insight awaits confirmation
    warnings: list[str] = field(default_factory=list)
    tokens_before: int = 0  # the largest semantic file (the one the triggers look at)
    tokens_after: int = 0
    files: dict[str, SemanticFileStatus] = field(default_factory=dict)
    fallbacks: list[Fallback] = field(default_factory=list)

    @property
    def appended(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "appended")

    @property
    def duplicate_warning(self) -> bool:
        return any(o.status == "duplicate" or "duplicate" in o.reason for o in self.outcomes)


def find_duplicate_title(title: str, target: str, titles: dict[str, list[str]]) -> tuple[str, str] | None:
    """(file, title) of an existing title that `title` duplicates, looking in the target file first, then in
    every other semantic file: semantic memory as a whole should not say the same thing twice."""
    for name in [target, *sorted(n for n in titles if n != target)]:
        found = governance.find_duplicate(title, titles.get(name, []))
        if found is not None:
            return name, found
    return None


def extract_semantic(home: Path, p: Plan, write: bool, extractor: Extractor | None = None) -> SemanticResult:
    """Each due episodic file: candidates → route (semantic/<domain>.md) → schema + pollution check →
    duplicate check (every semantic file) → size check (the target file) → append-only write; then the
    episodic file goes to the archive unless one of its insights waits for a confirmation. Cooldown and
    risk were checked by `plan` before any extraction. `extractor` (the LLM) is asked only when writing."""
    root = memory_root(home)
    semantic_dir = root / "semantic"
    unreadable = {s.name for s in p.state.semantic.skipped}  # plan() does not extract while there are any
    texts = {path.name: read_text(path) for path in tier_files(semantic_dir) if path.name not in unreadable}
    titles = {name: governance.existing_titles(text) for name, text in texts.items()}
    result = SemanticResult(files={n: SemanticFileStatus(estimate_tokens(t)) for n, t in texts.items()})
    result.tokens_before = max((f.tokens_before for f in result.files.values()), default=0)
    for name in p.episodic_due:
        path = root / "episodic" / name
        text = read_text(path)
        try:
            explicit = routing.explicit_domain(text, name)
        except routing.RoutingError as exc:
            result.outcomes.append(InsightOutcome(name, "", "rejected", f"domain: {exc}"))
            result.warnings.append(f"routing: {exc} — {name} stays in episodic/ until fixed")
            result.kept.append(name)
            continue
        entries, used = _run_extractor(
            "episodic_to_semantic", name, extractor if write else None, "extract_insights", text, result.fallbacks
        )
        assert isinstance(entries, list)
        held = False
        for entry in entries:
            rendered = entry.render()
            r = routing.route(rendered, text, name, p.options.domains, p.options.semantic_file, explicit)
            target = r.file
            status_of = result.files.setdefault(target, SemanticFileStatus())
            current = texts.get(target, "")

            outcome = functools.partial(
                InsightOutcome, name, entry.title, semantic_file=target, routed_by=r.source, extractor=used
            )
            errors = governance.validate_entry(entry)
            if errors:
                result.outcomes.append(outcome("rejected", "schema", errors=[e.as_dict() for e in errors],
                                               entry=rendered))
                continue
            duplicate = find_duplicate_title(entry.title, target, titles)
            if duplicate is not None and duplicate[0] == target and rendered in current:
                result.outcomes.append(outcome("already_present", "appended by an earlier run"))
                continue
            reasons = []
            if duplicate is not None:
                where = "" if duplicate[0] == target else f" in {duplicate[0]}"
                reasons.append(f"duplicate title of {duplicate[1]!r}{where}")
                result.warnings.append(f"duplicate title: {entry.title!r} ~ {duplicate[1]!r}{where} ({name})")
                status_of.duplicates += 1
            projected = governance.append_tokens(current, entry)
            if projected > triggers.HARD_LIMIT:
                reasons.append(f"{target} would reach {projected} > {triggers.HARD_LIMIT} tokens (hard limit)")
            if reasons and not p.options.approved:
                held = True
                status_of.held += 1
                status = "duplicate" if duplicate is not None else "held"
                result.outcomes.append(outcome(status, "; ".join(reasons), entry=rendered))
                continue
            if projected > triggers.SOFT_LIMIT:
                result.warnings.append(
                    f"semantic soft limit: {target} {projected} > {triggers.SOFT_LIMIT} tokens after {entry.title!r}"
                )
            if write:
                fileops.append_only(semantic_dir / target, rendered)
            texts[target] = current + ("\n" if current else "") + rendered
            titles.setdefault(target, []).append(entry.title)
            status_of.appended += 1
            reason = ("confirmed: " + "; ".join(reasons)) if reasons else ""
            result.outcomes.append(outcome("appended" if write else "would_append", reason, entry=rendered))
        if held:
            result.kept.append(name)
            continue
        archived = fileops.unique_path(root / "archive", *fileops.archive_name(path, p.now)).name
        if write:
            archived = fileops.move_to_archive(path, root / "archive", p.now).name
        result.archived.append(archived)
    for target, status_of in result.files.items():
        status_of.tokens_after = estimate_tokens(texts.get(target, ""))
    result.tokens_after = max((f.tokens_after for f in result.files.values()), default=0)
    return result


def write_meta(
    home: Path, p: Plan, changed: bool, total_files: int, run_id: str, appended_files: list[str] | None = None
) -> dict[str, object]:
    """Seed step 6: the timestamp after a successful compaction; also the confirmation of a first run, the
    file count the no-deletion check compares with and, per semantic file, its last append."""
    path = meta_path(home)
    meta = dict(governance.read_meta(path) or {})
    if changed:
        meta["lastCompactionAt"] = p.now.isoformat()
    if appended_files:
        appends = dict(meta.get("semanticAppends") or {})
        appends.update({name: p.now.isoformat() for name in appended_files})
        meta["semanticAppends"] = dict(sorted(appends.items()))
    if p.first_run and p.options.approved:
        meta["firstRunConfirmedAt"] = p.now.isoformat()
    meta["fileCount"] = total_files
    meta["lastRunId"] = run_id
    fileops.atomic_write(path, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return meta


def finish_run(home: Path, p: Plan, compacted: list[Compacted], semantic: SemanticResult, run_id: str) -> None:
    """After the last tier step of an executing run: the meta file that the cooldown, the first-run rule and the
    no-deletion check read next time (a dry run or a blocked plan leaves it alone)."""
    if p.mode != "execute":
        return
    changed = bool(compacted) or semantic.appended > 0 or bool(semantic.archived)
    total = measure(home, p.now, p.options.semantic_file).total_files
    appended = sorted({o.semantic_file for o in semantic.outcomes if o.status == "appended"})
    write_meta(home, p, changed=changed, total_files=total, run_id=run_id, appended_files=appended)


def plan_dict(p: Plan) -> dict[str, object]:
    return {
        "now": p.now.isoformat(),
        "options": asdict(p.options),
        "mode": p.mode,
        "working_due": p.working_due,
        "episodic_due": p.episodic_due,
        "classification": p.classification,
        "cooldown": p.cooldown.as_dict(),
        "first_run": p.first_run,
        "blocked": p.blocked,
        "no_action_reason": p.no_action_reason,
    }
