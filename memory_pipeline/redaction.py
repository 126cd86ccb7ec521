"""Secrets out of everything the workspace stores: keys, tokens, passwords and private keys are replaced by a
marker naming their kind before a memory, a transcript or an import is written, so no copy of the original
reaches the store, the raw files, the workspace's git history, search snippets or an agent's prompt.

What counts as a secret:
- the fixed-format credentials of Yelp's detect-secrets (AWS, GitHub, GitLab, OpenAI, Slack, Stripe, JWT, npm,
  PyPI, passwords in URLs, …): its regex rules, run over the whole text;
- the shapes it misses, in `redaction_rules.json` with where each comes from (gitleaks' rules mostly): Google,
  Hugging Face and fine-grained GitHub keys, npm tokens, whole JWTs, Discord webhooks, Azure SAS signatures,
  `redis://:pw@` and URL passwords with reserved characters, Authorization headers, passwords given to curl,
  mysql, sshpass, docker, ssh-keygen, openssl and htpasswd or echoed into a `--password-stdin` login, `.env` and
  `.netrc` lines, a sentence that states a password or a random-looking key; each runs only near one of its
  keywords; a match runs to the end of its word (no tail of a longer token is left);
- a private key block, BEGIN to END (detect-secrets flags only its first line);
- the value assigned to a name that says it is secret (`*_KEY`, `*_SECRET`, `*TOKEN*`, `PASSWORD`, …) in a shell,
  env, JSON, YAML or Python assignment: always for passwords and secrets, and for keys and tokens when the value
  looks random (long enough, mixed letters and digits, high entropy), so `sort_key = date` stays.

Each is looked for in the text as written and again with its JSON string escapes decoded (a tool's arguments
and output are JSON strings inside JSON), and replaced in the original text. A marker is never redacted again,
so redacting twice changes nothing.

Set MEMORY_PIPELINE_SECRETS=keep to store text verbatim.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

SECRETS_ENV = "MEMORY_PIPELINE_SECRETS"  # redact (default) | keep
MODES = ("redact", "keep")
MARKER = "[redacted {kind}]"
# Rules of detect-secrets that flag what is not a secret in an agent's notes.
_SKIPPED_RULES = {"IPPublicDetector"}
# Rules whose keyword forms (`cloudant_password = …`, `ibm_cloud_iam_key: …`) the assignment rule below covers,
# and which cost more than all the others together (a look-behind at every character), or flag prose (AP…).
_SKIPPED_RULES |= {"CloudantDetector", "IbmCloudIamDetector", "IbmCosHmacDetector", "SoftlayerDetector",
                   "ArtifactoryDetector"}

_PEM = re.compile(
    r"-----BEGIN ((?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?)-----.*?(?:-----END \1-----|\Z)", re.DOTALL
)
# name (optionally quoted) = or : value (optionally quoted); `export`, `set`, JSON and YAML all fit
_ASSIGNED = re.compile(
    r"""(?ix)
    (?<!\\)(?P<name>\b[a-z0-9_.-]*?(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key
        |client[_-]?secret|credentials?|auth|key)[a-z0-9_.-]*)
    ["']?\s*(?::|=|:=)\s*
    (?:[|>][-+]?[ \t]*\n\s*)?  # a YAML block scalar: the value on the next line
    (?P<quote>["']?)(?P<value>(?:[^\s"',;&|)}\]\\]|\\(?![nrtu"\\/]))+)  # ends at a JSON escape (\n)
    """
)
_KEYWORD_WORDS = r"pass|pwd|secret|token|key|auth|cred|bearer"
_KEYWORD, _KEYWORD_ANY_CASE = re.compile(_KEYWORD_WORDS), re.compile(_KEYWORD_WORDS, re.IGNORECASE)
_LONG_RUN = re.compile(r"(?<![\w+/=:@.~-])[\w+/=:@.~-]{16,}")
WINDOW, BLOB, NAME = 256, 4096, 64  # characters around a hit; a run seen only at its ends; a name's length
_ALWAYS = re.compile(r"(?i)passw|passphrase|pwd|secret|credential")
_PLACEHOLDER = re.compile(  # a marker of ours is one too: text redacted before is left as it is
    r"(?i)^(?:\$|%|<|\[redacted|\{\{|\*+$|x+$|\.\.\.|none$|null$|true$|false$|redacted|changeme$|your)"
)


RULES_FILE = Path(__file__).with_name("redaction_rules.json")
ESCAPE_LEVELS = 2  # JSON string escapes decoded at most this many times over
_SYMBOLS = set("!@#$%^&*+=?~/\\|<>")  # not - _ . ': words have them


@dataclass(frozen=True)
class _Rule:
    id: str
    kind: str
    keywords: tuple[str, ...]
    pattern: re.Pattern[str]
    value: str  # any | password | random: what the secret must look like


_KEYWORD_RULES: tuple[_Rule, ...] | None = None
_ANY_KEYWORD: re.Pattern[str] | None = None  # one scan that tells whether any rule can match at all


@dataclass(frozen=True)
class Found:
    """One secret in a text: where, and what kind (the marker says the kind)."""

    start: int
    end: int
    kind: str


def mode(environ: Mapping[str, str] | None = None) -> str:
    """redact (default) or keep; another value is refused with the variable named."""
    value = (os.environ if environ is None else environ).get(SECRETS_ENV, "redact").strip().lower() or "redact"
    if value not in MODES:
        from memory_pipeline.settings import SettingsError

        raise SettingsError(f"{SECRETS_ENV}={value!r}: expected one of {', '.join(MODES)}")
    return value


@cache
def _rules() -> tuple[tuple[str, re.Pattern[str]], ...]:
    """detect-secrets' regex rules (kind, pattern), loaded once and only by a write."""
    import importlib
    import inspect
    import pkgutil

    import detect_secrets.plugins as plugins
    from detect_secrets.plugins.base import RegexBasedDetector

    rules: list[tuple[str, re.Pattern[str]]] = []
    for info in pkgutil.iter_modules(plugins.__path__):
        module = importlib.import_module(f"{plugins.__name__}.{info.name}")
        for name, cls in inspect.getmembers(module, inspect.isclass):
            if cls.__module__ != module.__name__ or not issubclass(cls, RegexBasedDetector):
                continue
            if cls is RegexBasedDetector or name in _SKIPPED_RULES or name == "PrivateKeyDetector":
                continue  # private keys: the whole block, below
            denylist: Iterable[re.Pattern[str]] = cls.denylist  # type: ignore[assignment]  # a class attribute
            rules += [(str(cls.secret_type), pattern) for pattern in denylist]
    # API keys of a newer shape than its OpenAI rule knows (sk-proj-…, sk-live-…, sk-ant-…)
    rules.append(("API Key", re.compile(r"\bsk-(?:[a-z]+-){0,2}[A-Za-z0-9_-]{20,}")))
    return tuple(rules)


def _entropy(value: str) -> float:
    counts = Counter(value)
    return -sum(n / len(value) * math.log2(n / len(value)) for n in counts.values())


def looks_random(value: str) -> bool:
    """A generated key or token rather than a word or a number: long, letters and digits, high entropy."""
    has_alpha, has_digit = any(c.isalpha() for c in value), any(c.isdigit() for c in value)
    return len(value) >= 12 and has_alpha and has_digit and _entropy(value) >= 3.0


def _assigned(text: str) -> Iterator[Found]:
    for m in _ASSIGNED.finditer(text):
        value, name = m.group("value"), m.group("name")
        if _PLACEHOLDER.match(value) or len(value) < 4:
            continue
        if _ALWAYS.search(name) or looks_random(value):
            yield Found(m.start("value"), m.end("value"), f"value of {name}")


def _merged(spans: Iterable[tuple[int, int]], before: int, after: int, size: int) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(spans):
        start, end = max(start - before, 0), min(end + after, size)
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return merged


def _run_windows(text: str) -> list[tuple[int, int]]:
    """Where a fixed-format credential can be: around each long unbroken run of characters (every key, token
    and URL is one), so prose costs one scan, not thirty. Of a run longer than BLOB (an embedded file or
    image) only the ends are looked at."""
    spans: list[tuple[int, int]] = []
    for m in _LONG_RUN.finditer(text):
        start, end = m.span()
        spans += [(start, end)] if end - start <= BLOB else [(start, start + WINDOW), (end - WINDOW, end)]
    return _merged(spans, WINDOW, WINDOW, len(text))


def _keyword_windows(text: str) -> list[tuple[int, int]]:
    """Where an assignment to a secret's name can be: around each word that names a secret."""
    low = text.lower()
    hits = _KEYWORD.finditer(low) if len(low) == len(text) else _KEYWORD_ANY_CASE.finditer(text)
    return _merged((m.span() for m in hits), NAME, BLOB, len(text))


def _by_rules(window: str, offset: int) -> Iterator[Found]:
    for kind, pattern in _rules():
        for m in pattern.finditer(window):
            # a rule's first group is the secret when it is long (a password in a URL, an AWS secret); a short
            # one is a prefix the rule names (ghp, glcbt): then the whole match is the secret
            group = m.group(1) if pattern.groups else None
            start, end = m.span(1) if group is not None and len(group) >= 8 else m.span()
            if end > start:
                yield Found(offset + start, offset + end, kind)


def _keyword_rules() -> tuple[_Rule, ...]:
    """The rules of `redaction_rules.json` (shapes detect-secrets misses, each with its source), loaded once."""
    global _KEYWORD_RULES, _ANY_KEYWORD
    if _KEYWORD_RULES is None:
        data = json.loads(RULES_FILE.read_text(encoding="utf-8"))
        _KEYWORD_RULES = tuple(
            _Rule(r["id"], r["kind"], tuple(k.lower() for k in r["keywords"]), re.compile(r["regex"]), r["value"])
            for r in data["rules"]
        )
        words = sorted({k for rule in _KEYWORD_RULES for k in rule.keywords}, key=len, reverse=True)
        _ANY_KEYWORD = re.compile("|".join(map(re.escape, words)), re.IGNORECASE)
    return _KEYWORD_RULES


def _password_like(value: str) -> bool:
    """A password rather than a word of prose: a digit or a symbol in it."""
    return any(c.isdigit() or c in _SYMBOLS for c in value)


_VALUE_CHECKS: dict[str, Callable[[str], bool]] = {
    "any": lambda value: True, "password": _password_like, "random": looks_random}


def _near(text: str, low: str | None, keywords: tuple[str, ...]) -> list[tuple[int, int]]:
    """Where a rule can match: from WINDOW before each of its keywords to BLOB after it."""
    hits: list[tuple[int, int]] = []
    for keyword in keywords:
        if low is not None:
            at = low.find(keyword)
            while at >= 0:
                hits.append((at, at + len(keyword)))
                at = low.find(keyword, at + 1)
        else:
            hits += [m.span() for m in re.finditer(re.escape(keyword), text, re.IGNORECASE)]
    return _merged(hits, WINDOW, BLOB, len(text))


def _by_keyword_rules(text: str) -> Iterator[Found]:
    rules = _keyword_rules()
    if _ANY_KEYWORD is None or not _ANY_KEYWORD.search(text):
        return
    low = text.lower()
    low_or_none = low if len(low) == len(text) else None  # a few characters change length when lowered
    for rule in rules:
        check = _VALUE_CHECKS[rule.value]
        for start, end in _near(text, low_or_none, rule.keywords):
            for m in rule.pattern.finditer(text, start, end):  # lookbehinds and \b still see what lies before
                span = m.span("value") if "value" in rule.pattern.groupindex else m.span()
                value = text[span[0] : span[1]].strip("\"'`")
                if len(value) < 4 or _PLACEHOLDER.match(value) or not check(value):
                    continue
                name = m.group("name") if "name" in rule.pattern.groupindex else ""
                yield Found(span[0], span[1], rule.kind.format(name=name))


def _found(text: str) -> list[Found]:
    found: list[Found] = [Found(m.start(), m.end(), "Private Key") for m in _PEM.finditer(text)]
    for start, end in _run_windows(text):
        found += _by_rules(text[start:end], start)
    for start, end in _keyword_windows(text):
        found += [Found(start + f.start, start + f.end, f.kind) for f in _assigned(text[start:end])]
    found += _by_keyword_rules(text)
    return found


_ESCAPE = re.compile(r"\\(?:u[0-9a-fA-F]{4}|[ntrbf\"\\/'])")
_ESCAPED = {"n": "\n", "t": "\t", "r": "\r", "b": "\b", "f": "\f", '"': '"', "\\": "\\", "/": "/", "'": "'"}


def unescaped(text: str) -> tuple[str, list[int]] | None:
    """`text` with its JSON string escapes decoded (\\n, \\", \\\\, \\uXXXX), and where each of its characters
    (and its end) lies in `text`; None when it has none. A tool's arguments and output are often JSON inside
    JSON: `{\\"password\\": \\"…\\"}` reads as an assignment only once decoded."""
    parts: list[str] = []
    where: list[int] = []
    at = 0
    for m in _ESCAPE.finditer(text):
        parts.append(text[at : m.start()])
        where.extend(range(at, m.start()))
        escape = m.group()
        parts.append(chr(int(escape[2:], 16)) if escape[1] == "u" else _ESCAPED[escape[1]])
        where.append(m.start())
        at = m.end()
    if not parts:
        return None
    parts.append(text[at:])
    where.extend(range(at, len(text) + 1))
    return "".join(parts), where


def _whole(text: str, found: Found) -> Found:
    """`found` to the end of its word: a rule that knows a token's length (a fine-grained GitHub token's 82
    characters) must not leave the rest of a longer one after the marker."""
    end = found.end
    while end < len(text) and _word(text[end]) and _word(text[end - 1]):
        end += 1
    return found if end == found.end else Found(found.start, end, found.kind)


def _word(char: str) -> bool:
    return char.isalnum() or char == "_"


def find(text: str) -> list[Found]:
    """Every secret in `text` — as written, and with its JSON escapes decoded (twice at most: JSON in JSON in
    JSON), each decoded finding placed back on the original characters — overlapping findings merged (the
    first kind found names the merged span)."""
    found = _found(text)
    view, where = text, None
    for _ in range(ESCAPE_LEVELS):
        decoded = unescaped(view) if "\\" in view else None
        if decoded is None:
            break
        view, inner = decoded
        where = inner if where is None else [where[i] for i in inner]
        found += [Found(where[f.start], where[f.end], f.kind) for f in _found(view)]
    merged: list[Found] = []
    for f in sorted((_whole(text, f) for f in found), key=lambda f: (f.start, -f.end)):
        if merged and f.start < merged[-1].end:
            last = merged[-1]
            merged[-1] = Found(last.start, max(last.end, f.end), last.kind)
        else:
            merged.append(f)
    return merged


def redact(text: str, environ: Mapping[str, str] | None = None) -> tuple[str, list[str]]:
    """(`text` with each secret replaced by a marker of its kind, the kinds replaced); unchanged when the
    workspace keeps text verbatim."""
    if not text or mode(environ) == "keep":
        return text, []
    found = find(text)
    if not found:
        return text, []
    out, at = [], 0
    for f in found:
        out += [text[at : f.start], MARKER.format(kind=f.kind)]
        at = f.end
    out.append(text[at:])
    return "".join(out), [f.kind for f in found]


def redact_text(text: str) -> str:
    """`redact` for callers that need only the text."""
    return redact(text)[0]
