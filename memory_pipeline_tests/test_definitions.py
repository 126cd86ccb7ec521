import importlib
import pkgutil
from pathlib import Path

import dagster as dg
import pytest
import yaml

from memory_pipeline import definitions
from memory_pipeline.resources import EngineConfig
from memory_pipeline.resources.store import POOL
from memory_pipeline.settings import REPO_ROOT, SettingsError, env_overrides

defs = definitions.defs()
PIPELINE = ["exact_duplicates", "fact_versions", "validity_updates", "memory_embeddings", "eligible_memories",
            "clusters", "distillations", "compressed_memories", "archive_updates", "atoms", "report"]


def test_definitions_load_and_the_graph_reads_like_the_seed_diagram() -> None:
    dg.Definitions.validate_loadable(defs)
    graph = defs.resolve_asset_graph()
    for upstream, downstream in zip(PIPELINE, PIPELINE[1:], strict=False):
        parents = {k.to_user_string() for k in graph.get(dg.AssetKey(downstream)).parent_keys}
        assert upstream in parents, (upstream, downstream)
    assert set(defs.resolve_job_def("consolidation_dry_run").graph.node_names()) == {"eligible_memories", "clusters"}
    for job in ("nightly_consolidation", "consolidation_dry_run"):  # runs launched from the UI or schedule
        assert defs.resolve_job_def(job).run_config == {"execution": {"config": {"in_process": {}}}}


def test_every_store_writer_shares_the_single_writer_pool() -> None:
    writers = {"exact_duplicates", "validity_updates", "memory_embeddings", "clusters", "compressed_memories",
               "archive_updates", "atoms", "report"}  # clusters saves the threshold graph in runs that also archive
    for name in PIPELINE:
        assets_def = defs.resolve_assets_def(name)
        spec = next(iter(assets_def.specs))
        assert spec.group_name == "abstraction" and spec.description, name
        assert (assets_def.op.pool == POOL) == (name in writers), name


def test_every_asset_renders_its_badges() -> None:
    graph = defs.resolve_asset_graph()
    keys = graph.get_all_asset_keys()
    assert len(keys) > len(PIPELINE)  # the other domains are loaded too
    for key in keys:
        node = graph.get(key)
        name = key.to_user_string()
        assert node.description and node.group_name and node.kinds, name
        assert node.owners == ["team:agent-memory"] and node.tags["seed"].isdigit(), name


def test_schedule_is_seed_time_in_new_york() -> None:
    schedule = defs.resolve_schedule_def("nightly_consolidation_schedule")
    assert schedule.cron_schedule == "30 3 * * *"
    assert schedule.execution_timezone == "America/New_York"


def test_instance_config_limits_the_pool_to_one() -> None:
    config = yaml.safe_load((REPO_ROOT / "dagster.yaml").read_text())
    assert config["concurrency"]["pools"]["default_limit"] == 1


def test_seed_env_vars_configure_the_engine() -> None:
    env = {"COMPRESSION_SIMILARITY_THRESHOLD": "0.9", "COMPRESSION_MIN_CLUSTER_SIZE": "4",
           "COMPRESSION_MAX_RATIO": "2.0"}
    engine = EngineConfig(**env_overrides(env))
    assert (engine.similarity_threshold, engine.min_cluster_size, engine.min_compression_ratio) == (0.9, 4, 2.0)
    assert EngineConfig().fingerprint_ttl_days == 7.0
    # unset: the embedder's default; a model not in embedding/defaults.json gets the seed's 0.82, single
    assert EngineConfig().similarity_threshold is None
    unknown = EngineConfig().clustering_choice("some-plugin-model")
    assert (unknown.threshold, unknown.linkage) == (0.82, "single") and "general default" in unknown.reason
    assert engine.clustering_choice("some-plugin-model").threshold == 0.9


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"COMPRESSION_SIMILARITY_THRESHOLD": "high"}, "COMPRESSION_SIMILARITY_THRESHOLD='high': expected float"),
        ({"COMPRESSION_SIMILARITY_THRESHOLD": "1.5"}, "must be ≤ 1"),
        ({"COMPRESSION_CRITICAL_FLOOR": "1.0"}, "COMPRESSION_CRITICAL_FLOOR='1.0': must be ≥ 2"),
        ({"COMPRESSION_MIN_CLUSTER_SIZE": "2.5"}, "expected int"),
        ({"COMPRESSION_FRESHNESS_HOURS": "nan"}, "must be finite"),
    ],
)
def test_bad_settings_name_the_variable(env: dict[str, str], message: str) -> None:
    with pytest.raises(SettingsError, match=message):
        env_overrides(env)


def test_every_object_in_the_defs_folders_is_in_the_location() -> None:
    """Nothing is registered by hand: whatever a module under memory_pipeline/defs/ defines, Dagster's loader
    finds, and every domain folder contributes (a folder the loader skipped would show up here)."""
    import memory_pipeline.defs as root

    graph = defs.resolve_asset_graph()
    loaded_jobs = {job.name for job in defs.get_repository_def().get_all_jobs()}
    contributed: dict[str, int] = {}
    for info in pkgutil.walk_packages(root.__path__, "memory_pipeline.defs."):
        module = importlib.import_module(info.name)
        folder = info.name.split(".")[2]
        for value in vars(module).values():
            if isinstance(value, dg.AssetsDefinition):
                assert set(value.keys) <= graph.get_all_asset_keys(), info.name
            elif isinstance(value, dg.AssetChecksDefinition):
                assert set(value.check_keys) <= graph.asset_check_keys, info.name
            elif isinstance(value, dg.JobDefinition) or type(value).__name__ == "UnresolvedAssetJobDefinition":
                assert value.name in loaded_jobs, info.name
            else:
                continue
            contributed[folder] = contributed.get(folder, 0) + 1
    folders = {p.name for p in Path(root.__file__).parent.iterdir() if (p / "__init__.py").is_file()}
    assert folders >= {"abstraction", "journals", "rollups", "compaction", "graph"}
    assert {f for f in folders if not contributed.get(f)} == set()
