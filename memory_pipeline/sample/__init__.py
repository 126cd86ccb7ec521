"""The sample's data files (memory families, singleton frames and pools, transcript templates).

Why a package: the JSON files ship as package data next to this loader, so a non-editable install
generates the same sample as a checkout. Edit the JSON, not the generators, to change what the sample says.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from importlib.resources import files
from typing import Any, TypeVar

T = TypeVar("T")


class SampleDataError(ValueError):
    """A sample data file is missing or malformed; the message names the file and the field."""


def parse_sample_file(name: str, build: Callable[[dict[str, Any]], T]) -> T:
    """``build`` applied to the JSON object in ``memory_pipeline/sample/<name>``; bad data → one clear line."""
    resource = files(__name__) / name
    try:
        data = json.loads(resource.read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise TypeError("expected a JSON object at the top level")
        return build(data)
    except FileNotFoundError:
        raise SampleDataError(f"sample data file {resource} is missing; reinstall memory_pipeline") from None
    except json.JSONDecodeError as exc:
        raise SampleDataError(
            f"{resource}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})"
        ) from None
    except KeyError as exc:
        raise SampleDataError(f"{resource}: missing field {exc}") from None
    except (TypeError, ValueError, AttributeError) as exc:
        raise SampleDataError(f"{resource}: malformed sample data ({exc})") from None
