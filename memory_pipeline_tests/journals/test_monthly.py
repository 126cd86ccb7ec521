"""Monthly distillation (seed 001 §8.4): old journals archived, project and people files merged by
MEMORY.md's rule (or reviewed by Claude), MEMORY.md capped at 200 lines; nothing deleted, every file old or new."""

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from datetime import date, timedelta
from fractions import Fraction
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals import knowledge, monthly
from memory_pipeline.journals import monthly_llm as ml
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline_tests.llm.fake_api import TEST_KEY, FakeAnthropicAPI
from memory_pipeline_tests.seeds import seed_files

MONTH = "2026-10"
AS_OF = date(2026, 11, 1)  # the first day after October
PEOPLE = """---
type: person
name: Ana Costa
updated: 2026-10-01
---

# Ana Costa

## Communication
- Prefers bullet lists over prose in reports
- Works from Lisbon, UTC+0
- Ana prefers bullet lists over prose in reports

## Context
- Reviews the billing code every Friday
- Leads the payments team
"""
PROJECT = """---
type: project_context
project: fleet
updated: 2026-10-12
---

# Fleet — Context

## Key Decisions
- 2026-10-02: We will pin the Celery workers to 2 per host, because memory runs out at 3
- 2026-10-20: Pin the Celery workers to 2 per host since memory runs out at 3
- 2026-10-05: Nightly runs start at 01:00 UTC
"""


def journal(day: date) -> str:
    head = f"---\ntype: journal\ndate: {day}\nsessions: [ses_{day:%m%d}]\n---\n\n## {day}\n"
    return head + f"\n### ops\n- Rotated the Zephyr keys on {day}\n"


def memory_md(n_decisions: int = 110, n_lessons: int = 80, n_active: int = 30) -> str:
    """A MEMORY.md over the cap (the weekly rollup keeps it under; a hand edit or an older rollup may not)."""
    def entries(section: str, first: date, step: int, n: int, text: str) -> list[knowledge.Entry]:
        days = [first + timedelta(days=step * i) for i in range(n)]
        return [knowledge.Entry(section, d, text.format(i=i), f"{section}{i}") for i, d in enumerate(days)]

    sections = {
        "Key Decisions": entries("Key Decisions", date(2026, 6, 1), 1, n_decisions, "Decision number {i} on queues"),
        "Lessons Learned": entries("Lessons Learned", date(2026, 1, 1), 3, n_lessons, "Lesson {i} about retries"),
        "Active Context": entries("Active Context", date(2026, 10, 1), 1, n_active, "topic{i}: active on 1 day"),
    }
    for entries in sections.values():
        entries.sort(key=lambda e: e.day, reverse=True)
    return knowledge.memory_md_text(sections, date(2026, 10, 31))


def put(home: Path, rel: str, text: str) -> Path:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "workspace"
    put(home, "knowledge/people/ana.md", PEOPLE)
    put(home, "knowledge/projects/fleet/context.md", PROJECT)
    put(home, "knowledge/people/pinned.md", "---\npinned: true\n---\n# Bo\n- Likes tea\n- Bo likes tea\n")
    for day in (date(2026, 7, 1), date(2026, 8, 2), date(2026, 8, 3), date(2026, 10, 20)):
        put(home, f"knowledge/journal/{day}.md", journal(day))
    put(home, monthly.MEMORY_REL, memory_md())
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    monkeypatch.delenv("MEMORY_PIPELINE_LLM", raising=False)
    monkeypatch.delenv("MEMORY_PIPELINE_JOURNAL_RETENTION_DAYS", raising=False)
    return home


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def lines_of(home: Path, folder: str) -> set[str]:
    """Every bullet line of the folder's markdown files."""
    return {ln for p in (home / folder).rglob("*.md") for ln in p.read_text(encoding="utf-8").split("\n")
            if ln.startswith("- ")}  # fmt: skip


