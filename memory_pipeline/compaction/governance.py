"""Seed 003 "Enterprise Semantic Governance": entry schema, recursive-pollution filter, duplicate titles,
cooldown, size limits and the Tier B / Tier C classification. Pure functions: no Dagster, no writes."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rapidfuzz import fuzz, process

from memory_pipeline.compaction.triggers import HARD_LIMIT, RISK_THRESHOLD, SOFT_LIMIT
from memory_pipeline.tokens import estimate_tokens

REQUIRED_FIELDS = ("Title", "Context", "Durable Insight")
OPTIONAL_FIELDS = ("Operational Impact",)
FIELDS = REQUIRED_FIELDS + OPTIONAL_FIELDS
MAX_TITLE_CHARS = 80
DUPLICATE_SCORE = 85.0  # rapidfuzz token_sort_ratio, 0–100
COOLDOWN_HOURS = 24.0

# Seed: "NEVER write to semantic memory: governance rules, execution tier definitions, debug notes, approval
# logs, cron logs, diff previews, tool output" and "reject raw summaries, conversational fragments, debug logs".
FORBIDDEN: dict[str, tuple[re.Pattern[str], ...]] = {
    "governance rule": (
        re.compile(r"\btier\s+[abc]\b", re.I),
        re.compile(r"OPERATING_RULES", re.I),
        re.compile(r"\bexecution[- ]tier", re.I),
        re.compile(r"\bgovernance\b", re.I),
    ),
    "approval log": (
        re.compile(r"\bAPPROVED\b"),
        re.compile(r"\bapproved\s+by\b", re.I),
        re.compile(r"\bapproval\s+(log|granted|requested|request|pending)\b", re.I),
    ),
    "debug log": (
        re.compile(r"^\s*\[?\d{4}-\d{2}-\d{2}[ T]\d{2}:\d{2}(:\d{2})?\S*\]?\s+(DEBUG|INFO|WARN(ING)?|ERROR|TRACE)\b",
                   re.M),
        re.compile(r"^\s*\[?(DEBUG|TRACE|ERROR|WARN(ING)?|INFO)\]?\s*[:\]\-]", re.M),
        re.compile(r"Traceback \(most recent call last\)"),
        re.compile(r'File "[^"]+", line \d+'),
        re.compile(r"\bdebug(ging)?\s+(note|log|output|print)s?\b", re.I),
    ),
    "cron log": (
        re.compile(r"\bcron(tab)?\b", re.I),
        re.compile(r"(?:^|\s)(?:[\d*/,\-]+\s+){4}[\d*/,\-]+(?:\s|$)"),
    ),
    "diff preview": (
        re.compile(r"^(\+\+\+|---)\s+\S", re.M),
        re.compile(r"^@@ .* @@", re.M),
        re.compile(r"\bdiff --git\b"),
    ),
    "tool output": (
        re.compile(r"```"),
        re.compile(r"^\s*\$ \S", re.M),
        re.compile(r"\bexit (code|status) \d+", re.I),
        re.compile(r"\b(stdout|stderr)\b", re.I),
        re.compile(r"^\s*[{\[]\s*\"", re.M),
        re.compile(r"<\/?(tool|function)_\w+", re.I),
    ),
    "conversational fragment": (
        re.compile(r"^\s*(user|assistant|human|ai|bot|me|q|a)\s*:", re.I | re.M),
        re.compile(r"^\s*[A-Z][\w .'\-]{0,30}\s(said|says|asked|replied|wrote)\s*:", re.M),
        re.compile(r"\bI\b|\b(I'm|I've|I'd|I'll)\b|\b(my|me|you|your|you're|you've)\b", re.I),
        re.compile(r"[?!]\s*$"),
    ),
}


def forbidden_content(text: str) -> list[str]:
    """The categories of forbidden content found in `text` (empty: clean)."""
    return [category for category, patterns in FORBIDDEN.items() if any(p.search(text) for p in patterns)]


@dataclass(frozen=True)
class SemanticEntry:
    """Seed 003 "Semantic Entry Schema": Title, Context, Durable Insight, optional Operational Impact."""

    title: str
    context: str
    durable_insight: str
    operational_impact: str = ""

    def render(self) -> str:
        lines = [f"Title: {self.title}", f"Context: {self.context}", f"Durable Insight: {self.durable_insight}"]
        if self.operational_impact:
            lines.append(f"Operational Impact: {self.operational_impact}")
        return "\n".join(lines) + "\n"

    def fields(self) -> dict[str, str]:
        return {
            "Title": self.title,
            "Context": self.context,
            "Durable Insight": self.durable_insight,
            "Operational Impact": self.operational_impact,
        }


@dataclass(frozen=True)
class SchemaError:
    """A structured error (seed: "abort semantic write, emit structured error")."""

    field: str
    reason: str
    line: int | None = None
    title: str = ""

    def as_dict(self) -> dict[str, object]:
        return {"field": self.field, "reason": self.reason, "line": self.line, "title": self.title}

    def __str__(self) -> str:
        where = f"line {self.line}: " if self.line else ""
        return f"{where}{self.field}: {self.reason}" + (f" ({self.title!r})" if self.title else "")


def validate_fields(values: dict[str, str], line: int | None = None) -> list[SchemaError]:
    """Schema and pollution rules for one entry's fields."""
    title = values.get("Title", "").strip()
    errors = [
        SchemaError(name, "missing or empty (required)", line, title)
        for name in REQUIRED_FIELDS
        if not values.get(name, "").strip()
    ]
    if len(title) > MAX_TITLE_CHARS:
        reason = f"{len(title)} characters; a short heading is ≤ {MAX_TITLE_CHARS}"
        errors.append(SchemaError("Title", reason, line, title))
    for name in FIELDS:
        found = forbidden_content(values.get(name, ""))
        if found:
            errors.append(SchemaError(name, f"forbidden in semantic memory: {', '.join(found)}", line, title))
    return errors


