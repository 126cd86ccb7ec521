"""Monthly distillation (seed 001 §8.4 `monthly_distillation`): archive old journals, review
project and people files, enforce MEMORY.md's 200-line cap; a report of what changed. No Dagster here.

- Journals older than the retention (90 days, MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS) as of the month's end move
  to archive/journal/ — `knowledge.journals_to_archive` and `knowledge.archive_journal`, the `journal_archive`
  asset's own functions.
- knowledge/projects/** and knowledge/people/** (not `pinned: true`): each run of plain top-level bullets is merged
  with `repeats.collapse`, MEMORY.md's rule — a reworded repeat is one bullet (the latest wording; dated bullets keep
  the earlier dates, "(also …)"), a changed one replaces the old and names it. A run without a repeat is left
  byte for byte. With a `Reviewer` (Claude through the `llm` resource) the reviewer's answer is used instead,
  when it passes the checks in `monthly_llm`; otherwise that file falls back to the offline merge, reason kept.
- MEMORY.md above `knowledge.MEMORY_LINE_CAP` lines: dated entries of its three sections are moved out, most
  stale first — staleness = age at the month's end ÷ the section's retention (`SECTION_RETENTION_DAYS`: Active
  Context 14 days, Key Decisions 120, Lessons Learned 365), ties: the older entry, then the lower line — until the
  file is at the cap. Everything else in the file (headers, hand-written lines) stays as it is.

Nothing is deleted: every line taken out of a file is appended to archive/monthly/<YYYY-MM>/<path under
knowledge/>. Writes are two-phase: every new text goes to a temp file beside its target (fsync), then each is
`os.replace`d — archive files before the files they were taken from — so a crash leaves each file old or new,
and a removed line is always somewhere.
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date
from fractions import Fraction
from pathlib import Path
from typing import Any, Protocol

from memory_pipeline.faults import crash_point
from memory_pipeline.journals import knowledge, repeats
from memory_pipeline.store.workspace_files import NotRegularFile, read_regular_text

REVIEWED = ("projects", "people")  # folders under knowledge/ whose files are reviewed
MONTH = re.compile(r"^(\d{4})-(\d{2})$")
_DATED = re.compile(r"^(\d{4}-\d{2}-\d{2}): (.+)$")
_ENTRY = re.compile(r"^- (\d{4}-\d{2}-\d{2}): ")
_LINE_COUNT = re.compile(r"^line_count: \d+$", re.MULTILINE)


class ReviewFailed(Exception):
    """A reviewer gave no usable answer for one file; the message is the fallback reason in the report."""


class Reviewer(Protocol):
    name: str
    calls: int

    def review(self, path: str, kind: str, body: str) -> str:
        """The reviewed body of `path` (frontmatter not included), or ReviewFailed."""
        ...


def parse_month(text: str) -> tuple[date, date]:
    """'YYYY-MM' → (its first day, the first day of the next month); ValueError with a one-line message."""
    m = MONTH.match(text.strip())
    if not m or not 1 <= int(m.group(2)) <= 12:
        raise ValueError(f"expected a month as YYYY-MM, got {text!r}")
    first = date(int(m.group(1)), int(m.group(2)), 1)
    return first, (date(first.year + 1, 1, 1) if first.month == 12 else date(first.year, first.month + 1, 1))


def retention_days(env: dict[str, str] | None = None) -> int:
    """MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS (default 90); a SettingsError naming it when not a number ≥ 0."""
    from memory_pipeline.operator.environment import journal_retention_days

    return journal_retention_days(env)


# ---------------------------------------------------------------- project and people files


def split_frontmatter(text: str) -> tuple[str, str]:
    """(frontmatter with its --- lines, body); ("", text) without frontmatter."""
    if text.startswith("---\n") and (end := text.find("\n---\n", 3)) >= 0:
        return text[: end + 5], text[end + 5 :]
    return "", text


def bullet_runs(lines: Sequence[str]) -> list[tuple[int, int]]:
    """[start, end) of each run of ≥ 2 plain top-level bullets ("- …" with no indented continuation, outside
    code fences): the units the merge works on. Bullets with sub-items or wrapped lines are never touched."""
    runs: list[tuple[int, int]] = []
    start, fenced = -1, False
    for i, line in enumerate([*lines, ""]):
        if line.startswith("```"):
            fenced = not fenced
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        plain = (not fenced and i < len(lines) and line.startswith("- ") and len(line) > 2
                 and not (nxt[:1] in (" ", "\t") and nxt.strip()))  # fmt: skip
        if plain and start < 0:
            start = i
        elif not plain and start >= 0:
            if i - start >= 2:
                runs.append((start, i))
            start = -1
    return runs


def merge_bullets(bullets: Sequence[str]) -> list[str]:
    """One run of bullets (without "- ") with its repeats merged by MEMORY.md's rule (`repeats.collapse`).
    All dated ("YYYY-MM-DD: …"): MEMORY.md's entries and line format, each kept entry where its kept wording
    was; otherwise the journal's form of the same rule (`repeats.collapse_bullets`). No repeat: unchanged."""
    found = [_DATED.match(b) for b in bullets]
    if all(found):
        entries = [repeats.parse_line(date.fromisoformat(m.group(1)), m.group(2)) for m in found if m]
        kept = repeats.collapse(entries)
        if len(kept) == len(entries):
            return list(bullets)
        where = {(e.day, e.text): i for i, e in enumerate(entries)}
        kept.sort(key=lambda d: where.get((d.day, d.text), -1))
        return [f"{d.day.isoformat()}: {d.text}{d.suffix()}" for d in kept]
    merged = repeats.collapse_bullets(bullets)
    return list(bullets) if len(merged) == len(bullets) else merged


