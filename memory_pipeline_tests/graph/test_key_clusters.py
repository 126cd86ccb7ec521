"""Key-centred clusters and the candidate score (seed 004 §2–3): deterministic, windowed, capped."""

import random
from datetime import date, datetime, timedelta

from memory_pipeline.graph.key_clusters import Candidate, KeyClusterParams, hot_keys, key_clusters, window_start
from memory_pipeline.graph.scoring import ScoreWeights, candidate_score, is_spam_raw, spam_family
from memory_pipeline.graph.usage import UsageState

AS_OF = date(2026, 11, 1)  # a Sunday
MONDAY = datetime(2026, 10, 12, 0, 0)


def cand(mid: str, at: datetime, keys: tuple[str, ...], tokens: int = 40, score: float = 30.0) -> Candidate:
    return Candidate(mid, at, keys, tokens, score)


def store() -> list[Candidate]:
    out = [cand(f"t{i}", MONDAY + timedelta(hours=7 * i), ("err:timeout", "path:/v1")) for i in range(7)]
    out += [cand(f"p{i}", MONDAY + timedelta(days=1, hours=i), ("path:/v2",), score=25.0) for i in range(4)]
    out += [cand(f"s{i}", MONDAY + timedelta(days=3, minutes=i), ("spam:promo",), score=40.0) for i in range(3)]
    return out


def test_same_input_same_clusters_whatever_the_order() -> None:
    params = KeyClusterParams(window="week")
    first = key_clusters(store(), AS_OF, params)
    for seed in range(5):
        shuffled = store()
        random.Random(seed).shuffle(shuffled)
        assert key_clusters(shuffled, AS_OF, params) == first
    assert [(c.key, len(c.member_ids)) for c in first] == [("err:timeout", 7), ("path:/v2", 4), ("spam:promo", 3)]
    taken = [m for c in first for m in c.member_ids]
    assert len(taken) == len(set(taken))  # a memory joins at most one cluster


def test_window_boundaries_split_buckets() -> None:
    sunday_night = datetime(2026, 10, 11, 23, 59)
    monday = datetime(2026, 10, 12, 0, 0)
    assert window_start(sunday_night, "week") == date(2026, 10, 5)
    assert window_start(monday, "week") == date(2026, 10, 12)
    assert window_start(monday + timedelta(hours=23), "day") == date(2026, 10, 12)
    members = [cand(f"a{i}", sunday_night - timedelta(hours=i), ("err:x",)) for i in range(3)]
    members += [cand(f"b{i}", monday + timedelta(hours=i), ("err:x",)) for i in range(3)]
    weekly = key_clusters(members, AS_OF, KeyClusterParams(window="week"))
    assert [c.member_ids for c in weekly] == [("a0", "a1", "a2"), ("b0", "b1", "b2")]
    assert [c.window_start for c in weekly] == [date(2026, 10, 5), date(2026, 10, 12)]
    daily = key_clusters(members, AS_OF, KeyClusterParams(window="day"))
    # a0 (23:59) and a1 (22:59) fall on Sunday with a2: the same three; Monday's three stay together
    assert [len(c.member_ids) for c in daily] == [3, 3]
    straddling = [cand("x0", sunday_night, ("err:y",)), cand("x1", monday, ("err:y",)), cand("x2", monday, ("err:y",))]
    assert key_clusters(straddling, AS_OF, KeyClusterParams(window="week")) == []  # 1 + 2: no bucket reaches 3


def test_member_and_token_caps_chunk_a_bucket() -> None:
    members = [cand(f"m{i:02d}", MONDAY + timedelta(hours=i), ("err:z",), score=100 - i) for i in range(10)]
    by_members = key_clusters(members, AS_OF, KeyClusterParams(max_members=4))
    assert [c.member_ids for c in by_members] == [("m00", "m01", "m02", "m03"), ("m04", "m05", "m06", "m07")]
    by_tokens = key_clusters(members, AS_OF, KeyClusterParams(max_tokens=130))  # 3 × 40 tokens fit
    assert all(c.tokens <= 130 and len(c.member_ids) == 3 for c in by_tokens) and len(by_tokens) == 3


def test_hot_keys_come_from_the_best_old_candidates_and_prefixes_filter() -> None:
    young = [cand(f"y{i}", datetime(2026, 10, 30) + timedelta(hours=i), ("chan:new",), score=99) for i in range(5)]
    ranked = hot_keys(store() + young, AS_OF, KeyClusterParams(min_age_days=7))
    assert "chan:new" not in dict(ranked)  # too young to vote
    assert ranked[0] == ("err:timeout", 7)
    only_spam = key_clusters(store(), AS_OF, KeyClusterParams(key_prefixes=("spam:",)))
    assert [c.key for c in only_spam] == ["spam:promo"]
    few = hot_keys(store(), AS_OF, KeyClusterParams(seed_count=3))  # the 3 best: the spam family
    assert few == [("spam:promo", 3)]


def test_candidate_score_follows_the_seed_formula() -> None:
    w = ScoreWeights(age=1.0, usage=2.0, pinned=100.0, human_authored=10.0, spam_raw=5.0)
    usage = UsageState(3, 2.0, date(2026, 10, 30))  # decays to 2 × 0.95² by Nov 1
    score = candidate_score(
        created=date(2026, 10, 2), as_of=AS_OF, usage=usage, pinned=False, human_authored=True, spam_raw=True, weights=w
    )
    assert score == round(30 - 2 * 2 * 0.95**2 - 10 + 5, 9)
    pinned = candidate_score(
        created=date(2026, 10, 2), as_of=AS_OF, usage=UsageState(), pinned=True, human_authored=False, spam_raw=False
    )
    assert pinned == 30 - 100
    assert is_spam_raw(["spam/promo"], []) and is_spam_raw([], ["spam:promo"]) and not is_spam_raw(["x"], ["err:a"])
    assert not is_spam_raw([], ["spam:promo"], kind="summary")
    assert spam_family(["spam/promo"], []) == "spam:promo"
