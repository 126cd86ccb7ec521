"""A question that names a specific thing no hit names is not answered confidently with another's value: "When is
Carol's birthday?" is not answered by Alice's birthday, "What is the production Redis host?" not by the staging host,
"What is Dan's passport number?" not by his phone number.

What a question names, and where an answer must name it: each capitalised name not opening the question
("Carol", "Android", "Tokyo") and each identifier ("OPS-2232", "db-prod-3") in the first hit, whose value the
answer reads; a qualifier of `statements/contrasts.json` where the first hit names another of its group (the one
judgement's `qualifiers`: "production" / "staging", "back" / "front", "per day" / "per trade") in one of the top
hits; and the word before a noun the first hit qualifies with a word the question does not use ("passport number"
/ "phone number"; not "per", an identifier or a pronoun) in one of the top hits, and the word after "per" where
the first hit says another ("size per trade" / "size per coin"). Where one is missing, the answer is `weak`: the
nearest hit alone, marked (search's own weak outcome, `search.confidence`). Questions about an attribute never
stated of a thing the notes do name ("What colour is the Skoda?") are not caught: that needs a model that judges
meaning."""

from __future__ import annotations

import re
from collections.abc import Sequence

from memory_pipeline.search.confidence import WEAK, weak_line
from memory_pipeline.search.hits import Hit, Hits
from memory_pipeline.statements import facts, judgement

TOP = 3  # the hits read for the names: an answer is read off the first few
PREFIX = 4  # letters of a stem that opens another word for the two to be one ("prod" / "production")
_TOKEN = re.compile(r"[A-Za-z0-9][\w.'’-]*[A-Za-z0-9]|[A-Za-z]")
_ASKING = frozenset(
    """what when who whom whose where which why how is are was were does do did can could should would will may
    might i i'm i've we you tell show give list find remind please and or the a an my our your""".split()
)
_DATED = judgement.DAYS  # the calendar's names: "Monday", "May" name no thing
_PER = frozenset(("per",))  # a qualifier after its noun: "size per trade" / "size per coin"
_GRAMMAR = frozenset(
    """the a an of for to in on at by with from and or is are was were be my our your his her their its this that
    what when who where which how does do did s it its they them we us i you he she him""".split()
)


def _words(text: str) -> list[str]:
    return [t.lower().replace("’", "'").removesuffix("'s") for t in _TOKEN.findall(text)]


def _said(word: str, hits: Sequence[str]) -> bool:
    """Whether a hit names `word`: as a word, a part of an identifier, or one sharing its first letters (an
    identifier exactly)."""
    if any(c.isdigit() for c in word) or "." in word or "-" in word:
        return any(word in h.lower() for h in hits)
    return any(w == word or _one_word(w, word) for h in hits for w in _parts(_words(h)))


def _parts(words: list[str]) -> list[str]:
    """Words, and the parts of an identifier ("cortex-api" names the API)."""
    return [*words, *(p for w in words if "-" in w for p in w.split("-") if p)]


def _one_word(a: str, b: str) -> bool:
    """"prod" / "production", "stage" / "staging": the shorter's stem opens the longer ("weekday" / "weekend" do
    not)."""
    short, long = sorted((a, b), key=len)
    stem = judgement.stem(short)
    return len(stem) >= PREFIX and long.startswith(stem)


def names(question: str) -> list[str]:
    """The names and identifiers `question` names, lower case: capitalised words not opening it (or opening it
    with a possessive: "Carol's birthday?"), words in capitals, and words with digits or dots."""
    out = []
    for i, tok in enumerate(_TOKEN.findall(question)):
        word = tok.lower().replace("’", "'").removesuffix("'s")
        if word in _ASKING or word in _DATED:
            continue
        if any(c.isdigit() for c in tok) and any(c.isalpha() for c in tok) or re.search(r"[a-z]\.[a-z]", word):
            out.append(word)
        elif tok[:1].isupper() and (i > 0 or tok.lower().endswith(("'s", "’s"))):
            out.append(word)
    return list(dict.fromkeys(out))


def _modifiers(question: str, top: str, hits: Sequence[str]) -> list[str]:
    """The word before a noun the top hit qualifies with another word the question never uses ("passport" of
    "passport number" / "phone number"), where no hit names it."""
    q, t = _words(question), _words(top)
    out = []
    for w1, w2 in zip(q, q[1:], strict=False):  # words next to each other as asked: "passport number"
        if w1 in _PER and not _function(w2) and not _said(w2, hits):  # "per trade" asked, "per coin" answered
            after = {t[i + 1] for i in range(len(t) - 1) if t[i] == w1}
            if after and w2 not in after:
                out.append(w2)
        if w1 in _ASKING or _function(w1) or _function(w2) or _said(w1, hits):
            continue
        before = {t[i - 1] for i in range(1, len(t)) if t[i] == w2 and _modifier(t[i - 1])}
        if before and not any(_said(b, [question]) for b in before):
            out.append(w1)
    return out

def _modifier(word: str) -> bool:
    """A word that can qualify the noun after it: not grammar, not "per" (which qualifies the noun before it:
    "risk per trade"), not an identifier ("db-03 filling up" names which, not what kind)."""
    return not _function(word) and word not in _PER and not any(c.isdigit() for c in word)


def _function(word: str) -> bool:
    """A word of grammar, not one that qualifies a noun ("about", "the", "with")."""
    return word in _GRAMMAR or word in facts.STOP_WORDS


def unnamed(question: str, hits: Sequence[Hit]) -> list[str]:
    """The specific things `question` names that none of its top hits names (see the module's docstring)."""
    texts = [h.text or h.snippet for h in hits[:TOP]]
    if not texts:
        return []
    missing = [n for n in names(question) if not _said(n, texts[:1])]  # the answer names whose value it is
    apart = judgement.qualifiers(question, texts[0])
    if apart is not None:
        missing += [w for w in sorted(apart[0]) if not _said(w, texts)]
    missing += _modifiers(question, texts[0], texts)
    return list(dict.fromkeys(missing))


def checked(question: str, hits: Hits) -> Hits:
    """`hits`, or — when the question names something no top hit names — the nearest alone, marked weak."""
    if not hits or getattr(hits, "match", "confident") != "confident":
        return hits
    missing = unnamed(question, hits)
    if not missing:
        return hits
    said = ", ".join(repr(m) for m in missing[:3])
    out = Hits(list(hits[:1]), f"no memory names {said}; " + weak_line(hits[0].text or hits[0].snippet),
               getattr(hits, "mode", "index"))  # fmt: skip
    out.match = WEAK
    out.confidence = getattr(hits, "confidence", None)
    return out
