"""The statement gate: whether a candidate line may reach a journal (and so MEMORY.md, which goes into every prompt).

Every extractor's output passes `statement` (the offline extractors and the Claude ones alike). A line passes when
it reads on its own: a sentence with a verb that starts like one and names what it is about — not a markdown
heading or list fragment, not tool output, not a plan step ("I'll …", "Let me …"), not a changelog line
("Updated X …"), not reasoning in progress ("But …", "which means …"), not a sentence leaning on the one before
("This means …"). An explicit statement whose text lacks a subject (a list of parameters: "Decision: exponential
backoff, 6 tries, …") gets the subject of the heading above it ("Webhook sender retry policy: exponential
backoff, …"), or is dropped when there is none. A line the gate drops stays in the transcript, which search reads.
Pure functions; the word lists are data (statement_quality.json).
"""

from __future__ import annotations

import json
import re
from functools import cache
from pathlib import Path
from typing import Any

_DATA = Path(__file__).with_name("statement_quality.json")
_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")
_LIST_MARK = re.compile(r"^(?:[-*+•]|\d+[.)])\s+")
_SUBJECT_LABEL = re.compile(
    r"^(?:final\s+)?(?:decision|lesson|takeaway)s?\s+(?:for|on|about)\s+(?P<subject>[^:]{3,60}):\s*", re.IGNORECASE
)
_SUBJECT_PREFIX = re.compile(r"^(?P<subject>[A-Z][\w'’ /.-]{2,60}?):\s+(?P<rest>\S.*)$")
_LETS_GO_WITH = re.compile(r"^let'?s go with\b", re.IGNORECASE)
# a word that makes a heading a sentence (`Here's what I changed`): an auxiliary or a pronoun
_SENTENCE_WORD = re.compile(
    r"(?i)\b(?:is|are|was|were|be|been|has|have|had|do|does|did|can|could|will|would|should|must|may|might|shall|"
    r"i|we|you|they|he|she|it|let's)\b|'s\b|’s\b"
)
_BOLD = re.compile(r"\*\*(.+?)\*\*|__(.+?)__")
_BE = frozenset(("is", "are", "was", "were", "be", "been", "am", "we're", "they're", "you're", "i'm", "it's"))
_PRONOUNS = frozenset(("it", "he", "she", "this", "that", "which", "who", "one", "everyone", "nobody", "each"))
# words that follow a verb far more often than a plural noun (`owns the`, `exits with`)
_AFTER_VERB = frozenset(("the", "a", "an", "its", "their", "our", "every", "all", "any", "each", "no", "only", "with",
                         "into", "out", "up", "down", "off", "back", "itself", "them", "us", "him", "her"))
SUBJECT_MAX_WORDS = 8
MIN_WORDS = 4


def by_length(words: list[Any]) -> tuple[str, ...]:
    """Longest first, so `we will need` is tried before `we will`."""
    return tuple(sorted((str(w) for w in words), key=len, reverse=True))


@cache
def _rules() -> dict[str, Any]:
    data = json.loads(_DATA.read_text(encoding="utf-8"))
    labels = "|".join(re.escape(w) for w in by_length(data["labels"]))
    return {
        "label": re.compile(rf"^(?:{labels})\s*:\s*", re.IGNORECASE),
        "remember": by_length(data["remember_openers"]),
        "markup": tuple(data["markup_starts"]),
        "reasoning": by_length(data["reasoning_openers"]),
        "markers": tuple(data["reasoning_markers"]),
        "plan": by_length(data["plan_openers"]),
        "changelog": by_length(data["changelog_verbs"]),
        "tool": [re.compile(p, re.IGNORECASE) for p in data["tool_output"]],
        "dangling": by_length(data["dangling_openers"]),
        "dangling_ok": by_length(data["dangling_allowed"]),
        "generic": frozenset(data["generic_headings"]),
        "leads": by_length(data["subject_leads"]),
        "verbs": frozenset(data["verbs"]),
        "stems": frozenset(data["verb_stems"]),
        "not_past": frozenset(data["not_past_tense"]),
        "choices": by_length(data["we_will_choices"]),
        "undone": re.compile(r"\b(?:" + "|".join(re.escape(w) for w in data["choice_undone_by"]) + r")\b"),
    }


