"""Every `memory-pipeline … --help` tells the truth: each command and subcommand has a help line and a
description, each argument says what it takes, and a help text that lists file formats lists exactly what the
importer behind it reads. The parser is the one `memory-pipeline` builds (memory_pipeline.cli.build_parser)."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from memory_pipeline.cli import build_parser, main

# File extensions a help text might name; each is put to the importer to learn which it reads.
CANDIDATES = (".jsonl", ".ndjson", ".json", ".csv", ".tsv", ".parquet", ".db", ".sqlite", ".sqlite3", ".txt")


def commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[
    tuple[tuple[str, ...], str | None, argparse.ArgumentParser]
]:  # fmt: skip
    """(command path, its help line, its parser) for every command and subcommand, depth first."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), helps.get(name), sub
                yield from commands(sub, (*path, name))


def arguments(parser: argparse.ArgumentParser) -> Iterator[argparse.Action]:
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction | argparse._SubParsersAction) or action.help == argparse.SUPPRESS:
            continue
        yield action


COMMANDS = list(commands(build_parser()))


def test_the_walk_covers_the_commands() -> None:
    names = {" ".join(p) for p, _, _ in COMMANDS}
    assert len(names) >= 45
    assert {"demo", "status", "fleet daemon", "fleet report", "agents list", "agents remove", "rollups build",
            "rollups status", "embeddings", "embeddings drop", "mcp", "recall", "prune"} <= names  # fmt: skip


@pytest.mark.parametrize("path, line, parser", COMMANDS, ids=[" ".join(p) for p, _, _ in COMMANDS])
def test_every_command_and_argument_says_what_it_does(path: tuple[str, ...], line: str | None,
                                                      parser: argparse.ArgumentParser) -> None:  # fmt: skip
    name = " ".join(path)
    assert line and line.strip(), f"`{name}` has no help line in `memory-pipeline --help`"
    assert parser.description and parser.description.strip(), f"`{name} --help` has no description"
    for action in arguments(parser):
        label = "/".join(action.option_strings) or action.dest
        assert action.help and action.help.strip(), f"`{name} --help`: {label} is unexplained"
    text = parser.format_help()  # renders (a bad %-format in a help string fails here)
    assert text.startswith(f"usage: memory-pipeline {name}")


def test_default_ports_are_shown() -> None:
    shown = {" ".join(p): parser.format_help() for p, _, parser in COMMANDS}
    for name, port in (("fleet postgres", 5432), ("fleet redis", 6379), ("fleet webserver", 3000),
                       ("fleet serve", 8780), ("mcp", 8765)):  # fmt: skip
        assert f"default {port}" in " ".join(shown[name].split()), name


def _named(text: str) -> set[str]:
    return {ext for ext in CANDIDATES if re.search(re.escape(ext) + r"(?![\w])", text)}


def _reads(tmp_path: Path, importer: Callable[[Path], object], refusal: str) -> set[str]:
    """The candidate extensions `importer` takes (an empty file of each: refused by format, or not)."""
    accepted = set()
    for ext in CANDIDATES:
        path = tmp_path / f"probe{ext}"
        path.write_bytes(b"")
        try:
            importer(path)
        except Exception as exc:  # noqa: BLE001 - an empty file fails in many ways; only the format refusal counts
            if refusal in str(exc):
                continue
        accepted.add(ext)
    return accepted


def _help_of(path: str, option: str | None = None) -> str:
    [(_, line, parser)] = [c for c in COMMANDS if " ".join(c[0]) == path]
    if option is None:
        return f"{line}\n{parser.description}"
    [action] = [a for a in parser._actions if option in a.option_strings or a.dest == option]
    return str(action.help)


def test_format_lists_agree_with_the_importers(tmp_path: Path) -> None:
    from memory_pipeline.graph.usage_store import import_usage
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_path

    memories = _reads(tmp_path, lambda p: import_path(MemoryStore(tmp_path / "m.duckdb"), p),
                      "unknown import format")  # fmt: skip
    usage = _reads(tmp_path, lambda p: import_usage(MemoryStore(tmp_path / "u.duckdb"), p), "unknown usage format")
    assert ".parquet" in memories and ".csv" not in memories and ".csv" in usage  # the probe sees the importers
    whole = {  # texts that list every format their importer reads
        "agents add --import": (_help_of("agents add", "--import"), memories),
        "import (description)": (str([c for c in COMMANDS if c[0] == ("import",)][0][2].description), memories),
        "usage import": (_help_of("usage import"), usage),
        "usage import PATH": (_help_of("usage import", "path"), usage),
    }
    for label, (text, reads) in whole.items():
        assert _named(text) == reads, f"`{label}` names {sorted(_named(text))}; the importer reads {sorted(reads)}"
    # a shorter list may leave formats out, never name one the importer refuses
    for label, text in (("import", _help_of("import")), ("import PATH", _help_of("import", "path"))):
        assert _named(text) <= memories, f"`{label}` names {sorted(_named(text) - memories)}, which import refuses"


@pytest.mark.parametrize("when", ["2026-11-01", "2026-11-01T03:30:00Z"])
def test_as_of_takes_a_date_or_a_timestamp_everywhere(when: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                      capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    monkeypatch.setenv("MEMORY_PIPELINE_HOME", str(tmp_path))
    assert main(["prune", "--dry-run", "--as-of", when]) == 0
    for command in (["run", "--as-of", when], ["compact", "--as-of", when]):
        args = build_parser().parse_args(command)
        assert args.as_of == when
    from memory_pipeline.settings import check_as_of

    assert check_as_of(when) == when  # what run and compact check before they start
    helps = {" ".join(p): parser.format_help() for p, _, parser in COMMANDS}
    for name in ("run", "compact", "prune"):
        flat = " ".join(helps[name].split())
        assert "2026-11-01" in flat and "2026-11-01T03:30:00Z" in flat, name


def test_version_prints_the_installed_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from importlib.metadata import version

    with pytest.raises(SystemExit) as stop:
        main(["--version"])
    assert stop.value.code == 0
    assert capsys.readouterr().out == f"memory-pipeline {version('memory_pipeline')}\n"


def test_the_top_level_help_speaks_to_users() -> None:
    """What the tool does, and where to read more: not how the code adds its commands."""
    text = " ".join(build_parser().format_help().split())
    assert "--version" in text and "COMMAND --help" in text
    assert not re.search(r"(?i)\bdomains?\b|\bregisters?\b", text), text
