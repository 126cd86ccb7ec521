"""One `memory-pipeline demo` for the session, and `memory-pipeline ui` left open on a copy of it for the whole
session (a pytest plugin, loaded by the root conftest): the demo for the doc tests (test_docs.py, fixture
`demo_home`) and the open UI for the run-storm test (ui/test_run_storm.py).

That test needs the UI, daemon included, open for 10 minutes. Sleeping 10 minutes inside it would add 10 minutes
to CI, so the UI is opened when the session starts running tests — only when the test is selected, i.e. when slow
tests run — and the test is moved to the end of the session. A background thread builds the demo workspace
(`memory-pipeline demo`, as a person would, in a process of its own), copies it with its run history, and starts
the UI on the copy; the other tests run meanwhile. By the time the test runs, the 10 minutes have usually passed,
and it waits only for what is left of them. The UI and every process it started are stopped by the test, and
again (if the test did not get that far) when the session ends. The doc tests wait for the same build (it is
usually done by the time they run) and copy it, so the session builds the demo once.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_pipeline.settings import REPO_ROOT
from memory_pipeline_tests.ui.server import DagsterDev, processes_with_env

FIXTURE = "demo_ui"  # the open UI
BUILT = "demo_home"  # the built demo alone (test_docs.py)
BUILD_TIMEOUT_S = 1200  # bounds the demo's build: ~1 min on a quiet 2-core machine
READY_TIMEOUT_S = 300  # bounds the UI's start-up (webserver up and the code location loaded)
ARTIFACTS = REPO_ROOT / "memory_pipeline_tests" / "artifacts"
# The demo as a person runs it (the default embedder, MiniLM), with no API key.
DEMO_ENV = {"MEMORY_PIPELINE_LLM": "offline", "MEMORY_PIPELINE_PROGRESS": "log"}
# conftest pins the journals' first day for in-process tests; the demo's own rule (its first transcript day) here,
# and the default embedder whatever the caller's environment says
UNSET = ("MEMORY_PIPELINE_JOURNAL_START", "MEMORY_PIPELINE_EMBEDDER")
KEY = pytest.StashKey["DemoUI"]()


class DemoUI:
    """The demo workspace built once, and `memory-pipeline ui` on a copy of it, started in a background thread."""

    def __init__(self, root: Path, open_ui: bool) -> None:
        self.root, self.open_ui = root, open_ui
        self.demo_home, self.demo_dagster = root / "demo" / "workspace", root / "demo" / "dagster_home"
        self.home, self.dagster_home = root / "ui" / "workspace", root / "ui" / "dagster_home"
        self.build_log = root / "demo-build.log"
        self.server: DagsterDev | None = None
        self.ready_at: float | None = None  # time.monotonic() when the UI answered with its code location loaded
        self.error: str | None = None
        self._build: subprocess.Popen[bytes] | None = None
        self._stopped = threading.Event()
        self._built = threading.Event()
        self._lock = threading.Lock()  # the UI is started, or the session stopped, never both at once
        self._thread = threading.Thread(target=self._open, name="demo-ui", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _open(self) -> None:
        try:
            self._build_demo()
            self._built.set()
            if self._stopped.is_set() or not self.open_ui:
                return
            shutil.copytree(self.demo_home, self.home)  # the copy the UI opens; the built demo stays as it was
            shutil.copytree(self.demo_dagster, self.dagster_home)  # with the demo's runs, as the UI would find them
            with self._lock:
                if self._stopped.is_set():
                    return
                self.server = DagsterDev(self.home, self.dagster_home, self.root / "dagster-dev.log", DEMO_ENV, UNSET)
            seconds = self.server.wait_ready(READY_TIMEOUT_S)
            self.ready_at = time.monotonic()
            print(f"demo UI ready in {seconds:.0f} s on {self.server.base}", file=sys.stderr)
        except BaseException as exc:  # reported by the test that needs the UI
            self.error = f"{type(exc).__name__}: {exc}"

    def _build_demo(self) -> None:
        self.demo_home.parent.mkdir(parents=True, exist_ok=True)
        drop = {*UNSET, "ANTHROPIC_API_KEY", "MEMORY_PIPELINE_WEBHOOK_URL"}
        env = {k: v for k, v in os.environ.items() if k not in drop} | DEMO_ENV
        env |= {"MEMORY_PIPELINE_HOME": str(self.demo_home), "DAGSTER_HOME": str(self.demo_dagster)}
        with self.build_log.open("wb") as log:
            self._build = subprocess.Popen([sys.executable, "-m", "memory_pipeline.cli", "demo"], env=env,
                                           stdout=log, stderr=subprocess.STDOUT, start_new_session=True)  # fmt: skip
            try:
                code = self._build.wait(timeout=BUILD_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                self._build.kill()
                self._build.wait(timeout=30)
                raise AssertionError(f"`memory-pipeline demo` not done after {BUILD_TIMEOUT_S} s") from None
        if code != 0 and not self._stopped.is_set():
            tail = self.build_log.read_text(errors="replace")[-3000:]
            raise AssertionError(f"`memory-pipeline demo` exited with {code}:\n{tail}")

    def wait_built(self, timeout: float) -> Path:
        """The built demo workspace (the build bounded on its own); copy it, never change it."""
        deadline = time.monotonic() + timeout
        while not self._built.is_set() and self._thread.is_alive() and time.monotonic() < deadline:
            self._built.wait(1.0)
        if not self._built.is_set():
            why = self.error or f"not done after {timeout:.0f} s"
            raise AssertionError(f"`memory-pipeline demo` was not built: {why}")
        return self.demo_home

    def wait_ready(self, timeout: float) -> DagsterDev:
        """Until the UI answers (the demo's build and the UI's start-up, each bounded on its own)."""
        self._thread.join(timeout)
        if self._thread.is_alive():
            raise AssertionError(f"the demo workspace and its UI were not ready {timeout:.0f} s after the test began")
        if self.error is not None or self.server is None or self.ready_at is None:
            raise AssertionError(f"the demo UI did not start: {self.error}")
        return self.server

    def processes(self) -> list[int]:
        return processes_with_env("DAGSTER_HOME", str(self.dagster_home)) if self.server is not None else []

    def stop(self) -> list[int]:
        """Stop the UI (DagsterDev.stop: SIGTERM, then SIGKILL to its process group) and the demo's build if it
        is still going; return the processes of the UI still alive afterwards (none, when the stop worked)."""
        with self._lock:
            self._stopped.set()
        if self._build is not None and self._build.poll() is None:
            self._build.kill()
        if self._thread.ident is not None:  # started
            self._thread.join(60)
        if self.server is not None and self.server.proc.poll() is None:
            self.server.stop()
        left = self.processes()
        deadline = time.monotonic() + 10  # processes dagster dev's own stop let go of, reaped by init
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = self.processes()
        return left

    def keep_logs(self) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for log in (self.root / "dagster-dev.log", self.build_log):
            if log.exists():
                shutil.copyfile(log, ARTIFACTS / f"demo-ui-{log.name}")


def _wanting(items: list[pytest.Item], fixture: str) -> list[pytest.Item]:
    return [item for item in items if fixture in getattr(item, "fixturenames", ())]


@pytest.hookimpl(trylast=True)  # after -m/-k have deselected: only a selected test opens the UI
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanting = _wanting(items, FIXTURE)
    if wanting:
        items[:] = [item for item in items if item not in wanting] + wanting  # last: the UI has had the session


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    if session.config.option.collectonly or not (_wanting(session.items, FIXTURE) or _wanting(session.items, BUILT)):
        return
    open_ui = bool(_wanting(session.items, FIXTURE))
    demo = session.config.stash[KEY] = DemoUI(Path(tempfile.mkdtemp(prefix="mp-demo-ui-")), open_ui)
    demo.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    demo = session.config.stash.get(KEY, None)
    if demo is None:
        return
    left = demo.stop()
    demo.keep_logs()
    shutil.rmtree(demo.root, ignore_errors=True)
    if left:
        print(f"\nwarning: the demo UI left processes {left}", file=sys.stderr)


@pytest.fixture(scope="session")
def demo_home(request: pytest.FixtureRequest) -> Path:
    """`memory-pipeline demo`, as a user runs it, built once for the session (copy it, never change it)."""
    demo = request.config.stash.get(KEY, None)
    if demo is None:
        pytest.fail("the demo was not built for this session (demo_ui.pytest_runtestloop)")
    return demo.wait_built(BUILD_TIMEOUT_S)


@pytest.fixture(scope="session")
def demo_ui(request: pytest.FixtureRequest) -> Iterator[DemoUI]:
    demo = request.config.stash.get(KEY, None)
    if demo is None:
        pytest.fail("the demo UI was not opened for this session (demo_ui.pytest_collection_modifyitems)")
    yield demo
