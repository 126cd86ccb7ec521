"""Secrets out of everything the workspace stores: keys, tokens, passwords and private keys are replaced by a
marker naming their kind before a memory, a transcript or an import is written, so no copy of the original
reaches the store, the raw files, the workspace's git history, search snippets or an agent's prompt.

What counts as a secret:
- the fixed-format credentials of Yelp's detect-secrets (AWS, GitHub, GitLab, OpenAI, Slack, Stripe, JWT, npm,
  PyPI, passwords in URLs, …): its regex rules, run over the whole text;
- a private key block, BEGIN to END (detect-secrets flags only its first line);
- the value assigned to a name that says it is secret (`*_KEY`, `*_SECRET`, `*TOKEN*`, `PASSWORD`, …) in a shell,
  env, JSON, YAML or Python assignment: always for passwords and secrets, and for keys and tokens when the value
  looks random (long enough, mixed letters and digits, high entropy), so `sort_key = date` stays.

Set MEMORY_PIPELINE_SECRETS=keep to store text verbatim.
"""

from __future__ import annotations

import math
import os
import re
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache

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
    (?P<name>\b[a-z0-9_.-]*?(?:pass(?:word|wd|phrase)?|pwd|secret|token|api[_-]?key|access[_-]?key|private[_-]?key
        |client[_-]?secret|credentials?|auth|key)[a-z0-9_.-]*)
    ["']?\s*(?::|=|:=)\s*
    (?P<quote>["']?)(?P<value>[^\s"',;&|)}\]]+)
    """
)
_KEYWORD_WORDS = r"pass|pwd|secret|token|key|auth|cred|bearer"
_KEYWORD, _KEYWORD_ANY_CASE = re.compile(_KEYWORD_WORDS), re.compile(_KEYWORD_WORDS, re.IGNORECASE)
_LONG_RUN = re.compile(r"(?<![\w+/=:@.~-])[\w+/=:@.~-]{16,}")
WINDOW, BLOB, NAME = 256, 4096, 64  # characters around a hit; a run seen only at its ends; a name's length
_ALWAYS = re.compile(r"(?i)passw|passphrase|pwd|secret|credential")
_PLACEHOLDER = re.compile(r"(?i)^(?:\$|%|<|\{\{|\*+$|x+$|\.\.\.|none$|null$|true$|false$|redacted|changeme$|your)")


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


def find(text: str) -> list[Found]:
    """Every secret in `text`, overlapping findings merged (the first kind found names the merged span)."""
    found: list[Found] = [Found(m.start(), m.end(), "Private Key") for m in _PEM.finditer(text)]
    for start, end in _run_windows(text):
        found += _by_rules(text[start:end], start)
    for start, end in _keyword_windows(text):
        found += [Found(start + f.start, start + f.end, f.kind) for f in _assigned(text[start:end])]
    merged: list[Found] = []
    for f in sorted(found, key=lambda f: (f.start, -f.end)):
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
