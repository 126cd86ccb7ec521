"""The real Anthropic SDK against a fake API (httpx2.MockTransport): prompts, parsing, retries, rate limit,
cost cap, batches, costing and secrets. Waits go through a fake clock, so nothing here sleeps."""

import json
import logging
import math
import re
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from memory_pipeline.distillation.distill import (
    ATOM_SYSTEM_PROMPT,
    SYSTEM_PROMPT,
    DistillationRejected,
    Member,
    build_user_message,
    validate_abstraction,
)
from memory_pipeline.llm.anthropic_distiller import CostCapReached, DistillRequest
from memory_pipeline.llm.ledger import CallRecord, FileLedger, Ledger
from memory_pipeline.llm.pricing import PriceTable, Usage
from memory_pipeline.llm.ratelimit import TokenBucket
from memory_pipeline.llm.retry import LLMCallFailed, parse_retry_after
from memory_pipeline.resources import LLMResource
from memory_pipeline.tokens import estimate_tokens
from memory_pipeline_tests.llm.fake_api import (
    TEST_KEY,
    FakeAnthropicAPI,
    Fault,
    overloaded,
    rate_limited,
    server_error,
    timeout,
)


class FakeClock:
    """time() and sleep() for the limiter, the retries and batch polling: sleeping advances time."""

    def __init__(self, start: float = 1_800_000_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds


class Killed(BaseException):
    """Stands in for the process dying (SIGKILL, a crashed host) while a batch is being polled."""


MEMBERS = [
    Member("m-1", "Whale wallets bought BTC for days before the price rose 6%. I should watch on-chain flows.", 1.2),
    Member("m-2", "Large holders accumulated bitcoin quietly; two days later BTC rallied hard.", 0.8),
    Member("m-3", "Whale accumulation of BTC showed up on-chain ahead of Friday's 6% pump, which led to a rally.", 1.1),
]
SPAN = ("2026-10-01T00:00:00Z", "2026-10-02T00:00:00Z")
GOOD = (
    '{"abstraction": "Whale accumulation of BTC precedes rallies (6%, Friday).", "compression_ratio": 9.9, '
    '"is_causal": true}'
)


def requests_for(n: int) -> list[DistillRequest]:
    """n distinct clusters (distinct prompts)."""
    return [
        DistillRequest(
            f"cluster-{i}", [Member(m.id, f"{m.content} (case {i})", m.importance) for m in MEMBERS], "trading", SPAN
        )
        for i in range(n)
    ]


def bound_per_cluster(distiller) -> float:
    """What the cap reserves for one of `requests_for`'s clusters: its distillation and its atom, worst case."""
    members = requests_for(1)[0].members
    return distiller._distill_bound(build_user_message(members, "trading"), distiller.distill_max_tokens(members))


def make(
    fake: FakeAnthropicAPI,
    clock: FakeClock,
    *,
    mode: str = "anthropic",
    ledger: Ledger | None = None,
    cap: float | None = None,
    rate: float = 600,
    run_id: str = "run-1",
    **config: object,
):
    llm = LLMResource(api_key=TEST_KEY, mode=mode, batch_poll_interval_s=30, **config)  # type: ignore[arg-type]
    return llm.get_distiller(
        client=llm.make_client(fake.http_client()),
        run_id=run_id,
        ledger=ledger,
        rate_limit_per_min=rate,
        max_cost_usd=cap,
        sleep=clock.sleep,
        clock=clock.time,
        random=lambda: 0.5,
    )


@pytest.fixture
def fake() -> FakeAnthropicAPI:
    return FakeAnthropicAPI()


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


# ------------------------------------------------------------------ prompts and parsing


def test_good_distillation_sends_the_seed_prompt_cached_at_temperature_0_and_records_usage(fake, clock) -> None:
    fake.replies.append(GOOD)
    distiller = make(fake, clock)
    d = distiller.distill(MEMBERS, "trading", SPAN)
    (sent,) = fake.requests("messages")
    assert sent.key_ok
    body = sent.body
    assert body["model"] == "claude-haiku-4-5"
    source = sum(estimate_tokens(m.content) for m in MEMBERS)
    # capped where the compression floor would reject a longer reply anyway (and far below 1024)
    assert body["max_tokens"] == distiller.distill_max_tokens(MEMBERS) == math.ceil(1.25 * source / 1.5) + 64
    assert body["temperature"] == 0
    assert body["system"] == [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
    assert body["messages"] == [{"role": "user", "content": build_user_message(MEMBERS, "trading")}]
    assert body["messages"][0]["content"].startswith(
        "MEMORIES TO COMPRESS (cluster of 3 related entries, category: trading):\n\n[1] importance=1.2 | Whale"
    )
    assert body["messages"][0]["content"].endswith("\n\nProduce a single compressed abstraction.")
    assert d.abstraction == "Whale accumulation of BTC precedes rallies (6%, Friday)."
    assert d.is_causal and d.distiller == "anthropic:claude-haiku-4-5"
    assert d.compression_ratio == round(source / estimate_tokens(d.abstraction), 3) != 9.9  # ours, not the model's
    (call,) = distiller.ledger.calls()
    assert call.status == "ok" and call.stage == "distill" and call.attempts == 1
    assert call.usage == Usage.from_api(d.usage) and call.usage.cache_creation_input_tokens > 0
    assert call.cost_usd == pytest.approx(PriceTable().cost(call.usage))


@pytest.mark.parametrize(
    "reply",
    [
        f"```json\n{GOOD}\n```",
        f"Here is the distillation you asked for:\n{GOOD}\nLet me know if you need anything else.",
        f"Sure!\n```\n{GOOD}\n```\nDone.",
    ],
    ids=["fenced", "text-around", "fenced-with-text"],
)
def test_json_is_found_inside_fences_and_prose(fake, clock, reply: str) -> None:
    fake.replies.append(reply)
    assert make(fake, clock).distill(MEMBERS, "trading", SPAN).abstraction.startswith("Whale accumulation")


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        ('{"abstraction": "Whales buy, price rises", "is_causal": tru', r"^invalid JSON: .+ at char \d+$"),
        ("I cannot compress these memories.", r"^invalid JSON: no object in"),
        ('{"summary": "Whales buy first."}', r"^invalid JSON: 'abstraction' missing or not a string$"),
    ],
)
def test_invalid_json_is_rejected_with_the_precise_reason(fake, clock, reply: str, reason: str) -> None:
    fake.replies.append(reply)
    distiller = make(fake, clock)
    with pytest.raises(DistillationRejected) as exc:
        distiller.distill(MEMBERS, "trading", SPAN)
    assert re.search(reason, str(exc.value)), str(exc.value)
    assert distiller.ledger.calls()[0].status == "ok"  # the call happened and was paid for


