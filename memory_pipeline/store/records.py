"""The memory record as it enters the store, and the validation every importer shares."""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from memory_pipeline.errors import UserError
from memory_pipeline.redaction import redact
from memory_pipeline.tokens import estimate_tokens

LIFECYCLES = ("active", "pending", "archived", "rolled_back")
# `pending` is a run's own uncommitted summary (phase 1 of the two-phase commit); the next run reconciles it.
# An import never creates one: reconciliation would activate or remove a row it did not write.
IMPORT_LIFECYCLES = ("active", "archived", "rolled_back")
KIND_PATTERN = re.compile(r"^[a-z][a-z0-9_.:-]{0,39}$")  # observation, summary, decision, lesson, fact, …
MAX_REPORTED_ERRORS = 20
# Bounds on what one record may hold, the same for `import` and an agent's `remember`: a store is read back into
# prompts, file names and terminals, so a value outside them is refused naming the field, never stored.
MAX_IMPORTANCE = 100.0  # importance is a weight (1.0 by default, 2.5 and above critical): 1e308 is not one
MAX_ID_CHARS = 256
MAX_LABEL_CHARS = 128  # one category, tag or nexus key
MAX_CATEGORIES = 32
MAX_LABELS = 256  # tags, nexus keys
DETAIL_LINES = 5  # errors listed under the headline of a rejected import


FUTURE_LIMIT = timedelta(days=366)  # a created_at later than this from now is refused: a wrong year


class RecordError(ValueError):
    """One bad field in one record; `where` is `file:line` or `file:table row N`."""

    def __init__(self, where: str, field_name: str, problem: str) -> None:
        super().__init__(f"{where}: field '{field_name}': {problem}")
        self.where = where
        self.field_name = field_name
        self.problem = problem


class ImportRejected(UserError, ValueError):
    """The whole import was rejected; nothing was written. The first line names the first error and the
    count; a few more follow as detail, never thousands."""

    def __init__(self, source: str, errors: list[RecordError], headline: str | None = None) -> None:
        first = headline or (str(errors[0]) if errors else "no records")
        count = f" ({len(errors)} errors in all)" if len(errors) > 1 and headline is None else ""
        lines = [f"import of {source} rejected, nothing was written: {first}{count}"]
        rest = errors[1:] if headline is None else errors
        lines += [f"  {e}" for e in rest[:DETAIL_LINES]]
        if len(rest) > DETAIL_LINES:
            lines.append(f"  … and {len(rest) - DETAIL_LINES} more")
        super().__init__("\n".join(lines))
        self.source = source
        self.errors = errors


@dataclass
class MemoryRecord:
    id: str
    content: str
    importance: float
    created_at: datetime  # naive UTC
    categories: list[str] = field(default_factory=list)
    tags: list[str] = field(default_factory=list)
    nexus_keys: list[str] = field(default_factory=list)
    kind: str = "observation"
    source: str | None = None
    session_id: str | None = None
    pinned: bool = False
    locked: bool = False
    lifecycle: str = "active"
    compressed_from: dict[str, Any] | None = None
    archived_by: str | None = None
    archived_at: datetime | None = None
    prior_importance: float | None = None
    embedding: list[float] | None = None
    human_authored: bool = False
    # summaries only (graph-preserving compaction): the capped roll-up of the sources' tags and nexus keys, and
    # for an explicit higher-level rollup, the summaries it rolls up
    rolled_up_tags: list[str] | None = None
    rolled_up_nexus_keys: list[str] | None = None
    summary_of: list[str] | None = None

    @property
    def token_count(self) -> int:
        return estimate_tokens(self.content)


def parse_timestamp(value: Any, where: str, name: str) -> datetime:
    """ISO-8601 (a trailing Z is fine) → naive UTC. Naive input is taken as UTC."""
    if isinstance(value, datetime):
        ts = value
    elif isinstance(value, str) and value.strip():
        text = value.strip().replace("Z", "+00:00")
        if " " in text and "T" not in text:
            text = text.replace(" ", "T", 1)
        try:
            ts = datetime.fromisoformat(text)
        except ValueError:
            raise RecordError(where, name, f"not an ISO-8601 timestamp: {value!r}") from None
    else:
        raise RecordError(where, name, f"expected an ISO-8601 timestamp, got {value!r}")
    if ts.tzinfo is not None:
        ts = ts.astimezone(UTC).replace(tzinfo=None)
    return ts


