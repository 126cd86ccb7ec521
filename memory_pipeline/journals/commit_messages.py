"""Commit messages of the knowledge repository (seed 001 §3.2): `<type>: <summary>`, a body, trailers.

`template` is deterministic: the same change always gives the same message (the journal pipeline's own commits
use it, so `history` can rely on subjects like `extract: journal 2026-11-17`). `compose` lets a model write the
summary line instead (the `llm` resource when ANTHROPIC_API_KEY is set, see `llm_ask`); the body and trailers
stay the template's, and any failure of the call — or a reply that is no usable line — falls back to the
template. The prompt and the types are data: commit_message.json.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

MAX_FILES_LISTED = 20
Ask = Callable[[str], str]


@cache
def _spec() -> dict[str, Any]:
    return dict(json.loads((Path(__file__).with_name("commit_message.json")).read_text(encoding="utf-8")))


def commit_types() -> dict[str, str]:
    """The seed's types and what each is for."""
    return dict(_spec()["types"])


@dataclass(frozen=True)
class KnowledgeChange:
    """What a commit records: its §3.2 type, a deterministic one-line summary, why (optional), the files and the
    sessions it came from, extra trailers (`Key: value`) and, for a model, the diff stat."""

    type: str
    summary: str
    files: tuple[str, ...] = ()
    sessions: tuple[str, ...] = ()
    detail: str = ""
    trailers: tuple[tuple[str, str], ...] = ()
    diff_stat: str = ""

    def __post_init__(self) -> None:
        if self.type not in commit_types():
            raise ValueError(f"commit type {self.type!r}: expected one of {', '.join(commit_types())}")
        if not self.summary.strip() or "\n" in self.summary:
            raise ValueError("a commit summary is one non-empty line")


def _body(change: KnowledgeChange) -> str:
    parts = []
    if change.detail.strip():
        parts.append(change.detail.strip())
    if change.files:
        shown = [f"- {f}" for f in change.files[:MAX_FILES_LISTED]]
        if len(change.files) > MAX_FILES_LISTED:
            shown.append(f"- … and {len(change.files) - MAX_FILES_LISTED} more")
        parts.append("Files:\n" + "\n".join(shown))
    trailers = ([("Sessions", ", ".join(change.sessions))] if change.sessions else []) + list(change.trailers)
    if trailers:
        parts.append("\n".join(f"{k}: {v}" for k, v in trailers))  # last paragraph: git reads these as trailers
    return "\n\n".join(parts)


def _message(change: KnowledgeChange, summary: str) -> str:
    body = _body(change)
    return f"{change.type}: {summary}" + (f"\n\n{body}" if body else "") + "\n"


def template(change: KnowledgeChange) -> str:
    """The deterministic message: `type: summary`, the detail, `Files:` and the trailers (`Sessions: …`)."""
    return _message(change, change.summary.strip())


def prompt(change: KnowledgeChange) -> str:
    spec = _spec()
    return str(spec["prompt"]).format(
        max_chars=spec["summary_max_chars"],
        type=change.type,
        type_meaning=commit_types()[change.type],
        summary=change.summary,
        files="\n".join(change.files[:MAX_FILES_LISTED]) or "(none)",
        sessions=", ".join(change.sessions) or "(none)",
        diff=change.diff_stat[:4000] or "(not given)",
    )


def clean_summary(reply: str, change_type: str) -> str | None:
    """The model's reply as a summary line: its first non-empty line without quotes or a repeated type prefix,
    cut at the limit; None when nothing usable is left."""
    lines = [line.strip() for line in reply.splitlines() if line.strip()]
    if not lines:
        return None
    line = lines[0].strip("`\"' ")
    for prefix in (f"{change_type}:", f"{change_type} :"):
        if line.lower().startswith(prefix):
            line = line[len(prefix) :].strip()
    limit = int(_spec()["summary_max_chars"])
    if len(line) > limit:
        line = line[: limit - 1].rstrip() + "…"
    return line or None


@dataclass(frozen=True)
class Composed:
    message: str
    written_by: str  # "template", "llm", or "template (llm failed: …)"


def compose(change: KnowledgeChange, ask: Ask | None = None) -> Composed:
    """The commit message; with `ask` a model writes the summary line, the template on any error."""
    if ask is None:
        return Composed(template(change), "template")
    try:
        summary = clean_summary(ask(prompt(change)), change.type)
    except Exception as exc:  # noqa: BLE001 — a commit never fails for its message
        return Composed(template(change), f"template (llm failed: {type(exc).__name__})")
    if summary is None:
        return Composed(template(change), "template (llm reply empty)")
    return Composed(_message(change, summary), "llm")


def anthropic_ask(client: Any, model: str) -> Ask:
    """One call through the official SDK at temperature 0 (in `extra_body`, as the gate's and the distiller's)."""

    def ask(text: str) -> str:
        reply = client.messages.create(
            model=model,
            max_tokens=int(_spec()["max_tokens"]),
            messages=[{"role": "user", "content": text}],
            extra_body={"temperature": 0},
        )
        return "".join(getattr(block, "text", "") for block in reply.content)

    return ask


def llm_ask(llm: Any, http_client: Any = None) -> Ask | None:
    """The `llm` resource's model as an `Ask` when it uses Anthropic (a key is set), else None (template)."""
    try:
        if not llm.uses_anthropic():
            return None
        return anthropic_ask(llm.make_client(http_client=http_client), llm.model)
    except Exception:  # noqa: BLE001 — a misconfigured resource means the template, never a failed commit
        return None
