"""A real `dagster dev`, started through `memory-pipeline ui` on a free loopback port, for the slow UI tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Collection
from pathlib import Path
from typing import Any

import requests

LOCATION = "memory_pipeline"
REPO = "__repository__"
TERMINAL = {"SUCCESS", "FAILURE", "CANCELED"}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class UIClient:
    """A running `dagster dev` as any process sees it: its address and its log (the UI of ui/demo_ui.py is started
    by one pytest worker and read by the test on another)."""

    def __init__(self, base: str, log_path: Path) -> None:
        self.base, self.log_path = base, log_path

    def log_tail(self, lines: int = 60) -> str:
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def graphql(self, query: str, variables: dict[str, Any] | None = None, timeout: float = 60) -> dict[str, Any]:
        payload = {"query": query, "variables": variables or {}}
        response = requests.post(f"{self.base}/graphql", json=payload, timeout=timeout)
        response.raise_for_status()
        body = response.json()
        if body.get("errors"):
            raise AssertionError(f"GraphQL errors: {body['errors']}")
        return body["data"]


class DagsterDev(UIClient):
    def __init__(
        self, home: Path, dagster_home: Path, log_path: Path, env: dict[str, str], unset: Collection[str] = ()
    ) -> None:
        self.port = free_port()
        super().__init__(f"http://127.0.0.1:{self.port}", log_path)
        self._log = log_path.open("w")
        # the sample store is built around the seed's 0.82 (as in conftest.resources_for): pinned, so MiniLM's
        # shipped default can move without changing what the UI tests look for
        dropped = {"ANTHROPIC_API_KEY", "MEMORY_PIPELINE_WEBHOOK_URL", *unset}  # `unset`: more of ours to leave out
        inherited = {k: v for k, v in os.environ.items() if k not in dropped}
        full_env = {"COMPRESSION_SIMILARITY_THRESHOLD": "0.82", **inherited, **env,
                    "MEMORY_PIPELINE_HOME": str(home), "DAGSTER_HOME": str(dagster_home)}  # fmt: skip
        # its own session, so that stop() can end dagster dev's webserver, daemon, code server and runs together
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "memory_pipeline.cli", "ui", "--port", str(self.port)],
            env=full_env,
            stdout=self._log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def log_tail(self, lines: int = 60) -> str:
        self._log.flush()
        return super().log_tail(lines)

    def wait_ready(self, timeout: float = 600) -> float:
        """Until the webserver answers and the code location is loaded; returns the seconds it took."""
        started = time.monotonic()
        deadline = started + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError(f"dagster dev exited with {self.proc.returncode}:\n{self.log_tail()}")
            try:
                data = self.graphql(
                    """{ workspaceOrError { ... on Workspace { locationEntries { name loadStatus
                         locationOrLoadError { __typename ... on PythonError { message } } } } } }""",
                    timeout=10,
                )
            except (requests.ConnectionError, requests.Timeout, requests.HTTPError):
                time.sleep(1)
                continue
            entries = {e["name"]: e for e in data["workspaceOrError"].get("locationEntries", [])}
            entry = entries.get(LOCATION)
            if entry and entry["loadStatus"] == "LOADED":
                loaded = entry["locationOrLoadError"] or {}
                if loaded.get("__typename") == "PythonError":
                    raise AssertionError(f"code location failed to load: {loaded['message']}")
                if loaded.get("__typename") == "RepositoryLocation":
                    return time.monotonic() - started
            time.sleep(1)
        raise AssertionError(f"dagster dev not ready after {timeout}s:\n{self.log_tail()}")

    def stop(self) -> None:
        """SIGTERM to dagster dev (it shuts its children down), then SIGKILL to whatever of its group is left."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)  # its own clean stop, slower beside load; SIGKILL after
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait(timeout=60)
        self._log.close()


def processes_with_env(name: str, value: str) -> list[int]:
    """Live processes of this user whose environment has `name=value`: with a DAGSTER_HOME of the test's own, every
    process a `dagster dev` started (webserver, daemon, code server, run workers), whatever its process group."""
    wanted = f"{name}={value}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if (entry / "stat").read_text().rsplit(")", 1)[1].split()[0] == "Z":
                continue
            if wanted in (entry / "environ").read_bytes().split(b"\0"):
                found.append(int(entry.name))
        except (OSError, IndexError):
            continue
    return found


def wait_for_run(client: Any, run_id: str, timeout: float = 900) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = client.get_run_status(run_id).value
        if status in TERMINAL:
            return status
        time.sleep(1)
    raise AssertionError(f"run {run_id} not finished after {timeout}s")


METADATA_FIELDS = """label __typename
    ... on IntMetadataEntry { intValue }
    ... on FloatMetadataEntry { floatValue }
    ... on PathMetadataEntry { path }
    ... on MarkdownMetadataEntry { mdStr }
    ... on TextMetadataEntry { text }"""


def latest_materialization(server: DagsterDev, key: list[str]) -> dict[str, Any]:
    data = server.graphql(
        f"""query($key: AssetKeyInput!) {{ assetOrError(assetKey: $key) {{ ... on Asset {{
              assetMaterializations(limit: 1) {{ runId metadataEntries {{ {METADATA_FIELDS} }} }} }} }} }}""",
        {"key": {"path": key}},
    )
    (mat,) = data["assetOrError"]["assetMaterializations"]
    values = {}
    for e in mat["metadataEntries"]:
        values[e["label"]] = next(
            (e[f] for f in ("intValue", "floatValue", "path", "mdStr", "text") if f in e), e["__typename"]
        )
    return {"run_id": mat["runId"], "metadata": values}
