"""Prune by decay (seed 001 §8.5): unread old knowledge moves to archive/, never deleted."""

import os
import subprocess
import sys
from datetime import UTC, date, datetime, timedelta
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline.journals import decay
from memory_pipeline.store.file_usage import record_files

TODAY = date(2026, 11, 20)


def write(home: Path, rel: str, text: str, age_days: int) -> Path:
    path = home / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    stamp = datetime.combine(TODAY - timedelta(days=age_days), datetime.min.time(), UTC).timestamp()
    os.utime(path, (stamp, stamp))
    return path


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    home = tmp_path / "workspace"
    write(home, "knowledge/projects/old-unread.md", "# Old project\nThe migration to Kafka was cancelled.\n", 90)
    write(home, "knowledge/people/old-but-read.md", "# Ana\nAna reviews the billing code.\n", 90)
    write(home, "knowledge/reference/pinned.md", "---\npinned: true\n---\n# Runbook\nRestart the broker.\n", 200)
    write(home, "knowledge/projects/fresh.md", "# New project\nWe ship the fleet.\n", 3)
    write(home, "knowledge/journal/2026-08-01.md", "# journal\n", 120)  # journals: their own lifecycle
    write(home, "knowledge/reference/broken.md", "---\npinned: [unclosed\n---\nbody\n", 300)
    record_files(home, ["knowledge/people/old-but-read.md"], at=datetime(2026, 11, 18, tzinfo=UTC))
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(home))
    monkeypatch.setenv("MEMORY_PIPELINE_JOURNAL_GIT", "0")
    return home


def tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*.md"))}


def test_scores_follow_the_seed(home: Path) -> None:
    warnings: list[str] = []
    scored = {s.path: s for s in decay.score_files(home, TODAY, decay.DecaySettings(), warnings.append)}
    assert scored["knowledge/projects/old-unread.md"].evict and scored["knowledge/projects/old-unread.md"].score == 0
    read = scored["knowledge/people/old-but-read.md"]  # read two days ago: recent, once → exp(-0.1)
    assert not read.evict and read.references == 1 and read.score == pytest.approx(0.9048, abs=1e-4)
    assert not scored["knowledge/reference/pinned.md"].evict and scored["knowledge/reference/pinned.md"].pinned
    assert not scored["knowledge/projects/fresh.md"].evict  # unread but only 3 days old
    assert "knowledge/journal/2026-08-01.md" not in scored
    assert warnings == ["knowledge/reference/broken.md: frontmatter does not parse; left where it is "
                        "(fix it or add `pinned: true`)"]  # fmt: skip


def test_dry_run_moves_nothing_and_the_real_run_moves_only_the_unread_old_file(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = tree(home)
    assert main(["prune", "--dry-run", "--as-of", TODAY.isoformat()]) == 0
    out = capsys.readouterr().out
    assert "would archive knowledge/projects/old-unread.md" in out and "nothing moved" in out
    assert tree(home) == before
    assert main(["prune", "--as-of", TODAY.isoformat()]) == 0
    after = tree(home)
    assert "knowledge/projects/old-unread.md" not in after
    assert after["archive/projects/old-unread.md"] == before["knowledge/projects/old-unread.md"]  # moved, not lost
    kept = {k for k in before if k != "knowledge/projects/old-unread.md"}
    assert {k for k in after if k.startswith("knowledge/")} == kept


def test_an_archived_file_is_still_found_by_search(home: Path) -> None:
    from memory_pipeline.search import build_index, search
    from memory_pipeline.search.engine import clear_cache

    decay.prune(home, TODAY, dry_run=False)
    from memory_pipeline.embedding.hashing import hashing_embed

    build_index(home, hashing_embed, "hashing-bow-256", full=True)
    clear_cache()
    hits = search("Kafka migration cancelled", 5, home=home, floor=0.0, embedder=(hashing_embed, "hashing-bow-256"))
    top = next(h for h in hits if h.id.startswith("archive/projects/old-unread.md"))
    assert top.tier == "archive"


def test_a_crash_between_moves_leaves_every_file_in_exactly_one_place(home: Path) -> None:
    write(home, "knowledge/projects/second-unread.md", "# Second\nNobody reads this.\n", 120)
    script = (
        "import os, signal, sys\n"
        "from datetime import date\n"
        "from pathlib import Path\n"
        "from memory_pipeline.journals import decay\n"
        "home = Path(sys.argv[1])\n"
        "scored = decay.score_files(home, date(2026, 11, 20), decay.DecaySettings(), lambda m: None)\n"
        "decay.evict(home, scored, crash_after=lambda n: os.kill(os.getpid(), signal.SIGKILL))\n"
    )
    done = subprocess.run([sys.executable, "-c", script, str(home)], check=False, capture_output=True)
    assert done.returncode == -9
    names = ("projects/old-unread.md", "projects/second-unread.md")
    places = [((home / "knowledge" / n).exists(), (home / "archive" / n).exists()) for n in names]
    assert all(a != b for a, b in places)  # in knowledge/ or in archive/, never both, never neither
    assert sum(b for _, b in places) == 1  # killed right after the first move


def test_the_weekly_asset_has_a_dry_run(home: Path) -> None:
    from memory_pipeline.defs.journals.prune import knowledge_prune
    from memory_pipeline.resources import EngineConfig, MemoryStoreResource

    before = tree(home)
    resources = {"store": MemoryStoreResource(home=str(home)), "engine": EngineConfig(as_of="2026-11-20T12:00:00")}
    dry = dg.materialize([knowledge_prune], resources=resources,
                         run_config={"ops": {"knowledge_prune": {"config": {"dry_run": True}}}})  # fmt: skip
    meta = dry.asset_materializations_for_node("knowledge_prune")[0].metadata
    assert meta["candidates"].value == 1 and meta["moved"].value == 0 and tree(home) == before
    real = dg.materialize([knowledge_prune], resources=resources)
    assert real.asset_materializations_for_node("knowledge_prune")[0].metadata["moved"].value == 1
    assert (home / "archive" / "projects" / "old-unread.md").exists()
