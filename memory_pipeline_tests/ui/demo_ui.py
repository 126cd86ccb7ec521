"""One `memory-pipeline demo` for the session, and `memory-pipeline ui` left open on a copy of it for the whole
session (a pytest plugin, loaded by the root conftest): the demo for the doc tests (test_docs.py, fixture
`demo_home`) and the open UI for the run-storm test (ui/test_run_storm.py).

That test needs the UI, daemon included, open for 10 minutes. Sleeping 10 minutes inside it would add 10 minutes
to CI, so the UI is opened when the session starts running tests — only when the test is selected, i.e. when slow
tests run — and the test is moved to the end of the session. A background thread builds the demo workspace
(`memory-pipeline demo`, as a person would, in a process of its own), copies it with its run history, and starts
the UI on the copy; the other tests run meanwhile. By the time the test runs, the 10 minutes have usually passed,
and it waits only for what is left of them. The doc tests wait for the same build (it is usually done by the time
they run) and copy it, so the session builds the demo once.

With pytest-xdist, one worker (gw0) builds the demo and opens the UI for every worker. It says how far it got in
files in a folder the whole session shares (`DemoView` reads them), so a test on any worker can wait for the
build, read the UI and stop it. The UI and every process it started are stopped by the test, and again (if no
test did) when the building worker's session ends — on another worker's test's signal, or when its bound ran out.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from memory_pipeline.settings import REPO_ROOT
from memory_pipeline_tests.ui.server import DagsterDev, UIClient, processes_with_env

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
ROOT_ENV = "MEMORY_PIPELINE_TEST_DEMO_ROOT"  # the session's folder: set by the controller, inherited by its workers
OWNER = "gw0"  # the pytest-xdist worker that builds the demo (without xdist: the one process)
OWNER_START_S = 120  # bounds a test's wait for the building worker to begin (workers start a few seconds apart)
# bounds how long the building worker, its own tests done, keeps the UI open for the run-storm test on another
# worker: the build, the UI's start-up and that test's own limit on settling (test_run_storm.SETTLE_LIMIT_S)
RELEASE_TIMEOUT_S = BUILD_TIMEOUT_S + READY_TIMEOUT_S + 1800 + 120


class DemoUI:
    """The demo workspace built once, and `memory-pipeline ui` on a copy of it, started in a background thread.
    What it reached is written to files in `root` for `DemoView`: started, built (or error), ui.json."""

    def __init__(self, root: Path, open_ui: bool) -> None:
        self.root, self.open_ui = root, open_ui
        self.view = DemoView(root)
        self.build_log = root / "demo-build.log"
        self.server: DagsterDev | None = None
        self._build: subprocess.Popen[bytes] | None = None
        self._stopped = threading.Event()
        self._lock = threading.Lock()  # the UI is started, or the session stopped, never both at once
        self._thread = threading.Thread(target=self._open, name="demo-ui", daemon=True)

    def start(self) -> None:
        (self.root / "started").touch()
        self._thread.start()

    def _open(self) -> None:
        view = self.view
        try:
            self._build_demo()
            _write(self.root / "built", "")
            if self._stopped.is_set() or not self.open_ui:
                return
            shutil.copytree(view.demo_home, view.home)  # the copy the UI opens; the built demo stays as it was
            shutil.copytree(view.demo_dagster, view.dagster_home)  # with the demo's runs, as the UI would find them
            with self._lock:
                if self._stopped.is_set():
                    return
                self.server = DagsterDev(view.home, view.dagster_home, view.ui_log, DEMO_ENV, UNSET)
            seconds = self.server.wait_ready(READY_TIMEOUT_S)
            # time.monotonic() is the machine's clock since boot (CLOCK_MONOTONIC): every worker reads it alike
            ui = {"base": self.server.base, "pid": self.server.proc.pid, "ready_at": time.monotonic()}
            _write(self.root / "ui.json", json.dumps(ui))
            print(f"demo UI ready in {seconds:.0f} s on {self.server.base}", file=sys.stderr)
        except BaseException as exc:  # reported by the test that needs the UI
            _write(self.root / "error", f"{type(exc).__name__}: {exc}")

    def _build_demo(self) -> None:
        self.view.demo_home.parent.mkdir(parents=True, exist_ok=True)
        drop = {*UNSET, "ANTHROPIC_API_KEY", "MEMORY_PIPELINE_WEBHOOK_URL"}
        env = {k: v for k, v in os.environ.items() if k not in drop} | DEMO_ENV
        env |= {"MEMORY_PIPELINE_HOME": str(self.view.demo_home), "DAGSTER_HOME": str(self.view.demo_dagster)}
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

    def wait_released(self) -> None:
        """Under pytest-xdist, the run-storm test may run on another worker after this one's tests are done: keep
        the UI open until a test has stopped it, it is gone, or RELEASE_TIMEOUT_S has passed."""
        deadline = time.monotonic() + RELEASE_TIMEOUT_S
        while self._thread.is_alive() and time.monotonic() < deadline:
            self._thread.join(1.0)
        while self.server is not None and self.server.proc.poll() is None and time.monotonic() < deadline:
            if (self.root / "stopped.json").exists():
                return
            time.sleep(1.0)

    def stop(self) -> list[int]:
        """Stop the UI (DagsterDev.stop: SIGTERM, then SIGKILL to its process group) and the demo's build if it
        is still going; return the processes of the UI still alive afterwards (none, when the stop worked)."""
        with self._lock:
            self._stopped.set()
        if self._build is not None and self._build.poll() is None:
            self._build.kill()
        if self._thread.ident is not None:  # started
            self._thread.join(60)
        if self.server is not None:
            self.server.stop()  # also reaps it when a test on another worker stopped it
        return self.view.wait_gone()

    def keep_logs(self) -> None:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        for log in (self.view.ui_log, self.build_log):
            if log.exists():
                shutil.copyfile(log, ARTIFACTS / f"demo-ui-{log.name}")


class DemoView:
    """The session's demo and UI as a test sees them, from any pytest-xdist worker: it waits for what the building
    worker (DemoUI) wrote, reads the UI and can stop it."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.demo_home, self.demo_dagster = root / "demo" / "workspace", root / "demo" / "dagster_home"
        self.home, self.dagster_home = root / "ui" / "workspace", root / "ui" / "dagster_home"
        self.ui_log = root / "dagster-dev.log"
        self.ready_at: float | None = None  # time.monotonic() when the UI answered with its code location loaded
        self.pid: int | None = None  # `memory-pipeline ui`, the leader of the UI's process group

    def _wait_for(self, name: str, timeout: float) -> Path:
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if (self.root / "error").exists():
                raise AssertionError(f"the demo UI did not start: {(self.root / 'error').read_text()}")
            if (self.root / name).exists():
                return self.root / name
            if not (self.root / "started").exists() and time.monotonic() > started + OWNER_START_S:
                raise AssertionError(f"no pytest worker began building the demo in {OWNER_START_S} s (it is {OWNER})")
            time.sleep(1.0)
        raise AssertionError(f"the demo UI: {name!r} not reached after {timeout:.0f} s")

    def wait_built(self, timeout: float) -> Path:
        """The built demo workspace (the build bounded on its own); copy it, never change it."""
        self._wait_for("built", timeout)
        return self.demo_home

    def wait_ready(self, timeout: float) -> UIClient:
        """Until the UI answers (the demo's build and the UI's start-up, each bounded on its own)."""
        ui = json.loads(self._wait_for("ui.json", timeout).read_text())
        self.ready_at, self.pid = ui["ready_at"], ui["pid"]
        return UIClient(ui["base"], self.ui_log)

    def alive(self) -> bool:
        """`memory-pipeline ui` still runs (a zombie its starter has not reaped yet has exited)."""
        try:
            state = Path(f"/proc/{self.pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return False
        return state != "Z"

    def processes(self) -> list[int]:
        return processes_with_env("DAGSTER_HOME", str(self.dagster_home))

    def stop(self) -> list[int]:
        """SIGTERM to the UI's process group (dagster dev shuts its children down), SIGKILL to what is left after
        10 s; returns the processes of the UI still alive afterwards, and tells the building worker."""
        if self.pid is None and (self.root / "ui.json").exists():
            self.pid = json.loads((self.root / "ui.json").read_text())["pid"]
        if self.pid is not None:
            _signal_group(self.pid, signal.SIGTERM)
            deadline = time.monotonic() + 10
            while self.alive() and time.monotonic() < deadline:
                time.sleep(0.2)
            _signal_group(self.pid, signal.SIGKILL)
        left = self.wait_gone()
        _write(self.root / "stopped.json", json.dumps({"left": left}))
        return left

    def wait_gone(self) -> list[int]:
        """The UI's processes still alive after up to 60 s (processes dagster dev's own stop let go of are reaped
        by init meanwhile; a bound beside load, not a target: it returns as soon as none is left)."""
        left = self.processes()
        deadline = time.monotonic() + 60
        while left and time.monotonic() < deadline:
            time.sleep(0.2)
            left = self.processes()
        return left


def _write(path: Path, text: str) -> None:
    """Whole or not at all: another worker may read it at any moment."""
    partial = path.with_name(f".{path.name}.partial")
    partial.write_text(text)
    partial.replace(path)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _wanting(items: list[pytest.Item], fixture: str) -> list[pytest.Item]:
    return [item for item in items if fixture in getattr(item, "fixturenames", ())]


def _root() -> Path:
    return Path(os.environ[ROOT_ENV])


def pytest_configure(config: pytest.Config) -> None:
    if not hasattr(config, "workerinput"):  # the controller (or pytest without xdist): its workers inherit it
        os.environ[ROOT_ENV] = tempfile.mkdtemp(prefix="mp-demo-ui-")


@pytest.hookimpl(trylast=True)  # after -m/-k have deselected: only a selected test opens the UI
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanting = _wanting(items, FIXTURE)
    if wanting:
        items[:] = [item for item in items if item not in wanting] + wanting  # last: the UI has had the session


@pytest.hookimpl(tryfirst=True)
def pytest_runtestloop(session: pytest.Session) -> None:
    if session.config.option.collectonly or not (_wanting(session.items, FIXTURE) or _wanting(session.items, BUILT)):
        return
    if os.environ.get("PYTEST_XDIST_WORKER", OWNER) != OWNER:  # one worker builds it for the session
        return
    demo = session.config.stash[KEY] = DemoUI(_root(), bool(_wanting(session.items, FIXTURE)))
    demo.start()


def pytest_sessionfinish(session: pytest.Session) -> None:
    demo = session.config.stash.get(KEY, None)
    if demo is not None:
        if demo.open_ui and "PYTEST_XDIST_WORKER" in os.environ:
            demo.wait_released()
        left = demo.stop()
        demo.keep_logs()
        if left:
            print(f"\nwarning: the demo UI left processes {left}", file=sys.stderr)
    if not hasattr(session.config, "workerinput"):  # the last process of the session to finish
        shutil.rmtree(_root(), ignore_errors=True)


@pytest.fixture(scope="session")
def demo_home() -> Path:
    """`memory-pipeline demo`, as a user runs it, built once for the session (copy it, never change it)."""
    return DemoView(_root()).wait_built(BUILD_TIMEOUT_S)


@pytest.fixture(scope="session")
def demo_ui() -> Iterator[DemoView]:
    yield DemoView(_root())
