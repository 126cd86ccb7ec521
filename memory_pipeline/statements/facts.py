"""Facts a distillation must not lose: numbers, named entities and negations.

Pure and shared by every distiller: the offline distiller uses it to make sure what it folds into ranges and
lists still covers every member's fact, the Claude path rejects a reply that drops facts, and the
`distill` benchmark measures preservation with it. A number counts as kept when the abstraction states it
(same value) or states a range that contains it ("2.3–8.0%" keeps 6.1%); an entity when it appears as a
whole word (case-insensitive); a negation when the abstraction negates anything at all.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

# One token: words, numbers with their suffixes (6.1%, 2k, 1k+, $40, 6h, 1.6R), identifiers (web-04, JTO/USDT, #667).
# Hours (6h, 3hrs), minutes written "min" and R-multiples (1.6R) are quantities, as "6 hours" is, not names.
_SUFFIX = r"(?:[km%x]|bn|h|hrs?|mins?|r)"
TOKEN = re.compile(r"[$#@]?\w(?:[\w/.+'’%-]|,(?=\d{3}\b))*[\w%+]|[$#@]?\w")
_NUMBER = re.compile(rf"^\$?(\d{{1,3}}(?:,\d{{3}})+|\d+)(\.\d+)?({_SUFFIX})?\+?$", re.IGNORECASE)
_RANGE_TOKEN = re.compile(rf"^\$?(\d+(?:\.\d+)?)({_SUFFIX})?[-–](\d+(?:\.\d+)?)({_SUFFIX})?$", re.IGNORECASE)
# A stated range in an abstraction: "2.3–8.0%", "2k-9k", "55 to 88".
STATED_RANGE = re.compile(
    r"(?<![\w.])\$?(\d+(?:[.,]\d+)*)\s*([km%x])?\s*(?:[–-]|\bto\b)\s*\$?(\d+(?:[.,]\d+)*)\s*([km%x])?(?!\w|\.\d)",
    re.IGNORECASE,
)
NEGATION = re.compile(
    r"\b(?:not|never|no|none|nothing|nobody|without|cannot|can't|won't|don't|doesn't|didn't|"
    r"isn't|aren't|wasn't|weren't|shouldn't|mustn't|stop(?:ped)?)\b|n't\b",
    re.IGNORECASE,
)
_SCALE = {"k": 1e3, "m": 1e6, "bn": 1e9}
# Capitalised words that are grammar, not names (sentence openers, pronouns, discourse words).
_NOT_NAMES = frozenset(
    """i i'm i've i'll i'd a an the and or but if then so of to in on at by for with from as is are was were be it
    its this that these those we our you your he she they them their his her my me not no yes do does did also
    again after before while when where which who what why how here there today yesterday tomorrow hey hi hello
    thanks thank wow oh ok okay yeah yep sure great good nice cool awesome glad sorry please well just""".split()
)
# Words that carry no content of their own (articles, pronouns, auxiliaries, prepositions).
STOP_WORDS = frozenset(
    """the and for with from into onto over under about are was were been being its this that these those our
    your his her their they them you she him has have had will would can could should may might must just again
    also very more most less than too out off only own same such both each few other some any all there here
    when where which who whom what why how after before while during because not""".split()
)
_LABEL = re.compile(r"^([A-Z][\w.'-]*(?: [A-Z][\w.'-]*){0,2}):\s+(?=\S)")
_VOCATIVE_BEFORE = re.compile(r"\b(?:hey|hi|hello|thanks|thank you|bye|wow|dear|yo)[,!]?\s+$", re.IGNORECASE)
_SENTENCE_START = re.compile(r"(?:^|[.!?;:]\s+|[\"'(]\s*)$")


@dataclass(frozen=True)
class Number:
    """A number as written ("6.1%") and its value in one scale (2k → 2000) for range checks."""

    text: str
    value: float
    unit: str  # the suffix (%, k, x) or the word after it ("GB", "days"), lower case; "" if none


def parse_number(token: str) -> float | None:
    m = _NUMBER.match(token)
    if not m:
        return None
    value = float(m.group(1).replace(",", "") + (m.group(2) or ""))
    return value * _SCALE.get((m.group(3) or "").lower(), 1.0)


def _suffix(token: str) -> str:
    m = _NUMBER.match(token)
    return (m.group(3) or "").lower() if m else ""


def tokens_with_spans(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in TOKEN.finditer(text)]


def numbers(text: str) -> list[Number]:
    """Every number in `text`, in order; a source range "1-3 days" gives both ends."""
    out: list[Number] = []
    toks = tokens_with_spans(text)
    for i, (tok, _, _) in enumerate(toks):
        after = toks[i + 1][0] if i + 1 < len(toks) else ""
        unit_word = after.lower() if after[:1].isalpha() and after.lower() not in _NOT_NAMES else ""
        if (r := _RANGE_TOKEN.match(tok)) is not None:
            for value, suffix in ((r.group(1), r.group(2) or r.group(4)), (r.group(3), r.group(4))):
                v = parse_number(value + (suffix or ""))
                if v is not None:
                    out.append(Number(value + (suffix or ""), v, (suffix or "").lower() or unit_word))
            continue
        v = parse_number(tok)
        if v is not None:
            out.append(Number(tok.rstrip("+"), v, _suffix(tok) or unit_word))
    return out


def _is_identifier(tok: str) -> bool:
    """web-04, v3, #667, reports/render.py, JTO/USDT: written verbatim, never folded into a range."""
    if parse_number(tok) is not None or _RANGE_TOKEN.match(tok):
        return False
    if tok.startswith(("#", "@")) and len(tok) > 1:
        return True
    has_digit = any(c.isdigit() for c in tok)
    has_alpha = any(c.isalpha() for c in tok)
    return (has_digit and has_alpha) or bool(re.search(r"\w[/_]\w|\w\.\w{1,4}$", tok) and has_alpha)


