"""Tokens for BM25, the same for documents and queries: lower case, runs of two or more word characters, English
stopwords dropped (bm25s' English list, kept in stopwords_en.txt: importing bm25s would load SciPy into every
query process), Snowball-stemmed (PyStemmer) — what `bm25s.tokenize` produces.

Two paths give the same tokens: `tokenize` (Python's `re`, for a query or a few documents) and `bulk_terms` (Arrow's
vectorised lower-casing and split — ASCII text by a byte translation, the rest by RE2 — then the stemmer over the
distinct words only: ~4× faster at 1M documents). Python's `\\w` is a letter, a number or `_`; RE2's
`[\\pL\\pN_]` is the same class."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

STOPWORDS = frozenset(Path(__file__).with_name("stopwords_en.txt").read_text().split())
_WORDS = re.compile(r"(?u)\b\w\w+\b")
_SPLIT = r"[^\pL\pN_]+"


def _stemmer() -> Any:
    try:
        import Stemmer  # PyStemmer: the snowball stemmer bm25s recommends

        # without its own cache: the words it is given are distinct already (`bulk_terms` stems each distinct word
        # once; `stem` has its own cache), and filling the cache made stemming them ~2.7× slower
        return Stemmer.Stemmer("english", 0)
    except ImportError:  # pragma: no cover - PyStemmer is a dependency
        return None


STEMMER = _stemmer()


@lru_cache(maxsize=200_000)
def stem(word: str) -> str:
    return str(STEMMER.stemWord(word)) if STEMMER is not None else word


def stem_words(words: list[str]) -> list[str]:
    """`stem` of each word, in one call of the stemmer (a document batch's distinct words; no cache in between)."""
    return list(STEMMER.stemWords(words)) if STEMMER is not None else list(words)


@lru_cache(maxsize=1)
def _stopword_array() -> pa.Array:
    """Built at first use: `pa.array` from a list imports pandas (~0.3 s), which a one-query CLI search never needs."""
    return pa.array(sorted(STOPWORDS), pa.string())


def tokenize_one(text: str) -> list[str]:
    return [stem(w) for w in _WORDS.findall(text.lower()) if w not in STOPWORDS]


def tokenize(texts: Sequence[str]) -> list[list[str]]:
    return [tokenize_one(t) for t in texts]


# every byte but [a-z0-9_] → a space: on lower-cased ASCII text (where `\pL`, `\pN` and `_` are `[a-z0-9_]`), the
# words between the spaces of the translated bytes are the words; ~4× faster than RE2 with the ASCII class (an
# update's 1,000 rows: 0.5 ms, not 1.9), whose Unicode class alone takes RE2 ~8 ms a call to compile
_TO_SPACE = bytes(b if chr(b) in "abcdefghijklmnopqrstuvwxyz0123456789_" else 0x20 for b in range(256))


def _split_ascii(lower: pa.Array) -> pa.Array:
    validity, offsets, data = lower.buffers()[:3]
    spaced = pa.py_buffer(data.to_pybytes().translate(_TO_SPACE)) if data is not None else data
    return pc.ascii_split_whitespace(
        pa.Array.from_buffers(lower.type, len(lower), [validity, offsets, spaced], offset=lower.offset))


def _split_unicode(lower: pa.Array) -> pa.Array:
    return pc.split_pattern_regex(lower, pattern=_SPLIT)


def _split(lower: pa.Array, split: Callable[[pa.Array], pa.Array]) -> tuple[pa.Array, np.ndarray]:
    lists = split(lower)
    return pc.list_flatten(lists), np.asarray(pc.list_parent_indices(lists), dtype=np.int64)


def _split_words(lower: pa.Array) -> tuple[pa.Array, np.ndarray]:
    """Every word of lower-cased texts and its row, in document order: ASCII rows split by `_split_ascii`, the
    others by RE2 with the Unicode class."""
    ascii_rows = np.asarray(pc.string_is_ascii(lower).to_numpy(zero_copy_only=False), dtype=bool)
    if ascii_rows.all():
        return _split(lower, _split_ascii)
    if not ascii_rows.any():
        return _split(lower, _split_unicode)
    parts = []
    for mask, split in ((ascii_rows, _split_ascii), (~ascii_rows, _split_unicode)):
        where = np.flatnonzero(mask)
        words, rows = _split(lower.take(pa.array(where)), split)
        parts.append((words, where[rows]))
    rows = np.concatenate([r for _, r in parts])
    order = np.argsort(rows, kind="stable")  # each row is in one part: its words keep their order
    words = pa.concat_arrays([w for w, _ in parts]).take(pa.array(order))
    return words, rows[order]


def bulk_terms(texts: Sequence[str] | pa.Array | pa.ChunkedArray) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """Every token of every text, vectorised: (document row, term id) per token, in document order, and the
    terms (term id → stemmed word). Stopwords and one-character runs are dropped."""
    arr = texts if isinstance(texts, pa.Array | pa.ChunkedArray) else pa.array(list(texts), type=pa.string())
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    if len(arr) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), []
    words, rows = _split_words(pc.utf8_lower(arr.fill_null("")))
    encoded = pc.dictionary_encode(words)
    distinct = encoded.dictionary
    codes = np.asarray(encoded.indices, dtype=np.int64)
    # a distinct word → its term id (-1: dropped), stemming each distinct word once, in one call of the stemmer
    # (a call per word was ~1.6 µs each: a third of tokenising an update's 1,000 rows)
    indexed = pc.and_(pc.greater_equal(pc.utf8_length(distinct), 2),
                      pc.invert(pc.is_in(distinct, value_set=_stopword_array())))  # fmt: skip
    kept = np.flatnonzero(np.asarray(indexed.to_numpy(zero_copy_only=False), dtype=bool))
    stems = pc.dictionary_encode(pa.array(stem_words(distinct.take(pa.array(kept)).to_pylist()), pa.string()))
    remap = np.full(len(distinct), -1, dtype=np.int64)
    remap[kept] = np.asarray(stems.indices, dtype=np.int64)  # term ids in order of first use, as before
    term_of = remap[codes]
    keep = term_of >= 0
    return rows[keep], term_of[keep], stems.dictionary.to_pylist()