def test_repeated_bullets_in_a_people_file_merge_exactly_as_memory_md_would(home: Path) -> None:
    _, report = monthly.distill(home, MONTH, AS_OF, dry_run=False)
    text = (home / "knowledge/people/ana.md").read_text(encoding="utf-8")
    comm = [ln[2:] for ln in text.split("## Communication\n")[1].split("\n\n")[0].split("\n")]
    # MEMORY.md's weekly rule over the same bullets as Key Decisions of one day
    bullets = ["Prefers bullet lists over prose in reports", "Works from Lisbon, UTC+0",
               "Ana prefers bullet lists over prose in reports"]  # fmt: skip
    entries = [knowledge.Entry("Key Decisions", date(2026, 10, 1), b, b.lower()) for b in bullets]
    rule = knowledge.merge_memory([], entries, date(2026, 10, 1))["Key Decisions"]
    assert sorted(comm) == sorted(e.text for e in rule) and len(comm) == 2  # the repeat said once, latest wording
    assert "## Context\n- Reviews the billing code every Friday\n- Leads the payments team\n" in text  # untouched
    assert text.startswith(PEOPLE.split("# Ana")[0])  # frontmatter as it was
    # dated bullets: MEMORY.md's own line, the earlier date kept
    project = (home / "knowledge/projects/fleet/context.md").read_text(encoding="utf-8")
    dated = [knowledge.Entry("Key Decisions", date.fromisoformat(ln[2:12]), ln[14:], ln[14:].lower())
             for ln in PROJECT.split("\n") if ln.startswith("- 2026")]  # fmt: skip
    lines = [e.line() for e in knowledge.merge_memory([], dated, date(2026, 10, 31))["Key Decisions"]]
    assert "- 2026-10-20: Pin the Celery workers to 2 per host since memory runs out at 3 (also 10-02)" in lines
    assert sorted(ln for ln in project.split("\n") if ln.startswith("- ")) == sorted(lines)
    # nothing lost: the merged-away wordings are in the month's archive; the pinned file is not reviewed
    archived = (home / "archive/monthly/2026-10/people/ana.md").read_text(encoding="utf-8")
    assert "## Communication\n- Prefers bullet lists over prose in reports\n" in archived
    assert (home / "knowledge/people/pinned.md").read_text(encoding="utf-8").count("tea") == 2
    assert report["bullets_merged"] == 2 and report["files_reviewed"] == 2 and report["files_changed"] == 2
    # a second run finds nothing more to merge and rewrites nothing
    before = tree(home / "knowledge")
    _, again = monthly.distill(home, MONTH, AS_OF, dry_run=False)
    assert again["bullets_merged"] == 0 and tree(home / "knowledge") == before


def test_old_journals_move_to_the_archive_and_stay_searchable(home: Path) -> None:
    texts = {p.name: p.read_bytes() for p in (home / "knowledge/journal").glob("*.md")}
    plan, _ = monthly.distill(home, MONTH, AS_OF, dry_run=False)
    # 90 days before 2026-11-01 is 2026-08-03: the two journals before it move, the others stay
    assert plan.journals == ["knowledge/journal/2026-07-01.md", "knowledge/journal/2026-08-02.md"]
    assert sorted(p.name for p in (home / "knowledge/journal").glob("*.md")) == ["2026-08-03.md", "2026-10-20.md"]
    for name in ("2026-07-01.md", "2026-08-02.md"):
        assert (home / "archive/journal" / name).read_bytes() == texts[name]  # moved whole
    from memory_pipeline.embedding.hashing import hashing_embed
    from memory_pipeline.search import build_index, search
    from memory_pipeline.search.engine import clear_cache

    build_index(home, hashing_embed, "hashing-bow-256", full=True)
    clear_cache()
    hits = search("Rotated the Zephyr keys on 2026-07-01", 8, home=home, floor=0.0,
                  embedder=(hashing_embed, "hashing-bow-256"))  # fmt: skip
    found = next(h for h in hits if h.id.startswith("archive/journal/2026-07-01.md"))
    assert found.tier == "archive"


def test_a_journal_whose_archived_copy_differs_stays_where_it_is(home: Path) -> None:
    put(home, "archive/journal/2026-07-01.md", "an older archived version\n")
    warnings: list[str] = []
    plan, report = monthly.distill(home, MONTH, AS_OF, dry_run=False, warn=warnings.append)
    assert report["journals"] == ["knowledge/journal/2026-08-02.md"] and report["journals_archived"] == 1
    assert (home / "knowledge/journal/2026-07-01.md").read_text(encoding="utf-8") == journal(date(2026, 7, 1))
    assert (home / "archive/journal/2026-07-01.md").read_text(encoding="utf-8") == "an older archived version\n"
    assert len(warnings) == 1 and warnings[0].startswith("knowledge/journal/2026-07-01.md not archived: ")


def staleness(line: str, section: str) -> Fraction:
    return Fraction((AS_OF - date.fromisoformat(line[2:12])).days, knowledge.SECTION_RETENTION_DAYS[section])


def entries_of(text: str) -> list[tuple[str, str]]:
    """(section, line) of every dated entry."""
    out, section = [], ""
    for line in text.split("\n"):
        if line.startswith("## "):
            section = line[3:]
        elif line.startswith("- 20"):
            out.append((section, line))
    return out


