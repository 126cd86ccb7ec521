"""The night never loses a memory that disagrees with its neighbours, nor fuses it with them: every family of
benchmarks/dissent_families.json through the offline distiller and the night's judge, words alone."""

import json

import pytest

from benchmarks.dissent_families import FAMILIES, night

FAMILY_ROWS = json.loads(FAMILIES.read_text(encoding="utf-8"))["families"]


@pytest.mark.parametrize("family", FAMILY_ROWS, ids=[f["dissent"][:40] for f in FAMILY_ROWS])
def test_the_dissent_is_said_or_nothing_is_archived(family: dict[str, str]) -> None:
    got = night(family, None)
    assert not got["lost"], got["text"]
    assert not got["fused"], got["text"]
    if got["kept"]:  # said in its own words beside the majority's statement
        assert family["dissent"].rstrip(".") in got["text"]
