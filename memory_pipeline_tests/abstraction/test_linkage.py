"""Linkage options and caps inside the threshold graph's components, and the per-embedder defaults."""

from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memory_pipeline.embedding import defaults
from memory_pipeline.embedding.spec import MINILM
from memory_pipeline.settings import SettingsError, env_overrides
from memory_pipeline.similarity import clustering
from memory_pipeline.similarity.linkage import LinkageParams, cluster_components
from memory_pipeline_tests.conftest import run_job

# Verdicts are float64 cosines; test data keeps every pair this far from the threshold, so a different
# BLAS kernel (Intel/AMD) cannot move a pair across it.
MARGIN = 1e-6


def blobs(seed: int, k: int = 4, per: int = 25, dim: int = 32, spread: float = 0.45) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(k, dim))
    return np.concatenate([c + spread * rng.normal(size=(per, dim)) for c in centres])


def unit(v: np.ndarray) -> np.ndarray:
    return v / np.linalg.norm(v, axis=1, keepdims=True)


def components_of(v: np.ndarray, threshold: float, min_size: int = 2) -> list[np.ndarray]:
    rows, cols = clustering.threshold_edges(v, threshold)
    return clustering.components(v.shape[0], rows, cols, min_size)


def far_from(v: np.ndarray, threshold: float) -> bool:
    sims = unit(v) @ unit(v).T
    return bool(np.all(np.abs(sims - threshold) > MARGIN))


def partition(groups: list[np.ndarray], ids: np.ndarray) -> set[frozenset[str]]:
    return {frozenset(str(i) for i in ids[g]) for g in groups}


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 10_000), threshold=st.sampled_from([0.45, 0.55, 0.65, 0.75]))
def test_complete_and_average_keep_their_promise_inside_components(seed: int, threshold: float) -> None:
    v = blobs(seed)
    comps = components_of(v, threshold)
    sims = unit(v) @ unit(v).T
    tokens = np.full(v.shape[0], 10)
    complete = cluster_components(v, comps, tokens, LinkageParams("complete", threshold, min_size=2)).groups
    average = cluster_components(v, comps, tokens, LinkageParams("average", threshold, min_size=2)).groups
    where = {int(i): k for k, c in enumerate(comps) for i in c}
    for g in complete:
        assert sims[np.ix_(g, g)].min() >= threshold - MARGIN  # every pair, seed 000 §14
    for g in average:
        block = sims[np.ix_(g, g)]
        assert (block.sum() - np.trace(block)) / (g.size * (g.size - 1)) >= threshold - MARGIN
    for g in complete + average:
        assert len({where[int(i)] for i in g}) == 1  # never across a single-linkage component
    assert len(complete) >= sum(1 for c in comps if c.size >= 2) or not comps  # never fewer than components


def test_single_without_caps_is_the_components_themselves() -> None:
    v = blobs(1)
    comps = components_of(v, 0.6, min_size=3)
    out = cluster_components(v, comps, np.ones(v.shape[0], dtype=np.int64), LinkageParams("single", 0.6, 3))
    assert [g.tolist() for g in out.groups] == [c.tolist() for c in comps]


def test_complete_linkage_splits_a_chain_that_single_linkage_keeps_whole() -> None:
    # five points on an arc: neighbours at cosine ~0.87, the ends far apart (cosine ~0.5)
    angles = np.deg2rad([0, 30, 60, 90, 120])
    v = np.stack([np.cos(angles), np.sin(angles), np.zeros(5)], axis=1)
    comps = components_of(v, 0.8, min_size=2)
    assert len(comps) == 1 and comps[0].size == 5
    complete = cluster_components(v, comps, np.ones(5), LinkageParams("complete", 0.8, min_size=2))
    assert all(g.size <= 2 for g in complete.groups) and complete.components_split == 1


@pytest.mark.parametrize("method", ["single", "complete", "average"])
def test_same_partition_whatever_the_input_order(method: str) -> None:
    v = blobs(7)
    threshold = 0.55
    assert far_from(v, threshold)
    ids = np.array([f"m{i:03d}" for i in range(v.shape[0])])
    perm = np.random.default_rng(3).permutation(v.shape[0])
    tokens = np.full(v.shape[0], 10)

    def run(vec: np.ndarray, names: np.ndarray) -> set[frozenset[str]]:
        order = np.argsort(names)  # the store hands rows over in id order
        vec, names = vec[order], names[order]
        params = LinkageParams(method, threshold, 2, max_members=12)
        return partition(cluster_components(vec, components_of(vec, threshold), tokens, params).groups, names)

    assert run(v, ids) == run(v[perm], ids[perm])


