import json
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.cli import main
from memory_pipeline_tests.conftest import SAMPLE_NOW


@pytest.fixture
def cli_env(workspace: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(workspace))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dagster_home"))
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    return workspace


def test_run_twice_then_status_and_history_persists(cli_env: Path, tmp_path: Path, capsys) -> None:
    as_of = ["--as-of", SAMPLE_NOW.isoformat()]
    assert main(["run", *as_of]) == 0
    out = capsys.readouterr()
    first = out.out
    assert "COMPRESSION RUN PASS" in first
    assert "search index built: " in out.err  # the run leaves search an index, current with what it wrote
    assert main(["search", "price alert"]) == 0
    answer = capsys.readouterr().out
    assert not answer.startswith("[") and " score " in answer  # from the index, no notice
    compressed = int(next(line for line in first.splitlines() if "clusters_compressed" in line).split()[-1])
    assert compressed > 0

    assert main(["run", *as_of]) == 0  # nothing new since the first night: a quiet PASS (a FAIL would exit 1)
    second = capsys.readouterr().out
    assert "clusters_compressed  0" in second and "COMPRESSION RUN PASS" in second
    assert "nothing new to consolidate" in second

    assert main(["status"]) == 0
    status = capsys.readouterr().out
    assert "summaries" in status and "last run" in status and "PASS" in status

    # the runs were recorded in the persistent instance, so `dagster dev` shows them after a restart
    with dg.DagsterInstance.from_config(str(tmp_path / "dagster_home")) as instance:
        runs = instance.get_runs()
        assert len(runs) == 2 and {r.job_name for r in runs} == {"nightly_consolidation"}
    assert (tmp_path / "dagster_home" / "dagster.yaml").exists()


def test_dry_run_lists_clusters(cli_env: Path, capsys) -> None:
    assert main(["run", "--dry-run", "--as-of", SAMPLE_NOW.isoformat()]) == 0
    out = capsys.readouterr().out
    assert out.startswith("DRY RUN: ") and " members  sim=" in out


def test_import_rejects_bad_file_with_exit_2(cli_env: Path, tmp_path: Path, capsys) -> None:
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"id": "x", "content": "", "created_at": "2026-01-01"}) + "\n")
    assert main(["import", str(bad)]) == 2
    err = capsys.readouterr().err
    assert f"{bad}:1: field 'content'" in err and "nothing was written" in err


def test_run_without_store_explains(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "empty"))
    assert main(["run"]) == 2
    assert "memory-pipeline demo" in capsys.readouterr().err


def test_bad_setting_is_a_clear_error(cli_env: Path, monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    monkeypatch.setenv("COMPRESSION_CRITICAL_FLOOR", "1")
    assert main(["run"]) == 2
    assert "COMPRESSION_CRITICAL_FLOOR" in capsys.readouterr().err


def test_dagsters_notices_are_hidden_from_users_and_other_warnings_are_not(monkeypatch: pytest.MonkeyPatch) -> None:
    import warnings

    from memory_pipeline.cli import _quiet_library_warnings

    shown: list[type[Warning]] = []
    monkeypatch.setattr(warnings, "showwarning", lambda message, category, *a, **k: shown.append(category))
    monkeypatch.delenv("MEMORY_PIPELINE_VERBOSE", raising=False)
    _quiet_library_warnings()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.warn("beta", dg.BetaWarning, stacklevel=1)
        warnings.warn("preview", dg.PreviewWarning, stacklevel=1)
        warnings.warn("ours", UserWarning, stacklevel=1)
    assert shown == [UserWarning]
