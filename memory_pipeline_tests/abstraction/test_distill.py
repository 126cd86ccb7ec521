import pytest

from memory_pipeline.distillation.distill import (
    SYSTEM_PROMPT,
    DistillationRejected,
    Member,
    OfflineDistiller,
    build_user_message,
    extract_atom_rule_based,
    is_causal_text,
    parse_json_object,
    split_sentences,
    validate_abstraction,
)
from memory_pipeline.tokens import estimate_tokens
from memory_pipeline.verification import faithfulness

FAMILY = [
    Member(
        "m-1",
        "Whale wallets accumulated BTC for three days before the price jumped 6%. I should watch on-chain "
        "flows more closely.",
        1.2,
    ),
    Member(
        "m-2",
        "Large holders kept buying bitcoin quietly; two days later BTC rallied hard. Accumulation by whales "
        "preceded the move again.",
        1.4,
    ),
    Member(
        "m-3",
        "Noticed whale addresses adding BTC all week, and the price rose afterwards. This pattern keeps "
        "repeating before rallies.",
        0.9,
    ),
    Member(
        "m-4",
        "Whale accumulation of BTC showed up on-chain ahead of Friday's pump. Whale wallets buying led to a "
        "price rise within 48 hours.",
        1.1,
    ),
]


def test_user_message_matches_seed_format() -> None:
    msg = build_user_message(FAMILY[:2], "trading")
    assert msg.startswith("MEMORIES TO COMPRESS (cluster of 2 related entries, category: trading):\n\n")
    assert "[1] importance=1.2 | Whale wallets" in msg
    assert "[2] importance=1.4 | Large holders" in msg
    assert msg.endswith("\n\nProduce a single compressed abstraction.")
    assert SYSTEM_PROMPT.endswith('{ "abstraction": "...", "compression_ratio": 3.4, "is_causal": true }')


def test_parse_json_tolerates_fences_and_prose() -> None:
    text = 'Sure!\n```json\n{"abstraction": "A {nested} thing", "is_causal": true}\n```\nDone.'
    assert parse_json_object(text) == {"abstraction": "A {nested} thing", "is_causal": True}
    with pytest.raises(DistillationRejected, match="invalid JSON"):
        parse_json_object("no json here")
    with pytest.raises(DistillationRejected, match="invalid JSON"):
        parse_json_object('{"abstraction": "unterminated')


@pytest.mark.parametrize(
    ("text", "source_tokens", "reason"),
    [
        ("", 100, "empty abstraction"),
        ("   ", 100, "empty abstraction"),
        ("Mentions m-2 directly.", 100, "leaked memory id m-2"),
        ("x" * 35, 12, "compression_ratio=1.2 below floor"),
        ("word " * 3000, 100_000, "above the 2000 cap"),
    ],
)
def test_validation_rejects_with_precise_reason(text: str, source_tokens: int, reason: str) -> None:
    with pytest.raises(DistillationRejected, match=reason):
        validate_abstraction(text, source_tokens, ["m-1", "m-2"], 1.5, 2000)


def test_validation_returns_measured_ratio_not_claimed() -> None:
    ratio = validate_abstraction("Whales buy before rallies.", 70, ["m-1"], 1.5, 2000)
    assert ratio == pytest.approx(70 / estimate_tokens("Whales buy before rallies."))
    # an id that is only a prefix of a longer token is not a leak
    validate_abstraction("see m-10 and m-1x", 100, ["m-1"], 1.5, 2000)


def test_offline_distiller_is_deterministic_extractive_and_valid() -> None:
    d = OfflineDistiller()
    a = d.distill(FAMILY, "trading", ("2026-10-01T00:00:00Z", "2026-10-09T00:00:00Z"))
    b = d.distill(list(FAMILY), "trading", ("2026-10-01T00:00:00Z", "2026-10-09T00:00:00Z"))
    assert a == b
    source = sum(estimate_tokens(m.content) for m in FAMILY)
    ratio = validate_abstraction(a.abstraction, source, [m.id for m in FAMILY], 1.5, 2000)
    assert ratio >= 1.5
    assert "[4 memories, 2026-10-01 to 2026-10-09]" in a.abstraction
    body = a.abstraction.split(" [")[0]
    sources = " ".join(m.content for m in FAMILY)
    assert " Also: " not in body  # no bare list of values or names taken out of their sentences
    for sentence in body.split(". "):
        assert sentence.rstrip(".") in sources  # no numbers to fold here: every sentence comes from a member
    assert not faithfulness.check([m.content for m in FAMILY], a.abstraction)
    assert a.is_causal  # "preceded" / "led to" are causal markers
    assert a.distiller == "offline-extractive"


