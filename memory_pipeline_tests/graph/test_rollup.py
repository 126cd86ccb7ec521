"""Rolled-up tags and nexus keys (seed 004 §4.2–4.3): capped, scored, always-include rules, drops listed."""

from memory_pipeline.graph.rollup import GC_TAG, roll_up


def test_keys_are_capped_at_k_and_per_namespace_and_every_drop_is_listed() -> None:
    members = [[f"path:/f{i}", f"tool:t{i % 3}", "chan:ops"] for i in range(40)]
    r = roll_up(members, namespace="keys", k=32, per_namespace=8)
    assert len(r.kept) <= 32
    assert sum(k.startswith("path:") for k in r.kept) == 8  # per-namespace cap
    assert set(r.kept) | set(r.dropped) == {k for m in members for k in m}
    assert not set(r.kept) & set(r.dropped)
    assert "chan:ops" in r.kept and r.kept.index("chan:ops") < r.kept.index("path:/f0")  # most frequent first
    small = roll_up(members, namespace="keys", k=5, per_namespace=8)
    assert len(small.kept) == 5


def test_inverse_degree_penalty_prefers_distinctive_keys() -> None:
    members = [["job:nightly", "host:nas"], ["job:nightly", "host:nas"]]
    r = roll_up(members, namespace="keys", degrees={"host:nas": 5000, "job:nightly": 2}, k=1)
    assert r.kept == ["job:nightly"] and r.dropped == ["host:nas"]


def test_always_include_rules_for_tags() -> None:
    members = [[f"plain{i}", f"plain{i + 1}"] for i in range(40)]
    members[0] += ["ops/outbox-critical"]
    members[1] += ["err/timeout/db", "err/timeout/api", "err/disk", "err/auth", "err/quota"]
    members[2] += ["err/timeout/db"]
    r = roll_up(members, namespace="tags", k=4, per_namespace=2)
    assert {GC_TAG, "src/system", "ops/outbox-critical"} <= set(r.kept)
    errs = [t for t in r.kept if t.startswith("err/")]
    assert "err/timeout/db" in errs and len(errs) == 3  # the top three err families, one tag each
    assert "err/timeout/api" in r.dropped  # same family as err/timeout/db
    tool = roll_up(members, namespace="tags", generated_by_tool=True)
    assert "src/tool" in tool.kept and "src/system" not in tool.kept


def test_forced_keys_survive_the_cap() -> None:
    members = [["path:/a", "path:/b", "path:/c", "err:x"]] * 3 + [["chan:rare"]]
    r = roll_up(members, namespace="keys", k=2, per_namespace=1, forced={"chan:rare"})
    assert "chan:rare" in r.kept and "err:x" in r.kept
