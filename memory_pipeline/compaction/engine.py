"""Plan and carry out one compaction: evaluate first, classify, then act only where allowed.

Order of decisions (seed 003): measure → evaluate triggers in priority order → classify (Tier B / C) before
any extraction → gates (first run, dry run, hard limit, risk, cooldown) → working → episodic → episodic →
semantic → metadata. Every gate that "requires confirmation" is satisfied by one explicit approval
(run config `approved: true`), which no sensor or schedule ever sets.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field
from datetime import datetime
from pathlib import Path

from memory_pipeline.compaction import extract, fileops, governance, triggers
from memory_pipeline.compaction.tiers import (
    DEFAULT_SEMANTIC_FILE,
    META_FILE,
    TierState,
    aware_utc,
    ensure_tiers,
    measure,
    memory_root,
    read_text,
)
from memory_pipeline.tokens import estimate_tokens


@dataclass(frozen=True)
class Options:
    approved: bool = False
    dry_run: bool = False
    source: str = "manual"  # manual | weekly | sensor:<name>
    semantic_file: str = DEFAULT_SEMANTIC_FILE


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

    @property
    def mode(self) -> str:
        return "execute" if (self.run_working or self.run_semantic) else "dry_run"


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


def compact_working(home: Path, p: Plan, write: bool) -> list[Compacted]:
    """Each due working file: (1) its summary → episodic/<name> atomically, (2) the original → archive.
    A crash between the two leaves both; the next run recognises its own summary (same `# Compiled:`
    header and mtime) and only finishes the move. With `write=False`, the same decisions, no writes."""
    root = memory_root(home)
    out: list[Compacted] = []
    for name in p.working_due:
        source = root / "working" / name
        summary = extract.summarise(name, read_text(source))
        target = root / "episodic" / name
        recovered = False
        if target.exists():
            head = target.read_text(encoding="utf-8").splitlines()[:1]
            if head == [f"# Compiled: {name}"] and target.stat().st_mtime == source.stat().st_mtime:
                recovered = True
            else:
                target = fileops.unique_path(target.parent, source.stem, source.suffix or ".md")
        archived = fileops.unique_path(root / "archive", *fileops.archive_name(source, p.now)).name
        if write:
            if not recovered:
                fileops.atomic_write(target, summary.render().encode("utf-8"))
                stat = source.stat()
                os.utime(target, ns=(stat.st_atime_ns, stat.st_mtime_ns))  # the note's age keeps counting
            archived = fileops.move_to_archive(source, root / "archive", p.now).name
        out.append(Compacted(name, target.name, archived, len(summary.summary), recovered))
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


@dataclass
class SemanticResult:
    outcomes: list[InsightOutcome] = field(default_factory=list)
    archived: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)  # episodic files left in place: an insight awaits confirmation
    warnings: list[str] = field(default_factory=list)
    tokens_before: int = 0
    tokens_after: int = 0

    @property
    def appended(self) -> int:
        return sum(1 for o in self.outcomes if o.status == "appended")

    @property
    def duplicate_warning(self) -> bool:
        return any(o.status == "duplicate" or "duplicate" in o.reason for o in self.outcomes)


def extract_semantic(home: Path, p: Plan, write: bool) -> SemanticResult:
    """Each due episodic file: candidates → schema + pollution check → duplicate check → size check →
    append-only write; then the episodic file goes to the archive unless one of its insights waits for a
    confirmation. Cooldown and risk were checked by `plan` before any extraction."""
    root = memory_root(home)
    semantic = root / "semantic" / p.options.semantic_file
    current = read_text(semantic) if semantic.exists() else ""
    result = SemanticResult(tokens_before=estimate_tokens(current))
    titles = governance.existing_titles(current)
    for name in p.episodic_due:
        path = root / "episodic" / name
        held = False
        for entry in extract.extract_insights(name, read_text(path)):
            rendered = entry.render()
            errors = governance.validate_entry(entry)
            if errors:
                result.outcomes.append(
                    InsightOutcome(name, entry.title, "rejected", "schema", [e.as_dict() for e in errors], rendered)
                )
                continue
            duplicate = governance.find_duplicate(entry.title, titles)
            if duplicate is not None and rendered in current:
                result.outcomes.append(
                    InsightOutcome(name, entry.title, "already_present", "appended by an earlier run")
                )
                continue
            reasons = []
            if duplicate is not None:
                reasons.append(f"duplicate title of {duplicate!r}")
                result.warnings.append(f"duplicate title: {entry.title!r} ~ {duplicate!r} ({name})")
            projected = governance.append_tokens(current, entry)
            if projected > triggers.HARD_LIMIT:
                reasons.append(f"would reach {projected} > {triggers.HARD_LIMIT} tokens (hard limit)")
            if reasons and not p.options.approved:
                held = True
                status = "duplicate" if duplicate is not None else "held"
                result.outcomes.append(InsightOutcome(name, entry.title, status, "; ".join(reasons), entry=rendered))
                continue
            if projected > triggers.SOFT_LIMIT:
                result.warnings.append(
                    f"semantic soft limit: {projected} > {triggers.SOFT_LIMIT} tokens after {entry.title!r}"
                )
            if write:
                fileops.append_only(semantic, rendered)
            current = current + ("\n" if current else "") + rendered
            titles.append(entry.title)
            reason = ("confirmed: " + "; ".join(reasons)) if reasons else ""
            status = "appended" if write else "would_append"
            result.outcomes.append(InsightOutcome(name, entry.title, status, reason, entry=rendered))
        if held:
            result.kept.append(name)
            continue
        archived = fileops.unique_path(root / "archive", *fileops.archive_name(path, p.now)).name
        if write:
            archived = fileops.move_to_archive(path, root / "archive", p.now).name
        result.archived.append(archived)
    result.tokens_after = estimate_tokens(current)
    return result


def write_meta(home: Path, p: Plan, changed: bool, total_files: int, run_id: str) -> dict[str, object]:
    """Seed step 6: the timestamp after a successful compaction; also the confirmation of a first run and
    the file count the no-deletion check compares with."""
    path = meta_path(home)
    meta = dict(governance.read_meta(path) or {})
    if changed:
        meta["lastCompactionAt"] = p.now.isoformat()
    if p.first_run and p.options.approved:
        meta["firstRunConfirmedAt"] = p.now.isoformat()
    meta["fileCount"] = total_files
    meta["lastRunId"] = run_id
    fileops.atomic_write(path, (json.dumps(meta, indent=2, sort_keys=True) + "\n").encode("utf-8"))
    return meta


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
