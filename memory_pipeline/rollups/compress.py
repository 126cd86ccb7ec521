"""Session → Core and Core → Sphere compression without a model: deterministic and extractive.

Seed 002's three methods: summarisation (here extractive — sentences picked, never written), statistical
aggregation (counts, averages of every numeric signal present, dominant emotions and themes) and selective
retention (sessions with salience > 0.8 kept verbatim as milestones). The LLM path (`llm_summary`) replaces
only the narrative; everything measured stays measured here.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from memory_pipeline.rollups.counters import core_index, sphere_index
from memory_pipeline.rollups.repository import SessionRow
from memory_pipeline.tokens import estimate_tokens

MILESTONE_SALIENCE = 0.8  # seed 002: keep episodes with RI > 0.8 (milestones)
ESTIMATED_RI_CAP = 0.8  # an estimate never makes a milestone: only a real salience does
OFFLINE_CORE_METHOD = "extractive_offline+statistical_aggregation+selective_retention (deterministic)"
OFFLINE_SPHERE_METHOD = "multi_core_synthesis: extractive_offline+statistical_aggregation (deterministic)"
MAX_SENTENCE_WORDS = 40

STOPWORDS = frozenset(
    """a about above after again against all also am an and any are aren't as at be because been before being
    below between both but by can can't could couldn't did didn't do does doesn't doing don't down during each
    few for from further get got had hadn't has hasn't have haven't having he he'd he'll he's her here here's
    hers herself him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just
    let's like me more most much my myself no nor not now of off on once only or other ought our ours
    ourselves out over own really same she she'd she'll she's should shouldn't so some such than that that's
    the their theirs them themselves then there there's these they they'd they'll they're they've this those
    through to too under until up very was wasn't we we'd we'll we're we've were weren't what what's when
    when's where where's which while who who's whom why why's will with won't would wouldn't yeah yes you
    you'd you'll you're you've your yours yourself yourselves one two lot lots thing things something anything
    everything well going gonna want know think thanks thank good great hey hi oh okay ok sure way time
    really still even always never yet day today see make made take took feel felt tell told said say says
    back new much many maybe though since lately recently pretty""".split()
)

# A small, fixed lexicon: enough to name the prevailing feeling of a session, and honest about being a lexicon.
EMOTIONS: dict[str, frozenset[str]] = {
    "gratitude": frozenset("thank thanks grateful gratitude appreciate appreciated thankful".split()),
    "joy": frozenset(
        "happy glad excited exciting fun enjoy enjoyed awesome amazing wonderful love loved loving thrilled "
        "delighted celebrate celebrated yay fantastic".split()
    ),
    "warmth": frozenset("care caring support supportive proud hug kind kindness together miss friend friends".split()),
    "concern": frozenset(
        "worried worry worrying concern concerned problem issue stress stressed stressful anxious anxiety "
        "afraid nervous difficult struggle struggling tough".split()
    ),
    "sadness": frozenset("sad sorry lost loss cry cried lonely hurt grief depressed down".split()),
    "anger": frozenset("angry frustrated frustrating annoyed upset furious mad".split()),
}
POSITIVE = frozenset({"gratitude", "joy", "warmth"})
NEUTRAL = "neutral"

_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")
_WORD = re.compile(r"[a-z][a-z'’]+")
_MARKUP = re.compile(r"[*_`#>]+")


def words(text: str) -> list[str]:
    return [w.replace("’", "'") for w in _WORD.findall(text.lower())]


def content_words(text: str, exclude: frozenset[str] = frozenset()) -> list[str]:
    return [w for w in words(text) if len(w) > 2 and w not in STOPWORDS and w not in exclude and "'" not in w]


def sentences(text: str) -> list[str]:
    """Sentences of a transcript body, markup stripped; too-short fragments dropped, long ones clipped."""
    out = []
    for raw in _SPLIT.split(text):
        s = " ".join(_MARKUP.sub("", raw).split())
        if len(s.split()) < 4:
            continue
        parts = s.split()
        out.append(s if len(parts) <= MAX_SENTENCE_WORDS else " ".join(parts[:MAX_SENTENCE_WORDS]) + " …")
    return out


def emotion_of(text: str, frontmatter: dict[str, Any] | None = None) -> tuple[str, float]:
    """(emotion, intensity = lexicon hits per 100 words). A frontmatter `emotion`/`mood` string wins."""
    fm = frontmatter or {}
    for key in ("emotion", "mood"):
        if isinstance(fm.get(key), str) and fm[key].strip():
            return fm[key].strip().lower(), 1.0
    ws = words(text)
    hits = Counter({name: sum(1 for w in ws if w in lex) for name, lex in EMOTIONS.items()})
    name, n = max(hits.items(), key=lambda kv: (kv[1], -list(EMOTIONS).index(kv[0])))
    if n == 0:
        return NEUTRAL, 0.0
    return name, round(100.0 * n / max(1, len(ws)), 3)


def numeric_signals(frontmatter: dict[str, Any]) -> dict[str, float]:
    """Numbers a session carries (top level, or under `signals`/`state`): stress, warmth, mood score, …"""
    out: dict[str, float] = {}
    for data in (frontmatter, frontmatter.get("signals"), frontmatter.get("state")):
        if not isinstance(data, dict):
            continue
        for key, value in data.items():
            if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
                continue
            if key in ("salience", "turn_count", "turns"):
                continue
            name = re.sub(r"[^a-z0-9_]+", "_", str(key).lower()).strip("_")
            if name:
                out[name] = float(value)
    return out


def _dominant(labels: Iterable[str]) -> str:
    """Most frequent label, ties to the first seen; neutral only if nothing else occurs."""
    seq = list(labels)
    counts = Counter(seq)
    non_neutral = [x for x in seq if x != NEUTRAL]
    pool = non_neutral or seq
    if not pool:
        return NEUTRAL
    return max(dict.fromkeys(pool), key=lambda x: counts[x])


def _iso(ts: datetime) -> str:
    return ts.replace(microsecond=0).isoformat()


def _themes(docs: Sequence[list[str]], tags: Sequence[list[str]], limit: int = 6) -> list[str]:
    """Tags and content words found in at least two documents, by document frequency then frequency."""
    df: Counter[str] = Counter()
    tf: Counter[str] = Counter()
    for ws in docs:
        tf.update(ws)
        df.update(set(ws))
    tag_df: Counter[str] = Counter()
    for ts in tags:
        tag_df.update({t.lower() for t in ts})
    themes = [t for t, n in sorted(tag_df.items(), key=lambda kv: (-kv[1], kv[0])) if n >= 2]
    ranked = sorted((w for w, n in df.items() if n >= 2), key=lambda w: (-df[w], -tf[w], w))
    for w in ranked:
        if len(themes) >= limit:
            break
        if w not in themes:
            themes.append(w)
    return themes[:limit]


def _scored_sentences(texts: Sequence[str], exclude: frozenset[str]) -> list[list[tuple[float, int, str]]]:
    """Per document: (score, position, sentence). A word weighs its frequency in its own document times its
    rarity across the group (tf·idf): the sentence that best says what this document is about, in the words
    that set it apart from the others, ranks first; boilerplate shared by every document ranks last."""
    per_doc = [sentences(t) for t in texts]
    tfs = [Counter(w for s in sents for w in content_words(s, exclude)) for sents in per_doc]
    df: Counter[str] = Counter()
    for tf in tfs:
        df.update(tf.keys())
    n_docs = max(1, len(texts))
    out = []
    for sents, tf in zip(per_doc, tfs, strict=True):
        scored = []
        for pos, s in enumerate(sents):
            cw = set(content_words(s, exclude))
            if len(cw) < 2:
                continue
            weight = sum(tf[w] * math.log((1 + n_docs) / df[w]) for w in cw) / len(cw)
            scored.append((round(weight * math.log1p(len(cw)), 6), pos, s))
        out.append(scored)
    return out


def _central_sentences(texts: Sequence[str]) -> list[tuple[float, int, str]]:
    """(score, document index, sentence) for every sentence; score = mean share of documents that use its
    words: what recurs across the group (a Sphere's patterns), not what one document alone says."""
    per_doc = [sentences(t) for t in texts]
    df: Counter[str] = Counter()
    for sents in per_doc:
        df.update({w for s in sents for w in content_words(s)})
    n_docs = max(1, len(texts))
    out = []
    for di, sents in enumerate(per_doc):
        for s in sents:
            cw = set(content_words(s))
            if len(cw) >= 2:
                out.append((round(sum(df[w] for w in cw) / (len(cw) * n_docs) * math.log1p(len(cw)), 6), di, s))
    return out


def _diverse(candidates: Sequence[tuple[float, int, str]], k: int) -> list[int]:
    """Indices of up to k candidates, greedily: best score discounted by word overlap with those already
    taken (maximal marginal relevance), so a summary covers several topics instead of one, repeated."""
    taken: list[int] = []
    seen: set[str] = set()
    words_of = [set(content_words(c[2])) for c in candidates]
    while len(taken) < min(k, len(candidates)):
        best, best_value = -1, -1.0
        for i, (score, _, _) in enumerate(candidates):
            if i in taken or not words_of[i]:
                continue
            value = score * (1 - len(words_of[i] & seen) / len(words_of[i]))
            if value > best_value:
                best, best_value = i, value
        if best < 0:
            break
        taken.append(best)
        seen |= words_of[best]
    return taken


def _names(rows: Sequence[SessionRow]) -> frozenset[str]:
    return frozenset(w for r in rows for p in r.participants for w in words(p))


def build_core(rows: Sequence[SessionRow], core_id: str, now: datetime) -> dict[str, Any]:
    """The seed's Core document from its 8 sessions (in ordinal order), offline."""
    idx = core_index(core_id)
    exclude = _names(rows)
    bodies = [f"{r.title}. {r.text}" for r in rows]
    scored = _scored_sentences(bodies, exclude)
    docs = [content_words(b, exclude) for b in bodies]
    emotions = [emotion_of(r.text, r.frontmatter) for r in rows]
    best = [max(s, default=(0.0, 0, r.title)) for s, r in zip(scored, rows, strict=True)]
    top_score = max((b[0] for b in best), default=0.0) or 1.0

    ris: list[float] = []
    for r, b in zip(rows, best, strict=True):
        if r.salience is not None:
            ris.append(round(float(r.salience), 3))
        else:  # lexical centrality of the session's best sentence, capped below the milestone bar
            ris.append(round(0.1 + (ESTIMATED_RI_CAP - 0.1) * b[0] / top_score, 3))
    measured = sum(r.salience is not None for r in rows)
    ri_source = "salience" if measured == len(rows) else "estimated" if measured == 0 else "mixed"

    summary = " ".join(f"[{r.started_at:%Y-%m-%d}] {b[2]}" for r, b in zip(rows, best, strict=True))
    key_events = [
        {
            "event": r.title or r.session_id,
            "emotion": emo,
            "ri": ri,
            "session_id": r.session_id,
            "timestamp": _iso(r.started_at),
        }
        for r, (emo, _), ri in zip(rows, emotions, ris, strict=True)
    ]
    non_neutral = [(intensity, i) for i, (e, intensity) in enumerate(emotions) if e != NEUTRAL]
    peak = emotions[max(non_neutral)[1]][0] if non_neutral else NEUTRAL
    anchors_pool = [
        (s * ri, -i, pos, text, rows[i].session_id)
        for i, (sents, ri) in enumerate(zip(scored, ris, strict=True))
        for s, pos, text in sents
    ]
    anchors_pool.sort(key=lambda a: (-a[0], -a[1], a[2]))
    top_anchor = anchors_pool[0][0] if anchors_pool and anchors_pool[0][0] > 0 else 1.0
    anchors: list[dict[str, Any]] = []
    seen: set[str] = set()
    for score, _, _, text, sid in anchors_pool:
        if len(anchors) >= 5:
            break
        if text.lower() in seen:
            continue
        seen.add(text.lower())
        anchors.append({"phrase": text, "rim": round(min(1.0, score / top_anchor), 3), "from_session": sid})

    signals: dict[str, list[float]] = {}
    for r in rows:
        for key, value in numeric_signals(r.frontmatter).items():
            signals.setdefault(key, []).append(value)
    saliences = [r.salience for r in rows if r.salience is not None]
    aggregated: dict[str, Any] = {
        "dominant_emotion": _dominant(e for e, _ in emotions),
        "interaction_count": sum(r.turn_count for r in rows),
        "session_count": len(rows),
        "avg_turns": round(sum(r.turn_count for r in rows) / len(rows), 3),
        "emotion_counts": dict(Counter(e for e, _ in emotions).most_common()),
        "participants": dict(Counter(p for r in rows for p in r.participants).most_common()),
    }
    if saliences:
        aggregated["avg_salience"] = round(sum(saliences) / len(saliences), 3)
    for key in sorted(signals):
        aggregated[f"avg_{key}"] = round(sum(signals[key]) / len(signals[key]), 3)

    milestones = [
        {
            "session_id": r.session_id,
            "salience": r.salience,
            "title": r.title,
            "timestamp": _iso(r.started_at),
            "path": r.path,
            "text": r.text,
        }
        for r in rows
        if r.salience is not None and r.salience > MILESTONE_SALIENCE
    ]
    source_tokens = sum(estimate_tokens(r.text) for r in rows)
    kept_tokens = estimate_tokens(summary) + sum(estimate_tokens(a["phrase"]) for a in anchors)
    themes = _themes(docs, [r.tags for r in rows])
    return {
        "core_id": core_id,
        "sphere_seq": idx // 8,
        "core_seq": idx % 8,
        "timestamp_start": _iso(min(r.started_at for r in rows)),
        "timestamp_end": _iso(max(r.ended_at for r in rows)),
        "session_count": len(rows),
        "source_sessions": [r.session_id for r in rows],
        "source_paths": [r.path for r in rows],
        "compressed_narrative": {
            "summary": summary,
            "key_events": key_events,
            "recurring_themes": themes,
            "emotional_arc": {"start_state": emotions[0][0], "peak_emotion": peak, "end_state": emotions[-1][0]},
        },
        "aggregated_state": aggregated,
        "salience_anchors": anchors,
        "milestones": milestones,
        "late_sessions": [r.session_id for r in rows if r.late],
        "meta": {
            "compression_method": OFFLINE_CORE_METHOD,
            "compression_timestamp": _iso(now),
            "detail_retention": round(min(1.0, kept_tokens / max(1, source_tokens)), 4),
            "summariser": "offline-extractive",
            "ri_source": ri_source,
            "source_tokens": source_tokens,
            "milestone_count": len(milestones),
        },
    }


def build_sphere(cores: Sequence[dict[str, Any]], sphere_id: str, now: datetime) -> dict[str, Any]:
    """The seed's Sphere document from its 8 Core documents, offline: patterns are themes that recur across
    Cores, beliefs are the anchors that carry them, the relationship's phase is the trend of warm sessions."""
    seq = sphere_index(sphere_id)
    theme_cores: Counter[str] = Counter()
    for c in cores:
        theme_cores.update(set(c["compressed_narrative"]["recurring_themes"]))
    n = len(cores)
    recurring = [t for t, k in sorted(theme_cores.items(), key=lambda kv: (-kv[1], kv[0])) if k >= 2][:6]

    summaries = [c["compressed_narrative"]["summary"] for c in cores]
    pool = _central_sentences(summaries)
    chosen = sorted(_diverse(pool, 8), key=lambda i: (pool[i][1], i))  # in the Cores' order
    summary = " ".join(re.sub(r"^\[[0-9-]+\]\s*", "", pool[i][2]) for i in chosen) or " ".join(summaries)[:1000]

    # beliefs: the anchors whose words recur across the most Cores (patterns, not one-off details)
    core_words = [
        set(
            content_words(
                " ".join([c["compressed_narrative"]["summary"], *c["compressed_narrative"]["recurring_themes"]])
            )
        )
        | {w for a in c["salience_anchors"] for w in content_words(a["phrase"])}
        for c in cores
    ]
    phrases = list(dict.fromkeys(a["phrase"] for c in cores for a in c["salience_anchors"]))
    anchor_pool = []
    for phrase in phrases:
        cw = set(content_words(phrase))
        if len(cw) >= 2:
            share = sum(len(cw & ws) / len(cw) for ws in core_words) / n
            anchor_pool.append((round(share, 6), 0, phrase))
    beliefs = [anchor_pool[i][2] for i in _diverse(anchor_pool, 5)]

    patterns = []
    for theme in recurring:
        holders = [c for c in cores if theme in c["compressed_narrative"]["recurring_themes"]]
        share = len(holders) / n
        patterns.append(
            {
                "pattern": theme,
                "frequency": "high" if share >= 0.75 else "medium" if share >= 0.4 else "low",
                "context": _dominant(c["aggregated_state"]["dominant_emotion"] for c in holders),
                "core_count": len(holders),
            }
        )

    events = [e for c in cores for e in c["compressed_narrative"]["key_events"]]
    positive = [e["emotion"] in POSITIVE for e in events]
    half = len(positive) // 2
    first = sum(positive[:half]) / max(1, half)
    second = sum(positive[half:]) / max(1, len(positive) - half)
    phase = "deepening" if second - first > 0.1 else "cooling" if first - second > 0.1 else "steady"
    session_count = sum(c["session_count"] for c in cores)

    def weighted(key: str) -> float | None:
        pairs = [(c["aggregated_state"][key], c["session_count"]) for c in cores if key in c["aggregated_state"]]
        if not pairs:
            return None
        return round(sum(v * w for v, w in pairs) / sum(w for _, w in pairs), 3)

    aggregated: dict[str, Any] = {
        "dominant_emotion": _dominant(e["emotion"] for e in events),
        "interaction_count": sum(c["aggregated_state"]["interaction_count"] for c in cores),
        "session_count": session_count,
        "milestone_count": sum(len(c.get("milestones", [])) for c in cores),
    }
    for key in sorted({k for c in cores for k in c["aggregated_state"] if k.startswith("avg_")}):
        value = weighted(key)
        if value is not None:
            aggregated[key] = value
    return {
        "sphere_id": sphere_id,
        "sphere_seq": seq,
        "timestamp_start": min(c["timestamp_start"] for c in cores),
        "timestamp_end": max(c["timestamp_end"] for c in cores),
        "core_count": n,
        "session_count": session_count,
        "source_cores": [c["core_id"] for c in cores],
        "abstracted_knowledge": {
            "summary": summary,
            "core_beliefs": beliefs,
            "behavioral_patterns": patterns,
            "relationship_evolution": {
                "phase": phase,
                "trust_level": weighted("avg_trust")
                if weighted("avg_trust") is not None
                else weighted("avg_trust_level"),
                "emotional_intimacy": round(sum(positive) / max(1, len(positive)), 3),
                "professional_boundary": weighted("avg_professional_boundary"),
                "basis": "emotional_intimacy = share of sessions whose prevailing emotion is warm (gratitude, joy, "
                "warmth); phase = its change from the first half to the second; trust_level and "
                "professional_boundary only from numeric session signals, else null",
            },
        },
        "aggregated_state": aggregated,
        "meta": {
            "compression_method": OFFLINE_SPHERE_METHOD,
            "compression_timestamp": _iso(now),
            "abstraction_level": "high",
            "summariser": "offline-extractive",
        },
    }