def heading_of(lines: Sequence[str], index: int) -> str:
    for line in reversed(lines[:index]):
        if line.startswith("#"):
            return line.lstrip("#").strip()
    return ""


def merge_file_body(body: str) -> tuple[str, list[tuple[str, str]]]:
    """The offline review: every bullet run merged; (new body, [(heading, removed line)])."""
    lines = body.split("\n")
    out = list(lines)
    removed: list[tuple[str, str]] = []
    for start, end in reversed(bullet_runs(lines)):
        old = [ln[2:] for ln in lines[start:end]]
        new = merge_bullets(old)
        if new != old:
            out[start:end] = [f"- {b}" for b in new]
            before, after = lines[:end], lines[:start] + out[start : start + len(new)]
            removed[:0] = removed_lines("\n".join(before), "\n".join(after))
    return "\n".join(out), removed


def removed_lines(old: str, new: str) -> list[tuple[str, str]]:
    """Lines of `old` that `new` no longer has (as a multiset), with the heading each was under."""
    lines = old.split("\n")
    gone = Counter(ln for ln in lines if ln.strip()) - Counter(ln for ln in new.split("\n") if ln.strip())
    out = []
    for i, ln in enumerate(lines):
        if gone[ln] > 0:
            gone[ln] -= 1
            out.append((heading_of(lines, i), ln))
    return out


def count_bullets(text: str) -> int:
    return sum(1 for ln in text.split("\n") if ln.lstrip().startswith(("- ", "* ")))


# ---------------------------------------------------------------- MEMORY.md


def trim_memory(text: str, as_of: date, cap: int = knowledge.MEMORY_LINE_CAP) -> tuple[str, list[tuple[str, str]]]:
    """MEMORY.md at ≤ `cap` lines: dated section entries out, most stale first (module docstring); its
    `line_count:` updated. (new text, [(section, removed line)]); unchanged at or below the cap."""
    lines = text.split("\n")
    excess = knowledge.line_count(text) - cap
    if excess <= 0:
        return text, []
    ranked = []
    section = ""
    for i, line in enumerate(lines):
        if line.startswith("## "):
            section = line[3:].strip()
        elif section in knowledge.SECTION_RETENTION_DAYS and (m := _ENTRY.match(line)):
            day = date.fromisoformat(m.group(1))
            stale = Fraction((as_of - day).days, knowledge.SECTION_RETENTION_DAYS[section])
            ranked.append((-stale, day, -i, section))
    ranked.sort()
    out = set()
    removed = []
    for _, _, neg_i, section in sorted(ranked[:excess], key=lambda r: -r[2]):
        out.add(-neg_i)
        removed.append((section, lines[-neg_i]))
    kept = "\n".join(ln for i, ln in enumerate(lines) if i not in out)
    head, body = split_frontmatter(kept)
    if head:
        head = _LINE_COUNT.sub(f"line_count: {knowledge.line_count(kept)}", head, count=1)
    return head + body, removed


