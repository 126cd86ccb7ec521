"""The night's run report (CompressionRunReport), its verdict and health bands."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime
from typing import Any

from memory_pipeline.abstraction import grade


@dataclass
class CompressionError:
    cluster_id: str
    stage: str  # distill | write | archive | enrich
    error: str
    timestamp: str


@dataclass
class CompressionRunReport:
    run_id: str
    started_at: str
    finished_at: str
    duration_ms: int
    memories_scanned: int
    clusters_found: int
    clusters_skipped: int
    clusters_compressed: int
    memories_archived: int
    abstractions_created: int
    atoms_created: int
    atoms_enriched: int
    tokens_before: int
    tokens_after: int
    token_reduction_pct: float
    avg_compression_ratio: float
    max_compression_ratio: float
    min_compression_ratio: float
    total_llm_calls: int
    total_llm_input_tokens: int
    total_llm_output_tokens: int
    estimated_cost_usd: float
    errors: list[CompressionError] = field(default_factory=list)
    verdict: str = "FAIL"
    verdict_reason: str | None = None
    # Beyond the original report: what ran and what happened to each cluster.
    distiller: str = ""
    clusters_failed: int = 0
    exact_duplicates_archived: int = 0
    pending_activated: int = 0  # summaries of an interrupted run, reconciled at the start of this one
    pending_removed: int = 0
    skip_reasons: dict[str, int] = field(default_factory=dict)
    # the vectors the night clustered on (model, dim, source) and how its summaries were embedded
    embedding: dict[str, Any] = field(default_factory=dict)
    # clusters found but left alone because an earlier night (within the fingerprint TTL) already tried them
    clusters_recently_processed: int = 0
    # memories the night marked superseded: a later memory states another value of the same fact
    supersessions: int = 0
    grade: dict[str, Any] = field(default_factory=dict)  # abstraction.grade: what the summaries say, held to sources

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def report_from_dict(data: dict[str, Any]) -> CompressionRunReport:
    """A report read back from its JSON file (extra keys, like memory_count, are ignored)."""
    fields = {k: v for k, v in data.items() if k in CompressionRunReport.__dataclass_fields__}
    fields["errors"] = [CompressionError(**e) for e in data.get("errors", [])]
    return CompressionRunReport(**fields)


QUIET = "nothing new to consolidate"


def decide_verdict(
    clusters_compressed: int,
    errors: int,
    fatal: str | None = None,
    recovered: int = 0,
    *,
    tried: int | None = None,
    found: int = 0,
    scanned: int = 0,
    duplicates: int = 0,
    superseded: int = 0,
    refused: int = 0,
) -> tuple[str, str | None]:
    """`recovered`: summaries of an interrupted night this one activated — that night's work, completed now,
    so a night that finds nothing else left to compress after it is graded by what the store holds: PASS.

    `tried`: the clusters this night put to the distiller (found, less those an earlier night already tried
    within the fingerprint TTL); None when unknown. A night that compressed nothing is a FAIL — the sign of a
    nightly job that stopped working — only when it had clusters to try, or errors: a quiet night (no memory
    clusters, or only clusters already tried) is a PASS, "nothing new to consolidate". `found`, `scanned` and
    `duplicates` (clusters found, eligible memories, exact duplicates archived) only word that reason.

    `superseded`: older values of facts this night marked as replaced. That is the night's work too: a night
    whose only cluster was a fact's versions (nothing to distil once they are told apart) is a PASS, unless it
    had errors.

    `refused`: clusters whose distillation the verifier refused (it would state what their members did not, or
    leave out what they said: distinct events are not a pattern). A night that tried clusters and had every one
    refused judged them and left them as they are: a PASS that says so, unless it had errors."""
    if fatal:
        return "FAIL", fatal
    if clusters_compressed == 0 and recovered:
        return "PASS", (f"completed an interrupted night: activated its {recovered} summar"
                        f"{'y' if recovered == 1 else 'ies'}; no other cluster left to compress")  # fmt: skip
    if clusters_compressed == 0 and tried == 0:
        if errors:
            return "FAIL", f"{errors} error(s) during the run, and nothing compressed"
        archived = f"; {duplicates} exact duplicate(s) archived" if duplicates else ""
        return "PASS", quiet_reason(found, scanned) + archived
    if clusters_compressed == 0 and superseded and not errors:
        return "PASS", (f"marked {superseded} older value{'' if superseded == 1 else 's'} of a fact as replaced; "
                        "no cluster compressed")  # fmt: skip
    if clusters_compressed == 0 and refused and tried is not None and refused >= tried and not errors:
        return "PASS", (f"no cluster compressed: the verifier refused all {refused} distillations (their summaries "
                        "would not say what their members said); those memories stay as they are")  # fmt: skip
    if clusters_compressed == 0:
        return "FAIL", "no cluster was compressed (no useful work done)"
    if errors:
        return "PARTIAL", f"{errors} error(s) during the run"
    return "PASS", None


def quiet_reason(found: int, scanned: int) -> str:
    """Why a night had nothing to try: no eligible memory, no cluster among them, or only clusters tried before."""
    if not scanned:
        return f"{QUIET}: no memory is eligible (old enough, not pinned, locked, critical or already compressed)"
    if not found:
        return f"{QUIET}: the {scanned} eligible memories form no cluster"
    return f"{QUIET}: the {found} cluster(s) found were all tried by a recent night"


def reduction_pct(before: int, after: int) -> float:
    return round(100.0 * (before - after) / before, 2) if before else 0.0


@dataclass(frozen=True)
class Band:
    field: str
    value: float
    band: str  # good | warning | bad


def health_bands(report: CompressionRunReport) -> list[Band]:
    """Ratios only mean something when something was compressed; the reduction, when something was compressed
    or the store changed; the skip rate counts the clusters this night tried (not those a recent night did) —
    so a quiet night, nothing new to consolidate, is all good."""
    bands: list[Band] = []

    def grade(name: str, value: float, good: bool, warning: bool) -> None:
        bands.append(Band(name, value, "good" if good else "warning" if warning else "bad"))

    r = report.token_reduction_pct
    if report.clusters_compressed or r != 0:
        grade("token_reduction_pct", r, r > 15, 5 <= r <= 15)
    if report.clusters_compressed:
        a = report.avg_compression_ratio
        grade("avg_compression_ratio", a, a > 2.5, 1.5 <= a <= 2.5)
    tried = report.clusters_found - report.clusters_recently_processed
    if tried > 0:
        s = (report.clusters_skipped - report.clusters_recently_processed) / tried
        grade("skip_rate", round(s, 3), s < 0.2, 0.2 <= s <= 0.5)
    e = len(report.errors)
    grade("errors", e, e == 0, 1 <= e <= 2)
    c = report.estimated_cost_usd
    grade("estimated_cost_usd", c, c < 0.10, 0.10 <= c <= 0.25)
    return bands


def alert_priority(report: CompressionRunReport, max_minutes: float = 30.0) -> str:
    """'action' when a person should look, else 'info'."""
    if (
        report.verdict == "FAIL"
        or report.errors
        or report.token_reduction_pct < 0
        or report.duration_ms > max_minutes * 60_000
    ):
        return "action"
    return "info"


def markdown_table(report: CompressionRunReport) -> str:
    rows = [(k, v) for k, v in report.to_dict().items() if k not in ("errors", "skip_reasons", "embedding")]
    if report.embedding:
        rows.append(("vectors", describe_vectors(report.embedding)))
    lines = ["| field | value |", "| --- | --- |"] + [f"| {k} | {v} |" for k, v in rows]
    for reason, n in report.skip_reasons.items():
        lines.append(f"| skipped: {reason} | {n} |")
    for err in report.errors:
        lines.append(f"| error ({err.stage}) {err.cluster_id} | {err.error} |")
    return "\n".join(lines)


def summary_lines(report: CompressionRunReport) -> list[str]:
    """What the CLI prints at the end of a run."""
    return [
        f"COMPRESSION RUN {report.verdict}: {report.abstractions_created} abstractions, "
        f"{report.token_reduction_pct}% token reduction"
        + (f" ({report.verdict_reason})" if report.verdict_reason else ""),
        f"  run_id               {report.run_id}",
        f"  distiller            {report.distiller}",
        f"  memories_scanned     {report.memories_scanned}",
        f"  clusters found/compressed/skipped/failed  {report.clusters_found}/{report.clusters_compressed}/"
        f"{report.clusters_skipped}/{report.clusters_failed}",
        f"  clusters_compressed  {report.clusters_compressed}",
        f"  memories_archived    {report.memories_archived} (+{report.exact_duplicates_archived} exact duplicates)",
        f"  supersessions        {report.supersessions} (older values of a fact a newer one replaced)",
        *([f"  {grade.from_dict(report.grade).line()}"] if report.grade else []),
        f"  abstractions_created {report.abstractions_created}",
        f"  atoms created/enriched {report.atoms_created}/{report.atoms_enriched}",
        f"  tokens before/after  {report.tokens_before} → {report.tokens_after}",
        f"  token_reduction_pct  {report.token_reduction_pct}",
        f"  compression ratio avg/min/max {report.avg_compression_ratio}/{report.min_compression_ratio}/"
        f"{report.max_compression_ratio}",
        f"  estimated_cost_usd   {report.estimated_cost_usd}",
        f"  errors               {len(report.errors)}",
        *([f"  vectors              {describe_vectors(report.embedding)}"] if report.embedding else []),
    ]


def describe_vectors(section: dict[str, Any]) -> str:
    """`text-embedding-3-small (1536-d, imported); summaries: mean_of_members (12)`."""
    counts = section.get("vectors_by_source") or {}
    detail = ", ".join(f"{n} {s}" for s, n in counts.items()) if len(counts) > 1 else ""
    source = f"{section.get('vector_source')}: {detail}" if detail else str(section.get("vector_source"))
    made = section.get("summaries_by_source") or {}
    method = str(section.get("summary_embedding"))
    counts = [f"{n} written" if s in method else f"{n} {s}" for s, n in made.items()]
    written = f" ({', '.join(counts)})" if made else ""
    return (
        f"{section.get('vector_model')} ({section.get('vector_dim')}-d, {source}); "
        f"summaries: {method}{written}"
    )


def recovered_report(
    run_id: str, clusters: int, archived: int, first: datetime, last: datetime, by: str
) -> dict[str, Any]:
    """The report of a night that died after its last commit, rebuilt from what the store holds of it."""
    return {
        "run_id": run_id,
        "started_at": first.isoformat(),
        "finished_at": last.isoformat(),
        "clusters_compressed": clusters,
        "abstractions_created": clusters,
        "memories_archived": archived,
        "verdict": "PASS",
        "verdict_reason": f"the run ended before writing its report; rebuilt from the store's compression log by "
        f"run {by}",
        "recovered_by": by,
    }
