"""The index update's write path: a version's new files are fsynced (together) before anything names it, a
kill at any of the write's crash points or a failing fsync leaves a readable index and a correct next update, an
unchanged store is answered without opening it, and an update reads a segment's words only when it merges it."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from memory_pipeline.search import build as build_mod
from memory_pipeline.search import build_index
from memory_pipeline.search import index as index_mod
from memory_pipeline.search.index import CRASH_POINTS, current_folder, load_index, read_manifest
from memory_pipeline_tests.search.test_segments import (
    MODEL,
    add_rows,
    assert_same_results,
    encode,
    results,
    set_lifecycle,
    texts,
)


def _update_in_a_process(home: Path, crash_at: str) -> int:
    code = (
        "import sys; from pathlib import Path; sys.path.insert(0, sys.argv[2]);"
        "from test_segments import encode, MODEL; from memory_pipeline.search import build_index;"
        "build_index(Path(sys.argv[1]), encode, MODEL)"
    )
    env = {**os.environ, "MEMORY_PIPELINE_CRASH_AT": crash_at}
    args = [sys.executable, "-c", code, str(home), str(Path(__file__).parent)]
    return subprocess.run(args, env=env, timeout=300).returncode


def _rebuilt_equals(home: Path, tmp_path: Path) -> None:
    """The incremental index holds the documents of a full rebuild of the same workspace and ranks as it does."""
    rebuilt = tmp_path / "rebuilt"
    shutil.rmtree(rebuilt, ignore_errors=True)
    shutil.copytree(home, rebuilt)
    build_index(rebuilt, encode, MODEL, full=True)
    assert sorted(d.key for d in load_index(home).live_docs()) == sorted(d.key for d in load_index(rebuilt).live_docs())
    assert_same_results(home, rebuilt)


@pytest.mark.parametrize("point", CRASH_POINTS)
def test_an_update_killed_at_any_crash_point_leaves_a_readable_index_and_a_correct_next_update(
    point: str, tmp_path: Path
) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(150, seed=21))
    build_index(home, encode, MODEL, full=True)
    add_rows(home, 500, texts(6, seed=22))
    set_lifecycle(home, ["m-00004"], "superseded")  # a deletion too: the new version writes a deletions file
    before = current_folder(home)
    assert _update_in_a_process(home, point) == -9
    after = current_folder(home)
    assert after is not None
    if point == "index_committed":
        assert after != before and load_index(home).n_live == 150 + 6 - 1  # committed, not yet pruned
    else:
        assert after == before and load_index(home).n_live == 150  # the previous version, whole
    add_rows(home, 800, texts(4, seed=23))
    stats = build_index(home, encode, MODEL)
    assert load_index(home).n_live == 150 + 6 - 1 + 4 and current_folder(home) != after
    assert stats.embedded <= 10
    _rebuilt_equals(home, tmp_path)
    left = {p.name for p in (home / "index").iterdir()}
    assert not [n for n in left if n.startswith(".CURRENT-")]  # a killed writer's pointer is pruned
    assert sorted(n for n in left if n.startswith("v")) == sorted([after.name, stats.version])  # orphans pruned


def test_a_failing_fsync_leaves_the_previous_index_and_nothing_behind(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(120, seed=24))
    build_index(home, encode, MODEL, full=True)
    add_rows(home, 500, texts(5, seed=25))
    before, answers = current_folder(home), results(home, "garden tomato")
    real = index_mod.fsync_path

    def failing(path: Path) -> None:
        if path.name == "arrays.bin":
            raise OSError(5, "Input/output error")
        real(path)

    monkeypatch.setattr(index_mod, "fsync_path", failing)
    with pytest.raises(OSError):
        build_index(home, encode, MODEL)
    assert current_folder(home) == before and results(home, "garden tomato") == answers
    assert before is not None
    kept = (".lock", "pending")  # pending: the vectors the failed update embedded, kept for the next one
    assert sorted(p.name for p in (home / "index").iterdir() if not p.name.startswith(kept)) == sorted(
        ["CURRENT", "segments", before.name]
    )  # neither the new version's folder nor its pointer is left behind
    assert sorted(p.name for p in (home / "index" / "segments").iterdir()) == [
        e["name"] for e in read_manifest(before)["segments"]
    ]  # nor its new segment
    monkeypatch.undo()
    assert build_index(home, encode, MODEL).added == 5 and current_folder(home) != before


def test_every_new_file_and_folder_is_fsynced_before_the_version_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(100, seed=26))
    build_index(home, encode, MODEL, full=True)
    base = load_index(home).segments[0].name
    add_rows(home, 500, texts(5, seed=27))
    set_lifecycle(home, ["m-00002"], "superseded")
    events: list[tuple[str, Path]] = []
    real_fsync, real_replace = index_mod.fsync_path, os.replace

    def spy_fsync(path: Path) -> None:
        events.append(("fsync", Path(path)))
        real_fsync(path)

    def spy_replace(src: str | os.PathLike[str], dst: str | os.PathLike[str]) -> None:
        events.append(("replace", Path(dst)))
        real_replace(src, dst)

    monkeypatch.setattr(index_mod, "fsync_path", spy_fsync)
    monkeypatch.setattr(index_mod.os, "replace", spy_replace)
    version = build_index(home, encode, MODEL).version
    monkeypatch.undo()
    root, folder = home / "index", home / "index" / version
    segments = root / "segments"
    named = [i for i, (kind, p) in enumerate(events) if kind == "replace" and p == root / "CURRENT"]
    assert len(named) == 1
    synced_before = {p for kind, p in events[: named[0]] if kind == "fsync"}
    (new_segment,) = [segments / e["name"] for e in read_manifest(folder)["segments"] if e["name"] != base]
    new_files = {p for p in folder.iterdir() if p.stat().st_nlink == 1} | set(new_segment.iterdir())
    assert len(new_files) > 3 and new_files <= synced_before  # the new segment, the deletions file, the manifest
    assert {folder, new_segment, segments} <= synced_before  # the new folders and the one holding the segment's name
    assert {root / f".CURRENT-{version}", root} <= synced_before  # the pointer, and both names in the index folder
    assert not {p for p in synced_before if p.parent == segments / base}  # the base segment: durable already


def test_an_unchanged_store_is_answered_without_opening_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(80, seed=28))
    journal = home / "knowledge" / "journal" / "2026-01-05.md"
    journal.parent.mkdir(parents=True)
    journal.write_text("# Day\n\nBooked the ferry to Naxos.\n", encoding="utf-8")
    first = build_index(home, encode, MODEL, full=True)

    def refuse(stack: object, path: Path, timeout_s: float = 0.0) -> None:
        raise AssertionError("the store was opened")

    monkeypatch.setattr(build_mod, "_attach_waiting", refuse)
    quiet = build_index(home, encode, MODEL)
    assert (quiet.version, quiet.added, quiet.docs, quiet.segments) == (first.version, 0, 81, 1)
    monkeypatch.undo()
    journal.write_text("# Day\n\nBooked the ferry to Paros instead.\n", encoding="utf-8")  # a file changed
    os.utime(journal, (1_700_000_000, 1_700_000_000))
    assert build_index(home, encode, MODEL).version != first.version
    add_rows(home, 300, texts(3, seed=29))  # the store changed
    stats = build_index(home, encode, MODEL)
    assert stats.added == 3 and load_index(home).n_live == 84
    from memory_pipeline.store import MemoryStore

    with MemoryStore(home / "memory.duckdb").transaction() as con:  # a write the change log misses
        con.execute("UPDATE memories SET lifecycle = 'superseded' WHERE id = 'm-00001'")
    assert build_index(home, encode, MODEL).segments == 1  # not quiet: the count caught it, a full build
    assert "m-00001" not in {d.key for d in load_index(home).live_docs()}


def test_an_update_reads_a_segment_s_words_only_to_merge_it(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(120, seed=30))
    build_index(home, encode, MODEL, full=True)
    base = load_index(home).segments[0]
    (base.folder / "vocab.json").unlink()  # an update that does not merge the segment never reads it
    idx = load_index(home, vocab=False)
    assert idx.segments[0].rows == 120
    add_rows(home, 500, texts(4, seed=31))
    stats = build_index(home, encode, MODEL, merge_factor=10)
    assert (stats.added, stats.segments) == (4, 2)
    folder = current_folder(home)
    assert folder is not None
    seg = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))["segments"][0]["name"]
    (home / "index" / "segments" / seg / "vocab.json").write_text('["only", "two"]', encoding="utf-8")  # damaged
    add_rows(home, 600, texts(4, seed=32))
    set_lifecycle(home, [f"m-{i:05d}" for i in range(40)], "superseded")  # a third deleted: the segment is rewritten
    stats = build_index(home, encode, MODEL)  # the merge reads its words, finds them damaged: a full build instead
    assert stats.segments == 1 and load_index(home).n_live == 120 + 4 + 4 - 40
    _rebuilt_equals(home, tmp_path)


def test_the_arrays_file_gives_back_what_was_written_and_a_short_file_is_damage(tmp_path: Path) -> None:
    import numpy as np

    from memory_pipeline.search.arrays_file import read_arrays, write_arrays
    from memory_pipeline.search.index import IndexMissing

    arrays = {"ints": np.arange(7, dtype=np.int64), "matrix": np.ones((3, 5), np.float32),
              "keys": np.array([b"m-1", b"m-22"]), "empty": np.zeros((0, 4), np.float32),
              "codes": np.ones((4, 3), np.int8), "fortran": np.asfortranarray(np.arange(6.0).reshape(3, 2)),
              "scalar": np.array(3.0), "tf": np.array([1, 65535], np.uint16)}  # fmt: skip
    write_arrays(tmp_path / "a.bin", arrays, {"rows": 7})
    stats, got, offsets = read_arrays(tmp_path / "a.bin")
    assert stats == {"rows": 7} and set(got) == set(arrays)
    raw = (tmp_path / "a.bin").read_bytes()
    for name, want in arrays.items():
        assert got[name].dtype == want.dtype and got[name].shape == want.shape, name
        assert np.array_equal(got[name], want), name
        assert offsets[name] % 64 == 0 and raw[offsets[name] : offsets[name] + want.nbytes] == want.tobytes(order="C")
    home = tmp_path / "ws"
    add_rows(home, 0, texts(30, seed=33))
    build_index(home, encode, MODEL, full=True)
    path = load_index(home).segments[0].folder / "arrays.bin"
    path.write_bytes(path.read_bytes()[:-4])
    with pytest.raises(IndexMissing, match="damaged|unreadable"):
        load_index(home)


def test_a_damaged_version_is_rebuilt_even_when_nothing_changed(tmp_path: Path) -> None:
    home = tmp_path / "ws"
    add_rows(home, 0, texts(60, seed=34))
    first = build_index(home, encode, MODEL, full=True)
    assert build_index(home, encode, MODEL).version == first.version  # quiet: nothing changed
    arrays = load_index(home).segments[0].folder / "arrays.bin"
    arrays.write_bytes(arrays.read_bytes()[:-64])  # damaged, and the store and files still as they were
    stats = build_index(home, encode, MODEL)
    assert stats.version != first.version and stats.added == 60 and load_index(home).n_live == 60


def test_segments_stay_while_a_kept_version_names_them_and_are_pruned_after(tmp_path: Path) -> None:
    """Versions share the segments under index/segments/: after every update — merges included — that folder holds
    exactly the segments the two kept versions name (a reader of the previous version still finds its files), and
    a segment left by a writer killed before its commit goes with the next commit."""
    home = tmp_path / "ws"
    add_rows(home, 0, texts(60, seed=40))
    build_index(home, encode, MODEL, full=True)
    root = home / "index"
    (root / "segments" / "seg-left-by-a-killed-writer").mkdir()
    merges = 0
    for night in range(7):
        add_rows(home, 100 + 10 * night, texts(3, seed=41 + night))
        set_lifecycle(home, [f"m-{night:05d}"], "superseded")
        stats = build_index(home, encode, MODEL, merge_factor=3)
        merges += stats.merged
        versions = [p for p in root.iterdir() if p.name.startswith("v")]
        named = {e["name"] for v in versions for e in read_manifest(v)["segments"]}
        assert len(versions) == 2 and {p.name for p in (root / "segments").iterdir()} == named
        mine = [root / stats.version, *(root / "segments" / e["name"] for e in read_manifest(root / stats.version)[
            "segments"])]
        assert stats.bytes == sum(f.stat().st_size for d in mine for f in d.iterdir())  # the size it reports
    assert merges > 0
    _rebuilt_equals(home, tmp_path)
