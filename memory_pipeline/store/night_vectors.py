"""What the night does with vectors: which to compute, which memories it must leave out, what it clustered on,
and how it embeds new summaries. Plain functions over a DuckDB connection, no Dagster.

Why: with bring-your-own embeddings the night may have no encoder for the model it clusters on. It then
computes nothing, leaves memories without a vector out (and says so), and gives each new summary the
normalised mean of its members' vectors, recorded as `embeddings.source = 'mean_of_members'` so that a
plug-in configured later re-embeds exactly those.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import duckdb
import numpy as np
import pandas as pd

from memory_pipeline.embedding import spec
from memory_pipeline.embedding.dimensions import SHOW_IDS, find_bad_vectors
from memory_pipeline.store import repository as repo


@dataclass
class VectorPlan:
    """Tonight's work on memory vectors for one model."""

    model: str
    todo: pd.DataFrame  # id, content: vectors to compute now
    missing: int = 0  # memories with no vector of the model, computed now
    replaced: list[str] = field(default_factory=list)  # wrong-dimension vectors recomputed
    reembedded: list[str] = field(default_factory=list)  # mean-of-members summaries re-embedded by the plug-in
    left_out: list[str] = field(default_factory=list)  # active memories without a vector and no encoder
    unused: list[tuple[str, int, int]] = field(default_factory=list)  # other imported models: (model, n, dim)
    dim: int | None = None  # the model's dimension: native, declared by the plug-in, or most of the stored ones

    def warnings(self, setting_hint: str) -> list[str]:
        """One line per thing a user should know; each says what to do."""
        out = []
        if self.left_out:
            out.append(
                f"{len(self.left_out)} active memories have no '{self.model}' vector and are left out of clustering "
                f"({_ids(self.left_out)}): import their vectors (`embedding_model: {self.model}`) or set "
                f"{spec.ENV_PLUGIN} to embed them"
            )
        if self.replaced:
            out.append(
                f"{len(self.replaced)} '{self.model}' vectors had the wrong dimension and are recomputed "
                f"({_ids(self.replaced)})"
            )
        for model, n, dim in self.unused:
            out.append(
                f"the store holds {n} imported '{model}' vectors ({dim}-d) that tonight does not use (it clusters on "
                f"{setting_hint}); to cluster on them set {spec.ENV_MODEL}=imported:{model}"
            )
        return out


def _ids(ids: Sequence[str]) -> str:
    more = len(ids) - SHOW_IDS
    return ", ".join(ids[:SHOW_IDS]) + (f" and {more} more" if more > 0 else "")


def plan_vectors(
    con: duckdb.DuckDBPyConnection, model: str, can_encode: bool, plugin: bool, expected_dim: int | None
) -> VectorPlan:
    """With an encoder: every memory lacking a `model` vector, every vector of the wrong dimension (it cannot
    be that model's) and, with a plug-in, every summary that got a mean-of-members vector. Without one:
    nothing to compute; the active memories lacking a vector are listed as left out."""
    missing = repo.memories_without_embedding(con, model)
    plan = VectorPlan(model, missing.iloc[0:0])
    stored = con.execute(
        "SELECT len(vector) AS d FROM embeddings WHERE model = ? GROUP BY d ORDER BY count(*) DESC, d LIMIT 1", [model]
    ).fetchall()
    plan.dim = expected_dim or spec.known_dimension(model) or (int(stored[0][0]) if stored else None)
    plan.unused = [
        (str(m), int(n), int(d))
        for m, n, d in con.execute(
            "SELECT model, count(*), any_value(len(vector)) FROM embeddings WHERE model <> ? AND source = ? "
            "GROUP BY model ORDER BY model",
            [model, spec.IMPORTED],
        ).fetchall()
    ]
    if not can_encode:
        active = con.execute(
            "SELECT id FROM memories WHERE lifecycle = 'active' AND kind <> 'summary' AND compressed_from IS NULL "
            "AND id NOT IN (SELECT memory_id FROM embeddings WHERE model = ?) ORDER BY id",
            [model],
        ).fetchall()
        plan.left_out = [str(r[0]) for r in active]
        return plan
    bad = find_bad_vectors(con, model, expected_dim)
    plan.replaced = bad.ids if bad and bad.certain else []  # no majority: eligible_memories says so
    if plugin:
        plan.reembedded = [
            str(r[0])
            for r in con.execute(
                "SELECT memory_id FROM embeddings WHERE model = ? AND source = ? ORDER BY memory_id",
                [model, spec.MEAN_OF_MEMBERS],
            ).fetchall()
        ]
    extra = sorted(set(plan.replaced) | set(plan.reembedded))
    plan.missing = len(missing)
    if extra:
        rows = repo.fetch_members(con, extra)[["id", "content"]]
        missing = pd.concat([missing, rows], ignore_index=True)
    plan.todo = missing
    return plan


