"""The two reworded current-facts sets (terse notes, conversational) are well formed: enough facts, questions,
look-alike pairs and unrelated notes; a dev or held-out split on every item; each fact's versions in date order,
each stating its value; and the benchmark scores values in their normalised form."""

from __future__ import annotations

import copy
import json
import re
from datetime import date
from typing import Any

import pytest

from benchmarks.current_facts import (
    SETS,
    SPLITS,
    Question,
    _position,
    first,
    normalised,
    questions,
    records,
    unrelated,
)

NEW = ("terse", "chat")
NIGHT = date(2026, 11, 25)


def _stated(text: str, value: str) -> bool:
    return _position(normalised(text), value) is not None


def problems(data: dict[str, Any]) -> list[str]:
    """What is wrong with a reworded set, one line each (none for a good one)."""
    out = []
    facts = {f["id"]: f for f in data["facts"]}
    if len(facts) != len(data["facts"]):
        out.append("two facts share an id")
    for what, need in (("facts", 40), ("as_of", 20), ("lookalikes", 20)):
        if len(data[what]) < need:
            out.append(f"{len(data[what])} {what}, need ≥ {need}")
    if len(unrelated(data)) < 500:
        out.append(f"{len(unrelated(data))} unrelated notes, need ≥ 500")
    for what in ("facts", "as_of", "lookalikes"):
        out += [f"{what}: {item} has no dev/held-out split" for item in data[what] if item.get("split") not in SPLITS]
    dev = sum(f.get("split") == "dev" for f in data["facts"])
    if not 0.4 <= dev / max(len(facts), 1) <= 0.6:
        out.append(f"{dev} of {len(facts)} facts in dev: not about half")
    for f in data["facts"]:
        days = [date.fromisoformat(d) for _t, _v, d in f["versions"]]
        if not 2 <= len(days) <= 4:
            out.append(f"{f['id']}: {len(days)} versions")
        if days != sorted(set(days)) or days[0] < date(2026, 8, 1) or days[-1] >= NIGHT:
            out.append(f"{f['id']}: versions not in date order within Aug–Nov 2026")
        out += [f"{f['id']}: {v!r} not stated in {t!r}" for t, v, _d in f["versions"] if not _stated(t, v)]
        values = [normalised(v) for _t, v, _d in f["versions"]]
        if any(a == b for a, b in zip(values, values[1:], strict=False)):
            out.append(f"{f['id']}: a version repeats the value before it")
        masked = [re.sub(r"\d+", "#", normalised(t)) for t, _v, _d in f["versions"]]
        if len(set(masked)) < len(masked):
            out.append(f"{f['id']}: two versions differ only in their values")
    for q in data["as_of"]:
        fact = facts.get(q["fact"])
        if fact is None or q.get("split") != fact.get("split") or q["as_of"] < fact["versions"][0][2]:
            out.append(f"as-of question {q['question']!r}: no fact, another split, or a day before the first version")
    for item in data["lookalikes"]:
        if len(item["pair"]) != 2 or item["pair"][0][0] == item["pair"][1][0]:
            out.append(f"look-alike pair {item['pair']} is not two different statements")
    notes = [t for t, _d, _s in unrelated(data)]
    if len(set(notes)) != len(notes) or not all(any(c.isdigit() for c in t) for t in notes):
        out.append("unrelated notes repeat or carry no number")
    return out


@pytest.mark.parametrize("name", NEW)
def test_the_set_is_well_formed(name: str) -> None:
    data = json.loads(SETS[name].read_text())
    assert data["style"] and problems(data) == []
    ids = [r["id"] for r in records(data)]
    assert len(ids) == len(set(ids))


def test_a_bad_set_is_caught() -> None:
    data = json.loads(SETS["terse"].read_text())
    bad = copy.deepcopy(data)
    bad["facts"][0]["versions"].reverse()  # out of date order
    bad["facts"][1]["versions"][0][1] = "99%"  # a value its text does not state
    del bad["facts"][2]["split"]
    bad["as_of"] = bad["as_of"][:5]
    found = problems(bad)
    assert len(found) >= 4 and any("date order" in p for p in found) and any("99%" in p for p in found)


def test_the_terse_and_chat_notes_differ_and_the_original_set_has_none() -> None:
    terse = {t for t, _d, _s in unrelated(json.loads(SETS["terse"].read_text()))}
    chat = {t for t, _d, _s in unrelated(json.loads(SETS["chat"].read_text()))}
    assert not terse & chat and unrelated(json.loads(SETS["original"].read_text())) == []


def test_values_count_in_their_normalised_form() -> None:
    assert normalised("cap 1 percent") == normalised("cap 1%") == "cap 1%"
    assert normalised("at 4:45 pm") == "at 16:45" and normalised("9:30 am") == normalised("9:30") == "09:30"
    assert normalised("12.5k") == "$12,500" and normalised("1200 USD") == "$1,200"
    assert normalised("Thursdays at 2 pm") == normalised("Thursday 14:00") == "thu 14:00"
    assert normalised("28 Oct") == normalised("October 28") == "oct 28"
    assert _position(normalised("about 25k tokens"), "$25") is None and _position("v 3.12.1", "3.12") is None


def test_a_restated_value_is_current_again() -> None:
    data = {"facts": [{"id": "x", "split": "dev", "question": "When is standup?", "versions": [
        ["standup 09:30", "09:30", "2026-08-01"], ["standup 10:15", "10:15", "2026-09-01"],
        ["standup at 9:30 am again", "9:30 am", "2026-10-01"]]}], "as_of": [], "lookalikes": []}  # fmt: skip
    (q,), _ = questions(data)
    assert q.others == ("10:15",) and q.split == "dev"
    assert first("standup at 9:30 am again\nstandup 10:15", q) and not first("standup 10:15\nstandup 09:30", q)


def test_only_lines_about_the_fact_count() -> None:
    q = Question("What is the cap?", "1%", ("2%",), frozenset({"risk", "cap"}))
    assert first("disk at 2 percent on web-1\nrisk cap per trade 1 percent\nrisk cap 2%", q)
    assert not first("risk cap 2%\nrisk cap 1%", q) and not first("disk at 1 percent", q)
    reworded = Question("Who is on call?", "Aiko", ("Marek",), frozenset())  # its versions share no word
    assert not first("Marek covers the pager\nAiko took over", reworded)
