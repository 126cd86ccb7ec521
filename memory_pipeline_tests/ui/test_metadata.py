import re
from pathlib import Path

import dagster as dg
import pytest

from memory_pipeline.definitions import defs_with
from memory_pipeline.defs.abstraction.schedules import PIPELINE
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.resources.embedder import HASHING
from memory_pipeline.sample_data import write_sample_jsonl
from memory_pipeline.store import MemoryStore
from memory_pipeline.store.importers import import_jsonl
from memory_pipeline_tests.conftest import SAMPLE_NOW, resources_for

ABSTRACTION = [a.key.to_user_string() for a in PIPELINE]  # in the seed diagram's order


@pytest.fixture(scope="module")
def night(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dg.ExecuteInProcessResult]:
    """The sample store, one nightly run with the quick hashing embedder (the metadata, not the vectors, matter)."""
    home = tmp_path_factory.mktemp("ui_meta")
    write_sample_jsonl(home / "sample.jsonl", SAMPLE_NOW)
    import_jsonl(MemoryStore(home / "memory.duckdb"), home / "sample.jsonl")
    resources = resources_for(home) | {"embedder": EmbedderResource(model=HASHING)}
    job = defs_with(resources).resolve_job_def("nightly_consolidation")
    result = job.execute_in_process(instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    assert result.success
    return home, result


def _metadata(result: dg.ExecuteInProcessResult, asset: str) -> dict:
    (mat,) = result.asset_materializations_for_node(asset)
    return mat.metadata


def test_every_abstraction_asset_has_a_description_kinds_owner_and_component_tag() -> None:
    specs = {s.key.to_user_string(): s for s in defs_with(resources_for(Path("."))).resolve_all_asset_specs()}
    for name in ABSTRACTION:
        spec = specs[name]
        assert spec.description and len(spec.description) > 40, name
        assert spec.group_name == "abstraction" and spec.owners == ["team:agent-memory"], name
        assert spec.kinds and spec.tags.get("component"), name
    assert "anthropic" in specs["distillations"].kinds
    assert "duckdb" in specs["archive_updates"].kinds


def test_report_metadata_is_numeric_where_the_ui_plots_it(night: tuple[Path, dg.ExecuteInProcessResult]) -> None:
    home, result = night
    meta = _metadata(result, "report")
    for key in ("tokens_before", "tokens_after", "clusters_compressed"):
        assert isinstance(meta[key], dg.IntMetadataValue), key
    for key in ("token_reduction_pct", "estimated_cost_usd"):
        assert isinstance(meta[key], dg.FloatMetadataValue), key
    assert meta["tokens_after"].value < meta["tokens_before"].value
    assert isinstance(meta["report"], dg.MarkdownMetadataValue) and "| verdict | PASS |" in meta["report"].value
    path = Path(meta["report_path"].value)
    assert isinstance(meta["report_path"], dg.PathMetadataValue) and path.parent == home / "reports" and path.exists()


def test_cluster_tables_and_histograms_agree_with_the_run(night: tuple[Path, dg.ExecuteInProcessResult]) -> None:
    _, result = night
    found = result.output_for_node("clusters")
    clusters_meta = _metadata(result, "clusters")
    sizes = clusters_meta["cluster_sizes"].value
    assert sizes.startswith(f"```\nmembers per cluster (n={len(found)})")
    counted = sum(int(line.split()[-1]) for line in sizes.strip("`\n").splitlines()[1:])
    assert counted == len(found)
    assert clusters_meta["median_cluster_size"].value >= 3

    outcomes = result.output_for_node("compressed_memories")
    meta = _metadata(result, "compressed_memories")
    table = meta["cluster_outcomes"].value.splitlines()
    accepted = [o for o in outcomes if o.distillation is not None]
    assert len(table) == 2 + min(len(outcomes), 50) + (len(outcomes) > 50)
    best = max(accepted, key=lambda o: o.distillation.compression_ratio)
    assert table[2].startswith(f"| {best.cluster.cluster_id} | {best.cluster.member_count} |")
    assert f"| {best.distillation.compression_ratio:.2f} | pending |" in table[2]  # phase 1: not archived yet
    ratios = meta["compression_ratios"].value
    assert re.search(rf"compression ratio \(n={len(accepted)}\)", ratios)
    mean = sum(o.distillation.compression_ratio for o in accepted) / len(accepted)
    assert meta["avg_compression_ratio"].value == pytest.approx(mean, abs=1e-3)
