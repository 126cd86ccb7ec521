"""What the offline distiller writes before and after a change: compression ratio, fact preservation and
faithfulness and coverage (`memory_pipeline.verification.faithfulness`: sentences its members do not support;
the share of their distinct statements it says, MiniLM judging paraphrases as the night does).

Reads a consolidated workspace (`memory-pipeline demo` builds one): every active summary's source members,
distilled again by the current `OfflineDistiller` and by the one at a git ref (`--baseline main`, loaded
from `git show`), both on the same members with the same limits. Fact preservation = the share of the
members' distinct numbers and named entities present in the abstraction verbatim or inside a stated range
(`memory_pipeline.statements.facts.check_facts`), pooled over clusters. MEMORY.md repeats = pairs of
entries (Key Decisions, Lessons Learned) with MiniLM cosine ≥ 0.85, via the project's embedder.
"""

from __future__ import annotations

import argparse
import importlib.util
import itertools
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import common


def load_baseline(ref: str) -> Any:
    """The distill module as it is at `ref`, imported under another name."""
    source = subprocess.run(
        ["git", "show", f"{ref}:memory_pipeline/distillation/distill.py"],
        cwd=common.HERE.parent, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    path = Path(tempfile.mkdtemp()) / "baseline_distill.py"
    path.write_text(source, encoding="utf-8")
    spec = importlib.util.spec_from_file_location("baseline_distill", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules["baseline_distill"] = module
    spec.loader.exec_module(module)
    return module


def clusters(home: Path) -> list[dict[str, Any]]:
    """Each active summary's members (oldest first) and date range."""
    from memory_pipeline.store import MemoryStore

    out = []
    with MemoryStore(home / "memory.duckdb").connect() as con:
        rows = con.execute(
            "SELECT id, compressed_from, content FROM memories WHERE lifecycle = 'active' AND compressed_from IS NOT "
            "NULL AND source LIKE 'abstraction:%' ORDER BY id"
        ).fetchall()
        for sid, lineage, stored in rows:
            lin = json.loads(lineage) if isinstance(lineage, str) else lineage
            ids = list(lin.get("source_ids", []))
            members = con.execute(
                "SELECT id, content, importance, created_at FROM memories WHERE id IN (SELECT unnest(?)) "
                "ORDER BY created_at, id",
                [ids],
            ).fetchall()
            if len(members) >= 2:
                out.append({"id": sid, "members": members, "stored": stored})
    return out


def score(distiller: Any, member_cls: Any, found: list[dict[str, Any]]) -> dict[str, Any]:
    from memory_pipeline.distillation.distill import DistillationRejected, validate_abstraction
    from memory_pipeline.embedding.embedder import Embedder
    from memory_pipeline.statements.facts import check_facts, fact_rejection
    from memory_pipeline.tokens import estimate_tokens
    from memory_pipeline.verification import faithfulness

    encode = faithfulness.CachedEncoder(Embedder().encode)
    total = kept = rejected = negations_lost = unfaithful = sentences = refused = said = statements = 0
    ratios: list[float] = []
    texts: dict[str, str] = {}
    for c in found:
        members = [member_cls(m[0], m[1], float(m[2])) for m in c["members"]]
        span = (str(c["members"][0][3]), str(c["members"][-1][3]))
        if hasattr(distiller, "encode"):
            distiller.encode = encode  # as the night hands it the embedder
        d = distiller.distill(members, "", span)
        covered = faithfulness.coverage([m.content for m in members], d.abstraction, encode)
        said, statements = said + len(covered.said), statements + covered.total
        texts[c["id"]] = d.abstraction
        check = check_facts([m.content for m in members], d.abstraction)
        total, kept = total + check.total, kept + check.kept
        negations_lost += check.negation_lost
        found_unfaithful = faithfulness.check([m.content for m in members], d.abstraction)
        unfaithful, sentences = unfaithful + bool(found_unfaithful), sentences + len(found_unfaithful)
        refused += bool(found_unfaithful or fact_rejection([m.content for m in members], d.abstraction)
                        or faithfulness.coverage_reason(covered))  # fmt: skip
        source = sum(estimate_tokens(m.content) for m in members)
        try:
            ratios.append(validate_abstraction(d.abstraction, source, [m.id for m in members], 1.5, 2000))
        except DistillationRejected:
            rejected += 1
    return {
        "clusters": len(found),
        "avg_ratio": sum(ratios) / len(ratios) if ratios else 0.0,
        "facts": total,
        "preservation": kept / total if total else 1.0,
        "negations_lost": negations_lost,
        "rejected": rejected,
        "unfaithful": unfaithful,
        "unfaithful_sentences": sentences,
        "refused": refused,
        "coverage": said / statements if statements else 1.0,
        "texts": texts,
    }


def memory_md_pairs(path: Path, threshold: float = 0.85) -> tuple[int, int]:
    """(entries, pairs of entries with MiniLM cosine ≥ threshold) in MEMORY.md's decisions and lessons."""
    import numpy as np

    from memory_pipeline.journals import knowledge
    from memory_pipeline.resources import EmbedderResource

    entries = [e for e in knowledge.parse_memory_md(path.read_text(encoding="utf-8")) if e.section != "Active Context"]
    if len(entries) < 2:
        return len(entries), 0
    vectors = np.asarray(EmbedderResource().encode([e.text for e in entries]), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    pairs = sum(
        1
        for i, j in itertools.combinations(range(len(entries)), 2)
        if entries[i].section == entries[j].section and float(vectors[i] @ vectors[j]) >= threshold
    )
    return len(entries), pairs


def main(argv: list[str] | None = None) -> dict[str, Any]:
    p = argparse.ArgumentParser(prog="python -m benchmarks distill", description=__doc__.split("\n")[0])
    p.add_argument("--home", type=Path, required=True, help="a consolidated workspace (memory.duckdb, knowledge/)")
    p.add_argument(
        "--baseline", default="91acc92",
        help="git ref of the distiller before its fact-preserving rewrite (default: %(default)s)",
    )
    p.add_argument("--memory-md-before", type=Path, default=None, help="a MEMORY.md built before, for comparison")
    p.add_argument("--show", default="JTO/USDT,whale", help="comma-separated words: print those clusters' texts")
    p.add_argument("--record", action=argparse.BooleanOptionalAction, default=True)
    args = p.parse_args(argv)
    from memory_pipeline.distillation.distill import Member, OfflineDistiller

    env, load_before = common.machine(), common.load_average()
    found = clusters(args.home)
    base = load_baseline(args.baseline)
    before = score(base.OfflineDistiller(), base.Member, found)
    after = score(OfflineDistiller(), Member, found)
    lines = [
        f"### Offline distiller before ({args.baseline}) and after, on `{args.home.name}` ({len(found)} clusters)",
        "",
        "| distiller | clusters | avg compression ratio | facts (numbers + entities) | preserved | negations lost |"
        " rejected by validation | unfaithful (texts / sentences) | coverage (pooled) | refused by the night's judge |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ]
    for name, r in (("before", before), ("after", after)):
        lines.append(
            f"| {name} | {r['clusters']} | {r['avg_ratio']:.2f} | {r['facts']} | {r['preservation']:.3f} | "
            f"{r['negations_lost']} | {r['rejected']} | {r['unfaithful']} / {r['unfaithful_sentences']} | "
            f"{r['coverage']:.3f} | {r['refused']} |"
        )
    from memory_pipeline.verification import faithfulness

    stored = [faithfulness.check([m[1] for m in c["members"]], c["stored"]) for c in found]
    lines += ["", f"The workspace's own summaries, as its nights wrote them: {sum(1 for f in stored if f)} of "
              f"{len(found)} with a sentence their sources do not support ({sum(len(f) for f in stored)} sentences)."]
    md = args.home / "knowledge" / "memory" / "MEMORY.md"
    if md.exists():
        lines += [
            "",
            "| MEMORY.md | entries (decisions + lessons) | pairs with MiniLM cosine ≥ 0.85 |",
            "| --- | --- | --- |",
        ]
        for name, path in (("before", args.memory_md_before), ("after", md)):
            if path is not None and path.exists():
                n, pairs = memory_md_pairs(path)
                lines.append(f"| {name} (`{path}`) | {n} | {pairs} |")
    text = "\n".join(lines) + "\n"
    for word in [w for w in args.show.split(",") if w]:
        for cid, t in after["texts"].items():
            if word.lower() in t.lower():
                print(f"--- {word} {cid}\nbefore: {before['texts'][cid]}\nafter:  {t}\n")
                break
    if args.record:
        common.append_results("distill", text, env, load_before)
    print(text)
    return {"before": before, "after": after}


if __name__ == "__main__":
    main()
