"""The one judgement of "the same statement": same, another value of one slot, or different."""

import json

import pytest

from memory_pipeline.settings import REPO_ROOT
from memory_pipeline.statements.judgement import Relation, judge, same_statement, says

SAME, OTHER, DIFFERENT = Relation.SAME, Relation.OTHER_VALUE, Relation.DIFFERENT


@pytest.mark.parametrize(
    ("a", "b", "relation"),
    [
        ("Keep web_search queries short.", "Keep the web_search queries short.", SAME),
        ("Always run the linter before pushing.", "Run the linter before every push.", SAME),
        ("The weekly report goes to Dana on Mondays.", "On Mondays the weekly report goes to Dana.", SAME),
        ("The quarterly review is with Hannah and Joe.", "The quarterly review is with Joe and Hannah.", SAME),
        ("Closed the BTC swing trade at +$420.", "Closed the BTC swing trade at +$380.", OTHER),
        ("Deploy the ledger service to eu-west-1 first.", "Deploy the ledger service to us-east-1 first.", OTHER),
        ("The team syncs every Thursday.", "The team syncs every Tuesday.", OTHER),
        ("Standup is at 09:30.", "Standup is at 10:15.", OTHER),
        ("Closed the BTC swing trade at +$420.", "Closed the BTC swing trade at \u2212$420.", DIFFERENT),
        ("Keep at least 3 replicas.", "Keep at most 3 replicas.", DIFFERENT),
        (
            "Run the schema migrations before switching traffic.",
            "Run the schema migrations after switching traffic.",
            DIFFERENT,
        ),
        ("The API p99 latency was 250 ms.", "The API p99 latency was 250 s.", DIFFERENT),
        ("The build server has 64 GB of RAM.", "The build server has 64 GiB of RAM.", DIFFERENT),
        ("Only admins can delete a project.", "Admins and editors can delete a project.", DIFFERENT),
        ("All services use mTLS.", "All services use mTLS except billing.", DIFFERENT),
        ("Deploy on Fridays.", "Deploy on Fridays unless an incident is open.", DIFFERENT),
        ("Churn was more than 5%.", "Churn was less than 5%.", DIFFERENT),
        ("atlas is faster than borealis.", "borealis is faster than atlas.", DIFFERENT),
        ("Copy the data from staging to production.", "Copy the data from production to staging.", DIFFERENT),
        ("The front door code is 4711.", "The back door code is 9022.", DIFFERENT),
        ("Max leverage per trade is 3x.", "Max leverage per day is 5x.", DIFFERENT),
        ("Carol's birthday is on May 3.", "Alice's birthday is on June 9.", DIFFERENT),
        ("You must rotate the API keys every quarter.", "You may rotate the API keys every quarter.", DIFFERENT),
        ("Deploy on Fridays.", "Never deploy on Fridays.", DIFFERENT),
    ],
)
def test_judge(a: str, b: str, relation: Relation) -> None:
    assert judge(a, b).relation is relation, judge(a, b)
    assert judge(b, a).relation is relation, judge(b, a)  # the judgement does not depend on the order


def test_model_is_asked_only_where_the_words_leave_it_open() -> None:
    a, b = "Sam likes hiking in the Alps.", "Sam enjoys hiking in the Alps."
    assert judge(a, b).relation is DIFFERENT  # without a model, a replaced word is not taken for a synonym
    assert judge(a, b, 0.95).relation is SAME
    assert judge(a, b, 0.5).relation is DIFFERENT
    # a model never overrides what the words decide
    assert judge("Keep at least 3 replicas.", "Keep at most 3 replicas.", 0.99).relation is DIFFERENT


def test_a_range_over_reports_says_each_report_and_nothing_else() -> None:
    summary = "CI Docker build took 28\u201351 minutes again."
    assert says(summary, "CI Docker build took 28 minutes again.")
    assert says(summary, "CI Docker build took 51 minutes again.")
    assert not says(summary, "CI Docker build took 80 minutes again.")
    assert not says(summary, "CI Docker build took 30 seconds again.")
    assert same_statement("CI Docker build took 28 minutes again.", "CI Docker build took 51 minutes again.")


@pytest.mark.parametrize(
    ("summary", "dissent"),
    [
        ("Closed the BTC swing trade at +$420.", "Closed the BTC swing trade at \u2212$420."),
        ("Keep at least 3 replicas.", "Keep at most 3 replicas."),
        ("Only admins can delete a project.", "Admins and editors can delete a project."),
        ("All services use mTLS.", "All services use mTLS except billing."),
        ("Churn was more than 5%.", "Churn was less than 5%."),
        ("Deploy the ledger service to eu-west-1 first.", "Deploy the ledger service to us-east-1 first."),
    ],
)
def test_a_summary_of_the_majority_does_not_say_the_dissent(summary: str, dissent: str) -> None:
    assert says(summary, summary)
    assert not says(summary, dissent)


def test_labelled_pairs_held_out_words_alone() -> None:
    """The held-out split, never tuned on, judged without a model (the night has MiniLM as well)."""
    pairs = json.loads((REPO_ROOT / "benchmarks" / "same_statement.json").read_text(encoding="utf-8"))["pairs"]
    held = [p for p in pairs if p["split"] == "held_out"]
    right = sum(judge(p["a"], p["b"]).relation.value == p["relation"] for p in held)
    wrong_same = [p for p in held if p["relation"] != "same" and judge(p["a"], p["b"]).relation is SAME]
    assert right / len(held) >= 0.9
    assert not wrong_same  # never calls the same what is not
