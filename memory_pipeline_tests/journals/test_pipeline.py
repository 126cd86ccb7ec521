import dataclasses
import shutil
from datetime import date, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.defs.journals.assets import DAILY_ASSETS, session_memories, sessions
from memory_pipeline.defs.journals.common import EXTRACTOR_KEYS, IO_MANAGER, LINEAGE_CHECK, SESSIONS
from memory_pipeline.defs.journals.io import ParquetIOManager
from memory_pipeline.defs.journals.knowledge_files import journal_archive, memory_cap_result, memory_md
from memory_pipeline.journals import extractors, knowledge, tables
from memory_pipeline.journals.cli.reconstruct import range_tags
from memory_pipeline.journals.llm_extractors import llm_configured, version_for
from memory_pipeline.resources import EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.settings import REPO_ROOT
from memory_pipeline.store import MemoryStore

DAY = "2026-09-15"


@pytest.fixture(autouse=True)
def _no_git(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")


@pytest.fixture
def home(tmp_path: Path) -> Path:
    shutil.copytree(REPO_ROOT / "data" / "sample" / "raw", tmp_path / "raw")
    return tmp_path


def resources(home: Path) -> dict:
    return {
        "store": MemoryStoreResource(home=str(home)),
        IO_MANAGER: ParquetIOManager(base_dir=str(home / "parquet")),
        "llm": LLMResource(mode="offline"),
        "engine": EngineConfig(),
    }


def materialize(home: Path, day: str = DAY, assets: list | None = None, **kw: object) -> dg.ExecuteInProcessResult:
    return dg.materialize(assets or DAILY_ASSETS, resources=resources(home), partition_key=day, **kw)


def materialize_range(
    home: Path, keys: list[str], assets: list | None = None, **kw: object
) -> dg.ExecuteInProcessResult:
    """One run over the partition key range keys[0]..keys[-1], as a single-run backfill launches it."""
    return dg.materialize(assets or DAILY_ASSETS, resources=resources(home), tags=range_tags(keys), **kw)


def rows(home: Path, sql: str, params: list | None = None) -> list[tuple]:
    with MemoryStore(home / "memory.duckdb").connect() as con:
        return con.execute(sql, params or []).fetchall()


MEMORY_COLUMNS = "id, content, lifecycle, source, session_id, importance, created_at, kind"


def test_a_partition_materialised_twice_is_idempotent(home: Path) -> None:
    assert materialize(home).success
    journal = home / "knowledge" / "journal" / f"{DAY}.md"
    first = journal.read_bytes()
    mems = rows(home, f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY id")
    sess = rows(home, "SELECT session_id, day, path, turn_count, text, salience, frontmatter FROM sessions")
    assert len(sess) == 2 and mems and {m[2] for m in mems} == {"active"}
    assert sess[0][2].startswith(f"raw/conversations/{DAY.replace('-', '/')}/") and sess[0][5] is not None
    assert {"extract:decisions@3", "extract:people@3"} <= {m[3] for m in mems} <= {
        e.source for e in extractors.EXTRACTORS.values()
    }
    text = first.decode()
    assert text.startswith(f"---\ntype: journal\ndate: {DAY}\nsessions: [") and "\n### people\n- " in text
    assert all(line.startswith(("- ", "### ", "## ", "---", "type:", "date:", "sessions:")) or not line
               for line in text.splitlines())  # bullets only

    again = materialize(home)
    assert again.success
    assert journal.read_bytes() == first
    assert rows(home, f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY id") == mems
    assert rows(home, "SELECT session_id, day, path, turn_count, text, salience, frontmatter FROM sessions") == sess
    meta = again.asset_materializations_for_node("session_memories")[0].metadata
    assert meta["inserted"].value == 0 and meta["superseded"].value == 0
    # the Parquet partition is readable from DuckDB
    parquet = home / "parquet" / "sessions" / DAY / "turns.parquet"
    assert rows(home, f"SELECT count(DISTINCT session_id) FROM read_parquet('{parquet}')") == [(2,)]


def test_a_day_without_transcripts_writes_no_journal_and_says_so(home: Path) -> None:
    result = materialize(home, "2026-09-01")
    assert result.success
    assert not (home / "knowledge" / "journal" / "2026-09-01.md").exists()
    assert result.asset_materializations_for_node("journals")[0].metadata["note"].value == "no transcripts that day"


def test_neighbouring_partitions_are_not_touched(home: Path) -> None:
    assert materialize(home, "2026-09-14").success and materialize(home, DAY).success
    before = rows(home, f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY id")
    sessions_before = rows(home, "SELECT * EXCLUDE (parsed_at) FROM sessions ORDER BY session_id")
    assert materialize(home, "2026-09-14").success
    assert rows(home, f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY id") == before
    assert rows(home, "SELECT * EXCLUDE (parsed_at) FROM sessions ORDER BY session_id") == sessions_before


def test_a_broken_transcript_is_listed_and_the_check_warns(home: Path) -> None:
    folder = home / "raw" / "conversations" / "2026" / "09" / "15"
    (folder / "2300-ses_broken-bad.md").write_text("---\nsession_id: ses_broken\nstarted: 2026-09-15T23:00:00Z\n---\n"
                                                   "## 23:00 — robot\nhi\n", encoding="utf-8")
    result = materialize(home)
    assert result.success
    meta = result.asset_materializations_for_node("sessions")[0].metadata
    assert meta["sessions"].value == 2 and meta["rejected"].value == 1
    assert "2300-ses_broken-bad.md:5: unknown role" in meta["rejected_transcripts"].value[0]
    check = next(c for c in result.get_asset_check_evaluations() if c.asset_key == dg.AssetKey("sessions"))
    assert not check.passed and check.severity == dg.AssetCheckSeverity.WARN


def test_an_extractor_version_bump_replaces_only_its_own_memories(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert materialize(home).success
    by_source = dict(rows(home, "SELECT source, list(id ORDER BY id) FROM memories GROUP BY source"))
    old_decisions = by_source.pop("extract:decisions@3")
    # a summary already archived one decision: it must survive the re-extraction as it is
    archived_id = old_decisions[0]
    with MemoryStore(home / "memory.duckdb").connect() as con:
        con.execute("UPDATE memories SET lifecycle = 'archived', archived_by = 'sum_1', importance = 0.5 WHERE id = ?",
                    [archived_id])
    others = rows(home, f"SELECT {MEMORY_COLUMNS} FROM memories WHERE source <> 'extract:decisions@3' ORDER BY id")
    bumped = dataclasses.replace(extractors.EXTRACTORS["decisions"], version="4")
    monkeypatch.setitem(extractors.EXTRACTORS, "decisions", bumped)
    result = materialize(
        home, assets=[sessions, session_memories], selection=[EXTRACTOR_KEYS["decisions"]]
    )
    assert result.success
    assert rows(home, f"SELECT {MEMORY_COLUMNS} FROM memories WHERE source NOT LIKE 'extract:decisions@%' "
                      "ORDER BY id") == others
    old = dict(rows(home, "SELECT id, lifecycle FROM memories WHERE source = 'extract:decisions@3'"))
    assert old.pop(archived_id) == "archived" and set(old.values()) == {"superseded"}
    new = rows(home, "SELECT lifecycle FROM memories WHERE source = 'extract:decisions@4'")
    assert len(new) == len(old_decisions) and {r[0] for r in new} == {"active"}
    check = next(c for c in result.get_asset_check_evaluations() if c.check_name == LINEAGE_CHECK)
    assert check.asset_key == EXTRACTOR_KEYS["decisions"] and not check.passed
    assert check.metadata["kept_archived_ids"].value == [archived_id]
    unstamped = "SELECT count(*) FROM memories WHERE lifecycle = 'superseded' AND superseded_at IS NULL"
    assert rows(home, unstamped) == [(0,)]
    # the journal now shows the new version's decisions (and the archived one, which still happened)
    assert materialize(home, selection=[journals_asset()]).success


def journals_asset() -> dg.AssetsDefinition:
    from memory_pipeline.defs.journals.knowledge_files import journals

    return journals


def test_extractor_asset_code_versions_are_their_versions() -> None:
    versions = session_memories.code_versions_by_key
    assert {k: versions[k] for k in EXTRACTOR_KEYS.values()} == {
        k: version_for(n, llm_configured()) for n, k in EXTRACTOR_KEYS.items()
    }
    # the LLM versions are distinct, and chosen exactly when the code location's `llm` resource will use Claude
    assert {version_for(n, True) for n in EXTRACTOR_KEYS} == {"llm-2"}
    offline = {n: e.version for n, e in extractors.EXTRACTORS.items()}
    assert {n: version_for(n, False) for n in EXTRACTOR_KEYS} == offline
    assert llm_configured({"ANTHROPIC_API_KEY": "k"}) and llm_configured({"MEMORY_PIPELINE_LLM": "anthropic"})
    assert not llm_configured({}) and not llm_configured({"ANTHROPIC_API_KEY": "k", "MEMORY_PIPELINE_LLM": "offline"})


def test_memory_md_from_a_week_of_journals(home: Path) -> None:
    for day in ("2026-09-14", "2026-09-16", "2026-09-18"):  # three of the week's days (Sunday 13th–Saturday 19th)
        assert materialize(home, day).success
    result = dg.materialize([memory_md], resources=resources(home), partition_key="2026-09-13")
    assert result.success
    text = (home / "knowledge" / "memory" / "MEMORY.md").read_text()
    entries = knowledge.parse_memory_md(text)
    assert {e.section for e in entries} == set(knowledge.SECTIONS)
    assert all(date(2026, 9, 13) <= e.day <= date(2026, 9, 19) for e in entries)
    assert knowledge.line_count(text) <= 200 and f"line_count: {knowledge.line_count(text)}" in text
    first = text
    assert dg.materialize([memory_md], resources=resources(home), partition_key="2026-09-13").success
    assert (home / "knowledge" / "memory" / "MEMORY.md").read_text() == first


def test_memory_md_stays_under_200_lines_and_drops_stale_entries() -> None:
    old = [knowledge.Entry("Active Context", date(2026, 1, 1), "x: old", "x")]
    many = [knowledge.Entry("Key Decisions", date(2026, 3, 1), f"decision {i}", f"decision {i}") for i in range(300)]
    merged = knowledge.merge_memory(old, many, date(2026, 3, 7))
    text = knowledge.memory_md_text(merged, date(2026, 3, 7))
    assert knowledge.line_count(text) <= 200 and "x: old" not in text


@pytest.mark.parametrize(("lines", "passed", "severity"), [
    (179, True, None), (180, False, dg.AssetCheckSeverity.WARN), (219, False, dg.AssetCheckSeverity.WARN),
    (220, False, dg.AssetCheckSeverity.ERROR),
])
def test_memory_md_cap_check(tmp_path: Path, lines: int, passed: bool, severity: object) -> None:
    path = tmp_path / "MEMORY.md"
    path.write_text("".join(f"- 2026-01-01: entry {i}\n" for i in range(lines)))
    result = memory_cap_result(path)
    assert result.passed is passed and result.metadata["lines"].value == lines
    if severity is not None:
        assert result.severity == severity


def test_journals_older_than_90_days_move_to_the_archive(tmp_path: Path) -> None:
    journal_dir = tmp_path / "knowledge" / "journal"
    journal_dir.mkdir(parents=True)
    as_of = date(2026, 12, 31)
    for age in (89, 90, 91, 200):
        (journal_dir / f"{as_of - timedelta(days=age)}.md").write_text(f"journal {age}\n")
    result = dg.materialize(
        [journal_archive], resources={"store": MemoryStoreResource(home=str(tmp_path))},
        run_config={"ops": {"journal_archive": {"config": {"as_of": as_of.isoformat()}}}},
    )
    assert result.success
    archived = tmp_path / "archive" / "journal"
    assert sorted(p.read_text() for p in archived.glob("*.md")) == ["journal 200\n", "journal 91\n"]
    assert sorted(p.read_text() for p in journal_dir.glob("*.md")) == ["journal 89\n", "journal 90\n"]
    again = dg.materialize(
        [journal_archive], resources={"store": MemoryStoreResource(home=str(tmp_path))},
        run_config={"ops": {"journal_archive": {"config": {"as_of": as_of.isoformat()}}}},
    )
    assert again.asset_materializations_for_node("journal_archive")[0].metadata["moved"].value == 0


def _knowledge(home: Path) -> dict[str, bytes]:
    return {str(p.relative_to(home)): p.read_bytes() for p in sorted((home / "knowledge").rglob("*.md"))}


@pytest.mark.slow
def test_a_range_of_days_in_one_run_writes_what_day_by_day_runs_write(tmp_path: Path) -> None:
    days = ["2026-09-13", "2026-09-14", "2026-09-15", "2026-09-16"]  # the 13th has no transcripts
    weeks = ["2026-09-13", "2026-09-20"]
    ranged, daily = tmp_path / "ranged", tmp_path / "daily"
    for home in (ranged, daily):
        shutil.copytree(REPO_ROOT / "data" / "sample" / "raw", home / "raw")

    result = materialize_range(ranged, days)
    assert result.success
    tags = result.dagster_run.tags  # one run over the range, tagged as a single-run backfill's run is
    assert tags["dagster/asset_partition_range_start"] == days[0]
    assert tags["dagster/asset_partition_range_end"] == days[-1]
    assert "dagster/partition" not in tags
    journal_events = result.asset_materializations_for_node("journals")
    assert [m.partition for m in journal_events] == days  # one materialisation per day, with that day's metadata
    assert [m.metadata["sessions"].value for m in journal_events] == [0, 2, 2, 2]
    assert journal_events[0].metadata["note"].value == "no transcripts that day"
    assert journal_events[2].metadata["path"].value.endswith("2026-09-15.md")
    decisions = [m for m in result.asset_materializations_for_node("session_memories")
                 if m.asset_key == EXTRACTOR_KEYS["decisions"]]
    assert [m.partition for m in decisions] == days and decisions[0].metadata["memories"].value == 0
    assert materialize_range(ranged, weeks, assets=[memory_md]).success

    for day in days:
        assert materialize(daily, day).success
    for week in weeks:
        assert dg.materialize([memory_md], resources=resources(daily), partition_key=week).success

    assert _knowledge(ranged) == _knowledge(daily)  # byte-identical journals and MEMORY.md
    assert len([k for k in _knowledge(ranged) if "/journal/" in k]) == 3
    for sql in (f"SELECT {MEMORY_COLUMNS} FROM memories ORDER BY id",
                "SELECT * EXCLUDE (parsed_at) FROM sessions ORDER BY session_id"):
        assert rows(ranged, sql) == rows(daily, sql)
    for day in days:
        turns = [home / "parquet" / "sessions" / day / "turns.parquet" for home in (ranged, daily)]
        assert rows(ranged, f"SELECT * FROM read_parquet('{turns[0]}') EXCEPT SELECT * FROM read_parquet('{turns[1]}')"
                    ) == []
        assert rows(ranged, f"SELECT count(*) FROM read_parquet('{turns[0]}')") == rows(
            daily, f"SELECT count(*) FROM read_parquet('{turns[1]}')")


DUPLICATE = "raw/conversations/2026/09/16/2330-ses_0b9691b5-copied.md"


def duplicate_a_session(home: Path) -> None:
    """The 14th's first session copied into the 16th: session ids are unique, so the copy is rejected."""
    source = home / "raw" / "conversations" / "2026" / "09" / "14" / (
        "1730-ses_0b9691b5-ops-the-tls-certificate-for-status.md"
    )
    shutil.copyfile(source, home / DUPLICATE)


def test_a_duplicate_session_is_rejected_naming_both_paths_and_its_day_goes_on(home: Path) -> None:
    duplicate_a_session(home)
    days = ["2026-09-14", "2026-09-15", "2026-09-16"]
    result = materialize_range(home, days, raise_on_error=False)
    assert result.success
    meta = {
        m.partition: m.metadata
        for e in result.all_events
        if e.event_type_value == "ASSET_MATERIALIZATION" and (m := e.event_specific_data.materialization)
        and m.asset_key == SESSIONS
    }
    assert meta["2026-09-16"]["rejected_transcripts"].value == [
        f"{DUPLICATE}:2: session_id 'ses_0b9691b5' is already used by "
        "raw/conversations/2026/09/14/1730-ses_0b9691b5-ops-the-tls-certificate-for-status.md; "
        "rename or remove the duplicate"
    ]
    assert rows(home, "SELECT day::VARCHAR, path LIKE '%/14/%' FROM sessions WHERE session_id = 'ses_0b9691b5'") == [
        ("2026-09-14", True)
    ]
    assert rows(home, "SELECT DISTINCT day::VARCHAR FROM sessions ORDER BY 1") == [(d,) for d in days]


def test_a_failing_day_inside_a_range_is_named_and_rolled_back(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    real = tables.replace_day_sessions

    def failing_on_the_16th(con: object, day: date, table: object) -> int:
        if day == date(2026, 9, 16):
            raise OSError("No space left on device (injected)")
        return real(con, day, table)  # type: ignore[arg-type]

    monkeypatch.setattr(tables, "replace_day_sessions", failing_on_the_16th)
    days = ["2026-09-14", "2026-09-15", "2026-09-16", "2026-09-17"]
    result = materialize_range(home, days, raise_on_error=False)
    assert not result.success
    [failure] = [e for e in result.all_events if e.event_type_value == "STEP_FAILURE"]
    assert failure.step_key == "sessions"
    data = failure.step_failure_data.user_failure_data
    assert data.metadata["failed_partition"].value == "2026-09-16"
    assert data.description.startswith("sessions: 2026-09-16 failed (")
    assert "raw/conversations/2026/09/16" in data.description and "No space left on device" in data.description
    # the days before it are stored, each in its own transaction; the 16th rolled back; the 17th never ran
    assert rows(home, "SELECT DISTINCT day::VARCHAR FROM sessions ORDER BY 1") == [("2026-09-14",), ("2026-09-15",)]
    # nothing downstream ran and no day's Parquet was written from the failed step
    assert rows(home, "SELECT count(*) FROM memories") == [(0,)]
    assert not (home / "parquet").exists() and not (home / "knowledge").exists()
