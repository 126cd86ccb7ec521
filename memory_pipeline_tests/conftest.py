import os
import shutil
from datetime import UTC, datetime
from pathlib import Path

# Journal partitions start at a workspace's first transcript day; the code location is loaded once per process,
# so the tests (LoCoMo's 2022–2023 days, the 2026 sample, temporary workspaces) pin one early first day.
os.environ.setdefault("MEMORY_PIPELINE_JOURNAL_START", "2022-01-01")
# The knowledge-retention probes ask the read path hundreds of questions per night; the suite runs many nights to
# test other things, so they are off unless a test turns them on (abstraction/test_retention.py does).
os.environ.setdefault("MEMORY_PIPELINE_RETENTION_PROBES", "0")

import dagster as dg
import pytest

from memory_pipeline.definitions import defs_with
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.notifier import NotifierResource
from memory_pipeline.sample_data import write_sample_jsonl
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl

SAMPLE_NOW = datetime(2026, 11, 1, 3, 30, tzinfo=UTC)


def resources_for(home: Path, **engine: object) -> dict[str, dg.ConfigurableResource]:
    return {
        "store": MemoryStoreResource(home=str(home)),
        "embedder": EmbedderResource(),
        "llm": LLMResource(mode="offline"),
        # the sample store is built around the seed's 0.82: tests pin it, so MiniLM's shipped default (0.74,
        # embedding/defaults.json) can move without changing what they assert
        "engine": EngineConfig(as_of=SAMPLE_NOW.isoformat(), **{"similarity_threshold": 0.82, "retention_probes": 0,
                                                                 **engine}),  # type: ignore[arg-type]
        "notifier": NotifierResource(alerts_path=str(home / "reports" / "alerts.jsonl")),
    }


def run_job(
    home: Path,
    job: str = "nightly_consolidation",
    run_config: dict | None = None,
    instance: dg.DagsterInstance | None = None,
    **engine: object,
):
    defs = defs_with(resources_for(home, **engine))
    return defs.resolve_job_def(job).execute_in_process(
        instance=instance or dg.DagsterInstance.ephemeral(), run_config=run_config or {}, raise_on_error=False
    )


@pytest.fixture(scope="session")
def embedded_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample workspace, imported and embedded once per session (the slow part)."""
    home = tmp_path_factory.mktemp("sample")
    sample = write_sample_jsonl(home / "sample.jsonl", SAMPLE_NOW)
    assert sample >= 1500
    import_jsonl(MemoryStore(home / "memory.duckdb"), home / "sample.jsonl")
    result = run_job(home, "consolidation_dry_run")  # no embeddings yet: builds nothing, writes nothing
    assert result.success
    from memory_pipeline.defs.abstraction.cluster_finder import memory_embeddings

    materialized = dg.materialize([memory_embeddings], resources=resources_for(home))
    assert materialized.success
    return home


@pytest.fixture
def workspace(embedded_sample: Path, tmp_path: Path) -> Path:
    home = tmp_path / "workspace"
    shutil.copytree(embedded_sample, home)
    return home


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Files that hold slow tests first, each file's tests kept together: scripts/test.sh hands each file to one
    pytest-xdist worker in this order, and starting the long files first leaves no long file for the end."""
    slow = {item.path for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: item.path not in slow)


# `memory-pipeline ui` on the demo workspace for the whole session, when the run-storm test is selected
pytest_plugins = ("memory_pipeline_tests.ui.demo_ui",)
