"""`memory-pipeline ui` (daemon included) left open on the demo workspace for 10 minutes never
has two runs of one job in flight, and stops launching once nothing changes.

The UI is opened on a copy of the demo workspace when the session starts (ui/demo_ui.py) and this test runs last,
so the 10 minutes pass while the other tests run. Everything is asserted from the instance's own records: each
run's creation and end (queued counts as in flight), and the sensors' ticks; the test's clock only bounds waits.
"""

from __future__ import annotations

import time

import dagster as dg
import pytest

from memory_pipeline_tests.ui.demo_ui import BUILD_TIMEOUT_S, READY_TIMEOUT_S, DemoView
from memory_pipeline_tests.ui.run_records import Quiet, RunSpan, Tick, overlapping, quiet, run_spans, sensor_ticks
from memory_pipeline_tests.ui.server import LOCATION, REPO, UIClient

pytestmark = pytest.mark.slow

OPEN_S = 600  # the UI stays open this long, by the daemon's ticks (first to last)
QUIET_S = 300  # and has launched nothing, with nothing in flight, for this long at the end (≥ every sensor's interval)
SETTLE_LIMIT_S = 1800  # bounds the wait after the UI opened: a UI that never settles fails here
SENSORS = """query($repo: RepositorySelector!) { sensorsOrError(repositorySelector: $repo) {
  ... on Sensors { results { name sensorState { status } } } } }"""


def running_sensors(server: UIClient) -> set[str]:
    """The sensors the UI shows running (on by default, or turned on): each must keep ticking."""
    repo = {"repositoryName": REPO, "repositoryLocationName": LOCATION}
    results = server.graphql(SENSORS, {"repo": repo})["sensorsOrError"]["results"]
    return {s["name"] for s in results if s["sensorState"]["status"] == "RUNNING"}


def _table(spans: list[RunSpan]) -> str:
    return "\n".join(s.describe() for s in spans)


def _failed(ticks: dict[str, list[Tick]]) -> list[Tick]:
    return [t for ts in ticks.values() for t in ts if t.status == "FAILURE"]


def _read(demo: DemoView) -> tuple[list[RunSpan], dict[str, list[Tick]]]:
    with dg.DagsterInstance.from_config(str(demo.dagster_home)) as instance:
        return run_spans(instance), sensor_ticks(instance)


def _settled(state: Quiet) -> bool:
    return state.observed >= OPEN_S and state.seconds >= QUIET_S and not state.silent and not state.unfinished


def test_ui_left_open_on_the_demo_never_runs_one_job_twice_at_once_and_stops_launching(demo_ui: DemoView) -> None:
    server = demo_ui.wait_ready(BUILD_TIMEOUT_S + READY_TIMEOUT_S)  # usually long done: the session had it
    try:
        expected = running_sensors(server)
        assert "rollups_sensor" in expected and "search_index_sensor" in expected, expected
        # Waits until the records show the UI open OPEN_S and quiet QUIET_S (usually already true: the UI opened
        # when the session started), failing at once on two runs of one job in flight.
        assert demo_ui.ready_at is not None
        deadline = demo_ui.ready_at + SETTLE_LIMIT_S
        while True:
            assert demo_ui.alive(), f"the UI exited:\n{server.log_tail()}"
            spans, ticks = _read(demo_ui)
            pairs = overlapping(spans)
            assert not pairs, "two runs of one job in flight at once:\n" + "\n".join(
                f"{a.describe()}\n  and {b.describe()}" for a, b in pairs
            )
            state = quiet(spans, ticks, expected)
            if _settled(state) or time.monotonic() > deadline:
                break
            time.sleep(10)
        assert _settled(state), (
            f"not settled {SETTLE_LIMIT_S} s after the UI opened: ticks over {state.observed:.0f} s "
            f"(want {OPEN_S}), {state.seconds:.0f} s without a launch (want {QUIET_S}), sensors with no tick since "
            f"the last run: {state.silent}, unfinished: {[s.describe() for s in state.unfinished]}\n{_table(spans)}"
        )

        launched = [s for s in spans if s.launched_by.startswith("sensor")]
        print(f"{len(spans)} runs ({len(launched)} launched by sensors); quiet for {state.seconds:.0f} s of "
              f"{state.observed:.0f} s of ticks\n{_table(spans)}")  # fmt: skip
        # opening the demo has work to do (its Cores and Spheres, the search index after them): the runs it
        # launched are what the no-overlap check above was about, and they all succeeded
        assert launched, f"the UI launched no run on the demo workspace:\n{_table(spans)}"
        assert all(s.status == "SUCCESS" for s in spans), _table(spans)
        # after the last run, every sensor kept ticking without asking for anything (a tick that asks launches a
        # run, which the quiet span above rules out) and without failing
        assert not _failed(ticks), [f"{t.sensor}: {t.reason}" for t in _failed(ticks)]
        assert demo_ui.processes(), "no process with the UI's DAGSTER_HOME: the check after the stop would be void"
    finally:
        left = demo_ui.stop()
    assert left == [], f"processes of the UI left after its stop: {left}"
