"""`memory-pipeline fleet …` refuses to start a fleet process without the fleet's variables, in one line naming
the variable (never a traceback, nothing started)."""

from __future__ import annotations

from pathlib import Path

import pytest

from memory_pipeline.cli import main
from memory_pipeline.fleet.processes.executor import BROKER_ENV, FLEET_ROOT_ENV, PG_URL_ENV


@pytest.mark.parametrize("command", ["daemon", "webserver", "worker"])
def test_fleet_commands_name_the_missing_variable(
    command: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    for name in (FLEET_ROOT_ENV, PG_URL_ENV, BROKER_ENV, "DAGSTER_HOME"):
        monkeypatch.delenv(name, raising=False)
    assert main(["fleet", command]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: set {FLEET_ROOT_ENV} to the directory every fleet machine shares (agents, instance)"
    )

    monkeypatch.setenv(FLEET_ROOT_ENV, str(tmp_path))
    assert main(["fleet", command]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: set {PG_URL_ENV} (e.g. postgresql+psycopg2://") and "\n" not in err

    monkeypatch.setenv(PG_URL_ENV, "postgresql+psycopg2://postgres@127.0.0.1:1/dagster")
    assert main(["fleet", command]) == 2
    assert capsys.readouterr().err.strip().startswith(f"error: set {BROKER_ENV} (e.g. redis://")
    assert not (tmp_path / "dagster_home").exists()  # nothing written before every variable is there