# ---------------------------------------------------------------- archive of moved lines


def archive_path(home: Path, month: str, rel: str) -> Path:
    """archive/monthly/<YYYY-MM>/<path under knowledge/>."""
    return home / "archive" / "monthly" / month / Path(rel).relative_to("knowledge")


def archive_text(existing: str | None, rel: str, month: str, removed: Sequence[tuple[str, str]]) -> str:
    """The month's archive of lines moved out of `rel`: the existing text plus the lines it does not have yet,
    under the heading each was under (a re-run appends, never rewrites)."""
    text = existing or (f"---\ntype: archive\nsource: {rel}\nmonth: {month}\n---\n\n"
                        f"# Moved out of {rel} by the monthly distillation of {month}\n")  # fmt: skip
    have = set(text.split("\n"))
    groups: dict[str, list[str]] = {}
    for heading, line in removed:
        if line not in have and line not in groups.get(heading, []):
            groups.setdefault(heading, []).append(line)
    for heading, lines in groups.items():
        text += f"\n## {heading or '(top)'}\n" + "\n".join(lines) + "\n"
    return text


# ---------------------------------------------------------------- plan and apply


@dataclass(frozen=True)
class FileChange:
    path: str  # workspace-relative
    old: str
    new: str
    removed: tuple[tuple[str, str], ...]  # (heading, line) moved to the archive
    mode: str  # offline | llm
    note: str = ""  # why the reviewer's answer was not used

    def summary(self) -> dict[str, Any]:
        out = {"path": self.path, "mode": self.mode, "bullets_before": count_bullets(self.old),
               "bullets_after": count_bullets(self.new), "lines_removed": len(self.removed),
               "removed": [line for _, line in self.removed]}  # fmt: skip
        return {**out, "note": self.note} if self.note else out


@dataclass
class Plan:
    month: str
    as_of: date
    retention_days: int
    journals: list[str] = field(default_factory=list)  # workspace-relative journals to archive
    reviewed: list[str] = field(default_factory=list)  # every project/people file looked at
    changes: list[FileChange] = field(default_factory=list)  # project/people files and MEMORY.md that change
    fallbacks: dict[str, str] = field(default_factory=dict)  # path → why the reviewer's answer was not used
    memory_lines_before: int = 0
    memory_lines_after: int = 0
    warnings: list[str] = field(default_factory=list)

    @property
    def bullets_merged(self) -> int:
        return sum(count_bullets(c.old) - count_bullets(c.new) for c in self.changes if c.path != MEMORY_REL)

    def metadata(self) -> dict[str, int]:
        memory = [c for c in self.changes if c.path == MEMORY_REL]
        return {
            "files_reviewed": len(self.reviewed),
            "files_changed": sum(1 for c in self.changes if c.path != MEMORY_REL),
            "bullets_merged": self.bullets_merged,
            "journals_archived": len(self.journals),
            "memory_md_lines_before": self.memory_lines_before,
            "memory_md_lines_after": self.memory_lines_after,
            "memory_md_lines_archived": len(memory[0].removed) if memory else 0,
            "llm_fallbacks": len(self.fallbacks),
        }


MEMORY_REL = "knowledge/memory/MEMORY.md"


def reviewed_files(home: Path, warn: Callable[[str], None]) -> list[tuple[str, str]]:
    """(workspace-relative path, text) of every project and people file to review: pinned files are left alone."""
    from memory_pipeline.journals.decay import pinned

    out = []
    for folder in REVIEWED:
        root = home / "knowledge" / folder
        for path in sorted(root.rglob("*.md")) if root.is_dir() else []:
            rel = path.relative_to(home).as_posix()
            try:
                text = read_regular_text(path, root=home, errors="strict")
            except NotRegularFile as exc:  # a symlink out of the workspace (to /etc/passwd) is never reviewed
                warn(f"{rel} {exc.problem}: not reviewed")
                continue
            except (OSError, UnicodeDecodeError) as exc:
                warn(f"{rel}: unreadable ({exc.__class__.__name__}); not reviewed")
                continue
            if pinned(text):
                continue
            out.append((rel, text))
    return out