def test_causal_detection() -> None:
    assert is_causal_text("Deploying on Friday without a canary caused an outage.")
    assert is_causal_text("When I assert without verifying, Matthew corrects me.")
    assert not is_causal_text("The office plant is green and the kettle is new.")


@pytest.mark.parametrize(
    ("text", "subject", "outcome"),
    [
        ("Whale wallets accumulating BTC preceded a price rise.", "Whale wallets", "a price rise"),
        ("When Helios asserts without verifying, Matthew corrects it; trust erodes.", "Helios", "Matthew corrects it"),
        ("Deploying on Friday without a canary caused an outage of the API.", "the agent", "an outage of the API"),
        ("The build failed because the lockfile was stale.", "lockfile", "The build failed"),
    ],
)
def test_rule_based_atoms(text: str, subject: str, outcome: str) -> None:
    atom = extract_atom_rule_based(text)
    assert atom is not None
    assert atom["subject"] == subject
    assert atom["outcome"] == outcome
    assert atom["action"]


def test_non_causal_text_gives_no_atom() -> None:
    assert extract_atom_rule_based("The kettle in the office is new and shiny.") is None


CHAT = [
    Member("t-1", "Ruth: Hey Tomas! Good to see you! I sold my first vase at the spring market for 40 dollars.", 1.0),
    Member("t-2", "Tomas: Hey Ruth! Good to see you too! I adopted a beagle named Biscuit last Saturday.", 1.0),
    Member("t-3", "Ruth: Hey Tomas! Good to see you! How have you been lately?", 1.0),
    Member("t-4", "Tomas: Hey Ruth! Great to hear from you! I am training for the Lisbon half marathon.", 1.0),
    Member("t-5", "Ruth: Thanks, Tomas! Talk soon, bye!", 1.0),
    Member("t-6", "Tomas: Wow, that sounds so much fun! Glad you had a great time, Ruth!", 1.0),
]


def test_offline_distiller_keeps_every_members_fact_and_drops_small_talk() -> None:
    """LoCoMo retention: the facts a later question needs (names, numbers, dates) survive; greetings do not."""
    d = OfflineDistiller().distill(CHAT, "chat", ("2024-03-03T09:15:00", "2024-04-21T18:40:00"))
    text = d.abstraction
    for fact in ("sold my first vase at the spring market for 40 dollars", "beagle named Biscuit last Saturday",
                 "Lisbon half marathon"):  # fmt: skip
        assert fact in text
    for small_talk in ("Good to see you", "How have you been", "Thanks", "Glad you had"):
        assert small_talk not in text
    assert text.startswith("Ruth: I sold my first vase") and "Tomas: I adopted a beagle" in text  # who said it
    source = sum(estimate_tokens(m.content) for m in CHAT)
    assert validate_abstraction(text, source, [m.id for m in CHAT], 1.5, 2000) >= 1.5


def test_offline_distiller_on_pure_small_talk_keeps_one_sentence() -> None:
    members = [Member(f"g-{i}", f"Ruth: Thanks, Tomas! Talk soon, bye{'!' * i}", 1.0) for i in range(1, 5)]
    d = OfflineDistiller().distill(members, "chat", ("2024-03-03", "2024-03-03"))
    body = d.abstraction.split(" [")[0]
    assert body.startswith("Ruth: ") and len(split_sentences(body)) == 1  # one line stands for the pattern
    assert d.compression_ratio >= 1.5


def test_offline_distiller_stays_under_the_token_cap_on_a_huge_cluster() -> None:
    members = [
        Member(
            f"h-{i}",
            f"Tomas: On day {i} I ran {i % 17 + 3} kilometres along the Tagus river in Lisbon with Biscuit.",
            1.0,
        )
        for i in range(600)
    ]
    d = OfflineDistiller().distill(members, "chat", ("2024-01-01", "2024-12-31"))
    source = sum(estimate_tokens(m.content) for m in members)
    assert source > 10_000
    assert estimate_tokens(d.abstraction) <= 2000  # the engine's default COMPRESSION_MAX_ABSTRACTION_TOKENS
    validate_abstraction(d.abstraction, source, [m.id for m in members], 1.5, 2000)
    small = OfflineDistiller(max_tokens=300).distill(members, "chat", ("2024-01-01", "2024-12-31"))
    assert estimate_tokens(small.abstraction) <= 300


def test_the_offline_distiller_aims_inside_the_runs_validation_limits() -> None:
    from memory_pipeline.resources import LLMResource

    distiller = LLMResource(mode="offline").get_distiller(max_abstraction_tokens=300, min_compression_ratio=2.5)
    assert (distiller.max_tokens, distiller.min_ratio) == (300, 2.5)
