"""Routing insights to `semantic/<domain>.md`: explicit domain, keyword/heading classifier, default file; and
the governance per file (limits, duplicates across files, append-only, per-file cooldown record)."""

import json
from pathlib import Path

import pytest

from memory_pipeline.compaction import engine, routing
from memory_pipeline.compaction.governance import read_meta
from memory_pipeline.compaction.tiers import META_FILE
from memory_pipeline_tests.compaction.conftest import (
    EPISODIC_NOTE,
    NOW,
    mark_not_first,
    names,
    note,
    semantic_text,
)

VOCAB = routing.DEFAULT_VOCABULARY

WA_EPISODIC = """# Compiled: support-bot.md
## Summary
- The WhatsApp bot stopped answering after the Twilio sandbox expired.
- Customers were moved to an approved message template.
## Decisions
- The team renews the Twilio sandbox every 72 hours.
## Extracted Insights
- Always renew the Twilio sandbox before it expires, or WhatsApp replies stop silently.
"""


def test_explicit_domain_from_frontmatter_wins_over_a_domain_line_and_keywords() -> None:
    text = "---\ntitle: x\ndomain: WhatsApp Bot\n---\nDomain: openclaw\n# OpenClaw gateway\nopenclaw openclaw\n"
    r = routing.explicit_domain(text, "n.md")
    assert r == routing.Route("whatsapp-bot", "whatsapp-bot.md", "frontmatter", 3)
    line = routing.explicit_domain("# Notes\n\n**Domain:** billing.md\n", "n.md")
    assert line is not None and (line.file, line.source, line.line) == ("billing.md", "domain line", 3)
    in_code = "```\nDomain: nope\n```\n"
    assert routing.explicit_domain(in_code, "n.md") is None


@pytest.mark.parametrize("value", ["../etc/passwd", "a/b", "", "Ünïcode!"])
def test_an_invalid_explicit_domain_is_an_error_naming_file_line_and_value(value: str) -> None:
    with pytest.raises(routing.RoutingError, match=r"n\.md: line 2: frontmatter domain .* is not a valid"):
        routing.explicit_domain(f"---\ndomain: {value}\n---\nbody\n", "n.md")


def test_keyword_classifier_headings_count_double_ties_and_weak_hits_fall_back() -> None:
    wa = routing.classify("Renew the Twilio sandbox.", "support bot", VOCAB, "openclaw.md")
    assert (wa.file, wa.source) == ("openclaw.md", "default")  # one body hit: score 1 < 2
    wa = routing.classify("Twilio sandbox expired; WhatsApp replies stop.", "notes", VOCAB, "openclaw.md")
    assert (wa.file, wa.source, wa.score) == ("whatsapp-bot.md", "keywords", 2)
    by_heading = routing.classify("Renew the sandbox.", "WhatsApp outage", VOCAB, "openclaw.md")
    assert (by_heading.file, by_heading.score) == ("whatsapp-bot.md", 2)
    tie = routing.classify("OpenClaw relays WhatsApp messages.", "openclaw whatsapp", VOCAB, "openclaw.md")
    assert (tie.file, tie.source) == ("openclaw.md", "default")  # 3 : 3 is ambiguous
    plain = routing.classify("Always clear the build cache before deploying the bot.", "deploy day", VOCAB,
                             "openclaw.md")
    assert (plain.file, plain.source) == ("openclaw.md", "default")  # "bot" alone is not WhatsApp


def test_vocabulary_is_validated_with_the_field_named() -> None:
    assert routing.validate_vocabulary({"billing": ["Invoice", "stripe"]}) == {"billing": ("invoice", "stripe")}
    with pytest.raises(ValueError, match=r"domains\.Billing Stuff: a domain is a lowercase file stem"):
        routing.validate_vocabulary({"Billing Stuff": ["x"]})
    with pytest.raises(ValueError, match=r"domains\.billing: needs at least one non-empty keyword"):
        routing.validate_vocabulary({"billing": [" "]})


def _semantic(home: Path, **options: object) -> tuple[engine.Plan, engine.SemanticResult]:
    p = engine.plan(home, NOW, engine.Options(approved=bool(options.pop("approved", True)), **options))  # type: ignore[arg-type]
    return p, engine.extract_semantic(home, p, write=p.run_semantic)


def test_insights_routed_by_keywords_frontmatter_and_fallback_each_file_append_only(home: Path) -> None:
    mark_not_first(home)
    sem = home / "memory" / "semantic"
    existing_oc = semantic_text(300).encode()
    existing_wa = b"# WhatsApp bot knowledge\n"
    (sem / "openclaw.md").write_bytes(existing_oc)
    (sem / "whatsapp-bot.md").write_bytes(existing_wa)
    note(home, "episodic", "deploy-day.md", EPISODIC_NOTE, age_days=31)  # no domain words: the default file
    note(home, "episodic", "support-bot.md", WA_EPISODIC, age_days=31)  # keywords
    billing = "---\ndomain: billing\n---\n" + EPISODIC_NOTE.replace("deploy-day.md", "invoices.md").replace(
        "Always clear the build cache before deploying the bot.", "Always reconcile invoices before closing a month."
    )
    note(home, "episodic", "invoices.md", billing, age_days=31)  # explicit: a new semantic file
    p, result = _semantic(home)
    routed = {o.episodic: (o.semantic_file, o.routed_by, o.status) for o in result.outcomes}
    assert routed == {
        "deploy-day.md": ("openclaw.md", "default", "appended"),
        "support-bot.md": ("whatsapp-bot.md", "keywords", "appended"),
        "invoices.md": ("billing.md", "frontmatter", "appended"),
    }
    assert (sem / "openclaw.md").read_bytes().startswith(existing_oc)
    assert (sem / "whatsapp-bot.md").read_bytes().startswith(existing_wa)
    assert b"Title: Always renew the Twilio sandbox" in (sem / "whatsapp-bot.md").read_bytes()
    assert b"Twilio" not in (sem / "openclaw.md").read_bytes()
    assert (sem / "billing.md").read_text().startswith("Title: Always reconcile invoices before closing a month")
    assert names(home, "episodic") == []
    assert {n: f.appended for n, f in result.files.items()} == {"openclaw.md": 1, "whatsapp-bot.md": 1,
                                                                "billing.md": 1}
    engine.write_meta(home, p, True, 0, "r1", ["billing.md", "openclaw.md", "whatsapp-bot.md"])
    meta = json.loads((home / "memory" / META_FILE).read_text())
    assert meta["semanticAppends"] == {n: NOW.isoformat() for n in ("billing.md", "openclaw.md", "whatsapp-bot.md")}
    assert read_meta(home / "memory" / META_FILE) == meta