def speaker_and_body(text: str) -> tuple[str, str]:
    """("Melanie", "I ran a charity race") for a member written "Melanie: I ran a charity race"."""
    stripped = text.strip()
    m = _LABEL.match(stripped)
    return (m.group(1), stripped[m.end() :]) if m else ("", stripped)


def entities(text: str, known_names: Iterable[str] = ()) -> list[str]:
    """Named entities in order of appearance: capitalised words not opening a sentence (or opening one but
    known as names elsewhere: `known_names`), all-caps words and identifiers. A speaker's label and a name used
    only to address someone ("Thanks, Mel!") state no fact and are left out."""
    label, body = speaker_and_body(text)
    known = {n.lower() for n in known_names}
    out: list[str] = []
    for tok, start, end in tokens_with_spans(body):
        word = re.sub(r"['’]s$", "", tok).strip("'’")
        if not word or word.lower() in _NOT_NAMES:
            continue
        if _is_identifier(word):
            out.append(word)
            continue
        if not word[0].isupper():
            continue
        caps = sum(c.isupper() for c in word)
        opening = _SENTENCE_START.search(body[:start]) is not None
        if caps >= 2 and len(word) >= 2:  # BTC, NOPASSWD, PagerDuty
            out.append(word)
            continue
        if (
            _VOCATIVE_BEFORE.search(body[:start])
            or re.match(r"\s*[!?]", body[end:])
            or (re.match(r"\s*,", body[end:]) and opening)
        ):
            continue  # "Hey Mel!", "Thanks, Tomas!", "Kofi, I moved…"
        if opening and word.lower() not in known:
            continue
        out.append(word)
    if label:
        out = [e for e in out if e.lower() not in {w.lower() for w in label.split()}]
    return out


def known_names(texts: Iterable[str]) -> set[str]:
    """Capitalised words that appear somewhere not at a sentence start: names, wherever they appear."""
    names: set[str] = set()
    for text in texts:
        _, body = speaker_and_body(text)
        for tok, start, _ in tokens_with_spans(body):
            if tok[0].isupper() and tok.lower() not in _NOT_NAMES and not _SENTENCE_START.search(body[:start]):
                names.add(tok.lower())
    return names


