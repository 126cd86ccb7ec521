"""The run report: every field of seed 003 "Reporting Requirements" plus its "Output Format" block."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import datetime
from pathlib import Path
from typing import Any

from memory_pipeline.compaction import governance, triggers
from memory_pipeline.compaction.engine import OFFLINE, Compacted, Plan, SemanticResult, WorkingResult, plan_dict
from memory_pipeline.compaction.fileops import atomic_write
from memory_pipeline.compaction.tiers import measure


def build_report(
    run_id: str,
    p: Plan,
    compacted: list[Compacted],
    semantic: SemanticResult,
    files_before: int,
    files_after: int,
    semantic_tokens_after: int,
    semantic_files_after: dict[str, int] | None = None,
) -> dict[str, Any]:
    s = p.state
    semantic_after = dict(semantic_files_after or {})
    executed = p.mode == "execute"
    limits = governance.limit_status(semantic_tokens_after)
    insights = semantic.appended if p.run_semantic else 0
    archived = (len([c for c in compacted if c.archived]) if p.run_working else 0) + (
        len(semantic.archived) if p.run_semantic else 0
    )
    report: dict[str, Any] = {
        "run_id": run_id,
        "requested_by": p.options.source,
        "approved": p.options.approved,
        **plan_dict(p),
        # Reporting Requirements
        "working_file_count": s.working.file_count,
        "working_total_tokens": s.working.total_tokens,
        "oldest_working_file_age_days": s.working.oldest_age_days,
        "episodic_file_count": s.episodic.file_count,
        "episodic_total_tokens": s.episodic.total_tokens,
        "oldest_episodic_file_age_days": s.episodic.oldest_age_days,
        "semantic_file": s.semantic_file,
        "semantic_token_count": s.semantic_tokens,
        "semantic_file_tokens": s.semantic_file_tokens,
        "semantic_default_file": p.options.semantic_file,
        "semantic_files": semantic_files(p, semantic, semantic_after),
        "thresholds_evaluated": p.evaluation.as_rows(),
        "trigger_fired": p.evaluation.primary_detail(),
        "triggers_fired": p.evaluation.fired_triggers,
        "tier_classification": p.classification,
        "cooldown_status": p.cooldown.status,
        "no_action_reason": p.no_action_reason,
        # Output Format
        "working_to_episodic_files": len(compacted) if p.run_working else 0,
        "episodic_to_semantic_insights": insights,
        "archived_files": archived,
        "semantic_tokens_after": semantic_tokens_after,
        "soft_limit_status": limits["soft_limit"],
        "hard_limit_status": limits["hard_limit"],
        "duplicate_check": "WARNING" if semantic.duplicate_warning else "PASS",
        # what happened (or would happen, in a dry run)
        "compacted": [asdict(c) for c in compacted],
        "insights": [asdict(o) for o in semantic.outcomes],
        "episodic_archived": semantic.archived,
        "episodic_kept_for_confirmation": semantic.kept,
        "warnings": _warnings(p, semantic, semantic_after),
        "skipped_files": [{"tier": x.tier, "file": x.name, "reason": x.reason} for x in s.skipped],
        "files_total_before": files_before,
        "files_total_after": files_after,
        "executed": executed,
    }
    return report


def semantic_files(p: Plan, semantic: SemanticResult, files_after: dict[str, int]) -> dict[str, dict[str, Any]]:
    """Per semantic file (existing, or targeted by this run): tokens at the start and after, the limits'
    status, what this run appended / held / found duplicated there, and the time since its last append."""
    cooldowns = governance.file_cooldowns(p.semantic_appends, p.now)
    names = sorted(set(p.state.semantic_file_tokens) | set(files_after) | set(semantic.files))
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        status = semantic.files.get(name)
        after = files_after.get(name, 0)
        out[name] = {
            "tokens_before": p.state.semantic_file_tokens.get(name, 0),
            "tokens_after": after,
            **governance.limit_status(after),
            "appended": sum(1 for o in semantic.outcomes if o.semantic_file == name and o.status == "appended"),
            "would_append": sum(1 for o in semantic.outcomes if o.semantic_file == name and o.status == "would_append"),
            "held": status.held if status else 0,
            "duplicates": status.duplicates if status else 0,
            "cooldown": cooldowns[name].as_dict() if name in cooldowns else {"status": "OK", "last_compaction_at": None,
                                                                             "hours_since": None},
        }
    return out


def _warnings(p: Plan, semantic: SemanticResult, files_after: dict[str, int]) -> list[str]:
    out = [s.describe() for s in p.state.skipped] + list(semantic.warnings)
    if p.no_action_reason is None:  # a step held back while another ran: say why (else the reason says it)
        out += [f"held back: {b}" for b in p.blocked]
    for name in sorted(set(p.state.semantic_file_tokens) | set(files_after)):
        tokens = max(p.state.semantic_file_tokens.get(name, 0), files_after.get(name, 0))
        if tokens > triggers.HARD_LIMIT:
            out.append(f"BLOCKING: {name} {tokens} > {triggers.HARD_LIMIT} tokens (hard limit); no trimming")
        elif tokens > triggers.RISK_THRESHOLD:
            out.append(f"semantic risk: {name} {tokens} > {triggers.RISK_THRESHOLD} tokens (85 % of the hard limit)")
        elif tokens > triggers.SOFT_LIMIT:
            out.append(f"semantic soft limit: {name} {tokens} > {triggers.SOFT_LIMIT} tokens")
        if tokens > triggers.RISK_THRESHOLD:
            out.append(
                f"suggestion: shard semantic memory — start a new file beside {name} (e.g. semantic/<topic>.md, "
                "routed by a `domain:` in the notes or the run config's `domains` keywords) instead of trimming"
            )
    for f in semantic.fallbacks:
        out.append(f"LLM fallback ({f.step}) for {f.file}: {f.reason}")
    if p.cooldown.status == "WARNING":
        out.append(f"cooldown: last compaction {p.cooldown.hours_since} h ago (< 24 h)")
    return out


def output_text(r: dict[str, Any]) -> str:
    """The seed's Output Format, preceded by a dry-run banner and followed by the reason when nothing ran."""
    lines = []
    if not r["executed"]:
        lines.append("DRY RUN — nothing moved or appended")
    lines += [
        "🗑️ Memory Compaction Complete",
        f"📦 Working→Episodic: {r['working_to_episodic_files']} files compacted",
        f"📚 Episodic→Semantic: {r['episodic_to_semantic_insights']} insights extracted",
        f"📁 Archived: {r['archived_files']} files moved",
        "",
        "📊 Semantic Status:",
        f"   • Current size: ~{r['semantic_tokens_after']} tokens",
        f"   • Soft limit ({triggers.SOFT_LIMIT}): {r['soft_limit_status']}",
        f"   • Hard limit ({triggers.HARD_LIMIT}): {r['hard_limit_status']}",
        f"   • Duplicate check: {r['duplicate_check']}",
        f"   • Cooldown: {r['cooldown_status']}",
        *[
            f"   • {name}: ~{f['tokens_after']} tokens (soft {f['soft_limit']}, hard {f['hard_limit']})"
            for name, f in dict(r.get("semantic_files") or {}).items()
        ],
        "",
        f"Trigger fired: {r['trigger_fired']} (requested by {r['requested_by']})",
        "Tier classification: " + ", ".join(f"{k}={v}" for k, v in dict(r["tier_classification"]).items()),
        f"Working: {r['working_file_count']} files, {r['working_total_tokens']} tokens, "
        f"oldest {r['oldest_working_file_age_days']} d",
        f"Episodic: {r['episodic_file_count']} files, {r['episodic_total_tokens']} tokens, "
        f"oldest {r['oldest_episodic_file_age_days']} d",
        f"Semantic: {r['semantic_token_count']} tokens in {r['semantic_file']} (the largest semantic file) at the "
        f"start; new insights without a domain go to {r['semantic_default_file']}",
        "Thresholds: " + "; ".join(
            f"{t['name']}={t['actual']:g}{' >' if t['fired'] else ' ≤'} {t['limit']:g}"
            for t in r["thresholds_evaluated"]
        ),
    ]
    if not r["executed"] and r["working_due"]:
        lines.append(f"Would compact: {', '.join(r['working_due'])}")
    if not r["executed"] and r["episodic_due"]:
        lines.append(f"Would extract from: {', '.join(r['episodic_due'])}")
    if r["no_action_reason"]:
        lines.append(f"No action taken: {r['no_action_reason']}")
    for w in r["warnings"]:
        lines.append(f"⚠️ {w}")
    return "\n".join(lines) + "\n"


