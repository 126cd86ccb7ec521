"""`memory-pipeline reconstruct`: a backfill of the journal pipeline over a date range, from the CLI.

The range's days are ONE run of `journal_daily` and the weeks it touches ONE run of `journal_weekly`: the assets
have a single-run backfill policy and walk the run's partition key range, so the run carries Dagster's range tags
(`dagster/asset_partition_range_start` / `_end`), exactly as a UI or daemon backfill launches it. A day that fails
stops its run with an error naming the day and its file (the assets' `failed_partition`): the days before it are
committed per asset but their later steps did not run, so a run over them completes them; the day is reported
failed and a run over the days after it carries on. One bad day costs two more runs, never the rest of the range.
Runs are recorded in the Dagster instance like the UI's backfill runs; with the multiprocess executor each step runs
in its own process and waits for DuckDB's single writer (the store pool).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass, field
from datetime import date, timedelta
from pathlib import Path
from typing import Any

import dagster as dg

from memory_pipeline.defs.journals.common import EXTRACTOR_KEYS, FAILED_PARTITION, SESSIONS
from memory_pipeline.journals.branches import (
    PREFIX,
    check_name,
    commit_pending_transcripts,
    diff_stat,
    extractor_label,
    main_branch,
    open_worktree,
    prune,
    record,
    require_git,
    staged_against,
)
from memory_pipeline.journals.commit_messages import Ask, KnowledgeChange, compose
from memory_pipeline.journals.extractors import select
from memory_pipeline.journals.gitlog import _git
from memory_pipeline.journals.intake import DATE_MISMATCHES, REJECTED

RANGE_START_TAG = "dagster/asset_partition_range_start"  # dagster._core.storage.tags.ASSET_PARTITION_RANGE_*
RANGE_END_TAG = "dagster/asset_partition_range_end"
IN_PROCESS: dict[str, Any] = {"execution": {"config": {"in_process": {}}}}


@dataclass
class ReconstructResult:
    days: list[str] = field(default_factory=list)
    weeks: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)  # days, and weeks as "week YYYY-MM-DD"
    errors: dict[str, str] = field(default_factory=dict)  # failed entry → why (names the day and file)
    run_ids: list[str] = field(default_factory=list)
    rejected: list[str] = field(default_factory=list)  # transcripts rejected (failures; their days went on)
    warnings: list[str] = field(default_factory=list)  # e.g. a transcript in another date's folder


@dataclass(frozen=True)
class RunOutcome:
    run_id: str
    success: bool
    failed_key: str | None = None  # the partition the failing step named, if it named one
    message: str = ""


def daily_selection(extractors: Sequence[str] | None) -> list[dg.AssetKey]:
    names = [e.name for e in select(extractors)]
    return [SESSIONS, *(EXTRACTOR_KEYS[n] for n in names), dg.AssetKey("journals")]


def week_keys(start: date, end: date) -> list[str]:
    """Weekly partition keys (weeks start on Sunday) of the weeks that contain a day of [start, end]."""
    first = start - timedelta(days=(start.weekday() + 1) % 7)
    keys = []
    while first <= end:
        keys.append(first.isoformat())
        first += timedelta(days=7)
    return keys


def contiguous(keys: Sequence[str], step_days: int) -> list[list[str]]:
    """Date keys split into runs of consecutive partitions (`step_days` apart): one ranged run each."""
    out: list[list[str]] = []
    for key in keys:
        if out and date.fromisoformat(key) - date.fromisoformat(out[-1][-1]) == timedelta(days=step_days):
            out[-1].append(key)
        else:
            out.append([key])
    return out


def range_tags(keys: Sequence[str]) -> dict[str, str]:
    """The tags of one run over the partition key range keys[0]..keys[-1] (a one-key range is one partition)."""
    return {RANGE_START_TAG: keys[0], RANGE_END_TAG: keys[-1]}


def backfill(
    keys: Sequence[str],
    launch: Callable[[list[str]], RunOutcome],
    name: Callable[[str], str] = str,
    echo: Callable[[str], object] = print,
) -> tuple[list[str], list[str], dict[str, str], list[str]]:
    """One run over each contiguous range; a run that fails on a named partition is followed by a run over the
    partitions before it and one over those after it. (done, failed, errors, run ids) — failed as `name(key)`."""
    done: list[str] = []
    failed: list[str] = []
    errors: dict[str, str] = {}
    run_ids: list[str] = []
    pending = [list(keys)] if keys else []
    while pending:
        seg = pending.pop(0)
        outcome = launch(seg)
        run_ids.append(outcome.run_id)
        span = name(seg[0]) if len(seg) == 1 else f"{name(seg[0])}..{seg[-1]}"
        if outcome.success:
            done += seg
            echo(f"  {span}: ok (run {outcome.run_id})")
            continue
        if outcome.failed_key in seg:
            at = seg.index(outcome.failed_key)
            bad = [outcome.failed_key]
            pending[:0] = [part for part in (seg[:at], seg[at + 1 :]) if part]
        else:
            bad = seg  # the run failed before or outside a partition's work: nothing says which, so all of them
        for key in bad:
            failed.append(name(key))
            errors[name(key)] = outcome.message
        shown = name(bad[0]) if len(bad) == 1 else span
        echo(f"  {shown}: FAILED (run {outcome.run_id}): {outcome.message}")
    return sorted(done), failed, errors, run_ids


def run_outcome(instance: dg.DagsterInstance, run_id: str, success: bool) -> RunOutcome:
    """What a finished run says: the partition its failing step named (a `dg.Failure` with `failed_partition`)
    and the error, or the first step error, or the run's own failure."""
    if success:
        return RunOutcome(run_id, True)
    message = ""
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        data = entry.dagster_event.step_failure_data if entry.dagster_event else None
        if data is None:
            continue
        user = data.user_failure_data
        if user is not None and FAILED_PARTITION in user.metadata:
            return RunOutcome(run_id, False, str(user.metadata[FAILED_PARTITION].value), user.description or "")
        message = message or (user_message(data.error) if data.error else "")
    if not message:
        for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.RUN_FAILURE):
            message = entry.message or ""
    return RunOutcome(run_id, False, None, message or "the run failed; see its log in the Dagster instance")


