"""LoCoMo-format conversations as agent memories, and the retention scores (no Dagster here).

Loader: each dialogue turn becomes one memory — id `<sample_id>:<dia_id>`, content `"<speaker>: <text>"`
(plus `[shares a photo: <caption>]` when the turn carries an image caption, as LoCoMo's own RAG baselines
do), created_at = its session's date-time, category = the speaker's name (lower case), importance 1.0.

Scores, per question and retrieved list (see `evidence_hit` and `answer_support`):
- evidence hit: a retrieved memory is one of the question's evidence turns, or an active summary whose
  lineage (`compressed_from.source_ids`) contains one. Averaged over questions = evidence recall@k.
- answer support: the gold answer's normalised content words (lower case, punctuation dropped, number
  words → digits, month abbreviations and ISO dates spelt out, ordinal suffixes and plural -s removed, stop
  words and hedges such as "likely"/"yes" dropped) must appear in the *text* of the retrieved memories: at
  least ⌈2/3·n⌉ of the answer's n distinct words (so 1–2 word answers need every word). Lineage never
  counts. What is read of a memory is what an agent would see: its date ("[8 may 2023]", from created_at —
  a summary carries the run's date, plus whatever dates its text keeps) and its content. An answer with no
  content word ("Yes", "No") cannot be scored and is left out of the support average.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

from memory_pipeline.statements.judgement import MONTHS

SESSION_KEY = re.compile(r"^session_(\d+)$")
DATE_FORMAT = "%I:%M %p on %d %B, %Y"  # "1:56 pm on 8 May, 2023"
SUPPORT_FRACTION = 2 / 3
HEADLINE_CATEGORIES = (1, 2, 3, 4)
ADVERSARIAL_CATEGORY = 5


class LocomoFormatError(ValueError):
    """The file is not LoCoMo-shaped; the message names the file, the sample and the field."""


@dataclass(frozen=True)
class Turn:
    memory_id: str
    dia_id: str
    speaker: str
    content: str
    created_at: datetime
    session: int


@dataclass(frozen=True)
class Question:
    index: int
    question: str
    answer: str  # the gold answer; for category 5 the `adversarial_answer`
    category: int
    evidence: tuple[str, ...]  # memory ids that exist in the conversation


@dataclass
class Conversation:
    sample_id: str
    speakers: tuple[str, str]
    turns: list[Turn]
    questions: list[Question]
    unknown_evidence: list[str] = field(default_factory=list)  # evidence ids naming no turn

    @property
    def last_session_at(self) -> datetime:
        return max(t.created_at for t in self.turns)


def parse_session_date(value: Any, where: str) -> datetime:
    if not isinstance(value, str):
        raise LocomoFormatError(f"{where}: expected a date-time string like '1:56 pm on 8 May, 2023', got {value!r}")
    text = re.sub(r"\s+", " ", value.strip())
    try:
        return datetime.strptime(text, DATE_FORMAT)
    except ValueError:
        raise LocomoFormatError(f"{where}: not a date-time like '1:56 pm on 8 May, 2023': {value!r}") from None


def _evidence_ids(raw: Any, where: str) -> list[str]:
    """LoCoMo's evidence lists are mostly clean; a few entries pack several ids ("D8:6; D9:17", "D9:1 D4:4")
    or carry a stray colon ("D:11:26")."""
    if not isinstance(raw, list):
        raise LocomoFormatError(f"{where}: field 'evidence': expected a list, got {type(raw).__name__}")
    out: list[str] = []
    for item in raw:
        for part in re.split(r"[;,\s]+", str(item)):
            part = part.strip()
            if part:
                out.append(re.sub(r"^D:(\d)", r"D\1", part))
    return out


def _turn_content(turn: dict[str, Any]) -> str:
    text = str(turn.get("text") or "").strip()
    caption = str(turn.get("blip_caption") or "").strip()
    content = f"{turn['speaker']}: {text}" if text else f"{turn['speaker']}:"
    return f"{content} [shares a photo: {caption}]" if caption else content


def parse_sample(sample: Any, where: str) -> Conversation:
    if not isinstance(sample, dict):
        raise LocomoFormatError(f"{where}: expected an object, got {type(sample).__name__}")
    sample_id = sample.get("sample_id")
    if not isinstance(sample_id, str) or not sample_id:
        raise LocomoFormatError(f"{where}: field 'sample_id': required non-empty string")
    where = f"{where} ({sample_id})"
    conv = sample.get("conversation")
    if not isinstance(conv, dict):
        raise LocomoFormatError(f"{where}: field 'conversation': required object")
    speakers = (str(conv.get("speaker_a", "")), str(conv.get("speaker_b", "")))
    turns: list[Turn] = []
    sessions = sorted((int(m.group(1)), k) for k in conv if (m := SESSION_KEY.match(k)))
    for number, key in sessions:
        session_turns = conv[key]
        if not session_turns:
            continue  # LoCoMo lists dates of some sessions that have no turns
        if not isinstance(session_turns, list):
            raise LocomoFormatError(f"{where}: field 'conversation.{key}': expected a list of turns")
        created_at = parse_session_date(conv.get(f"{key}_date_time"), f"{where}: field 'conversation.{key}_date_time'")
        for i, turn in enumerate(session_turns):
            tw = f"{where}: field 'conversation.{key}[{i}]'"
            if not isinstance(turn, dict) or not turn.get("dia_id") or not turn.get("speaker"):
                raise LocomoFormatError(f"{tw}: a turn needs 'speaker', 'dia_id' and 'text'")
            dia_id = str(turn["dia_id"])
            turns.append(
                Turn(f"{sample_id}:{dia_id}", dia_id, str(turn["speaker"]), _turn_content(turn), created_at, number)
            )
    if not turns:
        raise LocomoFormatError(f"{where}: no dialogue turns (no non-empty 'session_N' lists)")
    known = {t.dia_id for t in turns}
    if len(known) != len(turns):
        raise LocomoFormatError(f"{where}: duplicate dia_id in the conversation")
    questions: list[Question] = []
    unknown: list[str] = []
    qa = sample.get("qa", [])
    if not isinstance(qa, list):
        raise LocomoFormatError(f"{where}: field 'qa': expected a list")
    for i, q in enumerate(qa):
        qw = f"{where}: field 'qa[{i}]'"
        if not isinstance(q, dict) or not isinstance(q.get("question"), str):
            raise LocomoFormatError(f"{qw}: needs a 'question' string")
        category = q.get("category")
        if not isinstance(category, int) or not 1 <= category <= 5:
            raise LocomoFormatError(f"{qw}.category: expected an integer 1–5, got {category!r}")
        answer = q.get("answer", q.get("adversarial_answer"))
        ids = _evidence_ids(q.get("evidence", []), qw)
        unknown += [e for e in ids if e not in known]
        evidence = tuple(dict.fromkeys(f"{sample_id}:{e}" for e in ids if e in known))
        questions.append(Question(i, q["question"], "" if answer is None else str(answer), category, evidence))
    return Conversation(sample_id, speakers, turns, questions, unknown)


def load_locomo(path: Path, conversations: Sequence[str] | None = None) -> list[Conversation]:
    """Every sample of a LoCoMo-format JSON file (or the named ones, in the file's order)."""
    path = Path(path)
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"{path}: no such file") from None
    except json.JSONDecodeError as exc:
        raise LocomoFormatError(f"{path}: invalid JSON: {exc.msg} at line {exc.lineno}") from None
    if not isinstance(data, list):
        raise LocomoFormatError(f"{path}: expected a JSON list of samples, got {type(data).__name__}")
    out = [parse_sample(s, f"{path}: sample {i}") for i, s in enumerate(data)]
    if conversations:
        by_id = {c.sample_id: c for c in out}
        missing = [c for c in conversations if c not in by_id]
        if missing:
            raise LocomoFormatError(f"{path}: no conversation {', '.join(missing)} (has {', '.join(by_id)})")
        wanted = set(conversations)
        out = [c for c in out if c.sample_id in wanted]
    return out