def review_file(rel: str, text: str, reviewer: Reviewer | None) -> tuple[FileChange, str]:
    """One file's review: the reviewer's answer when it has one and it passes, else the offline merge."""
    head, body = split_frontmatter(text)
    note = ""
    if reviewer is not None:
        kind = Path(rel).relative_to("knowledge").parts[0]
        try:
            new_body = reviewer.review(rel, kind, body)
            return FileChange(rel, text, head + new_body, tuple(removed_lines(body, new_body)), "llm"), ""
        except ReviewFailed as exc:
            note = str(exc)
    new_body, removed = merge_file_body(body)
    return FileChange(rel, text, head + new_body, tuple(removed), "offline", note), note


def plan(home: Path, month: str, as_of: date, reviewer: Reviewer | None = None,
         warn: Callable[[str], None] = print, retention: int | None = None) -> Plan:  # fmt: skip
    """What the month's distillation would do as of `as_of` (the month's end, or today for the month in
    progress); reads only — and asks the reviewer, when there is one."""
    parse_month(month)
    home = Path(home)
    p = Plan(month, as_of, retention_days() if retention is None else retention)
    old = knowledge.journals_to_archive(home / "knowledge" / "journal", as_of, p.retention_days)
    p.journals = [j.relative_to(home).as_posix() for j in old]
    for rel, text in reviewed_files(home, warn):
        p.reviewed.append(rel)
        change, note = review_file(rel, text, reviewer)
        if note:
            p.fallbacks[rel] = note
            warn(f"{rel}: review by {reviewer.name if reviewer else 'LLM'} not used ({note}); merged offline")
        if change.new != change.old:
            p.changes.append(change)
    memory = home / MEMORY_REL
    try:
        memory_text = read_regular_text(memory, root=home, errors="strict") if memory.exists() else None
    except NotRegularFile as exc:  # MEMORY.md linking out of the workspace: not trimmed, never rewritten
        warn(f"{MEMORY_REL} {exc.problem}: not trimmed")
        memory_text = None
    if memory_text is not None:
        text = memory_text
        new, removed = trim_memory(text, as_of)
        p.memory_lines_before, p.memory_lines_after = knowledge.line_count(text), knowledge.line_count(new)
        if removed:
            p.changes.append(FileChange(MEMORY_REL, text, new, tuple(removed), "offline"))
    return p