def test_ratio_below_floor_and_leaked_id_are_rejected_by_the_engine_validation(fake, clock) -> None:
    source = sum(estimate_tokens(m.content) for m in MEMBERS)
    wordy = ("Case 0: whales accumulate BTC before 6% rallies like Friday's " * 40)[: int(source / 1.2 * 3.5)].strip()
    fake.replies.extend(
        [
            json.dumps({"abstraction": wordy, "compression_ratio": 5.0, "is_causal": True}),
            json.dumps({"abstraction": "As m-2 shows, whales buy BTC before 6% rallies (Friday).", "is_causal": True}),
        ]
    )
    distiller = make(fake, clock)
    ids = [m.id for m in MEMBERS]
    results = list(distiller.distill_many(requests_for(1) + [DistillRequest("c2", MEMBERS, "trading", SPAN)]))
    with pytest.raises(DistillationRejected, match=r"^compression_ratio=1\.2 below floor$"):
        validate_abstraction(results[0].abstraction, source, ids, 1.5, 2000)
    with pytest.raises(DistillationRejected, match=r"^leaked memory id m-2$"):
        validate_abstraction(results[1].abstraction, source, ids, 1.5, 2000)


def test_atom_extraction_uses_the_seed_prompt_and_understands_not_causal(fake, clock) -> None:
    fake.replies.extend(
        [
            '{"subject": "whale wallet", "action": "accumulates BTC", "outcome": "price rises", '
            '"consequences": "late buyers chase"}',
            '```json\n{"not_causal": true}\n```',
            "nonsense",
        ]
    )
    distiller = make(fake, clock)
    atoms = distiller.extract_atoms(["a", "b", "c"])
    assert atoms[0] == {
        "subject": "whale wallet",
        "action": "accumulates BTC",
        "outcome": "price rises",
        "consequences": "late buyers chase",
    }
    assert atoms[1] is None
    assert isinstance(atoms[2], DistillationRejected) and "invalid JSON" in str(atoms[2])
    body = fake.requests("messages")[0].body
    assert body["system"] == [{"type": "text", "text": ATOM_SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
    assert body["temperature"] == 0 and body["max_tokens"] == 256
    assert {c.stage for c in distiller.ledger.calls()} == {"enrich"}


# ------------------------------------------------------------------ retries


def test_429_with_retry_after_is_honoured_then_succeeds(fake, clock) -> None:
    fake.fail("messages", rate_limited("7"))
    distiller = make(fake, clock)
    assert distiller.distill(MEMBERS, "trading", SPAN).abstraction
    first, second = fake.requests("messages")
    assert first.body == second.body  # the same request, sent again
    assert distiller.retry.waits == [7.0]
    assert 7.0 in clock.sleeps
    assert distiller.ledger.calls()[0].attempts == 2


def test_529_overloaded_twice_backs_off_exponentially_with_jitter_then_succeeds(fake, clock) -> None:
    fake.fail("messages", overloaded(), overloaded())
    distiller = make(fake, clock, retry_base_delay_s=0.5)
    assert distiller.distill(MEMBERS, "trading", SPAN).abstraction
    assert len(fake.requests("messages")) == 3
    # equal jitter with random()=0.5: step/2 + 0.5·step/2, steps 0.5 then 1.0
    assert distiller.retry.waits == [0.375, 0.75]
    assert distiller.ledger.calls()[0].attempts == 3


def test_jitter_spreads_the_backoff_within_its_step() -> None:
    from memory_pipeline.llm.retry import RetryPolicy

    low, high = RetryPolicy(random=lambda: 0.0), RetryPolicy(random=lambda: 0.999999)
    assert [low.backoff(i) for i in range(6)] == [0.25, 0.5, 1.0, 2.0, 4.0, 4.0]
    assert [round(high.backoff(i), 3) for i in range(6)] == [0.5, 1.0, 2.0, 4.0, 8.0, 8.0]


def test_persistent_500_fails_that_cluster_only_and_is_recorded(fake, clock) -> None:
    fake.fail("messages", *[server_error()] * 5)
    distiller = make(fake, clock, max_retries=4)
    first, second = distiller.distill_many(requests_for(2))
    assert isinstance(first, LLMCallFailed)
    assert str(first) == "500 api_error: Internal server error (after 5 attempts)"
    assert second.abstraction  # the next cluster goes on
    calls = distiller.ledger.calls()
    assert [(c.status, c.attempts, c.cost_usd) for c in calls][0] == ("error", 5, 0.0)
    assert calls[1].status == "ok"


def test_timeouts_are_retried_and_a_persistent_one_fails_the_call(fake, clock) -> None:
    fake.fail("messages", timeout())
    distiller = make(fake, clock)
    assert distiller.distill(MEMBERS, "trading", SPAN).abstraction
    assert len(fake.requests("messages")) == 2
    fake.fail("messages", *[timeout()] * 3)
    with pytest.raises(LLMCallFailed, match=r"^timeout \(after 3 attempts\)$"):
        make(fake, clock, max_retries=2).distill(MEMBERS, "trading", SPAN)


def test_a_retry_after_beyond_the_cap_is_not_slept(fake, clock) -> None:
    # anthropic 2.12's own loop would sleep the full hour here
    fake.fail("messages", rate_limited("3600"))
    distiller = make(fake, clock)
    with pytest.raises(LLMCallFailed, match=r"^429 rate_limit_error: .*retry-after 3600 s is above the 60 s cap"):
        distiller.distill(MEMBERS, "trading", SPAN)
    assert len(fake.requests("messages")) == 1 and 3600.0 not in clock.sleeps


def test_x_should_retry_false_and_client_errors_are_not_retried(fake, clock) -> None:
    fake.fail("messages", Fault(503, {"x-should-retry": "false"}, "api_error", "maintenance"))
    with pytest.raises(LLMCallFailed, match="^503 api_error: maintenance$"):
        make(fake, clock).distill(MEMBERS, "trading", SPAN)
    fake.fail("messages", Fault(400, {}, "invalid_request_error", "prompt is too long"))
    with pytest.raises(LLMCallFailed, match="^400 invalid_request_error: prompt is too long$"):
        make(fake, clock).distill(MEMBERS, "trading", SPAN)
    assert len(fake.requests("messages")) == 2


def test_parse_retry_after_forms() -> None:
    from email.utils import format_datetime

    assert parse_retry_after({"retry-after-ms": "1500", "retry-after": "9"}) == 1.5
    assert parse_retry_after({"retry-after": "12"}) == 12.0
    when = datetime(2026, 11, 1, 3, 30, 30, tzinfo=UTC)
    now = (when - timedelta(seconds=30)).timestamp()
    assert parse_retry_after({"retry-after": format_datetime(when, usegmt=True)}, lambda: now) == 30.0
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


# ------------------------------------------------------------------ rate limit


def test_token_bucket_allows_a_burst_then_the_steady_rate(clock) -> None:
    bucket = TokenBucket(10, 10, 0.1, clock=clock.time, sleep=clock.sleep)
    start = clock.now
    for _ in range(10):
        bucket.acquire()
    assert clock.now - start == pytest.approx(0.9)  # the burst, 100 ms apart
    bucket.acquire()
    assert clock.now - start == pytest.approx(6.0)  # then one every 6 s
    bucket.acquire()
    assert clock.now - start == pytest.approx(12.0)


def test_the_rate_limit_is_shared_by_every_step_of_a_run(fake, clock) -> None:
    ledger = Ledger("run-1")
    for i in range(10):  # the distillations step used the whole burst just now
        ledger.record(CallRecord("run-1", "distill", f"c{i}", "m", "messages", "ok", epoch=clock.now))
    atoms_step = make(fake, clock, ledger=ledger, rate=10)
    atoms_step.extract_atoms(["Whale wallets bought BTC, which led to a rally."])
    assert sum(clock.sleeps) == pytest.approx(6.0)
    other_run = make(fake, clock, ledger=Ledger("run-2"), rate=10)
    other_run.extract_atoms(["x"])
    assert sum(clock.sleeps) == pytest.approx(6.0)  # another run has its own budget


def test_every_attempt_takes_a_token(fake, clock) -> None:
    fake.fail("messages", Fault(500, {"retry-after": "0"}), Fault(500, {"retry-after": "0"}))
    distiller = make(fake, clock, rate=10, burst=1, min_interval_s=0)
    distiller.distill(MEMBERS, "trading", SPAN)
    assert sum(clock.sleeps) == pytest.approx(12.0)  # 3 attempts, burst 1, one token per 6 s


# ------------------------------------------------------------------ cost


def test_cost_is_recorded_usage_times_the_price_table() -> None:
    prices = PriceTable(input_per_mtok=1.0, output_per_mtok=5.0, cache_write_per_mtok=1.25, cache_read_per_mtok=0.1)
    usage = Usage(input_tokens=1000, output_tokens=200, cache_read_input_tokens=3000, cache_creation_input_tokens=400)
    expected = (1000 * 1.0 + 200 * 5.0 + 3000 * 0.1 + 400 * 1.25) / 1e6
    assert prices.cost(usage) == pytest.approx(expected)
    assert prices.cost(usage, batch=True) == pytest.approx(expected / 2)
    ledger = Ledger("r")
    ledger.record(CallRecord("r", "distill", "a", "m", "messages", "ok", usage=usage))
    ledger.record(CallRecord("r", "enrich", "b", "m", "batch", "ok", usage=usage))
    ledger.record(CallRecord("r", "distill", "c", "m", "messages", "error"))
    summary = ledger.summary()
    assert (summary.calls, summary.failed_calls, summary.batch_calls) == (2, 1, 1)
    assert summary.cost(prices) == pytest.approx(expected * 1.5)


def test_the_cost_cap_stops_distilling_mid_run_and_leaves_room_for_the_atoms(fake, clock) -> None:
    fake.reply_when(
        lambda system, user: system == SYSTEM_PROMPT,
        lambda system, user: json.dumps(
            {
                "abstraction": "Whale buying led to a 6% BTC rally (Friday) " + re.findall(r"\(case \d+\)", user)[0],
                "is_causal": True,
            }
        ),
    )
    cap = 4 * bound_per_cluster(make(fake, clock))  # the worst case of 4 clusters; real calls cost less
    ledger = Ledger("run-1")
    distiller = make(fake, clock, ledger=ledger, cap=cap)
    results = list(distiller.distill_many(requests_for(8)))
    done = [r for r in results if not isinstance(r, BaseException)]
    assert 1 <= len(done) < 8
    assert all(isinstance(r, CostCapReached) for r in results[len(done) :])  # it stops; the rest wait
    assert str(results[-1]) == f"cost cap ${cap:g} reached"
    assert len(fake.requests("messages")) == len(done)
    assert (
        ledger.spent_usd() + distiller.guard.reserved_usd + bound_per_cluster(distiller) > cap
    )  # the next one could cross it
    # the atoms step (a new distiller on the run's ledger) still fits: its budget was reserved
    atoms_step = make(fake, clock, ledger=ledger, cap=cap)
    extracted = atoms_step.extract_atoms([d.abstraction for d in done])
    assert not any(isinstance(e, BaseException) for e in extracted)
    assert len(ledger.calls()) == 2 * len(done)
    assert ledger.spent_usd() <= cap


# ------------------------------------------------------------------ batches


def test_a_batch_submitted_then_killed_is_resumed_and_collected_once(fake, clock, tmp_path: Path) -> None:
    reports = tmp_path / "reports"
    requests = requests_for(4)

    def killed(_seconds: float) -> None:
        raise Killed

    first = make(fake, clock, mode="batch", ledger=FileLedger(reports, "run-1"))
    first.runner.sleep = killed  # the run dies while waiting for the batch
    with pytest.raises(Killed):
        list(first.distill_many(requests))
    (create,) = fake.requests("batches.create")
    assert len(create.body["requests"]) == 4
    for item in create.body["requests"]:
        assert re.fullmatch(r"[a-zA-Z0-9_-]{1,64}", item["custom_id"])
        params = item["params"]
        assert params["model"] == "claude-haiku-4-5" and params["temperature"] == 0
        assert params["system"] == [{"type": "text", "text": SYSTEM_PROMPT, "cache_control": {"type": "ephemeral"}}]
    (state,) = (reports / "llm-batches").glob("*.json")
    assert json.loads(state.read_text())["status"] == "submitted"

    resumed = make(fake, clock, mode="batch", ledger=FileLedger(reports, "run-2"))
    results = list(resumed.distill_many(requests))
    assert all(r.distiller == "anthropic-batch:claude-haiku-4-5" for r in results)
    assert len(fake.requests("batches.create")) == 1  # not resubmitted: not paid twice
    assert len(fake.requests("batches.results")) == 1
    assert resumed.runner.resumed == [create_id := json.loads(state.read_text())["batch_id"]]
    assert json.loads(state.read_text())["status"] == "collected"
    calls = FileLedger(reports, "run-2").calls()
    assert len(calls) == 4 and {c.api for c in calls} == {"batch"} and {c.batch_id for c in calls} == {create_id}
    assert sum(c.cost_usd for c in calls) == pytest.approx(sum(PriceTable().cost(c.usage, batch=True) for c in calls))
    assert FileLedger(reports, "run-1").calls() == []

    seen = len(fake.seen)
    again = list(make(fake, clock, mode="batch", ledger=FileLedger(reports, "run-3")).distill_many(requests))
    assert [r.abstraction for r in again] == [r.abstraction for r in results]
    assert len(fake.seen) == seen  # collected once: the stored results are reused, no call, no charge
    assert FileLedger(reports, "run-3").calls() == []


def test_errored_batch_requests_fail_their_cluster_and_are_sent_again_next_time(fake, clock, tmp_path: Path) -> None:
    fake.batch_rules.append(
        (
            lambda system, user: "(case 1)" in user,
            {"type": "errored", "error": {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}},
        )
    )
    reports = tmp_path / "reports"
    results = list(make(fake, clock, mode="batch", ledger=FileLedger(reports, "run-1")).distill_many(requests_for(3)))
    assert isinstance(results[1], LLMCallFailed)
    assert str(results[1]) == "batch request errored: overloaded_error: busy"
    assert not isinstance(results[0], BaseException) and not isinstance(results[2], BaseException)
    fake.batch_rules.clear()
    again = list(make(fake, clock, mode="batch", ledger=FileLedger(reports, "run-2")).distill_many(requests_for(3)))
    assert not any(isinstance(r, BaseException) for r in again)
    second_create = fake.requests("batches.create")[1]
    assert len(second_create.body["requests"]) == 1  # only the errored one


def test_batch_creation_is_not_retried_after_a_timeout(fake, clock) -> None:
    fake.fail("batches.create", timeout())
    results = list(make(fake, clock, mode="batch").distill_many(requests_for(2)))
    assert len(fake.requests("batches.create")) == 1  # it may exist: sending it again could pay twice
    assert all(isinstance(r, LLMCallFailed) and str(r) == "timeout" for r in results)


def test_batch_polling_survives_transient_errors_and_respects_the_cap(fake, clock) -> None:
    fake.fail("batches.retrieve", overloaded())
    per_cluster = bound_per_cluster(make(fake, clock, mode="batch"))
    results = list(make(fake, clock, mode="batch", cap=2.5 * per_cluster).distill_many(requests_for(5)))
    assert [type(r).__name__ for r in results] == ["Distillation"] * 2 + ["CostCapReached"] * 3
    assert len(fake.requests("batches.create")[0].body["requests"]) == 2
    assert 30 in clock.sleeps  # the poll interval


def test_atoms_go_through_a_batch_too(fake, clock) -> None:
    distiller = make(fake, clock, mode="batch")
    atoms = distiller.extract_atoms(
        ["Whale wallets accumulated BTC, which led to a price rally.", "The sky is blue today."]
    )
    assert atoms[0] and atoms[0]["subject"] and atoms[1] is None
    (create,) = fake.requests("batches.create")
    assert {r["params"]["system"][0]["text"] for r in create.body["requests"]} == {ATOM_SYSTEM_PROMPT}
    assert {c.stage for c in distiller.ledger.calls()} == {"enrich"}


# ------------------------------------------------------------------ secrets and modes


def test_the_key_never_reaches_errors_logs_the_ledger_or_reprs(fake, clock, tmp_path: Path, caplog) -> None:
    fake.fail("messages", Fault(401, {}, "authentication_error", f"invalid x-api-key {TEST_KEY}"))
    caplog.set_level(logging.DEBUG)
    llm = LLMResource(api_key=TEST_KEY)
    lines: list[str] = []
    distiller = make(fake, clock, ledger=FileLedger(tmp_path, "run-1"))
    distiller._log = lines.append
    with pytest.raises(LLMCallFailed) as exc:
        distiller.distill(MEMBERS, "trading", SPAN)
    assert TEST_KEY not in str(exc.value) and "[REDACTED]" in str(exc.value)
    assert exc.value.__cause__ is None and exc.value.__suppress_context__  # the SDK error (request, headers) is dropped
    distiller.log(f"a message that mentions {TEST_KEY}")
    assert lines and all(TEST_KEY not in line for line in lines)
    logging.getLogger("anthropic").warning("header dump: authorization: Bearer %s", TEST_KEY)
    assert TEST_KEY not in caplog.text
    everything = "".join(p.read_text() for p in tmp_path.rglob("*") if p.is_file())
    assert everything and TEST_KEY not in everything
    assert TEST_KEY not in repr(llm) and TEST_KEY not in str(llm)
    assert TEST_KEY not in json.dumps(distiller.step_stats())


def test_modes_names_and_tags() -> None:
    assert not LLMResource().uses_anthropic()
    assert LLMResource().get_distiller().name == "offline-extractive"
    assert LLMResource().run_tags() == {
        "memory_pipeline/distiller": "offline-extractive",
        "memory_pipeline/llm_api": "offline",
    }
    assert not LLMResource(api_key="k", mode="offline").uses_anthropic()
    assert LLMResource(api_key="k").distiller_name() == "anthropic:claude-haiku-4-5"
    batch = LLMResource(api_key="k", mode="batch")
    assert batch.uses_batch() and batch.run_tags()["memory_pipeline/llm_api"] == "batch"
    assert batch.distiller_name() == "anthropic-batch:claude-haiku-4-5"
    with pytest.raises(ValueError, match="needs ANTHROPIC_API_KEY"):
        LLMResource(mode="anthropic").uses_anthropic()
    with pytest.raises(ValueError, match="needs ANTHROPIC_API_KEY"):
        LLMResource(mode="batch").uses_anthropic()
    with pytest.raises(ValueError, match="expected auto, offline, anthropic or batch"):
        LLMResource(mode="cloud").uses_anthropic()
    client = LLMResource(api_key="k", base_url="http://127.0.0.1:9", timeout_s=12).make_client()
    assert client.max_retries == 0 and str(client.base_url).startswith("http://127.0.0.1:9")


def test_a_reply_that_drops_a_members_fact_is_rejected_with_the_facts_named(fake, clock) -> None:
    """The Claude path meets the offline distiller's fact check (numbers, names, negations)."""
    fake.replies.extend(
        [
            json.dumps({"abstraction": "Whale accumulation of BTC precedes price rallies.", "is_causal": True}),
            json.dumps({"abstraction": "Whales buy BTC before 6% rallies such as Friday's.", "is_causal": True}),
        ]
    )
    distiller = make(fake, clock)
    with pytest.raises(DistillationRejected, match=r"^facts not preserved: 2 of 3 facts missing \('6%', 'Friday'\)$"):
        distiller.distill(MEMBERS, "trading", SPAN)
    assert distiller.distill(MEMBERS, "trading", SPAN).abstraction.startswith("Whales buy BTC before 6%")