def llm_section(
    llm: Any, reports_dir: Path, run_id: str, working: WorkingResult, semantic: SemanticResult
) -> dict[str, Any]:
    """Which extractor each step used, the run's LLM usage and cost (its ledger), and every fallback to
    the offline extractor with its reason."""
    usage = llm.usage_summary(reports_dir, run_id)
    fallbacks = [asdict(f) for f in working.fallbacks + semantic.fallbacks]
    return {
        "configured": llm.distiller_name() if llm.uses_anthropic() else OFFLINE,
        "summaries_by": sorted({c.extractor for c in working.compacted}),
        "insights_by": sorted({o.extractor for o in semantic.outcomes}),
        "calls": usage.calls,
        "failed_calls": usage.failed_calls,
        "input_tokens": usage.total.total_input_tokens,
        "output_tokens": usage.total.output_tokens,
        "cost_usd": round(usage.cost(llm.prices()), 6),
        "fallbacks": fallbacks,
    }


def plan_metadata(plan: Plan, now: datetime) -> dict[str, Any]:
    """`tier_volumes`' metadata: every tier's volume, the thresholds in the seed's priority order, the Tier B / C
    classification and the mode — what the run decided before any extraction, so the UI shows why."""
    s = plan.state
    return {
        "working_file_count": s.working.file_count,
        "working_total_tokens": s.working.total_tokens,
        "oldest_working_file_age_days": s.working.oldest_age_days,
        "episodic_file_count": s.episodic.file_count,
        "episodic_total_tokens": s.episodic.total_tokens,
        "oldest_episodic_file_age_days": s.episodic.oldest_age_days,
        "semantic_token_count": s.semantic_tokens,
        "semantic_largest_file": s.semantic_file,
        "semantic_file_tokens": s.semantic_file_tokens,
        "archive_file_count": s.archive.file_count,
        "files_total": s.total_files,
        "skipped_files": [x.describe() for x in s.skipped],
        "trigger_fired": plan.evaluation.primary_detail(),
        "tier_classification": plan.classification,
        "thresholds": plan.evaluation.as_rows(),
        "mode": plan.mode,
        "now": now.isoformat(),
    }


