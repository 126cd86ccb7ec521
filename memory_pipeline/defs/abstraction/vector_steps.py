"""The abstraction steps' side of bring-your-own embeddings: thin glue between the assets and
memory_pipeline/embedding (plain logic), turning its errors into one-line Dagster failures."""

from __future__ import annotations

from typing import Any

import dagster as dg
import duckdb

from memory_pipeline.embedding import dimensions, spec
from memory_pipeline.embedding.spec import EmbedderSettingError
from memory_pipeline.resources import EmbedderResource
from memory_pipeline.store import night_vectors as night
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore


def plan(log: dg.DagsterLogManager, db: MemoryStore, embedder: EmbedderResource) -> night.VectorPlan:
    """Check the embedder setting (one clear line if it cannot work), plan tonight's vectors, say what matters."""
    try:
        embedder.check()
        probe = None  # the plug-in's dimension: declared, else one call on a probe text
        if embedder.plugin:
            probe = spec.load_plugin(embedder.plugin).dimension or embedder.encode(["dimension probe"]).shape[1]
        with db.connect() as con:
            if probe is not None:
                night.check_encoder_dimension(con, embedder.model, probe, f"{spec.ENV_PLUGIN}={embedder.plugin}")
            found = night.plan_vectors(
                con, embedder.model, embedder.can_encode, bool(embedder.plugin), embedder.expected_dimension
            )
    except EmbedderSettingError as exc:
        raise dg.Failure(description=str(exc)) from None
    log.info(f"vectors: {embedder.describe()}")
    for line in found.warnings(embedder.describe()):
        log.warning(line)
    return found


def plan_metadata(embedder: EmbedderResource, found: night.VectorPlan) -> dict[str, Any]:
    """memory_embeddings' metadata: which vectors, computed by what, and what was left out or redone."""
    return {
        "vector_model": embedder.model,
        "vector_dim": found.dim or 0,
        "vector_setting": ("imported:" if embedder.imported else "") + embedder.model,
        "vector_compute": embedder.compute_source if embedder.can_encode else "none (imported vectors only)",
        "summary_embedding": embedder.summary_method,
        "left_out_no_vector": len(found.left_out),
        "wrong_dimension_recomputed": len(found.replaced),
        "mean_vectors_reembedded": len(found.reembedded),
    }


def usable_dimension(
    log: dg.DagsterLogManager, con: duckdb.DuckDBPyConnection, embedder: EmbedderResource
) -> int | None:
    """Vectors of the wrong dimension would crash loading the eligible set: they are left out and named (one
    warning line with the command that removes them); when nothing tells which dimension is right the step
    fails with one line instead. Returns the dimension to load, None when all vectors agree."""
    try:
        bad = dimensions.usable_dimension(con, embedder.model, embedder.expected_dimension)
    except dimensions.InconsistentVectors as exc:
        raise dg.Failure(description=str(exc), metadata={"offending_ids": ", ".join(exc.bad.ids[:50])}) from None
    if bad is None:
        return None
    log.warning(bad.message())
    return bad.expected


def clustered_on(
    con: duckdb.DuckDBPyConnection, embedder: EmbedderResource, eligible: repo.EligibleSet
) -> dict[str, Any]:
    """Model, dimension, source counts of the vectors the night clusters on, and how summaries get theirs."""
    dim = eligible.vectors.shape[1] if eligible.vectors.ndim == 2 and len(eligible.frame) else 0
    sources = night.vector_sources(con, embedder.model, eligible.frame["id"].tolist())
    return night.clustered_on(embedder.model, dim or embedder.expected_dimension or 0, sources, embedder.summary_method)


def report_section(
    con: duckdb.DuckDBPyConnection, embedder: EmbedderResource, eligible: repo.EligibleSet, run_id: str
) -> dict[str, Any]:
    """The run report's `embedding`: what the night clustered on and how this run's summaries were embedded."""
    section = clustered_on(con, embedder, eligible)
    section["summaries_by_source"] = night.summaries_by_source(con, embedder.model, run_id)
    bad = dimensions.find_bad_vectors(con, embedder.model, embedder.expected_dimension)
    section["vectors_wrong_dimension"] = len(bad.ids) if bad else 0
    return section
