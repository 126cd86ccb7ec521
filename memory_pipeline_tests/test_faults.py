"""Hold points (memory_pipeline.faults): a process stops where a test asked, and only the one it asked for."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from memory_pipeline import faults


def test_a_scoped_hold_stops_only_its_scope_and_waits_for_the_release(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(faults.HOLD_ENV, f"night_phase1@slow:{tmp_path}")
    faults.hold_point("night_phase1", "fast-0")  # another agent's night passes straight through
    faults.hold_point("night_lease_held", "slow")  # and so does another point
    assert not (tmp_path / "night_phase1.reached").exists()

    monkeypatch.setattr(faults, "HOLD_LIMIT_S", 600.0)  # far beyond this test: only the release ends the hold
    held = threading.Thread(target=faults.hold_point, args=("night_phase1", "slow"))
    held.start()
    deadline = time.monotonic() + 300  # bounds the thread's way to the hold (minutes: load, not a target)
    while not (tmp_path / "night_phase1.reached").exists():
        assert time.monotonic() < deadline, "the scoped hold was never reached"
        time.sleep(0.01)
    assert held.is_alive()  # stopped there, waiting for the release
    (tmp_path / "night_phase1.release").touch()
    held.join(120)
    assert not held.is_alive() and not (tmp_path / "night_phase1.gave_up").exists()


def test_a_forgotten_hold_gives_up_after_its_limit_and_says_so(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(faults.HOLD_ENV, f"mcp_context:{tmp_path}")
    monkeypatch.setattr(faults, "HOLD_LIMIT_S", 0.05)
    faults.hold_point("mcp_context")  # no scope asked: any caller holds
    assert (tmp_path / "mcp_context.reached").exists() and (tmp_path / "mcp_context.gave_up").exists()