def semantic_metadata(plan: Plan, result: SemanticResult, extractor: str) -> dict[str, Any]:
    """`semantic_insights`' metadata: what was appended, rejected or held, and the semantic files' sizes."""
    return {
        "insights_appended": result.appended if plan.run_semantic else 0,
        "insights_rejected": sum(1 for o in result.outcomes if o.status == "rejected"),
        "insights_held": sum(1 for o in result.outcomes if o.status in ("held", "duplicate")),
        "semantic_tokens_before": result.tokens_before,
        "semantic_tokens_after": result.tokens_after if plan.run_semantic else result.tokens_before,
        "episodic_archived": len(result.archived) if plan.run_semantic else 0,
        "extractor": extractor,
        "llm_fallbacks": len(result.fallbacks),
        "semantic_files": {n: f.as_dict() for n, f in sorted(result.files.items())},
    }


def run_report(
    run_id: str, home: Path, reports_dir: Path, plan: Plan, working: WorkingResult, semantic: SemanticResult, llm: Any
) -> dict[str, Any]:
    """The whole report of a run: the tiers measured again after its steps, its LLM use, and every fallback to
    the offline extractor among the warnings (first, since they explain the rest)."""
    after = measure(home, plan.now, plan.options.semantic_file)
    payload = build_report(
        run_id, plan, working.compacted, semantic, plan.state.total_files,
        after.total_files, after.semantic_tokens, after.semantic_file_tokens,
    )  # fmt: skip
    payload["files_total_previous_run"] = plan.files_previous_run
    payload["llm"] = llm_section(llm, reports_dir, run_id, working, semantic)
    payload["warnings"] = [
        *[f"LLM fallback ({f.step}) for {f.file}: {f.reason}" for f in working.fallbacks],
        *payload["warnings"],
    ]
    return payload


def write_report(reports_dir: Path, run_id: str, payload: dict[str, object], text: str) -> Path:
    """`reports/compaction-<run_id>.json` and its `.md` beside it, each written whole (temp + rename)."""
    path = reports_dir / f"compaction-{run_id}.json"
    atomic_write(path.with_suffix(".md"), text.encode("utf-8"))
    atomic_write(path, json.dumps(payload, indent=2, default=str).encode("utf-8"))
    return path