@pytest.mark.parametrize("method", ["single", "complete", "average"])
def test_caps_split_never_truncate(method: str) -> None:
    v = blobs(11, k=2, per=40)
    tokens = np.random.default_rng(0).integers(5, 60, size=v.shape[0])
    comps = components_of(v, 0.4)
    free = cluster_components(v, comps, tokens, LinkageParams(method, 0.4, 2))
    capped = cluster_components(v, comps, tokens, LinkageParams(method, 0.4, 2, max_members=10, max_tokens=300))
    assert capped.clusters_capped > 0
    for g in capped.groups:
        assert g.size <= 10 and tokens[g].sum() <= 300
    # every capped cluster lies inside one uncapped cluster: a cap only cuts the dendrogram higher
    inside = {int(i): k for k, g in enumerate(free.groups) for i in g}
    assert all(len({inside.get(int(i), -1) for i in g}) == 1 for g in capped.groups)


def test_a_component_over_the_exact_limit_stays_unclustered_and_is_named() -> None:
    v = blobs(5, k=1, per=30, spread=0.1)
    comps = components_of(v, 0.5)
    out = cluster_components(v, comps, np.ones(30), LinkageParams("complete", 0.5, 2, max_component=20))
    assert out.groups == [] and out.too_large == [30]
    assert out.metadata()["linkage_too_large_sizes"] == "30"


def test_incremental_graph_gives_the_same_clusters_as_a_full_build() -> None:
    """The stored graph is extended with the edges of new rows only (threshold_graph); the linkage split is a
    function of the components and vectors, so it inherits the incremental-night guarantee."""
    v = blobs(21, k=3, per=30)
    threshold, n0 = 0.55, 60
    old_r, old_c = clustering.threshold_edges(v[:n0], threshold)
    new_r, new_c = clustering.threshold_edges(v, threshold, rows=np.arange(n0, v.shape[0]))
    rows, cols = np.concatenate([old_r, new_r]), np.concatenate([old_c, new_c])
    incremental = clustering.components(v.shape[0], rows, cols, 2)
    full = components_of(v, threshold)
    tokens = np.ones(v.shape[0])
    for method in ("complete", "average"):
        a = cluster_components(v, incremental, tokens, LinkageParams(method, threshold, 2)).groups
        b = cluster_components(v, full, tokens, LinkageParams(method, threshold, 2)).groups
        assert [g.tolist() for g in a] == [g.tolist() for g in b]


def test_per_embedder_defaults_and_explicit_settings() -> None:
    seed = defaults.resolve("text-embedding-3-small")
    assert (seed.threshold, seed.linkage) == (0.82, "single") and "calibrated default" in seed.reason
    unknown = defaults.resolve("my-plugin/v1")
    assert (unknown.threshold, unknown.linkage) == (0.82, "single")
    assert "general default" in unknown.reason
    minilm = defaults.model_default(MINILM)
    assert MINILM in minilm.reason
    explicit = defaults.resolve(MINILM, threshold=0.7)
    assert explicit.threshold == 0.7 and explicit.linkage == minilm.linkage
    assert "threshold 0.7 set explicitly" in explicit.reason
    both = defaults.resolve(MINILM, threshold=0.75, linkage="average")
    assert (both.threshold, both.linkage) == (0.75, "average") and "rest from" not in both.reason
    with pytest.raises(ValueError, match="COMPRESSION_LINKAGE='ward'"):
        defaults.resolve(MINILM, linkage="ward")


def test_linkage_and_caps_from_the_environment() -> None:
    env = {"COMPRESSION_LINKAGE": "complete", "COMPRESSION_MAX_CLUSTER_MEMBERS": "12"}
    assert env_overrides(env) == {"linkage": "complete", "max_cluster_members": 12}
    with pytest.raises(SettingsError, match="COMPRESSION_LINKAGE='ward': expected one of single, complete"):
        env_overrides({"COMPRESSION_LINKAGE": "ward"})
    with pytest.raises(SettingsError, match="COMPRESSION_MAX_CLUSTER_TOKENS"):
        env_overrides({"COMPRESSION_MAX_CLUSTER_TOKENS": "-1"})


def test_the_night_reports_which_linkage_and_why(workspace: Path) -> None:
    import json

    single = run_job(workspace, "consolidation_dry_run")
    complete = run_job(
        workspace, "consolidation_dry_run", run_config={"ops": {"clusters": {"config": {"linkage": "complete"}}}}
    )
    assert single.success and complete.success
    meta_single = single.asset_materializations_for_node("clusters")[0].metadata
    meta = complete.asset_materializations_for_node("clusters")[0].metadata
    assert meta["linkage"].value == "complete" and meta_single["linkage"].value == "single"
    assert "linkage complete set explicitly" in str(meta["clustering_default"].value)
    # complete linkage can only split single linkage's clusters: at least as many, none larger
    assert meta["clusters_found"].value >= meta_single["clusters_found"].value
    assert meta["largest"].value <= meta_single["largest"].value
    real = run_job(workspace, run_config={"ops": {"clusters": {"config": {"linkage": "average"}}}})
    report = json.loads((workspace / "reports" / f"compression-{real.run_id}.json").read_text())
    assert report["clustering"]["linkage"] == "average" and "set explicitly" in report["clustering"]["why"]