def _stage(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    for stale in path.parent.glob(f".{path.name}.tmp-*"):  # a staged copy a killed run left: never content
        stale.unlink()
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with open(tmp, "w", encoding="utf-8") as fh:
        fh.write(text)
        fh.flush()
        os.fsync(fh.fileno())
    return tmp


def apply(home: Path, p: Plan, crash: Callable[[str], None] = crash_point) -> list[str]:
    """Carry the plan out; the workspace-relative paths written or moved. Phase 1 stages every new text; phase 2
    replaces them one by one, each archive file before the file its lines came from, then moves the journals.
    A file that changed since the plan is left as it is (warned in the plan, not overwritten)."""
    home = Path(home)
    changes = []
    for c in p.changes:
        if (home / c.path).read_text(encoding="utf-8") == c.old:
            changes.append(c)
        else:
            p.warnings.append(f"{c.path} changed since it was reviewed; left as it is")
    targets: list[tuple[Path, str]] = []
    for c in changes:
        if c.removed:
            dest = archive_path(home, p.month, c.path)
            targets.append((dest, archive_text(dest.read_text(encoding="utf-8") if dest.exists() else None,
                                               c.path, p.month, c.removed)))  # fmt: skip
    targets += [(home / c.path, c.new) for c in changes]
    staged = [(_stage(path, text), path) for path, text in targets]
    crash("after_phase1")
    done = []
    for tmp, path in staged:
        os.replace(tmp, path)
        done.append(path.relative_to(home).as_posix())
        crash("inside_phase2")
    for rel in list(p.journals):
        try:
            moved = knowledge.archive_journal(home / rel, home / "archive" / "journal")
        except (FileExistsError, FileNotFoundError) as exc:  # an archived journal of that day differs: keep both
            p.warnings.append(f"{rel} not archived: {exc}")
            p.journals.remove(rel)
            continue
        done += [rel, moved.relative_to(home).as_posix()]
        crash("inside_phase2")
    return done


def report(p: Plan, dry_run: bool, mode: str, written: Sequence[str] = (), committed: bool = False) -> dict[str, Any]:
    """The run's JSON report: what changed (or would), file by file."""
    return {
        "month": p.month,
        "as_of": p.as_of.isoformat(),
        "dry_run": dry_run,
        "review": mode,
        "retention_days": p.retention_days,
        **p.metadata(),
        "journals": p.journals,
        "files": [c.summary() for c in p.changes if c.path != MEMORY_REL],
        "memory_md": next((c.summary() for c in p.changes if c.path == MEMORY_REL), None),
        "fallbacks": p.fallbacks,
        "written": list(written),
        "committed": committed,
        "warnings": p.warnings,
    }


def report_path(home: Path, month: str) -> Path:
    """The month's report: the last run that changed something (a run that changed nothing never replaces it)."""
    return Path(home) / "reports" / "monthly" / f"{month}.json"


def run_report_path(home: Path, month: str, run: str) -> Path:
    """One run's own report: reports/monthly/<YYYY-MM>/<run>.json (every non-dry run writes one)."""
    return Path(home) / "reports" / "monthly" / month / f"{run}.json"


def run_name(run_id: str = "") -> str:
    """A run's report name: UTC time, then the Dagster run id (or `cli-<pid>`), unique per run."""
    from datetime import UTC, datetime

    return f"{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}-{run_id[:8] if run_id else f'cli-{os.getpid()}'}"


def write_reports(home: Path, month: str, out: dict[str, Any]) -> bool:
    """The run's own report, then — under a lock, so two runs at once cannot interleave — the month's report,
    unless this run changed nothing and the month already has one. True if the month's report was written."""
    import fcntl
    import json

    text = json.dumps(out, indent=2, ensure_ascii=False) + "\n"
    knowledge.write_atomic(run_report_path(home, month, out["run"]), text)
    month_path = report_path(home, month)
    with open(month_path.parent / f".{month}.lock", "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if out["written"] or not month_path.exists():
            knowledge.write_atomic(month_path, text)
            return True
    return False


def commit_message(p: Plan) -> str:
    m = p.metadata()
    lines = [f"maintenance: monthly distillation {p.month}", "",
             f"{m['journals_archived']} journal(s) archived, {m['bullets_merged']} bullet(s) merged in "
             f"{m['files_changed']} of {m['files_reviewed']} project/people file(s), MEMORY.md "
             f"{m['memory_md_lines_before']} → {m['memory_md_lines_after']} lines.", ""]  # fmt: skip
    return "\n".join(lines + [c.path for c in p.changes] + p.journals)


def distill(home: Path, month: str, as_of: date, dry_run: bool, reviewer: Reviewer | None = None,
            warn: Callable[[str], None] = print, log: Any = None,
            run_id: str = "") -> tuple[Plan, dict[str, Any]]:  # fmt: skip
    """Plan; unless `dry_run`, apply, commit exactly the paths written or moved (`maintenance:`) and write the
    run's report, reports/monthly/<month>/<run>.json, and the month's, reports/monthly/<month>.json (see
    `write_reports`). A dry run writes nothing at all. (plan, report); the report's `commit_error` says why a
    commit that was due did not happen."""
    from memory_pipeline.journals.gitlog import commit_knowledge

    p = plan(home, month, as_of, reviewer, warn)
    mode = reviewer.name if reviewer is not None else "offline"
    if dry_run:
        return p, report(p, True, mode)
    written = apply(home, p)
    for line in p.warnings:
        warn(line)
    commit = commit_knowledge(Path(home), commit_message(p), tag=None, log=log, paths=written) if written else None
    out = report(p, False, mode, written, bool(commit)) | {"llm_calls": reviewer.calls if reviewer else 0,
                                                            "run": run_name(run_id)}  # fmt: skip
    out |= {"commit_error": commit.error if commit is not None else "",
            "notes": list(commit.notes) if commit is not None else []}  # fmt: skip
    out["month_report"] = write_reports(Path(home), month, out)
    return p, out