def validate_entry(entry: SemanticEntry) -> list[SchemaError]:
    return validate_fields(entry.fields())


_FIELD_LINE = re.compile(r"^(Title|Context|Durable Insight|Operational Impact)\s*:\s?(.*)$")


@dataclass
class ParsedEntry:
    line: int
    values: dict[str, str] = field(default_factory=dict)


def parse_semantic(text: str) -> tuple[list[ParsedEntry], list[SchemaError]]:
    """Entries (each starts at a `Title:` line) and errors for text that belongs to no entry. Markdown
    headings before the first entry (a file title) are allowed."""
    entries: list[ParsedEntry] = []
    stray: list[SchemaError] = []
    current: ParsedEntry | None = None
    last_field = ""
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.rstrip()
        match = _FIELD_LINE.match(line)
        if match and match[1] == "Title":
            current = ParsedEntry(number, {"Title": match[2]})
            entries.append(current)
            last_field = "Title"
        elif match and current is not None:
            if match[1] in current.values:
                stray.append(SchemaError(match[1], "field repeated in one entry", number, current.values["Title"]))
            current.values[match[1]] = match[2]
            last_field = match[1]
        elif not line.strip():
            continue
        elif current is None:
            if not line.startswith("#"):
                stray.append(SchemaError("(none)", f"text outside any entry: {line[:60]!r}", number))
        else:
            current.values[last_field] = (current.values[last_field] + " " + line.strip()).strip()
    return entries, stray


def validate_semantic_file(text: str) -> list[SchemaError]:
    entries, errors = parse_semantic(text)
    for entry in entries:
        errors.extend(validate_fields(entry.values, entry.line))
    return errors


def existing_titles(text: str) -> list[str]:
    return [e.values.get("Title", "").strip() for e in parse_semantic(text)[0]]


def _norm(title: str) -> str:
    return " ".join(re.sub(r"[^a-z0-9]+", " ", title.lower()).split())