def memory_rows(conv: Conversation) -> list[dict[str, Any]]:
    """The turns as importer records (memory_pipeline.store.importers JSONL)."""
    return [
        {
            "id": t.memory_id,
            "content": t.content,
            "importance": 1.0,
            "created_at": t.created_at.isoformat(),
            "categories": [t.speaker.lower()],
            "session_id": f"{conv.sample_id}:session_{t.session}",
            "source": "locomo",
        }
        for t in conv.turns
    ]


def write_jsonl(conv: Conversation, path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as fh:
        for row in memory_rows(conv):
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    return path


# ------------------------------------------------------------------ scoring

_NUMBERS = {
    w: str(i)
    for i, w in enumerate(
        "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
        "seventeen eighteen nineteen twenty".split()
    )
}
_NUMBERS |= {w: str(10 * i) for i, w in enumerate("thirty forty fifty sixty seventy eighty ninety".split(), start=3)}
_NUMBERS |= {"hundred": "100", "first": "1", "second": "2", "third": "3", "once": "1", "twice": "2", "thrice": "3"}
_MONTHS = {
    "jan": "january", "feb": "february", "mar": "march", "apr": "april", "jun": "june", "jul": "july",
    "aug": "august", "sep": "september", "sept": "september", "oct": "october", "nov": "november",
    "dec": "december", "januarty": "january",
}  # fmt: skip
_STOP = frozenset(
    """a an the and or but if then so of to in on at by for with from into onto over under about as is are was
    were be been being it its this that these those i me my we our you your he she they them their his her
    him not no yes do does did done have has had will would can could should might must just also very
    more most less than too up out off only own such both each other some any all there here when where which
    who whom what why how after before while during likely probably possibly perhaps yeah etc""".split()
)
_TOKEN = re.compile(r"[a-z0-9]+")


def _stem(word: str) -> str:
    if word.isdigit():
        return word
    m = re.fullmatch(r"(\d+)(st|nd|rd|th)", word)
    if m:
        return m.group(1)
    word = _NUMBERS.get(word, _MONTHS.get(word, word))
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        word = word[:-1]
    return word


_ISO_DATE = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})(?:[T ][0-9:.]+Z?)?\b")
_MONTH_NAMES = list(MONTHS)