def opens_with(text: str, openers: tuple[str, ...]) -> str | None:
    """The opener `text` starts with (case-insensitive, followed by a non-letter), else None."""
    lowered = text.lower().replace("\u2019", "'")
    for opener in openers:
        if lowered.startswith(opener) and not lowered[len(opener) : len(opener) + 1].isalpha():
            return opener
    return None


def _stems(word: str) -> tuple[str, ...]:
    """The base forms a verb form may come from: `arrives` → arrive, `carries` → carry, `used` → use."""
    forms = [word]
    if word.endswith("ies") or word.endswith("ied"):
        forms.append(word[:-3] + "y")
    if word.endswith(("es", "ed")):
        forms += [word[:-2], word[:-1]]
    elif word.endswith("s"):
        forms.append(word[:-1])
    return tuple(forms)


def has_verb(text: str) -> bool:
    """A verb: a word in the list (or its `-ed` past), a contraction of one (`we're`), an `-ing` after a form of
    `be`, or an `-s` word after a pronoun or before an article (`it gives`, `owns the`); no word that follows a
    count is one (`6 tries`)."""
    rules = _rules()
    words = re.findall(r"[\w'’.-]*[\w'’-]", text.lower().replace("’", "'"))
    for before, word, after in zip(["", *words], words, [*words[1:], ""], strict=False):
        if before.isdigit():
            continue
        if word in rules["verbs"] or word.endswith(("n't", "'re", "'m", "'ve", "'d", "'ll")):
            return True
        if any(stem in rules["stems"] for stem in _stems(word)):
            return True
        if word in ("it's", "that's", "there's", "here's", "what's", "who's", "he's", "she's"):
            return True
        if len(word) > 4 and word.endswith("ed") and word not in rules["not_past"] and word.isalpha():
            return True
        if word.endswith("ing") and before in _BE:
            return True
        if word.endswith("s") and not word.endswith(("ss", "us", "is")) and word.isalpha() and len(word) > 3:
            if before in _PRONOUNS or after in _AFTER_VERB or after.isdigit():
                return True
    return False


def parameter_list(text: str) -> bool:
    """A list of settings rather than a sentence: two or more commas (or semicolons) and no verb before the first."""
    first = re.split(r"[,;]", text, maxsplit=1)[0]
    return len(re.findall(r"[,;]", text)) >= 2 and not has_verb(first)


def subject_of(line: str) -> str | None:
    """The subject a heading or lead-in line names (`## Webhook sender retry policy`, `For the image
    thumbnailer:`), capitalised; None for a generic heading (`Summary`, `Next steps`), code, or a sentence."""
    text = line.strip().lstrip("#").strip()
    text = _BOLD.sub(lambda m: m.group(1) or m.group(2), text).strip().strip("*_").rstrip(":").strip().rstrip("*")
    text = text.rstrip(":").strip()
    if (lead := opens_with(text, _rules()["leads"])) is not None:
        text = text[len(lead) :].strip()
    words = text.split()
    if not words or len(words) > SUBJECT_MAX_WORDS or re.search(r"[`()\[\]{}<>|=@$/\\]|\d{3,}", text):
        return None
    if text.lower() in _rules()["generic"] or _SENTENCE_WORD.search(text) or not re.match(r"^[A-Za-z]", text):
        return None
    return text[:1].upper() + text[1:]


def _strip(text: str) -> tuple[str, bool, str | None]:
    """(the statement's core, whether it was labelled explicit, the subject the label named)."""
    rules = _rules()
    labelled, subject = False, None
    for _ in range(2):  # `Lesson: remember that …`
        if m := _SUBJECT_LABEL.match(text):
            subject, text, labelled = m.group("subject").strip(), text[m.end() :], True
        elif m := rules["label"].match(text):
            text, labelled = text[m.end() :], True
        elif (opener := opens_with(text, rules["remember"])) is not None:
            text, labelled = text[len(opener) :].lstrip(" :,"), True
    return text.strip(), labelled, subject