def check_encoder_dimension(con: duckdb.DuckDBPyConnection, model: str, got: int, who: str) -> None:
    """An encoder (the plug-in) must make vectors of the model's dimension: its native one, else the one most
    of its stored vectors have. Otherwise every night would mix dimensions; say so before writing any."""
    want = spec.known_dimension(model)
    why = "its native dimension"
    if want is None:
        row = con.execute(
            "SELECT len(vector) AS d FROM embeddings WHERE model = ? GROUP BY d ORDER BY count(*) DESC, d LIMIT 1",
            [model],
        ).fetchall()
        want, why = (int(row[0][0]), "the dimension of its vectors in the store") if row else (None, "")
    if want is not None and got != want:
        raise spec.EmbedderSettingError(
            f"{who} makes {got}-d vectors but '{model}' vectors are {want}-d ({why}): point "
            f"{spec.ENV_PLUGIN} at an embedder of that model, or {spec.ENV_MODEL} at the plug-in's own model name"
        )


def vector_sources(con: duckdb.DuckDBPyConnection, model: str, ids: Sequence[str]) -> dict[str, int]:
    """How many of these memories' `model` vectors were computed, imported, made by the plug-in, averaged."""
    frame = pd.DataFrame({"memory_id": list(ids)})  # noqa: F841 - scanned by DuckDB by name
    rows = con.execute(
        "SELECT coalesce(e.source, 'computed'), count(*) FROM frame f JOIN embeddings e "
        "ON e.memory_id = f.memory_id AND e.model = ? GROUP BY 1 ORDER BY 1",
        [model],
    ).fetchall()
    return {str(s): int(n) for s, n in rows}


def clustered_on(model: str, dim: int, sources: dict[str, int], summaries: str) -> dict[str, Any]:
    """The vectors a night clustered on, for logs, metadata and the report: model, dimension, source
    (computed | imported | plugin | mixed) with counts, and how new summaries are embedded."""
    used = [s for s, n in sources.items() if n]
    source = used[0] if len(used) == 1 else ("mixed" if used else "none")
    return {
        "vector_model": model,
        "vector_dim": int(dim),
        "vector_source": source,
        "vectors_by_source": dict(sources),
        "summary_embedding": summaries,
    }


def describe(info: dict[str, object]) -> str:
    """`text-embedding-3-small (1536-d, imported); summaries: mean_of_members`."""
    counts = info.get("vectors_by_source") or {}
    detail = ", ".join(f"{n} {s}" for s, n in counts.items()) if isinstance(counts, dict) and len(counts) > 1 else ""
    source = f"{info['vector_source']}: {detail}" if detail else str(info["vector_source"])
    return f"{info['vector_model']} ({info['vector_dim']}-d, {source}); summaries: {info['summary_embedding']}"


def summaries_by_source(con: duckdb.DuckDBPyConnection, model: str, run_id: str) -> dict[str, int]:
    """How the summaries this run wrote were embedded (`embeddings.source` of their `model` vectors)."""
    rows = con.execute(
        "SELECT coalesce(e.source, 'computed'), count(*) FROM memories m JOIN embeddings e "
        "ON e.memory_id = m.id AND e.model = ? WHERE m.created_by_run = ? AND m.kind = 'summary' GROUP BY 1 ORDER BY 1",
        [model, run_id],
    ).fetchall()
    return {str(s): int(n) for s, n in rows}


def summary_vectors(
    con: duckdb.DuckDBPyConnection,
    model: str,
    method: str,
    encode: Callable[[list[str]], np.ndarray],
    source: str,
    contents: Sequence[str],
    member_ids: Sequence[Sequence[str]],
) -> tuple[np.ndarray, str]:
    """Vectors for new summaries and the `embeddings.source` to store them with. `method` mean_of_members:
    the normalised mean of each summary's members' `model` vectors (no encoder needed); otherwise `encode`."""
    if method != spec.MEAN_OF_MEMBERS:
        return encode(list(contents)), source
    if not contents:
        return np.zeros((0, 0), dtype=np.float32), spec.MEAN_OF_MEMBERS
    flat = [m for ids in member_ids for m in ids]
    vectors = repo.vectors_for(con, model, flat)
    bounds = np.cumsum([0, *(len(ids) for ids in member_ids)])
    means = [spec.normalised_mean(vectors[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    return np.vstack(means), spec.MEAN_OF_MEMBERS
