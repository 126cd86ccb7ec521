"""The values a fact states, and what is left of it once they are masked: how "same fact, new value" is told
without an LLM.

"Per-trade risk cap is 2%" and "Per-trade risk cap is now 1.5 percent" are two versions of one fact: masked,
both read `per-trade risk cap <pct>` (words that say a value changed — "now", "moved to", "raised" — and
grammar words are not part of it), and their values differ. "Risk cap per day is 3%" is not (its words
differ), nor is "York pickup is at 9:30" beside "Leeds pickup is at 9:00" (a fact's first word names what it is
about and is never masked), nor "Closed the TIA long at +$701" beside "+$504" (an event, not a state: a fact
is a short statement, never opened by a past-tense action). Values are compared in one form: "1%" and
"1 percent", "16:45" and "4:45 pm", "$1,200" and "1200 USD".

Conservative on purpose: a missed version leaves a stale value readable beside the new one; a wrong one hides a
true fact. Pure functions."""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from memory_pipeline.statements.judgement import MONTHS, WEEKDAYS

MAX_FACT_WORDS = 30  # a fact is a short statement; a paragraph is a story
# the calendar's names are the judgement's (one list): "jan", "jan(?:uary)?", and "sept" beside "sep"
_MONTHS = tuple(m[:3] for m in MONTHS)
_MONTH = "(?:" + "|".join(f"{m[:3]}(?:{'t|' if m == 'september' else ''}{m[3:]})?" for m in MONTHS) + ")"
# A time's zone is part of its value: "15:00 UTC" → "15:00 CET" is a change, not the same time.
_ZONE_NAMES = ("UTC|GMT|Z|CET|CEST|EET|EEST|WET|WEST|BST|IST|JST|KST|AEST|AEDT|ET|EST|EDT|CT|CST|CDT|MT|MST|MDT|PT|"
               "PST|PDT")  # fmt: skip
