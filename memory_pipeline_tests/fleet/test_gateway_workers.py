"""`fleet serve --workers N`: what the worker processes share — one rate limit per agent, one audit log of whole
lines — and the command that starts them."""

import json
import multiprocessing
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import pytest

from memory_pipeline.cli import main
from memory_pipeline.fleet import serving
from memory_pipeline.fleet.gateway import AuditLog, GatewayConfig, RateLimiter
from memory_pipeline.fleet.serving import SETTINGS_ENV, SharedRateLimiter, read_settings
from memory_pipeline_tests.fleet.gateway_helpers import app_for, call, fleet
from memory_pipeline_tests.fleet.gateway_helpers import serving as served

SPAWN = multiprocessing.get_context("spawn")  # as uvicorn starts its workers


def _take_all(folder: str, tries: int, out: Any) -> None:
    limiter = SharedRateLimiter(Path(folder), rate=0.0001, burst=10)
    out.put(sum(limiter.take("alice") == 0.0 for _ in range(tries)))


def _audit_lines(root: str, worker: int, n: int) -> None:
    log = AuditLog(Path(root))
    for i in range(n):
        log.write(agent=f"w{worker}", method="tools/call", tool="search", hits=i, status=200, outcome="ok",
                  latency_ms=1.0, padding="x" * 300)  # fmt: skip
    log.close()


def _arm(parent: int) -> None:
    serving.die_with_parent(parent)


def test_a_worker_arms_its_parent_death_signal_and_stops_if_its_command_is_already_gone() -> None:
    alive = SPAWN.Process(target=_arm, args=(os.getpid(),))  # its parent is this process, pid 1 or not
    gone = SPAWN.Process(target=_arm, args=(-1,))  # a parent it does not have: that command has died
    for p in (alive, gone):
        p.start()
        p.join(timeout=120)
    assert alive.exitcode == 0 and gone.exitcode == -signal.SIGTERM


def test_the_parent_death_signal_acts_though_the_worker_inherited_sigterm_ignored_and_blocked() -> None:
    """Both are inherited across fork and exec: a starter that ignores or blocks SIGTERM (a harness, a shell's
    background job, a library mid-spawn) would leave a worker that outlives its command (CI saw exit 0 here)."""
    previous = signal.signal(signal.SIGTERM, signal.SIG_IGN)
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    try:
        gone = SPAWN.Process(target=_arm, args=(-1,))
        gone.start()
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        signal.signal(signal.SIGTERM, previous)
    gone.join(timeout=120)
    assert gone.exitcode == -signal.SIGTERM


def test_a_rate_folder_a_killed_command_left_is_removed_by_the_next_command(tmp_path: Path) -> None:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True,
                          check=True)  # fmt: skip
    dead = tmp_path / f"{serving.RATE_PREFIX}{done.stdout.strip()}-abc"  # its command died by SIGKILL
    live = tmp_path / f"{serving.RATE_PREFIX}{os.getppid()}-def"  # another command, still serving
    for folder in (dead, live):
        folder.mkdir()
        (folder / "alice.bucket").write_bytes(b"\0" * 16)
    new = serving.new_rate_dir(tmp_path)
    assert not dead.exists() and live.exists() and new.is_dir()
    assert new.name.startswith(f"{serving.RATE_PREFIX}{os.getpid()}-")


def test_buckets_in_one_folder_are_one_bucket_per_agent_and_refill_at_the_rate(tmp_path: Path) -> None:
    now = [100.0]
    first = SharedRateLimiter(tmp_path, rate=2.0, burst=2, clock=lambda: now[0])
    second = SharedRateLimiter(tmp_path, rate=2.0, burst=2, clock=lambda: now[0])
    assert first.take("alice") == 0.0 and second.take("alice") == 0.0
    assert first.take("alice") == pytest.approx(0.5) and second.take("alice") == pytest.approx(0.5)
    assert second.take("bob") == 0.0  # another agent's bucket is its own
    now[0] = 100.5
    assert second.take("alice") == 0.0 and first.take("alice") == pytest.approx(0.5)
    (tmp_path / "carol.bucket").write_bytes(b"\xff" * 16)  # damaged: a full bucket again, never an error
    assert first.take("carol") == 0.0
    first.close()
    second.close()