def test_memory_md_over_the_cap_ends_at_the_cap_with_the_most_stale_lines_archived(home: Path) -> None:
    before = (home / monthly.MEMORY_REL).read_text(encoding="utf-8")
    lines_before = knowledge.line_count(before)
    assert lines_before == 233
    plan, report = monthly.distill(home, MONTH, AS_OF, dry_run=False)
    after = (home / monthly.MEMORY_REL).read_text(encoding="utf-8")
    assert knowledge.line_count(after) == knowledge.MEMORY_LINE_CAP == report["memory_md_lines_after"]
    assert report["memory_md_lines_before"] == lines_before and "\nline_count: 200\n" in after
    assert knowledge.cap_status(knowledge.line_count(after)) == "warn"  # at the cap: the seed's hook still warns
    archived = (home / "archive/monthly/2026-10/memory/MEMORY.md").read_text(encoding="utf-8")
    kept = entries_of(after)
    gone = [e for e in entries_of(before) if e not in kept]
    assert len(gone) == lines_before - 200 and all(line in archived for _, line in gone)  # moved, not lost
    # the rule: everything moved out is at least as stale (age ÷ the section's retention) as anything kept
    assert min(staleness(ln, s) for s, ln in gone) >= max(staleness(ln, s) for s, ln in kept)
    assert {s for s, _ in gone} == {"Active Context", "Key Decisions"}  # lessons: a year's retention
    assert "- 2026-10-01: topic0: active on 1 day" in archived  # the oldest active context goes first
    assert after.split("\n")[:3] == before.split("\n")[:3] and entries_of(after)[0] == entries_of(before)[0]
    rest = [ln for ln in before.split("\n") if not ln.startswith("- ")]  # headers and blank lines stay
    assert [ln for ln in after.split("\n") if not ln.startswith("- ")] == [
        "line_count: 200" if ln.startswith("line_count") else ln for ln in rest
    ]