def has_negation(text: str) -> bool:
    return NEGATION.search(text) is not None


@dataclass(frozen=True)
class FactCheck:
    """Which of the members' distinct numbers and entities an abstraction keeps."""

    total: int
    kept: int
    missing: tuple[str, ...]
    negation_lost: bool

    @property
    def share(self) -> float:
        return self.kept / self.total if self.total else 1.0

    def reason(self) -> str:
        shown = ", ".join(repr(m) for m in self.missing[:5])
        more = f" and {len(self.missing) - 5} more" if len(self.missing) > 5 else ""
        lost = f"{len(self.missing)} of {self.total} facts missing ({shown}{more})" if self.missing else ""
        neg = "a negation of the members is lost" if self.negation_lost else ""
        return "; ".join(p for p in (lost, neg) if p)


def member_facts(texts: Sequence[str]) -> tuple[dict[float, str], dict[str, str], bool]:
    """(distinct numbers by value → as written, distinct entities by lower case → as written, any negation)."""
    names = known_names(texts)
    nums: dict[float, str] = {}
    ents: dict[str, str] = {}
    for text in texts:
        for n in numbers(text):
            nums.setdefault(n.value, n.text)
        for e in entities(text, names):
            ents.setdefault(e.lower(), e)
    return nums, ents, any(has_negation(t) for t in texts)


def stated_ranges(text: str) -> list[tuple[float, float]]:
    out = []
    for m in STATED_RANGE.finditer(text):
        lo = parse_number(m.group(1) + (m.group(2) or m.group(4) or ""))
        hi = parse_number(m.group(3) + (m.group(4) or ""))
        if lo is not None and hi is not None and lo <= hi:
            out.append((lo, hi))
    return out


def _close(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(1.0, abs(a), abs(b))


# What the night writes after a distillation ("[3 memories, 2026-10-01 to 2026-10-02]"; before 2026-12 "[Pattern
# seen 3 times, …]"), not a claim: its dates would read as a range holding every small number.
# what the night writes around what its sources said: the summary's bracket, and a range's reports
FRAME = re.compile(r"\[(?:Pattern seen \d+ times?|\d+ memories), [^\]]*\]\.?|\((?:\d+ reports|latest )[^)]*\)")


def frame(members: int, first_day: str, last_day: str) -> str:
    """How many memories a distillation stands for and the days they span — not "a pattern seen N times": the
    members may be distinct events, and the count is what the agent can rely on."""
    span = first_day if first_day == last_day else f"{first_day} to {last_day}"
    return f"[{members} memories, {span}]"


def check_facts(member_texts: Sequence[str], abstraction: str) -> FactCheck:
    """How many of the members' distinct numbers and named entities `abstraction` keeps."""
    abstraction = FRAME.sub(" ", abstraction)
    nums, ents, negated = member_facts(member_texts)
    present = [n.value for n in numbers(abstraction)]
    ranges = stated_ranges(abstraction)
    lowered = abstraction.lower()
    missing: list[str] = []
    for value, text in sorted(nums.items()):
        if not any(_close(value, p) for p in present) and not any(lo <= value <= hi for lo, hi in ranges):
            missing.append(text)
    for key, text in sorted(ents.items()):
        if not re.search(rf"(?<![\w]){re.escape(key)}(?![\w])", lowered):
            missing.append(text)
    total = len(nums) + len(ents)
    return FactCheck(total, total - len(missing), tuple(missing), negated and not has_negation(abstraction))


FACT_FLOOR = 0.98  # the share of members' facts an abstraction must keep


def fact_rejection(member_texts: Sequence[str], abstraction: str, floor: float = FACT_FLOOR) -> str | None:
    """The reason to reject `abstraction`, or None: it keeps < `floor` of the facts or drops every negation."""
    check = check_facts(member_texts, abstraction)
    if check.share < floor or check.negation_lost:
        return f"facts not preserved: {check.reason()}"
    return None