def test_processes_sharing_the_folder_grant_the_burst_once_between_them(tmp_path: Path) -> None:
    out = SPAWN.Queue()
    procs = [SPAWN.Process(target=_take_all, args=(str(tmp_path), 8, out)) for _ in range(3)]
    for p in procs:
        p.start()
    granted = [out.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
    assert sum(granted) == 10 and all(p.exitcode == 0 for p in procs)


def test_the_audit_log_of_several_processes_is_whole_json_lines(tmp_path: Path) -> None:
    procs = [SPAWN.Process(target=_audit_lines, args=(str(tmp_path), w, 150)) for w in range(4)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(timeout=120)
    assert all(p.exitcode == 0 for p in procs)
    lines = [json.loads(x) for x in (tmp_path / "gateway" / "audit.jsonl").read_text().splitlines()]
    assert len(lines) == 600
    for w in range(4):
        assert [x["hits"] for x in lines if x["agent"] == f"w{w}"] == list(range(150))


def test_the_audit_log_follows_a_rotated_file(tmp_path: Path) -> None:
    log = AuditLog(tmp_path)
    log.write(agent="a", n=1)
    path = tmp_path / "gateway" / "audit.jsonl"
    path.rename(path.with_suffix(".1"))
    log.write(agent="a", n=2)
    log.close()
    assert [json.loads(x)["n"] for x in path.read_text().splitlines()] == [2]
    assert [json.loads(x)["n"] for x in path.with_suffix(".1").read_text().splitlines()] == [1]


def test_settings_reach_each_worker_with_a_shared_limiter_only_for_several(tmp_path: Path) -> None:
    config = GatewayConfig(max_body_bytes=4096, rate_per_s=3.0, burst=5)
    got, limiter = read_settings(json.loads(serving.settings(config, 2, tmp_path)))
    assert got == config and isinstance(limiter, SharedRateLimiter) and limiter.folder == tmp_path
    got, limiter = read_settings(json.loads(serving.settings(config, 1, None)))
    assert got == config and isinstance(limiter, RateLimiter)
    assert serving.default_workers() >= 1


def test_the_default_worker_count_follows_a_containers_cpu_limit(tmp_path: Path) -> None:
    cpus = serving.default_workers(tmp_path / "absent")
    assert cpus >= 1
    limit = tmp_path / "cpu.max"
    limit.write_text("150000 100000\n")  # 1.5 CPUs: two workers, or fewer CPUs if that is all there is
    assert serving.default_workers(limit) == min(cpus, 2)
    limit.write_text("max 100000\n")
    assert serving.default_workers(limit) == cpus
    limit.write_text("garbage")
    assert serving.default_workers(limit) == cpus


def test_two_workers_sharing_the_rate_folder_answer_429_to_the_agent_over_its_burst(tmp_path: Path) -> None:
    keys = fleet(tmp_path / "fleet", ["alice", "bob"])
    config = GatewayConfig(rate_per_s=0.001, burst=2)
    folder = tmp_path / "rate"
    folder.mkdir()
    apps = [app_for(tmp_path / "fleet", config, SharedRateLimiter(folder, 0.001, 2)) for _ in range(2)]

    async def run() -> None:
        async with served(apps[0]) as one, served(apps[1]) as two:
            assert (await call(one, keys["alice"], "search", {"query": "x"})).status_code == 200
            assert (await call(two, keys["alice"], "search", {"query": "x"})).status_code == 200
            limited = await call(one, keys["alice"], "search", {"query": "x"})
            assert limited.status_code == 429 and int(limited.headers["retry-after"]) >= 1
            assert (await call(two, keys["alice"], "search", {"query": "x"})).status_code == 429
            assert (await call(two, keys["bob"], "search", {"query": "x"})).status_code == 200
            assert (await call(one, None, "search", {"query": "x"})).status_code == 401

    anyio.run(run)
    outcomes = [json.loads(x)["outcome"] for x in (tmp_path / "fleet" / "gateway" / "audit.jsonl").read_text()
                .splitlines()]  # fmt: skip
    assert outcomes == ["ok", "ok", "rate_limited", "rate_limited", "ok", "unauthorized"]


def test_serve_starts_the_workers_from_the_app_factory_and_removes_the_rate_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import uvicorn

    monkeypatch.setenv("MEMORY_PIPELINE_FLEET_ROOT", str(tmp_path))
    monkeypatch.delenv(SETTINGS_ENV, raising=False)
    fleet(tmp_path, ["alice"])
    seen: dict[str, Any] = {}

    def fake_run(app: str, **kwargs: Any) -> None:
        raw = json.loads(os.environ[SETTINGS_ENV])
        folder = raw["rate_dir"]
        seen.update(kwargs, app=app, settings=raw, rate_dir_existed=bool(folder) and Path(folder).is_dir())

    monkeypatch.setattr(uvicorn, "run", fake_run)
    assert main(["fleet", "serve", "--port", "8799", "--workers", "3", "--rate", "7", "--burst", "9"]) == 0
    assert seen["app"] == "memory_pipeline.fleet.processes.cli:gateway_app" and seen["factory"] is True
    assert (seen["workers"], seen["port"], seen["host"]) == (3, 8799, "127.0.0.1")
    assert seen["settings"]["rate"] == 7.0 and seen["settings"]["burst"] == 9 and seen["rate_dir_existed"]
    assert not Path(seen["settings"]["rate_dir"]).exists()
    assert "3 worker process(es)" in capsys.readouterr().out
    assert main(["fleet", "serve", "--workers", "1"]) == 0 and seen["workers"] == 1
    assert seen["settings"]["rate_dir"] is None
    assert main(["fleet", "serve", "--workers", "0"]) == 2
    assert "--workers must be at least 1" in capsys.readouterr().err


def test_the_factory_builds_a_gateway_from_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_FLEET_ROOT", str(tmp_path))
    monkeypatch.setenv(SETTINGS_ENV, serving.settings(GatewayConfig(burst=3), 1, None))
    fleet(tmp_path, ["alice"])
    from memory_pipeline.fleet.processes.cli import gateway_app

    app = gateway_app()
    gateway = app.state.gateway
    assert gateway.config.burst == 3 and isinstance(gateway.limiter, RateLimiter) and gateway.root == tmp_path