def test_domain_of_a_working_note_survives_compaction_into_its_episodic_summary(home: Path) -> None:
    mark_not_first(home)
    text = "---\ndomain: whatsapp-bot\n---\n" + (
        "# Deploy day\n\nThe deploy failed twice because the cache was stale.\n"
        "We decided to clear the cache before every deploy.\nWe learned that a stale cache ships old code.\n"
    )
    note(home, "working", "deploy.md", text, age_days=8)
    p = engine.plan(home, NOW, engine.Options(approved=True))
    [c] = engine.compact_working(home, p, write=True)
    assert c.domain == "whatsapp-bot"
    summary = (home / "memory" / "episodic" / "deploy.md").read_text()
    assert summary.startswith("# Compiled: deploy.md\nDomain: whatsapp-bot\n## Summary\n- ")
    assert routing.explicit_domain(summary, "deploy.md") == routing.Route(
        "whatsapp-bot", "whatsapp-bot.md", "domain line", 2
    )


LONG = (
    "a stale build cache silently ships old code to every host of the fleet, and nobody notices until the "
    "deployed version string is compared by hand with the release tag, which takes a whole day of work"
)
LONG_EPISODIC = f"""# Compiled: deploy-day.md
## Summary
- The bot deploy failed twice because {LONG}.
## Decisions
- We decided to clear the build cache before every deploy because {LONG}.
## Extracted Insights
- Always clear the build cache before deploying the bot because {LONG}.
"""


def test_limits_are_per_file_a_full_file_holds_only_its_own_insights(home: Path) -> None:
    """openclaw.md at 1000 tokens (below risk: Tier B): its long insight would pass 1200 and waits for a
    confirmation, while whatsapp-bot.md has room and gets its insight."""
    mark_not_first(home)
    sem = home / "memory" / "semantic"
    (sem / "openclaw.md").write_bytes(semantic_text(1000).encode())
    full = (sem / "openclaw.md").read_bytes()
    note(home, "episodic", "deploy-day.md", LONG_EPISODIC, age_days=31)
    note(home, "episodic", "support-bot.md", WA_EPISODIC, age_days=31)
    _, result = _semantic(home, approved=False)
    by_file = {o.semantic_file: o for o in result.outcomes}
    assert by_file["openclaw.md"].status == "held", by_file
    assert "openclaw.md would reach" in by_file["openclaw.md"].reason
    assert by_file["whatsapp-bot.md"].status == "appended"
    assert (sem / "openclaw.md").read_bytes() == full
    assert result.kept == ["deploy-day.md"] and names(home, "episodic") == ["deploy-day.md"]
    assert result.files["openclaw.md"].held == 1 and result.files["whatsapp-bot.md"].appended == 1


def test_duplicate_titles_are_checked_across_every_semantic_file(home: Path) -> None:
    mark_not_first(home)
    sem = home / "memory" / "semantic"
    (sem / "openclaw.md").write_text(
        "Title: Always renew the Twilio sandbox\nContext: Seen once\n"
        "Durable Insight: The sandbox lapses every 72 hours.\n"
    )
    note(home, "episodic", "support-bot.md", WA_EPISODIC, age_days=31)
    _, result = _semantic(home, approved=False)
    [o] = result.outcomes
    assert (o.semantic_file, o.status) == ("whatsapp-bot.md", "duplicate")
    assert "in openclaw.md" in o.reason and result.files["whatsapp-bot.md"].duplicates == 1
    assert not (sem / "whatsapp-bot.md").exists()


def test_a_bad_explicit_domain_keeps_the_file_in_episodic_with_the_reason(home: Path) -> None:
    mark_not_first(home)
    note(home, "episodic", "x.md", "---\ndomain: ../../etc\n---\n" + EPISODIC_NOTE, age_days=31)
    _, result = _semantic(home)
    [o] = result.outcomes
    assert o.status == "rejected" and "x.md: line 2: frontmatter domain '../../etc'" in o.reason
    assert result.kept == ["x.md"] and names(home, "episodic") == ["x.md"] and names(home, "semantic") == []


def test_run_config_vocabulary_routes_and_an_empty_one_disables_keywords(home: Path) -> None:
    mark_not_first(home)
    note(home, "episodic", "support-bot.md", WA_EPISODIC, age_days=31)
    _, result = _semantic(home, domains={})
    assert [o.semantic_file for o in result.outcomes] == ["openclaw.md"]