def _string_list(value: Any, where: str, name: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        text = value.strip()
        if text.startswith("["):
            try:
                value = json.loads(text)
            except json.JSONDecodeError:
                raise RecordError(where, name, f"invalid JSON list: {value!r}") from None
        else:
            return [part.strip() for part in text.split(",") if part.strip()]
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise RecordError(where, name, f"expected a list of strings, got {value!r}")
    return [v.strip() for v in value if v.strip()]


def _printable(value: str, where: str, name: str, max_chars: int) -> str:
    """`value` if it is at most `max_chars` long and holds no control or format character (a newline, a tab, an
    ANSI escape would break the lines and terminals it is shown in)."""
    if len(value) > max_chars:
        raise RecordError(where, name, f"{len(value):,} characters, at most {max_chars:,}")
    if not value.isprintable():
        bad = next(ch for ch in value if not ch.isprintable())
        raise RecordError(where, name, f"holds the control character {bad!r}; use printable characters only")
    return value


def _labels(value: Any, where: str, name: str, max_items: int) -> list[str]:
    """A list of short printable labels; a category also names a folder of its own, so no path in it."""
    labels = [redact(label)[0] for label in _string_list(value, where, name)]  # a tag is stored and shown too
    if len(labels) > max_items:
        raise RecordError(where, name, f"{len(labels):,} values, at most {max_items:,}")
    for label in labels:
        _printable(label, where, name, MAX_LABEL_CHARS)
        if name == "categories" and ("/" in label or "\\" in label or label.startswith(".")):
            raise RecordError(where, name, f"{label[:40]!r} looks like a path: a category is a word such as 'travel'")
    return labels


def _number(value: Any, where: str, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise RecordError(where, name, f"expected a number, got {value!r}")
    try:
        number = float(value)
    except ValueError:
        raise RecordError(where, name, f"expected a number, got {value!r}") from None
    if not math.isfinite(number):
        raise RecordError(where, name, f"must be a finite number, got {value!r}")
    return number


def _flag(value: Any, where: str, name: str) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise RecordError(where, name, f"expected true/false, got {value!r}")


def _optional_str(value: Any, where: str, name: str) -> str | None:
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise RecordError(where, name, f"expected a string, got {value!r}")
    return redact(value)[0]  # a source or a session id is stored and shown as the text is


# A stored vector is scaled to unit length before any comparison, so only its direction counts; but a vector of
# zeros has none, and one whose length overflows float32 (1e38 per component) turns into NaN on the way. Both
# would sit in the store under a real model's name and silently distort every similarity they take part in.
VECTOR_NORM_RANGE = (1e-6, 1e6)


def check_vector(values: list[float], where: str, field_name: str) -> None:
    """A RecordError naming `where` and `field_name` for a vector with a non-finite value, of all zeros, or whose
    length is outside VECTOR_NORM_RANGE (float64 arithmetic, so the check itself cannot overflow)."""
    if not all(math.isfinite(v) for v in values):
        raise RecordError(where, field_name, "holds NaN or infinite values")
    if not any(values):
        raise RecordError(where, field_name, "is all zeros (a vector with no direction)")
    low, high = VECTOR_NORM_RANGE
    norm = math.hypot(*values)
    if not low <= norm <= high:
        raise RecordError(
            where, field_name, f"length {norm:.3g} is outside {low:g}–{high:g} (not a real embedding's scale)"
        )


def parse_record(obj: Any, where: str, embedding_dim: int | None = None) -> MemoryRecord:
    """Validate one raw record (a JSON object or a SQLite row as a dict)."""
    if not isinstance(obj, dict):
        raise RecordError(where, "<record>", f"expected a JSON object, got {type(obj).__name__}")
    rid = obj.get("id")
    if not isinstance(rid, str) or not rid.strip():
        raise RecordError(where, "id", f"required non-empty string, got {rid!r}")
    _printable(rid.strip(), where, "id", MAX_ID_CHARS)
    if kinds := redact(rid)[1]:  # an id is how other rows and calls name the memory: refused, not rewritten
        raise RecordError(where, "id", f"holds a secret ({kinds[0]}); use another id")
    content = obj.get("content")
    if not isinstance(content, str) or not content.strip():
        raise RecordError(where, "content", "required non-empty string")
    if "\x00" in content:
        raise RecordError(where, "content", "contains a NUL character")
    raw_importance = obj.get("importance")  # null (a Parquet or SQLite NULL) means absent, as a missing key does
    importance = _number(1.0 if raw_importance is None else raw_importance, where, "importance")
    if not 0 <= importance <= MAX_IMPORTANCE:
        raise RecordError(where, "importance", f"must be from 0 to {MAX_IMPORTANCE:g}, got {importance:g}")
    if "created_at" not in obj:
        raise RecordError(where, "created_at", "required")
    created_at = parse_timestamp(obj["created_at"], where, "created_at")
    if created_at > datetime.now(UTC).replace(tzinfo=None) + FUTURE_LIMIT:
        raise RecordError(where, "created_at", f"{created_at:%Y-%m-%d} is more than a year from now; a memory is "
                          "dated when it was stated (a wrong year or clock in the source?)")  # fmt: skip
    lifecycle = obj.get("lifecycle") or ("archived" if obj.get("archived_by") else "active")
    if lifecycle == "pending":
        raise RecordError(
            where, "lifecycle", "'pending' is reserved for a run's uncommitted summaries; import it as 'active'"
        )
    if lifecycle not in IMPORT_LIFECYCLES:
        raise RecordError(where, "lifecycle", f"must be one of {', '.join(IMPORT_LIFECYCLES)}, got {lifecycle!r}")
    compressed_from = obj.get("compressed_from")
    if isinstance(compressed_from, str) and compressed_from.strip():
        try:
            compressed_from = json.loads(compressed_from)
        except json.JSONDecodeError:
            raise RecordError(where, "compressed_from", "invalid JSON") from None
    if compressed_from in ("", None):
        compressed_from = None
    elif not isinstance(compressed_from, dict) or not isinstance(compressed_from.get("source_ids"), list):
        raise RecordError(where, "compressed_from", "expected an object with a 'source_ids' list")
    elif not compressed_from["source_ids"] or not all(
        isinstance(s, str) and s.strip() for s in compressed_from["source_ids"]
    ):
        raise RecordError(where, "compressed_from", "'source_ids' must be a non-empty list of memory ids")
    elif rid.strip() in compressed_from["source_ids"]:
        raise RecordError(where, "compressed_from", "a summary cannot list itself as a source")
    kind = obj.get("kind") or ("summary" if compressed_from else "observation")
    if isinstance(kind, str):
        kind = kind.strip().lower()
    if not isinstance(kind, str) or not KIND_PATTERN.match(kind):
        raise RecordError(where, "kind", f"expected a lowercase word such as 'observation', got {kind!r}")
    if kind == "summary" and not compressed_from and not obj.get("summary_of"):
        raise RecordError(where, "kind", "a 'summary' needs its lineage: compressed_from with 'source_ids'")
    archived_at = obj.get("archived_at")
    prior = obj.get("prior_importance")
    embedding = obj.get("embedding")
    if embedding is not None:
        if not isinstance(embedding, list) or not embedding:
            raise RecordError(where, "embedding", "expected a non-empty list of numbers")
        embedding = [_number(v, where, "embedding") for v in embedding]
        check_vector(embedding, where, "embedding")
        if embedding_dim is not None and len(embedding) != embedding_dim:
            raise RecordError(where, "embedding", f"dimension {len(embedding)}, expected {embedding_dim}")
    content, secrets = redact(content)  # a key or token never reaches the store (MEMORY_PIPELINE_SECRETS)
    if secrets:
        embedding = None  # a vector of the original text would carry what was taken out
    return MemoryRecord(
        id=rid.strip(),
        content=content,
        importance=importance,
        created_at=created_at,
        categories=_labels(obj.get("categories", obj.get("category")), where, "categories", MAX_CATEGORIES),
        tags=_labels(obj.get("tags"), where, "tags", MAX_LABELS),
        nexus_keys=_labels(obj.get("nexus_keys"), where, "nexus_keys", MAX_LABELS),
        kind=kind,
        source=_optional_str(obj.get("source"), where, "source"),
        session_id=_optional_str(obj.get("session_id"), where, "session_id"),
        pinned=_flag(obj.get("pinned"), where, "pinned"),
        locked=_flag(obj.get("locked"), where, "locked"),
        lifecycle=lifecycle,
        compressed_from=compressed_from,
        archived_by=_optional_str(obj.get("archived_by"), where, "archived_by"),
        archived_at=parse_timestamp(archived_at, where, "archived_at") if archived_at else None,
        prior_importance=_number(prior, where, "prior_importance") if prior is not None else None,
        embedding=embedding,
        human_authored=_flag(obj.get("human_authored"), where, "human_authored"),
        rolled_up_tags=(
            [redact(t)[0] for t in _string_list(obj["rolled_up_tags"], where, "rolled_up_tags")]
            if obj.get("rolled_up_tags")
            else None
        ),
        rolled_up_nexus_keys=(
            [redact(k)[0] for k in _string_list(obj["rolled_up_nexus_keys"], where, "rolled_up_nexus_keys")]
            if obj.get("rolled_up_nexus_keys")
            else None
        ),
        summary_of=_string_list(obj["summary_of"], where, "summary_of") if obj.get("summary_of") else None,
    )
