import io
import time

import dagster as dg
import numpy as np
import pytest

from memory_pipeline.operator.progress import ProgressBar, ThrottledProgress, encode_in_steps, progress_for


@dg.asset
def slow_embed(context: dg.AssetExecutionContext) -> int:
    for i in range(1, 4):
        context.log.info(f"embedded {i * 100}/300 memories")
        time.sleep(0.12)  # the bar redraws at most every 0.1 s
    context.log.warning("two memories had no text")
    return 3


@dg.asset
def after(slow_embed: int) -> int:
    return slow_embed + 1


@dg.asset
def broken(after: int) -> int:
    raise ValueError("disk full")


def _run(selection: list, monkeypatch: pytest.MonkeyPatch) -> tuple[dg.ExecuteInProcessResult, str]:
    monkeypatch.setenv("MEMORY_PIPELINE_PROGRESS", "bar")
    job = dg.Definitions(assets=selection, jobs=[dg.define_asset_job("night", selection=selection)]).resolve_job_def(
        "night"
    )
    stream = io.StringIO()
    with dg.DagsterInstance.ephemeral() as instance, progress_for(instance, job, {}, stream) as (run_id, config):
        assert run_id and config["loggers"]["console"]["config"]["log_level"] == "CRITICAL"
        result = job.execute_in_process(instance=instance, run_config=config, run_id=run_id, raise_on_error=False)
    assert result.run_id == run_id
    return result, stream.getvalue()


def test_bar_follows_the_runs_events_and_keeps_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    result, out = _run([slow_embed, after], monkeypatch)
    assert result.success
    frames = [f for f in out.replace("\x1b[K", "").split("\r") if f.strip()]
    assert frames[-1].rstrip("\n") == "night [########################]  2/2 steps  after"
    # 2/3 of the first of two steps: a third of the bar, drawn before the step ended
    assert "night [########----------------]  0/2 steps  slow_embed: embedded 200/300 memories" in frames
    assert "two memories had no text\n" in frames  # a warning is printed above the bar, on its own line


def test_a_failed_step_is_reported_above_the_bar(monkeypatch: pytest.MonkeyPatch) -> None:
    result, out = _run([slow_embed, after, broken], monkeypatch)
    assert not result.success
    assert "step broken failed" in out
    assert out.endswith("3/3 steps  broken\n")


def test_log_mode_leaves_the_run_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MEMORY_PIPELINE_PROGRESS", "log")
    with progress_for(object(), object(), {"ops": {}}, io.StringIO()) as (run_id, config):
        assert run_id is None and config == {"ops": {}}
    monkeypatch.setenv("MEMORY_PIPELINE_PROGRESS", "fancy")
    with pytest.raises(ValueError, match="MEMORY_PIPELINE_PROGRESS='fancy'"):
        with progress_for(object(), object(), {}, io.StringIO()):
            pass


def test_throttled_progress_always_logs_first_and_last() -> None:
    lines: list[str] = []
    progress = ThrottledProgress(lines.append, "embedding memories", 5, interval=3600)
    for i in range(1, 6):
        progress.update(i)
    assert lines == ["embedding memories 1/5", "embedding memories 5/5"]
    every: list[str] = []
    progress = ThrottledProgress(every.append, "x", 3, interval=0)
    for i in range(1, 4):
        progress.update(i)
        time.sleep(0.001)
    assert len(every) == 3


STEP_ATOL = 1e-6  # two batchings of MiniLM differ by up to ~7.5e-8 on AMD EPYC (OpenBLAS Haswell kernel)
BAND = 1e-5  # a pair whose float64 cosine is this close to the threshold may land on either side


def test_encode_in_steps_matches_one_call_with_minilm() -> None:
    """The real guarantee of encoding in steps: not bit-equal floats (BLAS kernels and batch shapes differ
    between machines), but every value within STEP_ATOL and the same clusters for every pair outside a
    BAND around the threshold."""
    from memory_pipeline.resources import EmbedderResource
    from memory_pipeline.similarity.clustering import cosine64, single_linkage, threshold_edges

    embedder = EmbedderResource(batch_size=16)
    texts = [f"memory {i}: the deploy on host {i % 7} failed after the {i % 3} retry" for i in range(40)]
    seen: list[int] = []
    stepped = encode_in_steps(embedder.encode, texts, 2 * embedder.batch_size, seen.append)
    whole = embedder.encode(texts)
    assert seen == [32, 40]
    assert stepped.shape == whole.shape and float(np.abs(stepped - whole).max()) <= STEP_ATOL

    cosines = np.sort(cosine64(whole, *np.triu_indices(len(texts), 1)))
    middle = slice(len(cosines) // 4, 3 * len(cosines) // 4)  # a threshold with edges and non-edges on both sides
    k = middle.start + int(np.argmax(np.diff(cosines[middle.start : middle.stop + 1])))
    threshold = float(cosines[k] + cosines[k + 1]) / 2
    assert cosines[k + 1] - cosines[k] > 2 * BAND  # no pair inside the band around this threshold
    edges = [set(map(tuple, np.c_[threshold_edges(v, threshold)].tolist())) for v in (whole, stepped)]
    assert edges[0] == edges[1] and edges[0]
    clusters = [{frozenset(g.tolist()) for g in single_linkage(v, threshold, 2)} for v in (whole, stepped)]
    assert clusters[0] == clusters[1] and clusters[0]


def test_bar_ignores_fractions_it_cannot_use() -> None:
    stream = io.StringIO()
    bar = ProgressBar("night", 2, stream, redraw_every=0)

    class _Event:
        dagster_event = None
        level = 20
        step_key = "clusters"
        user_message = "compared 0/0 pairs"

    bar(_Event())
    assert bar.fraction == 0.0 and "0/2 steps" in stream.getvalue()