def user_message(error: Any) -> str:
    """A step's error as one line: the first exception in its cause chain that is not Dagster's wrapper (e.g.
    "cannot open memory store …"), without its module-qualified class name."""
    chain = []
    while error is not None:
        chain.append(error)
        error = error.cause or error.context
    mine = next((e for e in chain if not str(e.cls_name or "").startswith("Dagster")), chain[0])
    text = " ".join(str(mine.message).split())
    head, sep, rest = text.partition(": ")
    return rest if sep and "." in head and " " not in head else text


def transcript_notes(instance: dg.DagsterInstance, run_id: str) -> tuple[list[str], list[str]]:
    """What the run's `sessions` step said about single transcripts (its per-day metadata): the rejected ones
    (broken format, duplicate session id — failures, one line each naming the file) and the warnings (a
    folder date that differs from the frontmatter's)."""
    rejected: list[str] = []
    warnings: list[str] = []
    for entry in instance.all_logs(run_id, of_type=dg.DagsterEventType.ASSET_MATERIALIZATION):
        event = entry.dagster_event
        mat = event.event_specific_data.materialization if event is not None else None  # type: ignore[union-attr]
        if mat is None or mat.asset_key != SESSIONS:
            continue
        for key, into in ((REJECTED, rejected), (DATE_MISMATCHES, warnings)):
            if key in mat.metadata:
                into += [str(line) for line in mat.metadata[key].value or []]  # type: ignore[union-attr]
    return rejected, warnings


