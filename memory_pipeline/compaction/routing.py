"""Which `semantic/<domain>.md` an insight belongs to (seed 003 step 4: `openclaw.md` for OpenClaw operational
learnings, `whatsapp-bot.md` for WhatsApp bot knowledge, …). Pure and deterministic, in this order:

1. an explicit domain in the source file: `domain:` in its YAML frontmatter, else a `Domain:` line (a compiled
   episodic summary carries its working note's explicit domain as that line);
2. a keyword/heading classifier over a small configurable vocabulary (domain → keywords): hits in the
   insight count once, hits in the source's headings or file name count twice; the best domain needs a
   score ≥ 2 and a strict lead (a tie is ambiguous);
3. else the default file (`openclaw.md`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

DEFAULT_VOCABULARY: dict[str, tuple[str, ...]] = {
    "openclaw": ("openclaw", "open claw", "clawhub"),
    "whatsapp-bot": ("whatsapp", "whatsapp bot", "wa bot", "twilio", "baileys", "message template"),
}
MIN_SCORE = 2
HEADING_WEIGHT = 2
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{0,63}$")
_FRONT_DOMAIN = re.compile(r"^domain\s*:\s*(.*?)\s*$", re.I)
_DOMAIN_LINE = re.compile(r"^\s*(?:[-*]\s+)?\**Domain\**\s*:\s*\**\s*(.*?)\s*\**\s*$")
_HEADING = re.compile(r"^\s*#+\s*(.+?)\s*$")


class RoutingError(ValueError):
    """An explicit domain that cannot name a semantic file; the message names the file, line and value."""


@dataclass(frozen=True)
class Route:
    domain: str
    file: str  # `<domain>.md` under semantic/
    source: str  # frontmatter | domain line | keywords | default
    line: int | None = None  # where the explicit domain was found
    score: int = 0  # the classifier's winning score (keywords only)


def slug(value: str) -> str | None:
    """`WhatsApp Bot` → `whatsapp-bot`; None when the value cannot be a file stem (a path, empty, symbols)."""
    cleaned = value.strip().strip("\"'`").strip()
    cleaned = re.sub(r"\.md$", "", cleaned, flags=re.I).lower()
    cleaned = re.sub(r"[\s_]+", "-", cleaned)
    return cleaned if _SLUG.match(cleaned) else None


def validate_vocabulary(vocabulary: Mapping[str, Sequence[str]]) -> dict[str, tuple[str, ...]]:
    """Run config `domains`: every key a slug, every keyword a non-empty string (error names the field)."""
    out: dict[str, tuple[str, ...]] = {}
    for domain, keywords in vocabulary.items():
        if slug(domain) != domain:
            raise ValueError(f"domains.{domain}: a domain is a lowercase file stem like 'whatsapp-bot'")
        words = tuple(str(k).strip().lower() for k in keywords)
        if not words or any(not w for w in words):
            raise ValueError(f"domains.{domain}: needs at least one non-empty keyword")
        out[domain] = words
    return out


def explicit_domain(text: str, source: str) -> Route | None:
    """The source file's own domain: frontmatter `domain:` wins over a `Domain:` line; None when neither."""
    lines = text.splitlines()
    found: tuple[str, int, str] | None = None
    if lines and lines[0].strip() == "---":
        for number, line in enumerate(lines[1:], start=2):
            if line.strip() in ("---", "..."):
                break
            match = _FRONT_DOMAIN.match(line)
            if match:
                found = (match[1], number, "frontmatter")
                break
    if found is None:
        in_fence = False
        for number, line in enumerate(lines, start=1):
            if line.lstrip().startswith("```"):
                in_fence = not in_fence
                continue
            match = None if in_fence else _DOMAIN_LINE.match(line)
            if match:
                found = (match[1], number, "domain line")
                break
    if found is None:
        return None
    value, number, how = found
    domain = slug(value)
    if domain is None:
        raise RoutingError(
            f"{source}: line {number}: {how} domain {value!r} is not a valid semantic file name "
            "(lowercase letters, digits and '-', e.g. 'whatsapp-bot')"
        )
    return Route(domain, f"{domain}.md", how, number)


def headings(text: str, source: str) -> str:
    """What the classifier weighs double: the file name and every Markdown heading."""
    found = [m[1] for m in (_HEADING.match(line) for line in text.splitlines()) if m]
    return "\n".join([re.sub(r"[-_.]+", " ", source), *found])


def _hits(keyword: str, text: str) -> int:
    return len(re.findall(rf"(?<![a-z0-9]){re.escape(keyword)}(?![a-z0-9])", text))


def scores(body: str, heading_text: str, vocabulary: Mapping[str, Sequence[str]]) -> dict[str, int]:
    body, heading_text = body.lower(), heading_text.lower()
    return {
        domain: sum(_hits(k, body) + HEADING_WEIGHT * _hits(k, heading_text) for k in keywords)
        for domain, keywords in vocabulary.items()
    }


def classify(
    body: str, heading_text: str, vocabulary: Mapping[str, Sequence[str]], default_file: str
) -> Route:
    """Keyword/heading classification, else the default file (also on a tie: no guessing)."""
    ranked = sorted(scores(body, heading_text, vocabulary).items(), key=lambda kv: (-kv[1], kv[0]))
    if ranked and ranked[0][1] >= MIN_SCORE and (len(ranked) == 1 or ranked[0][1] > ranked[1][1]):
        domain, score = ranked[0]
        return Route(domain, f"{domain}.md", "keywords", score=score)
    return Route(default_file.removesuffix(".md"), default_file, "default")


def route(
    entry_text: str,
    source_text: str,
    source: str,
    vocabulary: Mapping[str, Sequence[str]],
    default_file: str,
    explicit: Route | None,
) -> Route:
    """One insight's route: the source's explicit domain (`explicit_domain`, read once per file), else the
    classifier over the insight (body) and the source's headings and name, else the default."""
    if explicit is not None:
        return explicit
    return classify(entry_text, headings(source_text, source), vocabulary, default_file)
