"""A search does not pay for the index's update: with 182 documents waiting, `search` embedded them all before it
answered (68 s, killed at 60 s twice, and a killed run kept none of its work). Now a call embeds within its bound
(MEMORY_PIPELINE_SEARCH_UPDATE_SECONDS), a slice at a time, keeps every slice, answers from the index it has plus
the fresh-write delta, and says it is behind; an update killed midway leaves its slices to the next one.
Everything is read from the system's records (the notice, CURRENT, the pending count, the texts the encoder was
given), never from timing."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from memory_pipeline.operator.environment import check_environment
from memory_pipeline.search import build_index, search
from memory_pipeline.search.build import pending_changes
from memory_pipeline.search.engine import clear_cache
from memory_pipeline.search.index import current_folder
from memory_pipeline.search.live import DELTA_EMBED_LIMIT, UPDATE_SECONDS_ENV, update_seconds
from memory_pipeline.search.pending import SLICE_DOCS, PendingVectors
from memory_pipeline.settings import SettingsError
from memory_pipeline_tests.search.test_segments import MODEL, encode

WAITING = DELTA_EMBED_LIMIT + 36  # more than a search used to update the index for


class Encoder:
    """The test encoder, recording every text it was given; `die_after` slices, it raises (a kill midway)."""

    def __init__(self, die_after: int | None = None) -> None:
        self.texts: list[str] = []
        self.calls = 0
        self.die_after = die_after

    def __call__(self, texts: list[str]) -> np.ndarray:
        if self.die_after is not None and self.calls >= self.die_after:
            raise KeyboardInterrupt("killed")
        self.calls += 1
        self.texts += list(texts)
        return encode(texts)


def note(i: int) -> str:
    return f"Route {i} note: the ferry to island {i} leaves from pier {i % 7} on weekdays.\n"


def workspace(tmp_path: Path) -> Path:
    """Ten notes indexed, then WAITING new ones written (knowledge files: the fresh-write delta)."""
    home = tmp_path / "ws"
    folder = home / "knowledge" / "notes"
    folder.mkdir(parents=True)
    for i in range(10):
        (folder / f"old-{i:03d}.md").write_text(note(i), encoding="utf-8")
    build_index(home, encode, MODEL, full=True)
    for i in range(100, 100 + WAITING):
        (folder / f"new-{i:03d}.md").write_text(note(i), encoding="utf-8")
    clear_cache()
    return home


def documents_embedded(enc: Encoder) -> list[str]:
    return [t for t in enc.texts if t.startswith("Route ")]


def test_a_search_over_its_bound_answers_from_the_index_it_has_and_says_it_is_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = workspace(tmp_path)
    before = current_folder(home)
    monkeypatch.setenv(UPDATE_SECONDS_ENV, "0")  # no time at all for update work
    enc = Encoder()
    hits = search("ferry island 117", 3, home=home, embedder=(enc, MODEL), floor=0.0)
    assert f"search index behind: {WAITING} of {WAITING} documents" in hits.notice
    assert hits and hits[0].id.startswith("knowledge/notes/new-117.md")  # the delta answers, by its keywords
    assert documents_embedded(enc) == []
    assert current_folder(home) == before
    assert pending_changes(home) == {"store_rows": 0, "files": WAITING, "busy": 0}


def test_with_time_for_it_the_search_embeds_in_kept_slices_and_folds_them_into_the_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = workspace(tmp_path)
    before = current_folder(home)
    monkeypatch.setenv(UPDATE_SECONDS_ENV, "600")
    enc = Encoder()
    hits = search("ferry island 117", 3, home=home, embedder=(enc, MODEL), floor=0.0)
    assert "index updated now" in hits.notice and "behind" not in hits.notice
    assert len(documents_embedded(enc)) == WAITING  # each once: the update took the kept slices
    assert current_folder(home) != before
    assert pending_changes(home) == {"store_rows": 0, "files": 0, "busy": 0}
    assert PendingVectors(home, MODEL).files() == []  # the update that took them dropped them


def test_an_update_killed_midway_keeps_its_slices_and_the_next_embeds_only_the_rest(tmp_path: Path) -> None:
    home = workspace(tmp_path)
    before = current_folder(home)
    dying = Encoder(die_after=2)
    with pytest.raises(KeyboardInterrupt):
        build_index(home, dying, MODEL)
    assert current_folder(home) == before
    assert len(PendingVectors(home, MODEL).files()) == 2

    clear_cache()
    enc = Encoder()
    stats = build_index(home, enc, MODEL)
    assert stats.embedded == WAITING - 2 * SLICE_DOCS
    assert len(enc.texts) == WAITING - 2 * SLICE_DOCS and not set(enc.texts) & set(dying.texts)
    assert current_folder(home) != before and PendingVectors(home, MODEL).files() == []


@pytest.mark.parametrize("raw", ["soon", "-1", "nan", "inf"])
def test_a_malformed_bound_is_one_line_naming_it(raw: str) -> None:
    with pytest.raises(SettingsError, match=UPDATE_SECONDS_ENV):
        update_seconds({UPDATE_SECONDS_ENV: raw})
    with pytest.raises(SettingsError, match=UPDATE_SECONDS_ENV):
        check_environment({UPDATE_SECONDS_ENV: raw})