def free_finished_slots(instance: dg.DagsterInstance, pool: str) -> list[str]:
    """Pool slots still claimed by runs that have ended (a run interrupted mid-step keeps its slot, which would
    block every later store writer); the daemon's run monitoring does this for the runs it launched."""
    freed = []
    info = instance.event_log_storage.get_concurrency_info(pool)
    for run_id in {slot.run_id for slot in info.claimed_slots} | {step.run_id for step in info.pending_steps}:
        run = instance.get_run_by_id(run_id)
        if run is None or run.is_finished:
            instance.event_log_storage.free_concurrency_slots_for_run(run_id)
            freed.append(run_id)
    return freed


def reconstruct(
    instance: dg.DagsterInstance,
    start: date,
    end: date,
    extractors: Sequence[str] | None = None,
    multiprocess: bool = True,
    weekly: bool = True,
    echo: Callable[[str], object] = print,
    quiet_level: str = "INFO",
    daily: bool = True,
) -> ReconstructResult:
    from memory_pipeline.defs.journals.partitions import daily_partitions, weekly_partitions
    from memory_pipeline.journals.cli.jobs import journal_daily_job, journal_weekly_job
    from memory_pipeline.operator.quiet import without_dagster_debug
    from memory_pipeline.resources.store import POOL
    from memory_pipeline.settings import console_loggers

    if end < start:
        raise ValueError(f"--to {end} is before --from {start}")
    selection = daily_selection(extractors)
    for run_id in free_finished_slots(instance, POOL):
        echo(f"  freed the store pool slot of ended run {run_id}")
    tags = {"memory_pipeline/reconstruct": f"{start}..{end}"}
    out = ReconstructResult()

    def launch(job: dg.ReconstructableJob, run_config: dict, asset_selection: list | None) -> Callable:
        # step workers (the multiprocess executor) print a DEBUG line of their own; in process, none to filter
        workers = without_dagster_debug if "execution" not in run_config else nullcontext
        run_config = {**run_config, "loggers": console_loggers(quiet_level)}  # DEBUG only with --verbose

        def run(keys: list[str]) -> RunOutcome:
            with workers(), dg.execute_job(
                job, instance, run_config=run_config, tags={**tags, **range_tags(keys)}, asset_selection=asset_selection
            ) as result:
                run_id, ok = result.run_id, result.success
            rejected, warnings = transcript_notes(instance, run_id)
            for line in rejected:
                if line not in out.rejected:
                    out.rejected.append(line)
                    echo(f"  FAILED transcript {line}")
            for line in warnings:
                if line not in out.warnings:
                    out.warnings.append(line)
                    echo(f"  warning: {line}")
            if not ok:
                free_finished_slots(instance, POOL)
            return run_outcome(instance, run_id, ok)

        return run

    valid_days = set(daily_partitions.get_partition_keys(dynamic_partitions_store=instance))
    wanted = [(start + timedelta(days=i)).isoformat() for i in range((end - start).days + 1)]
    for key in wanted if daily else []:
        if key not in valid_days:
            echo(f"  {key}: not a complete partition yet (or before the journals' first day: "
                 "MEMORY_PIPELINE_JOURNAL_START, else the first transcript day); skipped")
    daily_run = launch(dg.reconstructable(journal_daily_job), {} if multiprocess else IN_PROCESS, selection)
    for seg in contiguous([k for k in wanted if k in valid_days] if daily else [], 1):
        done, failed, errors, run_ids = backfill(seg, daily_run, echo=echo)
        out.days += done
        out.failed += failed
        out.errors.update(errors)
        out.run_ids += run_ids
    if weekly:
        valid_weeks = set(weekly_partitions.get_partition_keys(dynamic_partitions_store=instance))
        weeks = week_keys(start, end)
        for key in weeks:
            if key not in valid_weeks:
                echo(f"  week {key}: not complete yet; skipped")
        weekly_run = launch(dg.reconstructable(journal_weekly_job), IN_PROCESS, None)
        for seg in contiguous([k for k in weeks if k in valid_weeks], 7):
            done, failed, errors, run_ids = backfill(seg, weekly_run, name=lambda k: f"week {k}", echo=echo)
            out.weeks += done
            out.failed += failed
            out.errors.update(errors)
            out.run_ids += run_ids
    return out


