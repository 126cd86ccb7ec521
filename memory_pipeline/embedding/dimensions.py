"""Vector dimensions: checked at import (one line per bad vector, naming where) and in the store before a night.

Why: a vector of the wrong dimension is accepted by the store's FLOAT[] column but breaks every later night
(`cannot reshape array…`). A model's dimension is, in order: its native one (models.json), the one the
configured plug-in declares, the one of its vectors already in the store, the one of its first vector in
the file being imported.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass

import duckdb

from memory_pipeline.embedding import spec

SHOW_IDS = 5  # ids named in a one-line message; the rest are counted


@dataclass(frozen=True)
class IncomingVector:
    """One vector of an import: where it is (file:line / row), in which field, under which model."""

    memory_id: str
    where: str
    field: str
    model: str
    dim: int


def configured_dimension() -> tuple[str, int] | None:
    """(model, dim) of the configured embedder when its dimension is known without running it, else None.
    A broken setting is not the import's business (the night reports it), so it yields None here."""
    try:
        model, _ = spec.parse_model_setting(os.environ.get(spec.ENV_MODEL, spec.MINILM))
        dim = spec.known_dimension(model)
        plugin = os.environ.get(spec.ENV_PLUGIN, "").strip()
        if dim is None and plugin:
            dim = spec.load_plugin(plugin).dimension
    except spec.EmbedderSettingError:
        return None
    return (model, dim) if dim is not None else None


def store_dimensions(con: duckdb.DuckDBPyConnection) -> dict[str, int]:
    """The dimension each model's vectors have in the store (the most common one, if they disagree)."""
    rows = con.execute(
        "SELECT model, len(vector) AS d, count(*) AS n FROM embeddings GROUP BY model, d ORDER BY n DESC"
    ).fetchall()
    out: dict[str, int] = {}
    for model, dim, _ in rows:
        out.setdefault(str(model), int(dim))
    return out


def dimension_errors(
    incoming: list[IncomingVector], in_store: dict[str, int], configured: tuple[str, int] | None = None
) -> list[tuple[str, str, str]]:
    """(where, field, message) for every vector whose dimension is not its model's."""
    expected: dict[str, tuple[int, str]] = {}
    errors: list[tuple[str, str, str]] = []
    for v in incoming:
        if v.model not in expected:
            expected[v.model] = _expected(v, in_store, configured)
        dim, why = expected[v.model]
        if v.dim != dim:
            errors.append((v.where, v.field, f"dimension {v.dim}, expected {dim} for model '{v.model}' ({why})"))
    return errors


def _expected(first: IncomingVector, in_store: dict[str, int], configured: tuple[str, int] | None) -> tuple[int, str]:
    model = first.model
    known = spec.known_dimension(model)
    if known is not None:
        return known, f"its native dimension; import shortened vectors under a name of their own, e.g. '{model}-N'"
    if configured is not None and configured[0] == model:
        return configured[1], "the dimension the configured embedder plug-in declares"
    if model in in_store:
        return in_store[model], "the dimension of its vectors already in the store"
    return first.dim, f"the dimension of its first vector, at {first.where}"


@dataclass(frozen=True)
class BadVectors:
    """Stored vectors of one model whose dimension is not the model's."""

    model: str
    expected: int
    why: str
    certain: bool  # False: an unknown model whose vectors have no majority dimension; nothing to go by
    ids: list[str]
    dims: dict[int, int]  # wrong dimension → how many

    def message(self) -> str:
        more = len(self.ids) - SHOW_IDS
        shown = ", ".join(self.ids[:SHOW_IDS]) + (f" and {more} more" if more > 0 else "")
        found = ", ".join(f"{n}× {d}-d" for d, n in sorted(self.dims.items()))
        drop = f"`memory-pipeline embeddings drop --model '{self.model}' " + " ".join(
            f"--dim {d}" for d in sorted(self.dims)
        )
        if not self.certain:
            return (
                f"cannot tell which '{self.model}' vectors have the right dimension ({self.expected}-d and {found}, "
                f"no majority; the model is not in models.json): remove the wrong ones with "
                f"`memory-pipeline embeddings drop --model '{self.model}' --dim D`"
            )
        return (
            f"{len(self.ids)} '{self.model}' vector(s) have the wrong dimension ({found}; expected {self.expected}, "
            f"{self.why}) and are left out of clustering: {shown}; remove them with {drop}`"
        )


class InconsistentVectors(RuntimeError):
    """The store's vectors of a model disagree and nothing says which are right; the message is one line."""

    def __init__(self, bad: BadVectors) -> None:
        super().__init__(bad.message())
        self.bad = bad


def find_bad_vectors(con: duckdb.DuckDBPyConnection, model: str, declared: int | None = None) -> BadVectors | None:
    """Vectors of `model` whose length is not the model's dimension: its native one (models.json), else the
    one the plug-in declares, else the one most of its vectors have. None when all agree."""
    counts = con.execute(
        "SELECT len(vector) AS d, count(*) AS n FROM embeddings WHERE model = ? GROUP BY d ORDER BY n DESC, d",
        [model],
    ).fetchall()
    if not counts:
        return None
    certain = True
    if (expected := spec.known_dimension(model)) is not None:
        why = "its native dimension"
    elif (expected := declared) is not None:
        why = "the dimension its plug-in declares"
    else:
        expected, why = int(counts[0][0]), "the dimension of most of its vectors"
        certain = 2 * int(counts[0][1]) > sum(int(n) for _, n in counts)
    rows = con.execute(
        "SELECT memory_id, len(vector) FROM embeddings WHERE model = ? AND len(vector) <> ? ORDER BY memory_id",
        [model, expected],
    ).fetchall()
    if not rows:
        return None
    dims = Counter(int(d) for _, d in rows)
    return BadVectors(model, expected, why, certain, [str(r[0]) for r in rows], dict(dims))


def usable_dimension(con: duckdb.DuckDBPyConnection, model: str, declared: int | None = None) -> BadVectors | None:
    """The wrong-dimension vectors a night leaves out (None: all fine). Raises InconsistentVectors when
    there is no telling which dimension is right."""
    bad = find_bad_vectors(con, model, declared)
    if bad is not None and not bad.certain:
        raise InconsistentVectors(bad)
    return bad


def drop_vectors(con: duckdb.DuckDBPyConnection, model: str, dims: list[int]) -> list[str]:
    """Delete `model`'s vectors of the given dimensions (never a memory row). Returns the ids affected."""
    if not dims:
        return []
    marks = ", ".join("?" for _ in dims)
    ids = [
        str(r[0])
        for r in con.execute(
            f"SELECT memory_id FROM embeddings WHERE model = ? AND len(vector) IN ({marks}) ORDER BY memory_id",
            [model, *dims],
        ).fetchall()
    ]
    con.execute(f"DELETE FROM embeddings WHERE model = ? AND len(vector) IN ({marks})", [model, *dims])
    return ids