def test_a_dry_run_leaves_the_tree_byte_identical(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = tree(home)
    assert main(["monthly", "--month", MONTH, "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert tree(home) == before  # no file, no report, no archive
    assert "would archive knowledge/journal/2026-07-01.md" in out
    assert "would merge knowledge/people/ana.md: 5 → 4 bullets (offline)" in out
    assert "would trim knowledge/memory/MEMORY.md: 233 → 200 lines" in out and out.rstrip().endswith("nothing written")


class Crash(Exception):
    pass


def crash_at(k: int) -> object:
    calls = []

    def crash(name: str) -> None:
        calls.append(name)
        if len(calls) == k:
            raise Crash(f"{name} #{k}")

    return crash


def test_a_fault_between_files_leaves_each_file_whole_and_every_line_somewhere(home: Path) -> None:
    olds = {rel: (home / rel).read_text(encoding="utf-8") for rel in
            ("knowledge/people/ana.md", "knowledge/projects/fleet/context.md", monthly.MEMORY_REL)}  # fmt: skip
    original = lines_of(home, "knowledge")
    news = {c.path: c.new for c in monthly.plan(home, MONTH, AS_OF).changes}
    steps = 1 + 6 + 2  # after phase 1; 3 archive files + 3 files; 2 journals
    pristine = tree(home)

    def restore() -> None:
        for rel in set(tree(home)) - set(pristine):
            (home / rel).unlink()
        for rel, data in pristine.items():
            put(home, rel, data.decode("utf-8"))

    for k in range(1, steps + 1):
        restore()
        p = monthly.plan(home, MONTH, AS_OF)
        with pytest.raises(Crash):
            monthly.apply(home, p, crash=crash_at(k))  # type: ignore[arg-type]
        for rel, old in olds.items():
            assert (home / rel).read_text(encoding="utf-8") in (old, news[rel]), (k, rel)
        kept = lines_of(home, "knowledge") | lines_of(home, "archive")
        assert original <= kept, (k, original - kept)  # a line taken out is already in the archive
    # the project's hook: MEMORY_PIPELINE_CRASH_AT SIGKILLs the process inside phase 2
    restore()
    script = ("import sys\nfrom datetime import date\nfrom pathlib import Path\n"
              "from memory_pipeline.journals import monthly\n"
              "monthly.distill(Path(sys.argv[1]), '2026-10', date(2026, 11, 1), dry_run=False)\n")  # fmt: skip
    env = {**os.environ, "MEMORY_PIPELINE_CRASH_AT": "inside_phase2"}
    done = subprocess.run([sys.executable, "-c", script, str(home)], env=env, capture_output=True, check=False)
    assert done.returncode == -9
    assert all((home / rel).read_text(encoding="utf-8") in (old, news[rel]) for rel, old in olds.items())
    assert original <= lines_of(home, "knowledge") | lines_of(home, "archive")
    assert tree(home) != pristine and not (home / "reports").exists()  # killed after the first file, before the report
    # the next run completes the month; the copies the killed run had staged are gone, nothing else
    _, report = monthly.distill(home, MONTH, AS_OF, dry_run=False)
    assert all((home / rel).read_text(encoding="utf-8") == news[rel] for rel in olds)
    assert not [p for p in home.rglob(".*.tmp-*")] and report["journals_archived"] == 2


def resources(home: Path, llm: LLMResource | None = None) -> dict:
    return {"store": MemoryStoreResource(home=str(home)), "llm": llm or LLMResource(mode="offline"),
            "engine": EngineConfig(as_of="2026-11-15T12:00:00", rate_limit_per_min=100_000)}  # fmt: skip


def test_the_asset_materialises_a_month_partition(home: Path) -> None:
    from memory_pipeline.defs.journals.monthly import monthly_distillation

    before = tree(home)
    dry = dg.materialize([monthly_distillation], partition_key="2026-10-01", resources=resources(home),
                         run_config={"ops": {"monthly_distillation": {"config": {"dry_run": True}}}})  # fmt: skip
    meta = dry.asset_materializations_for_node("monthly_distillation")[0].metadata
    assert meta["journals_archived"].value == 2 and meta["bullets_merged"].value == 2 and tree(home) == before
    result = dg.materialize([monthly_distillation], partition_key="2026-10-01", resources=resources(home))
    assert result.success
    meta = result.asset_materializations_for_node("monthly_distillation")[0].metadata
    assert {k: meta[k].value for k in ("files_reviewed", "bullets_merged", "journals_archived",
            "memory_md_lines_before", "memory_md_lines_after")} == {  # fmt: skip
        "files_reviewed": 2, "bullets_merged": 2, "journals_archived": 2,
        "memory_md_lines_before": 233, "memory_md_lines_after": 200}  # fmt: skip
    report = json.loads((home / "reports/monthly/2026-10.json").read_text(encoding="utf-8"))
    assert report["month"] == MONTH and report["as_of"] == "2026-11-01" and report["review"] == "offline"
    assert [f["path"] for f in report["files"]] == ["knowledge/projects/fleet/context.md", "knowledge/people/ana.md"]


def careful_reviewer(system: str, user: str) -> str:
    """A stand-in for Claude: the file with the repeat merged and the stale Lisbon line dropped."""
    return ("```markdown\n# Ana Costa\n\n## Communication\n- Ana prefers bullet lists over prose in reports\n\n"
            "## Context\n- Reviews the billing code every Friday\n- Leads the payments team\n```")  # fmt: skip


@pytest.fixture
def fake() -> Iterator[tuple[FakeAnthropicAPI, str]]:
    api = FakeAnthropicAPI()
    api.reply_when(lambda system, user: "knowledge/people/ana.md" in user, careful_reviewer)
    api.reply_when(lambda system, user: True, "# A different file\n- nothing")  # fails the heading check
    with api.serve() as url:
        yield api, url


def test_the_claude_path_sends_the_review_prompt_and_applies_the_answer(
    home: Path, fake: tuple[FakeAnthropicAPI, str]
) -> None:
    from memory_pipeline.defs.journals.monthly import monthly_distillation

    api, url = fake
    llm = LLMResource(api_key=TEST_KEY, mode="anthropic", base_url=url, timeout_s=2.0, min_interval_s=0.0,
                      max_retries=1, retry_base_delay_s=0.001)  # fmt: skip
    result = dg.materialize([monthly_distillation], partition_key="2026-10-01", resources=resources(home, llm))
    sent = [s.body for s in api.requests("messages") if s.body]
    assert len(sent) == 2 and all(s.key_ok for s in api.requests("messages"))
    ana = next(b for b in sent if "knowledge/people/ana.md" in b["messages"][-1]["content"])
    body = PEOPLE.split("---\n", 2)[2]
    assert ana["messages"][-1]["content"] == ml.review_prompt("knowledge/people/ana.md", "people", body)
    assert ana["system"][0]["text"] == ml.SYSTEM_PROMPT and ana["max_tokens"] == ml.MAX_TOKENS
    for step in ("Merging redundant entries", "Removing stale/superseded information",
                 "Archiving historically valuable but not operationally relevant items"):  # seed 001 §8.5's words
        assert step in ana["messages"][-1]["content"]
    text = (home / "knowledge/people/ana.md").read_text(encoding="utf-8")
    assert "Lisbon" not in text and text.count("bullet lists") == 1 and text.startswith("---\ntype: person\n")
    archived = (home / "archive/monthly/2026-10/people/ana.md").read_text(encoding="utf-8")
    assert "- Works from Lisbon, UTC+0" in archived and "- Prefers bullet lists over prose in reports" in archived
    # the project file's answer changed its headings: that file is merged offline instead, reason reported
    report = json.loads((home / "reports/monthly/2026-10.json").read_text(encoding="utf-8"))
    modes = {f["path"]: f["mode"] for f in report["files"]}
    assert modes == {"knowledge/people/ana.md": "llm", "knowledge/projects/fleet/context.md": "offline"}
    assert report["fallbacks"]["knowledge/projects/fleet/context.md"].startswith("headings changed")
    assert report["review"] == "anthropic:claude-haiku-4-5"
    meta = result.asset_materializations_for_node("monthly_distillation")[0].metadata
    assert meta["llm_fallbacks"].value == 1 and meta["llm_calls"].value == 2 and report["llm_calls"] == 2


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["monthly", "--month", "2026-13"], "error: expected a month as YYYY-MM, got '2026-13'"),
     (["monthly", "--month", "October"], "error: expected a month as YYYY-MM, got 'October'"),
     (["monthly", "--month", "2999-01"], "error: 2999-01 has not started yet")],
)  # fmt: skip
def test_bad_input_is_one_line_and_writes_nothing(
    home: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    before = tree(home)
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert captured.out == "" and len(captured.err.strip().splitlines()) == 1 and captured.err.startswith(message)
    assert tree(home) == before


def test_a_missing_workspace_is_one_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "nowhere"))
    assert main(["monthly", "--month", MONTH]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: no knowledge folder in ") and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "nowhere").exists()


def test_the_monthly_schedule_is_stopped_and_targets_the_month_that_just_closed() -> None:
    from datetime import UTC, datetime

    from memory_pipeline.defs.journals.monthly import monthly_distillation_schedule as schedule

    assert schedule.default_status == dg.DefaultScheduleStatus.STOPPED and schedule.cron_schedule == "0 4 1 * *"
    with dg.instance_for_test() as instance:
        tick = schedule.evaluate_tick(
            dg.build_schedule_context(instance=instance, scheduled_execution_time=datetime(2026, 11, 1, 4, tzinfo=UTC))
        )
    assert [r.partition_key for r in tick.run_requests or []] == ["2026-10-01"]


SEED = seed_files("001_*.txt")


@pytest.mark.skipif(not SEED, reason="seed 001 not on this machine")
def test_the_review_prompt_takes_its_steps_from_seed_001s_pruning_prompt() -> None:
    import re

    seed = SEED[0].read_text(encoding="utf-8")
    quoted = re.search(r'async def prune_memory.*?prompt = f"""(.*?)"""', seed, re.S)
    assert quoted is not None
    seed_steps = [ln.split(". ", 1)[1] for ln in quoted.group(1).split("\n") if re.match(r"^\d\. ", ln)]
    ours = [ln.split(". ", 1)[1] for ln in ml.PROMPTS["review"].split("\n") if re.match(r"^\d\. ", ln)]
    assert ours == seed_steps[1:]  # steps 2-4 word for word; step 1 is about MEMORY.md itself
    assert "Current content:\n{content}\n\nOutput the reviewed {path} content." in ml.PROMPTS["review"]
    assert "Current content:\n{content}\n\nOutput the pruned MEMORY.md content." in quoted.group(1)


def test_a_review_that_states_a_value_the_file_does_not_is_refused() -> None:
    """The monthly review is held to the night's verifier: Claude may prune and merge, not invent a figure."""
    from memory_pipeline.journals.monthly import ReviewFailed
    from memory_pipeline.journals.monthly_llm import accept

    body = ("# Fleet\n\n- The ingest worker times out after 30 seconds.\n"
            "- The search worker times out after 45 seconds.\n")  # fmt: skip
    assert accept(body, "# Fleet\n\n- The ingest worker times out after 30 seconds.").startswith("# Fleet")
    with pytest.raises(ReviewFailed, match="not faithful to the file"):
        accept(body, "# Fleet\n\n- The ingest worker times out after 60 seconds.")