def is_explicit_choice(text: str) -> bool:
    """`we will <choice>` (use, keep, not support, …) or `let's go with …`: a decision said as one — unless it is
    a first step or a trial (`… first and see whether …`)."""
    lowered = text.lower().replace("\u2019", "'")
    if _rules()["undone"].search(lowered):
        return False  # `let's go with a quick spike first and see …`: a plan
    if _LETS_GO_WITH.match(lowered):
        return True
    m = re.match(r"^(?:we will|we'll|we are going to|we're going to)\s+", lowered)
    return m is not None and opens_with(lowered[m.end() :], _rules()["choices"]) is not None


def reject_reason(core: str, explicit: bool = False) -> str | None:
    """Why `core` (a label already removed) is not a self-contained statement, or None when it is one."""
    rules = _rules()
    words = _WORD.findall(core)
    if core.startswith(rules["markup"]) or _LIST_MARK.match(core):
        return "markup"
    if core.endswith((":", "?")) or "```" in core:
        return "heading or question"
    if any(p.search(core) for p in rules["tool"]):
        return "tool output"
    if len(words) < MIN_WORDS:
        return "fragment"
    if not re.match(r"^[A-Z0-9\"'(]", core) and not explicit:
        return "not a sentence start"
    if opens_with(core, rules["reasoning"]) or any(m in core.lower() for m in rules["markers"]):
        return "reasoning in progress"
    if opens_with(core, rules["plan"]) and not is_explicit_choice(core):
        return "plan step"
    if opens_with(core, rules["changelog"]):
        return "changelog"
    if opens_with(core, rules["dangling"]) and not opens_with(core, rules["dangling_ok"]):
        return "leans on the sentence before"
    if re.sub(r"`[^`]*`", "", core).count(" ") < 2:
        return "code, not prose"
    if parameter_list(core):
        return "a list of settings without its subject"
    if not has_verb(core):
        return "no verb"
    return None


def _mentions(text: str, subject: str) -> bool:
    """Whether `text` names the subject's head noun (its last word) already."""
    head = subject.split()[-1].lower()
    return bool(re.search(rf"\b{re.escape(head)}", text.lower()))


def _capitalised(text: str) -> str:
    return text[:1].upper() + text[1:]


def statement(text: str, kind: str, subject: str | None = None) -> str | None:
    """The line as a journal keeps it, or None when it cannot be made self-contained.

    `kind` is the extractor's (decision, lesson, fact, person, procedure); `subject` the nearest heading or lead-in
    above the line in its turn (`subject_of`), prefixed to a labelled statement that lacks one. A person note
    (`Name: …`) and a procedure (`How to …: 1. …`) are checked only for markup and tool output: their form names
    the subject.
    """
    rules = _rules()
    text = _LIST_MARK.sub("", " ".join(text.split()), count=1)
    if kind in ("person", "procedure"):
        return None if text.startswith(rules["markup"]) or any(p.search(text) for p in rules["tool"]) else text
    core, explicit, named = _strip(text)
    core = _LETS_GO_WITH.sub("We go with", core)
    own = subject_of(named) if named else None
    if own is None and (m := _SUBJECT_PREFIX.match(core)) and (prefix := subject_of(m.group("subject"))):
        own, core = prefix, m.group("rest")  # already `Subject: statement`
    if own is None and explicit and subject and not _mentions(core, subject):
        own = subject  # a labelled statement under a heading: the heading names what it is about
    if own is None:
        return None if reject_reason(core, explicit) else _capitalised(core)
    if parameter_list(core):
        bad = core.startswith(rules["markup"]) or bool(opens_with(core, rules["reasoning"]))
        bad = bad or any(p.search(core) for p in rules["tool"])
    else:
        bad = reject_reason(_capitalised(core), explicit=True) is not None
    return None if bad else f"{_capitalised(own)}: {core}"