def find_duplicate(title: str, titles: list[str]) -> str | None:
    """An existing title that `title` duplicates: one contains the other, or rapidfuzz token_sort_ratio ≥ 85."""
    norm = _norm(title)
    if not norm:
        return None
    normed = [_norm(t) for t in titles]
    for original, other in zip(titles, normed, strict=True):
        if other and (norm in other or other in norm):
            return original
    best = process.extractOne(norm, normed, scorer=fuzz.token_sort_ratio, score_cutoff=DUPLICATE_SCORE)
    return titles[best[2]] if best else None


# --- cooldown metadata (.memory-compactor-meta.json) ---


class MetaError(ValueError):
    pass


def read_meta(path: Path) -> dict[str, Any] | None:
    """The compactor's metadata, or None when there is none yet (a first run)."""
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise MetaError(f"{path}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    if not isinstance(data, dict):
        raise MetaError(f"{path}: expected a JSON object, got {type(data).__name__}")
    last = data.get("lastCompactionAt")
    if last is not None:
        try:
            datetime.fromisoformat(str(last))
        except ValueError:
            raise MetaError(f"{path}: field lastCompactionAt={last!r} is not an ISO timestamp") from None
    appends = data.get("semanticAppends")
    if appends is not None:
        if not isinstance(appends, dict):
            raise MetaError(f"{path}: field semanticAppends: expected an object of file → ISO timestamp")
        for name, when in appends.items():
            try:
                datetime.fromisoformat(str(when))
            except ValueError:
                raise MetaError(f"{path}: field semanticAppends.{name}={when!r} is not an ISO timestamp") from None
    return data


@dataclass(frozen=True)
class Cooldown:
    status: str  # OK | WARNING
    last_compaction_at: str | None
    hours_since: float | None

    def as_dict(self) -> dict[str, object]:
        return {"status": self.status, "last_compaction_at": self.last_compaction_at, "hours_since": self.hours_since}


def cooldown(meta: dict[str, object] | None, now: datetime) -> Cooldown:
    last = (meta or {}).get("lastCompactionAt")
    if not last:
        return Cooldown("OK", None, None)
    when = datetime.fromisoformat(str(last))
    when = when.replace(tzinfo=UTC) if when.tzinfo is None else when
    hours = round((now - when).total_seconds() / 3600.0, 2)
    return Cooldown("WARNING" if hours < COOLDOWN_HOURS else "OK", str(last), hours)


def file_cooldowns(appends: dict[str, str], now: datetime) -> dict[str, Cooldown]:
    """Per semantic file, the time since its last append (reported; the gate is the workspace-wide
    `lastCompactionAt`, which every append also sets, so it is never looser than this)."""
    return {name: cooldown({"lastCompactionAt": when}, now) for name, when in sorted(appends.items())}


# --- size limits ---


def limit_status(tokens: int) -> dict[str, str]:
    return {
        "soft_limit": "WARNING" if tokens > SOFT_LIMIT else "OK",
        "hard_limit": "WARNING" if tokens > HARD_LIMIT else "OK",
    }


def append_tokens(existing: str, entry: SemanticEntry) -> int:
    """Tokens of the semantic file after appending `entry` (what the size check must look at)."""
    return estimate_tokens(existing + "\n" + entry.render())


# --- classification (seed: "Classification Rules"), before any extraction ---


def classify(semantic_tokens: int, working_due: int, episodic_due: int) -> dict[str, str]:
    """Tier per step: working → episodic is B; episodic → semantic is B below the risk threshold and C above
    it (or above the hard limit). A semantic file above the hard limit makes the whole run Tier C."""
    steps: dict[str, str] = {}
    if working_due:
        steps["working_to_episodic"] = "B"
    if episodic_due:
        steps["episodic_to_semantic"] = "C" if semantic_tokens > RISK_THRESHOLD else "B"
    if semantic_tokens > HARD_LIMIT:
        steps["semantic_hard_limit"] = "C"
    steps["run"] = "C" if "C" in steps.values() else "B" if steps else "none"
    return steps