@contextmanager
def workspace_env(home: Path) -> Iterator[None]:
    """MEMORY_PIPELINE_HOME = `home` and DAGSTER_HOME = `home/.dagster` while inside (a branch's worktree is a
    whole workspace of its own: store, Parquet, reports, run history); the previous values come back after."""
    from memory_pipeline.operator.instance import dagster_home

    saved = {k: os.environ.get(k) for k in ("MEMORY_PIPELINE_HOME", "DAGSTER_HOME")}
    os.environ["MEMORY_PIPELINE_HOME"] = str(home)
    os.environ["DAGSTER_HOME"] = str(home / ".dagster")
    try:
        dagster_home(home)  # copies the instance config (pool limits) into the new DAGSTER_HOME
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def extractor_versions(extractors: Sequence[str] | None) -> list[tuple[str, str]]:
    """(name, version) of the extractors a run uses: the LLM versions when the `llm` resource will use Claude."""
    from memory_pipeline.journals.llm_extractors import llm_configured, version_for

    use_llm = llm_configured()
    return [(e.name, version_for(e.name, use_llm)) for e in select(extractors)]


def fresh_derived_state(where: Path, weekly: bool) -> None:
    """Before each replay on a branch: no store, no Parquet (the replay builds them from the transcripts with
    only the chosen extractors, even when the branch ran before with others) and, with the weekly rollup, no
    MEMORY.md (rebuilt from the replayed weeks' journals rather than merged into main's)."""
    import shutil

    for name in ("memory.duckdb", "memory.duckdb.wal"):
        (where / name).unlink(missing_ok=True)
    shutil.rmtree(where / "parquet", ignore_errors=True)
    if weekly:
        (where / "knowledge" / "memory" / "MEMORY.md").unlink(missing_ok=True)


@dataclass
class BranchRun:
    name: str
    where: Path
    result: ReconstructResult
    pruned: list[str]
    label: str
    commit: str
    written_by: str  # who wrote the closing commit's summary: template or llm
    diff_stat: str
    files: list[str]


def reconstruct_branch(
    home: Path,
    name: str,
    start: date,
    end: date,
    extractors: Sequence[str] | None = None,
    multiprocess: bool = True,
    weekly: bool = True,
    ask: Ask | None = None,
    echo: Callable[[str], object] = print,
) -> BranchRun:
    """Seed 001 §10.4 on `extract/NAME` without touching main: prune week-old branches, check out the branch in
    its worktree, replay [start, end] there with `extractors` into a store of its own (MEMORY.md rebuilt from
    the replayed weeks), close with an `extract:` commit naming extractors and range, diff against main."""
    check_name(name)
    require_git(home)
    if end < start:
        raise ValueError(f"--to {end} is before --from {start}")
    gone, kept = prune(home)
    pruned = [b.name for b in gone]
    for old in pruned:
        echo(f"  pruned {PREFIX}{old} (last commit older than 7 days)")
    for k in kept:
        echo(f"  {k.line(home)}")
    if commit_pending_transcripts(home):
        echo("  committed new transcripts on the workspace's branch first (conversation:)")
    where = open_worktree(home, name)
    fresh_derived_state(where, weekly)
    with workspace_env(where), dg.DagsterInstance.get() as instance:
        result = reconstruct(instance, start, end, extractors, multiprocess=multiprocess, weekly=weekly, echo=echo)
    label = extractor_label(extractor_versions(extractors))
    base = main_branch(home)
    files = staged_against(where, base)
    change = KnowledgeChange(
        "extract",
        f"{label} over {start}..{end}",
        files=tuple(files),
        detail=f"Replayed the transcripts of {start}..{end} on {PREFIX}{name} (A/B against {base}); the files "
        f"below differ from {base}.",
        trailers=(("Extractors", label), ("Range", f"{start}..{end}")),
        diff_stat=_git(where, "diff", "--cached", "--stat", base, "--", "knowledge").stdout,
    )
    composed = compose(change, ask)
    commit = record(where, composed.message)
    return BranchRun(name, where, result, pruned, label, commit, composed.written_by, diff_stat(home, name), files)
