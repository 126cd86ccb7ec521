"""The JSON Schemas the repo ships for Core and Sphere documents, and validation that names the field."""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

import jsonschema

KINDS = ("core", "sphere")


class RollupSchemaError(ValueError):
    """A Core/Sphere document breaks its schema; the message names the document, the field and the rule."""

    def __init__(self, doc_id: str, kind: str, errors: list[tuple[str, str]]) -> None:
        self.doc_id, self.kind, self.errors = doc_id, kind, errors
        listed = "; ".join(f"field '{path}': {message}" for path, message in errors)
        super().__init__(f"{kind} {doc_id} fails {kind}.schema.json: {listed}")

    @property
    def fields(self) -> list[str]:
        return [path for path, _ in self.errors]


@cache
def load_schema(kind: str) -> dict[str, Any]:
    if kind not in KINDS:
        raise ValueError(f"unknown rollup schema {kind!r} (known: {', '.join(KINDS)})")
    text = resources.files("memory_pipeline.rollups").joinpath("schemas", f"{kind}.schema.json").read_text("utf-8")
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return schema


def _path(error: jsonschema.ValidationError) -> str:
    parts: list[str] = []
    for p in error.absolute_path:
        if isinstance(p, int):
            parts.append(f"[{p}]")
        else:
            parts.append(("." if parts else "") + str(p))
    where = "".join(parts)
    if error.validator == "required":  # name the missing field itself, not its parent
        missing = error.message.split("'")[1] if "'" in error.message else ""
        where = f"{where}.{missing}" if where else missing
    return where or "(document)"


def validate(doc: dict[str, Any], kind: str) -> dict[str, Any]:
    """Return `doc` if it conforms; else raise RollupSchemaError listing every violation, field by field."""
    validator = jsonschema.Draft202012Validator(load_schema(kind))
    errors = sorted(validator.iter_errors(doc), key=lambda e: [str(p) for p in e.absolute_path])
    if errors:
        doc_id = str(doc.get(f"{kind}_id", "?")) if isinstance(doc, dict) else "?"
        raise RollupSchemaError(doc_id, kind, [(_path(e), e.message) for e in errors])
    return doc
