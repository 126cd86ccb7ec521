"""The Distiller's logic (seed 000 §4.3): a cluster's members as one distillation request, and the verdict on
what came back. Every distiller's output passes the same validation; a rejection skips the cluster with the
precise reason, a cost-capped cluster waits for the next night (not an attempt), an LLM error skips it as the
seed's failure table says. The `distillations` asset picks the clusters, calls the LLM and reports."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

import pandas as pd

from memory_pipeline.abstraction import versions
from memory_pipeline.abstraction.grade import SummaryGrade
from memory_pipeline.abstraction.outcomes import ClusterOutcome, stage_error
from memory_pipeline.distillation.distill import Distillation, DistillationRejected, Member, validate_abstraction
from memory_pipeline.similarity.clustering import MemoryCluster
from memory_pipeline.statements import judgement
from memory_pipeline.statements.facts import fact_rejection
from memory_pipeline.store import repository as repo
from memory_pipeline.store.db import MemoryStore
from memory_pipeline.verification import faithfulness

if TYPE_CHECKING:
    from memory_pipeline.llm.runs import DistillRequest


def requests(db: MemoryStore, todo: list[MemoryCluster]) -> list[DistillRequest]:
    """One request per cluster: its members' texts and importances, dominant category and date range."""
    from memory_pipeline.llm import runs as llm_runs  # the LLM runner, loaded only when a night distils

    with db.connect() as con:
        rows = repo.fetch_members(con, [m for c in todo for m in c.member_ids])
    by_id = {r.id: r for r in rows.itertuples()}
    return [
        llm_runs.DistillRequest(
            c.cluster_id,
            _present_first([by_id[m] for m in c.member_ids if m in by_id]),
            c.dominant_category,
            (c.oldest_member_at, c.newest_member_at),
        )
        for c in todo
    ]


def _present_first(rows: list[Any]) -> list[Member]:
    """Members as the distiller sees them: versions of one fact as one line, the current value first."""
    texts = versions.present_first([
        versions.Dated(r.id, r.content, r.created_at, _time(r.valid_until), _text(r.superseded_by)) for r in rows
    ])
    return [Member(r.id, texts[r.id], float(r.importance), str(r.created_at)[:10]) for r in rows]


def _time(value: Any) -> datetime | None:
    return None if value is None or pd.isna(value) else pd.Timestamp(value).to_pydatetime()


def _text(value: Any) -> str | None:
    return None if value is None or (isinstance(value, float) and pd.isna(value)) else str(value)


def statement_encoder(embedder: Any) -> faithfulness.CachedEncoder | None:
    """The embedder's encoder for judging paraphrases, when it is the model "says" was calibrated on (MiniLM),
    each sentence embedded once for the distiller and the judge; else None, and the words alone decide. Only the
    sentences whose verdict the words leave open are ever embedded (`judgement.Near`)."""
    own = embedder.judge_encoder()
    return None if own is None else faithfulness.CachedEncoder(own)


def judged(
    cluster: MemoryCluster,
    result: Distillation | BaseException,
    min_compression_ratio: float,
    max_abstraction_tokens: int,
    sources: Sequence[str] = (),
    encode: faithfulness.Encode | None = None,
) -> ClusterOutcome:
    """The cluster's outcome: its distillation with the validated compression ratio, or skipped and why. Every
    distiller's text is held to its `sources` (what the distiller was given): a value no source states, values
    of different statements put together, two statements fused, any statement or fact left out reject it, and
    the cluster stays as it is; a sentence that says again what an earlier one said is taken out first. The
    outcome carries the distillation's grade (`abstraction.grade`) either way."""
    from memory_pipeline.llm import runs as llm_runs

    outcome = ClusterOutcome(cluster)
    try:
        if isinstance(result, BaseException):
            raise result
        reason = None
        if sources and cluster.extra.get("source") == "keys":
            # a key cluster's summary is the digest of distinct memories that share a key (graph compaction): held
            # to what its sources state and their facts, not (yet) to saying each of their statements
            reason = (faithfulness.rejection_of(faithfulness.check(sources, result.abstraction))
                      or fact_rejection(sources, result.abstraction))  # fmt: skip
        elif sources:
            near = judgement.Near(encode)
            result.abstraction, _ = faithfulness.said_once(result.abstraction, near)  # one statement said once
            found = faithfulness.check(sources, result.abstraction, near)
            covered = faithfulness.coverage(sources, result.abstraction, encode)
            outcome.grade = SummaryGrade(cluster.cluster_id, len(covered.said), covered.total, len(found), False,
                                         covered.missed[:3], len(faithfulness.repeated(result.abstraction, near)))
            reason = (faithfulness.rejection_of(found) or fact_rejection(sources, result.abstraction)
                      or faithfulness.coverage_reason(covered))  # fmt: skip
        # the seed's validation first (ratio floor, size, ids), then what the verifier found
        result.compression_ratio = round(
            validate_abstraction(
                result.abstraction,
                cluster.total_tokens,
                cluster.member_ids,
                min_compression_ratio,
                max_abstraction_tokens,
            ),
            3,
        )
        if reason:
            raise DistillationRejected(reason)
        outcome.distillation = result
        if outcome.grade is not None:
            outcome.grade = replace(outcome.grade, accepted=True)
    except DistillationRejected as exc:
        outcome.skip_reason, outcome.status = str(exc), "skipped"
    except llm_runs.CostCapReached as exc:  # never sent: waits for the next night, not an attempt
        outcome.skip_reason, outcome.status = llm_runs.deferred_reason(exc), "skipped"
    except Exception as exc:  # an LLM/API error skips the cluster, as the seed's failure table says
        outcome.skip_reason, outcome.status = f"LLM error: {exc}", "skipped"
        outcome.errors.append(stage_error(cluster.cluster_id, "distill", exc))
    return outcome
