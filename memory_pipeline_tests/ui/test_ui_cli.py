import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from memory_pipeline.cli import main
from memory_pipeline.operator import cli as ui


def test_ui_refuses_a_busy_port_without_starting_anything(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["ui", "--port", str(port)]) == 2
    assert f"127.0.0.1:{port} is in use" in capsys.readouterr().err
    assert main(["ui", "--port", "70000"]) == 2


def test_ui_runs_dagster_dev_with_the_cli_workspace_and_instance(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    seen: dict = {}

    def fake_supervise(argv: list[str], env: dict[str, str]) -> int:
        seen.update(path=argv[0], argv=argv, env=env)
        return 0

    monkeypatch.setattr(ui, "supervise", fake_supervise)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["ui", "--port", str(port)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Dagster UI: http://127.0.0.1:{port}\n")
    assert seen["argv"][1:] == ["dev", "-w", str(ui.WORKSPACE_YAML), "--host", "127.0.0.1", "--port", str(port)]
    assert Path(seen["path"]) == Path(sys.executable).with_name("dagster")
    # the same persistent instance the CLI's runs go to (cli._dagster_home), with the project's dagster.yaml
    assert seen["env"]["DAGSTER_HOME"] == str(tmp_path / "dagster_home")
    assert (tmp_path / "dagster_home" / "dagster.yaml").exists()
    assert seen["env"]["MEMORY_PIPELINE_HOME"] == str(tmp_path / "ws")


def test_url_for_wildcard_and_ipv6_hosts() -> None:
    assert ui.ui_url("0.0.0.0", 3000) == "http://127.0.0.1:3000"
    assert ui.ui_url("::1", 3001) == "http://[::1]:3001"


def test_a_cli_run_is_in_the_instance_the_ui_opens_and_filed_under_its_job(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The CLI and `ui` resolve one DAGSTER_HOME and say it in the same line; the CLI's run is
    found there with the filter the UI's Jobs page and timeline use (the code location's repository label)."""
    import dagster as dg

    from memory_pipeline.operator.instance import home_line
    from memory_pipeline_tests.rollups.helpers import insert_sessions, session

    ws = tmp_path / "ws"
    insert_sessions(ws, [session(i) for i in range(1, 4)])
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(ws))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    assert main(["rollups", "build"]) == 0  # one rollup_assign run, in process
    cli_line = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("DAGSTER_HOME "))

    monkeypatch.delenv("DAGSTER_HOME", raising=False)  # a fresh shell: what would `ui` open?
    seen: dict = {}
    monkeypatch.setattr(ui, "supervise", lambda argv, env: seen.update(env=env) or 0)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["ui", "--port", str(port)]) == 0
    ui_line = next(line for line in capsys.readouterr().err.splitlines() if line.startswith("DAGSTER_HOME "))
    assert cli_line == ui_line == home_line(Path(seen["env"]["DAGSTER_HOME"]))

    location = yaml.safe_load(ui.WORKSPACE_YAML.read_text())["load_from"][0]["python_module"]["location_name"]
    with dg.DagsterInstance.from_config(seen["env"]["DAGSTER_HOME"]) as instance:
        jobs_page = dg.RunsFilter(job_name="rollup_assign", tags={".dagster/repository": f"__repository__@{location}"})
        [record] = instance.get_run_records(filters=jobs_page)
        run = record.dagster_run
        assert run.status == dg.DagsterRunStatus.SUCCESS
        origin = run.remote_job_origin  # what the timeline groups by
        assert (origin.location_name, origin.repository_origin.repository_name) == (location, "__repository__")


def test_dagster_dev_runs_in_dagster_home_so_it_finds_its_own_dagster_yaml(tmp_path: Path) -> None:
    """Dagster dev warns "dagster.yaml will not be used" when started beside another
    dagster.yaml than DAGSTER_HOME's; `supervise` starts it in DAGSTER_HOME."""
    home, out = tmp_path / "dagster_home", tmp_path / "cwd.txt"
    home.mkdir()
    code = "import os, sys; open(sys.argv[1], 'w').write(os.getcwd())"
    env = {**os.environ, "DAGSTER_HOME": str(home)}
    assert ui.supervise([sys.executable, "-c", code, str(out)], env) == 0
    assert Path(out.read_text()) == home


def test_dagster_home_config_follows_the_repository_unless_it_is_the_operators_own(tmp_path: Path) -> None:
    from memory_pipeline.operator.instance import sync_config

    template, config = tmp_path / "repo.yaml", tmp_path / "home" / "dagster.yaml"
    config.parent.mkdir()
    template.write_text("# Instance config.\nrun_monitoring: {enabled: true}\n")
    sync_config(config, template)
    assert config.read_text() == template.read_text()  # first use: a copy
    template.write_text("# Instance config.\nrun_monitoring: {enabled: false}\n")
    sync_config(config, template)  # the repository's changed: the copy follows, the old one kept
    assert config.read_text() == template.read_text()
    assert "enabled: true" in (config.parent / "dagster.yaml.previous").read_text()
    config.write_text("# mine\nstorage: {}\n")
    sync_config(config, template)
    assert config.read_text() == "# mine\nstorage: {}\n"


def test_the_dg_dev_supersession_notice_is_silenced_unless_verbose(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("MEMORY_PIPELINE_VERBOSE", raising=False)
    monkeypatch.delenv("PYTHONWARNINGS", raising=False)
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path / "dh"))
    env = ui.ui_environment(tmp_path / "ws")
    code = "import warnings; warnings.warn(\"Function `dev_command` is superseded and its usage is discouraged.\")"
    quiet = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert "superseded" not in quiet.stderr


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_ui_names_the_sensors_that_will_start_work_and_how_to_open_it_without_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Read from the definitions: every sensor on by default is named (the rollups and the search index among
    them), and one stopped in the UI is not."""
    import dagster as dg

    from memory_pipeline import definitions

    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    seen: list[list[str]] = []
    monkeypatch.setattr(ui, "supervise", lambda argv, env: seen.append(argv) or 0)
    on = sorted(s.name for s in definitions.defs().get_repository_def().sensor_defs
                if s.default_status == dg.DefaultSensorStatus.RUNNING)  # fmt: skip
    assert {"rollups_sensor", "search_index_sensor", "search_usage_sensor"} <= set(on)
    operating = (ui.REPO_ROOT / "docs" / "operating.md").read_text(encoding="utf-8")
    assert all(f"`{name}`" in operating for name in on) and f"{len(on)} sensors are on by default" in (
        operating.replace("Six", "6")
    ), "docs/operating.md names the sensors on by default"
    assert main(["ui", "--port", str(_free_port())]) == 0
    out = capsys.readouterr().out
    assert f"sensors      {', '.join(on)} — they start runs" in out
    assert "memory-pipeline ui --no-sensors" in out
    assert seen[0][1] == "dev"  # dagster dev: webserver and daemon
    assert ui.sensors_that_run({"a": True, "b": True, "c": False}, {"a": False, "c": True, "b": None}) == ["b", "c"]


def test_ui_no_sensors_starts_the_webserver_without_the_daemon(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path / "ws"))
    monkeypatch.delenv("DAGSTER_HOME", raising=False)
    seen: list[list[str]] = []
    monkeypatch.setattr(ui, "supervise", lambda argv, env: seen.append(argv) or 0)
    monkeypatch.setattr(ui, "running_sensors", lambda home: pytest.fail("no sensor runs: nothing to read"))
    port = _free_port()
    assert main(["ui", "--no-sensors", "--port", str(port)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"Dagster UI: http://127.0.0.1:{port}\n")
    assert "sensors      none: the webserver runs without Dagster's daemon" in out
    (argv,) = seen
    assert Path(argv[0]).name == "dagster-webserver" and Path(argv[0]).is_file()
    assert argv[1:] == ["-w", str(ui.WORKSPACE_YAML), "--host", "127.0.0.1", "--port", str(port)]
    assert not any("daemon" in a or a == "dev" for a in argv)