def _spell_date(m: re.Match[str]) -> str:
    month = int(m.group(2))
    if not 1 <= month <= 12:
        return m.group(0)
    return f"{int(m.group(3))} {_MONTH_NAMES[month - 1]} {m.group(1)}"


def spoken_date(when: datetime) -> str:
    return f"{when.day} {_MONTH_NAMES[when.month - 1]} {when.year}"


def normalised_words(text: str) -> list[str]:
    """Lower case, ISO dates spelt out ("2023-05-08" → "8 may 2023"), possessive 's and punctuation
    dropped, light stemming (see the module docstring)."""
    text = _ISO_DATE.sub(_spell_date, text)
    text = re.sub(r"['’]s\b", "", text.lower())
    return [_stem(w) for w in _TOKEN.findall(text)]


def answer_terms(answer: str) -> frozenset[str]:
    """The answer's distinct content words after normalisation."""
    return frozenset(w for w in normalised_words(answer) if w not in _STOP)


def required_terms(n: int) -> int:
    return math.ceil(SUPPORT_FRACTION * n - 1e-9)


def answer_support(answer: str, retrieved_texts: Iterable[str]) -> bool | None:
    """True when ≥ ⌈2/3·n⌉ of the answer's n content words occur in the retrieved texts; None when the
    answer has no content word (not scorable). Only text counts: lineage cannot support an answer."""
    terms = answer_terms(answer)
    if not terms:
        return None
    present = set()
    for text in retrieved_texts:
        present.update(normalised_words(text))
    return len(terms & present) >= required_terms(len(terms))


def evidence_hit(
    evidence: Iterable[str], retrieved_ids: Sequence[str], lineage: Mapping[str, Sequence[str]]
) -> bool | None:
    """True when a retrieved memory is an evidence turn, or a summary whose lineage contains one; None when
    the question has no usable evidence."""
    wanted = set(evidence)
    if not wanted:
        return None
    for mid in retrieved_ids:
        if mid in wanted or wanted.intersection(lineage.get(mid, ())):
            return True
    return False


def top_k(query_vectors: np.ndarray, memory_vectors: np.ndarray, k: int) -> np.ndarray:
    """Row i: indices of the k memories most cosine-similar to query i, best first (ties by index)."""
    if memory_vectors.shape[0] == 0:
        return np.zeros((query_vectors.shape[0], 0), dtype=np.int64)
    q = query_vectors / np.maximum(np.linalg.norm(query_vectors, axis=1, keepdims=True), 1e-12)
    m = memory_vectors / np.maximum(np.linalg.norm(memory_vectors, axis=1, keepdims=True), 1e-12)
    sims = q.astype(np.float64) @ m.astype(np.float64).T
    k = min(k, m.shape[0])
    order = np.argsort(-sims, axis=1, kind="stable")
    return order[:, :k]


@dataclass
class MemorySet:
    """The active memories of one store, as retrieval sees them."""

    ids: list[str]
    texts: list[str]
    vectors: np.ndarray
    lineage: dict[str, list[str]]  # summary id → source ids
    created: list[datetime] | None = None  # shown with the text, as an agent sees a memory's date

    def context(self, i: int) -> str:
        """What an agent reads of memory i: its date, then its text."""
        return f"[{spoken_date(self.created[i])}] {self.texts[i]}" if self.created else self.texts[i]


def score_questions(
    questions: Sequence[Question], query_vectors: np.ndarray, memories: MemorySet, ks: Sequence[int]
) -> list[dict[str, Any]]:
    """One row per question: category, and for each k `recall@k` / `support@k` (True, False or None)."""
    ranked = top_k(query_vectors, memories.vectors, max(ks))
    rows = []
    for q, order in zip(questions, ranked, strict=True):
        row: dict[str, Any] = {"index": q.index, "category": q.category}
        for k in ks:
            ids = [memories.ids[i] for i in order[:k]]
            row[f"recall@{k}"] = evidence_hit(q.evidence, ids, memories.lineage)
            row[f"support@{k}"] = answer_support(q.answer, [memories.context(i) for i in order[:k]])
        rows.append(row)
    return rows


def mean_score(rows: Iterable[dict[str, Any]], key: str, categories: Sequence[int]) -> tuple[float | None, int]:
    """Mean of a score over the scorable questions of `categories`, and how many were scorable."""
    values = [r[key] for r in rows if r["category"] in categories and r[key] is not None]
    return (sum(values) / len(values) if values else None), len(values)