_ZONE = rf"(?:\s+(?-i:{_ZONE_NAMES})(?:\s*[+-]\s*\d{{1,2}}(?::?\d{{2}})?)?\b)?"
_ZONE_OF = re.compile(rf"\s+((?:{_ZONE_NAMES.lower()})(?:\s*[+-]\s*\d{{1,2}}(?::?\d{{2}})?)?)$")
# Numbers that say which note, ticket or row a text is, not what a fact's value is: "(note 58)", "ticket #4411".
_REFERENCE = re.compile(
    r"(?:\b(?:notes?|tickets?|rows?|issues?|items?|entry|entries|records?|lines?|pr|prs|case|bug|tasks?|page|ref|"
    r"no\.?|nr\.?)\s*#?\s*\d+\b|(?<![\w&])#\d+\b)",
    re.I,
)
# A trailing clause that tells why or after what ("… after the August drawdown"): its values are not the fact's.
_IN_PASSING = re.compile(
    r"[,;]?\s+\b(?:after|following|because of|due to|thanks to|since|ahead of|before|so that|so)\s+(?:the|a|an|our|my|"
    r"last|that|this|his|her|their)\b.*$",
    re.I,
)
# Ordered: the first pattern to match a span names its type.
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("date", re.compile(r"\b\d{4}-\d{2}-\d{2}\b")),
    ("date", re.compile(rf"\b\d{{1,2}}(?:st|nd|rd|th)?\s+{_MONTH}\b(?:,?\s+\d{{4}})?", re.I)),
    ("date", re.compile(rf"\b{_MONTH}\s+\d{{1,2}}(?:st|nd|rd|th)?\b(?:,?\s+\d{{4}})?", re.I)),
    ("time", re.compile(rf"\b(?:[01]?\d|2[0-3])[:h][0-5]\d(?:\s*[ap]\.?m\.?)?(?!\w|\.\d){_ZONE}", re.I)),
    ("time", re.compile(rf"\b(?:1[0-2]|0?[1-9])\s*[ap]\.?m\b\.?{_ZONE}", re.I)),
    ("pct", re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s*(?:%|percent\b|per\s+cent\b|pct\b)", re.I)),
    ("money", re.compile(r"[$€£]\s?\d[\d,]*(?:\.\d+)?\s*[kKmM]?\b")),
    ("money", re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?\s*(?:usd|eur|gbp|dollars?|euros?|pounds?)\b", re.I)),
    ("money", re.compile(r"(?<![\w.])\d+(?:\.\d+)?[kK](?![\w-])")),  # "12.5k": an amount, as "$12,500"
    ("id", re.compile(r"(?<![\w.-])(?=[\w.-]*\d)(?=[\w.-]*[a-zA-Z])[a-zA-Z0-9][\w.-]*[a-zA-Z0-9](?![\w-])")),
    ("id", re.compile(r"(?<![\w.-])[a-z0-9-]+(?:\.[a-z0-9-]+){2,}(?![\w-])", re.I)),
    ("num", re.compile(r"(?<![\w.])\d[\d,]*(?:\.\d+)?(?![\w])")),
)
_WORD = re.compile(r"[A-Za-z][\w'-]*")
# Words that say a value changed, or are grammar: not part of what the fact is about.
_IGNORED = frozenset(
    """a an the is are was were be been being am it its this that to at from of on in by for with as now new
    currently current moved move moves changed change changes updated update set raised lowered increased
    decreased reduced cut tightened loosened bumped dropped went goes up down switched migrated became becomes
    will from henceforth onwards forward anymore instead no longer than again today still our my your their his
    her has have had then starting starts start since effective back""".split()
)
_EVENT_OPENERS = frozenset(
    """set closed opened bought sold paid ran met took got made saw spent sent won lost left went did had
    booked called emailed texted visited finished started tried noticed learned heard told asked fixed deployed
    shipped merged released found moved""".split()
)  # "Moved the standup to 10:15" is told as an action; "Standup moved to 10:15" states the new time
# A statement of state: a copula, or a phrase that says a value now holds.
_STATE = re.compile(
    r"\b(?:is|are|=|now|moved to|changed to|set to|updated to|raised to|lowered to|cut to|increased to|reduced to|"
    r"tightened to|loosened to|migrated to|switched to|went (?:up|down) to|costs?|lives in|runs on|starts at|"
    r"expires on|ends on|opens at|closes at)\b",
    re.I,
)
_LABELLED = re.compile(r"^[^:]{3,60}(:) *\S+(?: +\S+){0,3}[.!]?$")  # "Per-trade risk cap: 1%": a short value
# "Wi-Fi" is a word; "PagerDuty", "GitHub" are names (the parts of a camel-cased word)
_CAPITALISED = re.compile(r"(?<![\w-])[A-Z][a-z]+(?:[A-Z][a-z0-9]+)*(?:\s+[A-Z][a-z]+(?:[A-Z][a-z0-9]+)*)*\b(?!-)")
_SENTENCE_OPENING = re.compile(r"(?:^|[.!?:]\s+|[\"'(]\s*)$")
_POSSESSIVE = re.compile(r"\b([A-Z][a-z]+)'s\b")
_NOT_NAMES = frozenset(("i", "utc", "gmt", *WEEKDAYS, *(f"{d}s" for d in WEEKDAYS), *MONTHS))


@dataclass(frozen=True)
class FactKey:
    """What a fact is about (its masked words) and the values it states, each in one normalised form."""

    key: tuple[str, ...]
    values: tuple[str, ...]


def _normal(kind: str, text: str) -> str:
    t = text.strip().lower()
    if kind == "pct":
        number = re.match(r"\d+(?:\.\d+)?", t)
        return f"{float(number.group(0)):g}%" if number else t
    if kind == "money":
        digits = re.sub(r"[^\d.km]", "", t.replace(",", ""))
        scale = 1e3 if digits.endswith("k") else 1e6 if digits.endswith("m") else 1.0
        try:
            return f"{float(digits.rstrip('km')) * scale:g}"
        except ValueError:
            return t
    if kind == "time":
        m = re.match(r"(\d{1,2})(?:[:.h](\d{2}))?\s*([ap])?", t)
        if m:
            hour, minute, half = int(m.group(1)), int(m.group(2) or 0), m.group(3)
            hour = (hour % 12) + (12 if half == "p" else 0) if half else hour
            zone = _ZONE_OF.search(t)
            return f"{hour:02d}:{minute:02d}" + (f" {zone.group(1).replace(' ', '')}" if zone else "")
    if kind == "date" and not re.match(r"\d{4}-", t):
        month = next((i for i, name in enumerate(_MONTHS, 1) if re.search(rf"\b{name}", t)), 0)
        day = re.search(r"\b(\d{1,2})(?:st|nd|rd|th)?\b", t)
        return f"{month:02d}-{int(day.group(1)):02d}" if month and day else t
    if kind == "num":
        try:
            return f"{float(t.replace(',', '')):g}"
        except ValueError:
            return t
    return t


def stated_values(text: str) -> list[str]:
    """The values of `text` as written ("1.5%", "4:45 pm", "db-stage-7"), in order."""
    return [v.raw for v in _values(text)]


@dataclass(frozen=True)
class _Value:
    kind: str
    normal: str
    raw: str
    start: int
    end: int


@lru_cache(maxsize=16384)
def _values(text: str) -> tuple[_Value, ...]:
    """The values of `text`: what a reference ("note 58", "#4411") or a clause in passing ("after the August
    drawdown") says is never one."""
    spans: list[tuple[int, int, str]] = [(m.start(), m.end(), "ref") for m in _REFERENCE.finditer(text)]
    if (passing := _IN_PASSING.search(text)) is not None:
        spans.append((passing.start(), len(text), "ref"))
    for kind, pattern in _PATTERNS:
        for m in pattern.finditer(text):
            if not any(m.start() < e and s < m.end() for s, e, _ in spans):
                spans.append((m.start(), m.end(), kind))
    for m in _CAPITALISED.finditer(text):  # names: capitalised words not opening a sentence
        start, name = m.start(), m.group(0)
        if _SENTENCE_OPENING.search(text[:start]):
            first, _, rest = name.partition(" ")  # "The Lisbon office", "Added Sentry": the name after the opener
            if not rest:
                continue
            start, name = start + len(first) + 1, rest
        if name.lower() in _NOT_NAMES:
            continue
        if not any(start < e and s < m.end() for s, e, _ in spans):
            spans.append((start, m.end(), "name"))
    out = []
    for start, end, kind in sorted(spans):
        if kind == "ref":
            continue
        raw = text[start:end]
        out.append(_Value(kind, _normal(kind, raw) if kind != "name" else raw.lower(), raw.strip(), start, end))
    return tuple(out)


_WEEKDAY = re.compile(r"\b(mon|tue|wed|thu|fri|sat|sun)(?:day|s|sday|nesday|rsday|urday|\.)?s?\b"
                      r"(?:\s*(?:at|@|,|from)?\s*)$", re.I)  # fmt: skip


def with_slots(text: str, values: tuple[_Value, ...]) -> tuple[_Value, ...]:
    """`values` with a weekday written just before a time read with it as one value, a slot ("Thu 14:00",
    "Wednesdays at 4 pm" → "thu 14:00", "wed 16:00"): a weekly slot moved to another day is one value changed,
    not two (the day alone, a capitalised "Thu", would read as a name)."""
    out: list[_Value] = []
    for v in values:
        day = _WEEKDAY.search(text[: v.start]) if v.kind == "time" else None
        if day is None:
            out.append(v)
            continue
        if out and out[-1].kind == "name" and out[-1].start >= day.start():
            out.pop()  # the abbreviation read as a name
        start = day.start()
        out.append(_Value("slot", f"{day.group(1).lower()} {v.normal}", text[start : v.end], start, v.end))
    return tuple(out)


_EVERY = {"every other": "fortnightly", "every second": "fortnightly", "fortnightly": "fortnightly",
          "biweekly": "fortnightly", "bi-weekly": "fortnightly", "every": "weekly", "weekly": "weekly",
          "monthly": "monthly", "once a month": "monthly"}  # fmt: skip
_DAYS = re.compile(r"\b(?:(" + "|".join(sorted(_EVERY, key=len, reverse=True)) + r")\s*,?\s*(?:on\s+)?)?"
                   r"\b(" + "|".join(d.removesuffix("day") for d in WEEKDAYS) + r")day(s?)\b", re.I)  # fmt: skip


def with_days(text: str, values: tuple[_Value, ...]) -> tuple[_Value, ...]:
    """`values` with a recurring day read as one value, "day": "on Thursdays", "every other Friday", "now weekly,
    on Mondays" ("weekly thu", "fortnightly fri", "weekly mon"), so a meeting moved to another day or another rhythm
    is one value changed. A single day ("on Friday", "from Friday") says when, not how often: not one."""
    out = list(values)
    for m in _DAYS.finditer(text):
        every, day, plural = (m.group(1) or "").lower(), m.group(2)[:3].lower(), m.group(3)
        if not (every or plural) or any(m.start() < v.end and v.start < m.end() for v in values):
            continue
        out.append(_Value("day", f"{_EVERY.get(every, 'weekly')} {day}", m.group(0), m.start(), m.end()))
    return tuple(sorted(out, key=lambda v: v.start))


def _is_event(text: str) -> bool:
    """Told as an action ("Closed the TIA long…", "Set a price alert…", "Moved the standup…"), not a state."""
    words = text.split()
    first = re.sub(r"\W", "", words[0]).lower() if words else ""
    return first in _EVENT_OPENERS or (first.endswith("ed") and first not in {"need", "feed", "speed", "seed"})


@lru_cache(maxsize=4096)
def fact_key(text: str) -> FactKey | None:
    """The key and values of a short statement of fact; None for anything else (a story, an event, a fact with
    no value). A value written before the statement's verb ("Alice's bill is …", "Leeds pickup is …",
    "cache-02: …") names what the fact is about: it is part of the key, never a value that changes."""
    words = text.split()
    if not words or len(words) > MAX_FACT_WORDS or re.search(r"[.!?;]\s+\S", text.strip()):
        return None
    text = _IN_PASSING.sub("", text)  # "… after the August drawdown" tells why, not what the fact is about
    state = _STATE.search(text) or _LABELLED.search(text)
    if state is None:
        return None  # "Meeting with the landlord on 3 March" tells of an event; a fact says what *is*
    if _is_event(text):
        return None
    verb = state.start(1) if state.re is _LABELLED else state.start()
    # a reference before the verb names which ticket or row the fact is of ("Ticket #4411: …"); one after it cites
    key: list[str] = [_reference(m.group(0)) for m in _REFERENCE.finditer(text) if m.start() < verb]
    values: list[str] = []
    at = 0
    for v in [*_values(text), None]:
        end = len(text) if v is None else v.start
        key += [w.lower() for w in _WORD.findall(text[at:end]) if w.lower() not in _IGNORED]
        if v is None:
            break
        if v.start < verb:
            key.append(v.normal)
        else:
            key.append(f"<{v.kind}>")
            values.append(v.normal)
        at = v.end
    if not values or not any(not t.startswith("<") for t in key):
        return None  # no value, or "It is 5": nothing says what the value is of
    return FactKey(tuple(key), tuple(values))


def versions_of(a: FactKey, b: FactKey) -> bool:
    """Two statements of one fact with another value: the same key and at least one value differing. When a
    name or an identifier differs, nothing else may (it is then the value that changed: "Pickup is in Leeds" →
    "York", "db-stage-1" → "db-stage-7"); a name or an identifier differing beside another value are two facts
    ("Alice's bill is $80" / "Bob's bill is $95", "queue-37 disk at 86%" / "api-93 disk at 51%")."""
    if a.key != b.key or a.values == b.values or len(a.values) != len(b.values):
        return False
    kinds = [k for k in a.key if k.startswith("<")]
    differing = {kinds[i] for i, (x, y) in enumerate(zip(a.values, b.values, strict=True)) if x != y}
    return not (differing & {"<name>", "<id>"} and len(differing) > 1)


_CONTENT = re.compile(r"[a-z][a-z-]{2,}")
_COMMON = frozenset(
    """the and for from with this that these those our your their its was were are has have had will would can
    could should about into onto over under after before when where which what who how than then them they
    there here been being also just only very more most some any all each every other such not""".split()
)


def about_words(text: str) -> frozenset[str]:
    """The content words of a statement, its values and grammar left out: what it is about."""
    values = " ".join(stated_values(text)).lower()
    return frozenset(w for w in _CONTENT.findall(text.lower()) if w not in _COMMON and w not in values
                     and w not in _IGNORED)  # fmt: skip


@dataclass(frozen=True)
class Statement:
    """What `restates` reads of a text, read once: its values, its names, what it is about, its first word."""

    values: frozenset[str]
    names: frozenset[str]
    about: frozenset[str]
    first: str


@lru_cache(maxsize=4096)
def statement(text: str) -> Statement | None:
    """A short statement of values, read for `restates`; None for an event, a long text or one with no value."""
    if len(text.split()) > MAX_FACT_WORDS or _is_event(text):
        return None
    values = _values(text)
    if not values:
        return None
    return Statement(frozenset(v.normal for v in values), frozenset(v.normal for v in values if v.kind == "name"),
                     about_words(text), _first_word(text))  # fmt: skip


def restates(a: str, b: str) -> bool:
    """Whether two short statements are plausibly about one thing with another value, worded as they may be
    ("We run 4 CI runners." / "… so the CI fleet is 6 runners now."): both state values, the values differ,
    they name the same names, one's first word is in the other, and they share two or more words that make up at
    least 40 % of the shorter one's; neither tells of an event. Looser than `versions_of`: it only orders what
    is read (the newer first), it never marks anything superseded."""
    sa, sb = statement(a), statement(b)
    return sa is not None and sb is not None and restates_read(sa, sb)


def restates_read(a: Statement, b: Statement) -> bool:
    """`restates` on statements already read."""
    if a.values == b.values or a.names != b.names:
        return False  # the same value; or "on TIA" / "on ARB": two subjects, not one restated
    shared = len(a.about & b.about)
    subject = a.first in b.about or b.first in a.about  # "Alice's bill" / "Bob's bill": two subjects
    return subject and shared >= 2 and shared >= 0.4 * min(len(a.about), len(b.about))


def _first_word(text: str) -> str:
    words = _CONTENT.findall(text.lower())
    return next((w for w in words if w not in _COMMON and w not in _IGNORED), "")


@lru_cache(maxsize=16384)
def identifiers(text: str) -> frozenset[str]:
    """The identifiers a text names ("w1", "db-stage-7"): statements naming others are about other subjects,
    unless one identifier is the value that changed (see `distinct_subjects`)."""
    return frozenset(v.normal for v in _values(text) if v.kind == "id")


def _reference(text: str) -> str:
    return "#" + "".join(re.findall(r"\d", text))


def distinct_subjects(a: str, b: str) -> bool:
    """Whether two alike statements are about two things, not one thing with another value — the rule
    `versions_of` applies, for texts with no fact key (decisions in the journals): an identifier that differs
    names another subject ("worker w1 times out after 30 seconds" / "worker w2 …"), as does another note, ticket
    or row number where both name one, and so does a name that
    differs beside another value that differs ("Alice's budget is $80" / "Bob's budget is $95"). A name alone
    may be the value that changed ("Pickup is in Leeds" → "York")."""
    va, vb = _values(a), _values(b)
    refs = [{_reference(m.group(0)) for m in _REFERENCE.finditer(t)} for t in (a, b)]
    if refs[0] and refs[1] and refs[0] != refs[1]:
        return True  # "Ticket #4411: …" / "Ticket #4412: …": two tickets
    ids = ({v.normal for v in va if v.kind == "id"}, {v.normal for v in vb if v.kind == "id"})
    if ids[0] != ids[1]:
        return True
    names = (
        {v.normal for v in va if v.kind == "name"} | {m.lower() for m in _POSSESSIVE.findall(a)},
        {v.normal for v in vb if v.kind == "name"} | {m.lower() for m in _POSSESSIVE.findall(b)},
    )  # "Alice's budget" names whose budget, opening a sentence or not
    others = (
        {v.normal for v in va if v.kind not in ("id", "name")},
        {v.normal for v in vb if v.kind not in ("id", "name")},
    )
    return names[0] != names[1] and others[0] != others[1]
