"""Topic files (seed 001 §2.2 "Topic Files", §4.4): `<workspace>/topics/*.md`, frontmatter + instructions.

A topic is what a conversation can wake up: its triggers say when, its body says what the agent should do,
its subscriptions name the knowledge files injected with it. The loader validates every field and rejects a
bad topic by file and field while the others load, so one typo never silences every watcher.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from memory_pipeline.context.files import NotRegularFile, read_regular_text
from memory_pipeline.context.patterns import pattern_problem

ACTIVATIONS = ("auto", "gated", "manual")
PRIORITIES = ("low", "medium", "high", "critical")
SCOPES = ("input", "output", "both")
# Tier-1 trigger kinds: pattern (regex), keywords (a word list), glob (tool-call paths), url (a regex on the
# message's URLs), mention (@name or a name), and the two event kinds the compiler accepts as payloads.
TRIGGER_TYPES = ("pattern", "keywords", "glob", "url", "mention", "webhook", "cron")
DEFAULT_SIMILARITY_THRESHOLD = 0.20  # seed 001 §4.2 Tier 2 says 0.15; see benchmarks/RESULTS.md "Which topics wake"
DEFAULT_MAX_CONTEXT_KB = 4.0
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when the wheel has it: ~10x faster
_FRONTMATTER = re.compile(r"\A---\s*\n(.*?)\n---\s*\n?(.*)\Z", re.S)


class TopicError(ValueError):
    """One invalid field of one topic file; `str()` is the line a person reads."""

    def __init__(self, path: Path, field_name: str, problem: str) -> None:
        self.path, self.field, self.problem = path, field_name, problem
        super().__init__(f"{path}: field {field_name!r}: {problem}")


@dataclass(frozen=True)
class Trigger:
    type: str
    match: str = ""  # regex for pattern/url, glob for glob, name for mention
    keywords: tuple[str, ...] = ()
    scope: str = "input"
    source: str = ""  # webhook source, e.g. "email"
    event: str = ""  # webhook event, e.g. "new_message"
    schedule: str = ""  # cron expression
    correction_hint: str = ""  # output triggers: what the agent should do instead (§4.3)
    where: str = ""  # the field in its topic file, e.g. "triggers[0].match": how a slow pattern is reported


@dataclass(frozen=True)
class Topic:
    name: str
    path: Path
    title: str
    instructions: str  # the body: what the agent does when the topic is active
    triggers: tuple[Trigger, ...]
    subscriptions: tuple[str, ...] = ()
    activation: str = "gated"
    priority: str = "medium"
    similarity_threshold: float = DEFAULT_SIMILARITY_THRESHOLD
    max_context_kb: float = DEFAULT_MAX_CONTEXT_KB
    keywords: tuple[str, ...] = field(default=())

    @property
    def description(self) -> str:
        """What the gate reads about the topic: its title and the start of its instructions."""
        return f"{self.title}. {' '.join(self.instructions.split())}"

    @property
    def priority_rank(self) -> int:
        return PRIORITIES.index(self.priority)


def _text(value: Any, path: Path, name: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TopicError(path, name, f"expected non-empty text, got {value!r}")
    return value.strip()


def _regex(value: Any, path: Path, name: str) -> str:
    text = _text(value, path, name)
    problem = pattern_problem(text)  # the engine the watchers match with (memory_pipeline.context.patterns)
    if problem is not None:
        raise TopicError(path, name, f"invalid regular expression {text!r}: {problem}")
    return text


def _trigger(raw: Any, path: Path, i: int) -> Trigger:
    where = f"triggers[{i}]"
    if not isinstance(raw, dict):
        raise TopicError(path, where, f"expected a mapping with a `type`, got {raw!r}")
    kind = raw.get("type")
    if kind not in TRIGGER_TYPES:
        raise TopicError(path, f"{where}.type", f"expected one of {', '.join(TRIGGER_TYPES)}, got {kind!r}")
    scope = raw.get("scope", "input")
    if scope not in SCOPES:
        raise TopicError(path, f"{where}.scope", f"expected input, output or both, got {scope!r}")
    known = {"type", "match", "keywords", "scope", "source", "event", "schedule", "correction_hint"}
    unknown = sorted(set(raw) - known)
    if unknown:
        raise TopicError(path, f"{where}.{unknown[0]}", f"unknown field (known: {', '.join(sorted(known))})")
    hint = raw.get("correction_hint", "")
    if not isinstance(hint, str):
        raise TopicError(path, f"{where}.correction_hint", f"expected text, got {hint!r}")
    if kind in ("pattern", "url"):
        field_name = f"{where}.match"
        pattern = _regex(raw.get("match"), path, field_name)
        return Trigger(kind, match=pattern, scope=scope, correction_hint=hint, where=field_name)
    if kind in ("glob", "mention"):
        return Trigger(kind, match=_text(raw.get("match"), path, f"{where}.match"), scope=scope)
    if kind == "keywords":
        words = raw.get("keywords")
        if not isinstance(words, list) or not words or not all(isinstance(w, str) and w.strip() for w in words):
            raise TopicError(path, f"{where}.keywords", f"expected a non-empty list of words, got {words!r}")
        return Trigger(kind, keywords=tuple(w.strip().lower() for w in words), scope=scope, correction_hint=hint)
    if kind == "webhook":
        return Trigger(kind, source=_text(raw.get("source"), path, f"{where}.source"), event=str(raw.get("event", "")))
    schedule = _text(raw.get("schedule"), path, f"{where}.schedule")
    if len(schedule.split()) != 5:
        raise TopicError(path, f"{where}.schedule", f"expected a 5-field cron expression, got {schedule!r}")
    return Trigger(kind, schedule=schedule)


def _number(meta: dict[str, Any], key: str, default: float, path: Path, lo: float, hi: float) -> float:
    value = meta.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= float(value) <= hi:
        raise TopicError(path, key, f"expected a number in [{lo:g}, {hi:g}], got {value!r}")
    return float(value)


def parse_topic(path: Path, text: str, knowledge_home: Path | None = None) -> Topic:
    """One topic from its file's text; raises TopicError naming the field. `knowledge_home` (the workspace)
    resolves subscriptions, which must exist."""
    m = _FRONTMATTER.match(text)
    if not m:
        raise TopicError(path, "frontmatter", "the file must start with a `---` YAML block closed by `---`")
    try:
        meta = yaml.load(m.group(1), Loader=_LOADER) or {}
    except yaml.YAMLError as exc:
        raise TopicError(path, "frontmatter", f"invalid YAML: {' '.join(str(exc).split())}") from None
    if not isinstance(meta, dict):
        raise TopicError(path, "frontmatter", "expected a mapping of fields")
    if meta.get("type", "topic") != "topic":
        raise TopicError(path, "type", f"expected 'topic', got {meta.get('type')!r}")
    raw_triggers = meta.get("triggers", [])
    if not isinstance(raw_triggers, list):
        raise TopicError(path, "triggers", "expected a list of triggers")
    triggers = tuple(_trigger(t, path, i) for i, t in enumerate(raw_triggers))
    activation = meta.get("activation", "gated")
    if activation not in ACTIVATIONS:
        raise TopicError(path, "activation", f"expected auto, gated or manual, got {activation!r}")
    priority = meta.get("priority", "medium")
    if priority not in PRIORITIES:
        raise TopicError(path, "priority", f"expected low, medium, high or critical, got {priority!r}")
    subs = meta.get("subscriptions", [])
    if not isinstance(subs, list) or not all(isinstance(s, str) and s.strip() for s in subs):
        raise TopicError(path, "subscriptions", f"expected a list of paths, got {subs!r}")
    for i, sub in enumerate(subs):
        if Path(sub).is_absolute() or ".." in Path(sub).parts:
            raise TopicError(path, f"subscriptions[{i}]", f"{sub!r} must be a path inside the workspace")
        if knowledge_home is not None and not (knowledge_home / sub).is_file():
            raise TopicError(path, f"subscriptions[{i}]", f"{sub} does not exist under {knowledge_home}")
    body = m.group(2).strip()
    if not body:
        raise TopicError(path, "body", "the topic has no instructions below its frontmatter")
    heading = re.search(r"^#\s+(.+)$", body, re.M)
    keywords = tuple(w for t in triggers for w in t.keywords)
    return Topic(
        name=path.stem,
        path=path,
        title=heading.group(1).strip() if heading else path.stem,
        instructions=body,
        triggers=triggers,
        subscriptions=tuple(s.strip() for s in subs),
        activation=activation,
        priority=priority,
        similarity_threshold=_number(meta, "similarity_threshold", DEFAULT_SIMILARITY_THRESHOLD, path, 0.0, 1.0),
        max_context_kb=_number(meta, "max_context_kb", DEFAULT_MAX_CONTEXT_KB, path, 0.1, 1024.0),
        keywords=keywords,
    )


# Parsed topics by (path, mtime, size): a server compiles context on every turn and must not re-parse YAML.
_PARSED: dict[tuple[str, int, int], Topic | TopicError] = {}


def _parse_cached(path: Path, home: Path) -> Topic | TopicError:
    try:
        st = path.stat()
    except OSError as exc:
        return TopicError(path, "file", f"cannot be read: {exc}")
    key = (str(path), st.st_mtime_ns, st.st_size)
    if key not in _PARSED:
        try:
            _PARSED[key] = parse_topic(path, read_regular_text(path, root=home))
        except NotRegularFile as exc:  # a named pipe would block the read forever; a link out of the workspace
            _PARSED[key] = TopicError(path, "file", f"{exc.problem}: skipped; a topic must be a regular .md file")
        except (OSError, UnicodeDecodeError) as exc:
            _PARSED[key] = TopicError(path, "file", f"cannot be read as UTF-8 text: {exc}")
        except TopicError as exc:
            _PARSED[key] = exc
    return _PARSED[key]


def load_topics(home: Path) -> tuple[list[Topic], list[TopicError]]:
    """Every valid topic under `<home>/topics/`, and one error per rejected file (the others still load).
    A subscription must exist under `home` (checked on every load: the file may come or go)."""
    topics: list[Topic] = []
    errors: list[TopicError] = []
    folder = home / "topics"
    for path in sorted(folder.glob("*.md")) if folder.is_dir() else []:
        parsed = _parse_cached(path, home)
        if isinstance(parsed, TopicError):
            errors.append(parsed)
            continue
        missing = [i for i, sub in enumerate(parsed.subscriptions) if not (home / sub).is_file()]
        if missing:
            i = missing[0]
            sub_path = home / parsed.subscriptions[i]
            problem = (f"{parsed.subscriptions[i]} is not a regular file (e.g. a named pipe): replace it with one"
                       if sub_path.exists() else f"{parsed.subscriptions[i]} does not exist under {home}")
            errors.append(TopicError(path, f"subscriptions[{i}]", problem))
            continue
        topics.append(parsed)
    return topics, errors
