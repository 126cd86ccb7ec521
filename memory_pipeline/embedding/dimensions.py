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
    """Stored vectors of one model that cannot be clustered together with the rest."""

    model: str
    expected: int
    why: str
    ids: list[str]
    dims: dict[int, int]  # wrong dimension → how many

    def message(self) -> str:
        more = len(self.ids) - SHOW_IDS
        shown = ", ".join(self.ids[:SHOW_IDS]) + (f" and {more} more" if more > 0 else "")
        found = ", ".join(f"{n}× {d}-d" for d, n in sorted(self.dims.items()))
        dims = " ".join(f"--dim {d}" for d in sorted(self.dims))
        return (
            f"the store holds {len(self.ids)} '{self.model}' vector(s) of the wrong dimension ({found}; expected "
            f"{self.expected}, {self.why}): {shown}; remove them with `memory-pipeline embeddings drop --model "
            f"'{self.model}' {dims}` (the memories stay; until they have a right vector they are left out of "
            "clustering)"
        )


class InconsistentVectors(RuntimeError):
    """Raised before a night would crash on vectors of mixed dimensions; the message is one line."""

    def __init__(self, bad: BadVectors) -> None:
        super().__init__(bad.message())
        self.bad = bad


def find_bad_vectors(con: duckdb.DuckDBPyConnection, model: str, expected: int | None = None) -> BadVectors | None:
    """Vectors of `model` whose length differs from the model's dimension (`expected`, else known, else the
    most common one in the store), or from their own `dim` column. None when all agree."""
    counts = con.execute(
        "SELECT len(vector) AS d, count(*) AS n FROM embeddings WHERE model = ? GROUP BY d ORDER BY n DESC, d",
        [model],
    ).fetchall()
    if not counts:
        return None
    why = "the configured dimension"
    if expected is None:
        expected = spec.known_dimension(model)
        why = "its native dimension"
    if expected is None:
        expected, why = int(counts[0][0]), "the dimension of most of its vectors"
    rows = con.execute(
        "SELECT memory_id, len(vector) FROM embeddings WHERE model = ? AND (len(vector) <> ? OR dim <> len(vector)) "
        "ORDER BY memory_id",
        [model, expected],
    ).fetchall()
    if not rows:
        return None
    dims = Counter(int(d) for _, d in rows)
    return BadVectors(model, expected, why, [str(r[0]) for r in rows], dict(dims))


def check_store_vectors(con: duckdb.DuckDBPyConnection, model: str, expected: int | None = None) -> None:
    """Raise InconsistentVectors (one line, naming ids and the command that fixes it) if the store's vectors
    of `model` do not all have one dimension."""
    bad = find_bad_vectors(con, model, expected)
    if bad is not None:
        raise InconsistentVectors(bad)


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
