"""Small synthetic stores for the bring-your-own-embeddings tests: memories whose imported vectors group them
in a way their text does not, so a test can tell which vectors a night clustered on."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import dagster as dg
import numpy as np

from memory_pipeline.definitions import defs_with
from memory_pipeline.resources import EmbedderResource, EngineConfig, LLMResource, MemoryStoreResource
from memory_pipeline.resources.notifier import NotifierResource

NOW = datetime(2026, 11, 1, 3, 30, tzinfo=UTC)
OPENAI = "text-embedding-3-small"


def grouped_rows(
    groups: int = 4, per_group: int = 6, dim: int = 1536, seed: int = 7, model: str = OPENAI
) -> tuple[list[dict[str, Any]], list[list[str]]]:
    """JSONL rows with vectors near one random direction per group (cosine within a group ≈ 0.99, across
    ≈ 0) and one sentence for all, two words of one vocabulary apart, so text alone would not find these groups."""
    rng = np.random.default_rng(seed)
    rows: list[dict[str, Any]] = []
    members: list[list[str]] = []
    for g in range(groups):
        centre = rng.normal(size=dim)
        centre /= np.linalg.norm(centre)
        ids = []
        for k in range(per_group):
            vector = centre + rng.normal(scale=0.1 / np.sqrt(dim), size=dim)
            vector /= np.linalg.norm(vector)
            mid = f"m-{g}-{k}"
            ids.append(mid)
            words = f"check {len(rows) + 1}"  # unique, and one statement with its values (a summary keeps them all)
            rows.append(
                {
                    "id": mid,
                    # one statement for every group (text cannot tell them apart), made unique by two words
                    "content": f"The nightly report on the shared ingest queue looked as it did before, {words}.",
                    "importance": 1.0,
                    "created_at": (NOW - timedelta(days=3, minutes=g * per_group + k)).isoformat(),
                    "embedding": [round(float(x), 7) for x in vector],
                    "embedding_model": model,
                }
            )
        members.append(ids)
    return rows, members


def write_jsonl(path: Path, rows: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def resources(home: Path, embedder: EmbedderResource) -> dict[str, dg.ConfigurableResource]:
    return {
        "store": MemoryStoreResource(home=str(home)),
        "embedder": embedder,
        "llm": LLMResource(mode="offline"),
        "engine": EngineConfig(as_of=NOW.isoformat()),
        "notifier": NotifierResource(alerts_path=str(home / "reports" / "alerts.jsonl")),
    }


def run_night(
    home: Path,
    embedder: EmbedderResource,
    job: str = "nightly_consolidation",
    instance: dg.DagsterInstance | None = None,
) -> dg.ExecuteInProcessResult:
    """The real job, in process, with the project's resources (offline distiller, fixed clock)."""
    return (
        defs_with(resources(home, embedder))
        .resolve_job_def(job)
        .execute_in_process(instance=instance or dg.DagsterInstance.ephemeral(), raise_on_error=False)
    )


def log_lines(instance: dg.DagsterInstance, run_id: str) -> list[str]:
    """What the run's steps logged (context.log), as the UI and the CLI show it."""
    return [e.user_message for e in instance.all_logs(run_id) if e.user_message]


def report_of(home: Path, result: dg.ExecuteInProcessResult) -> dict[str, Any]:
    return json.loads((home / "reports" / f"compression-{result.run_id}.json").read_text(encoding="utf-8"))


def metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict[str, Any]:
    [event] = result.asset_materializations_for_node(asset)
    return {k: getattr(v, "value", v) for k, v in event.metadata.items()}
