"""Every object an operator sees explains itself, in words a user has: each job, schedule, sensor, asset and
asset check of both code locations has a description, and no user-facing text (Dagster descriptions, resource
and config fields, MCP tools and their arguments, CLI help) cites the design documents by section or issue."""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import dagster as dg
import pytest

from memory_pipeline import definitions
from memory_pipeline.fleet import registry

# "seed 001 §6.4", "seed §8.3", a bare "§", "issue" and a number: references only the project's own documents resolve.
INTERNAL_REFERENCE = re.compile(r"(?i)seed 00\d|§|\bissue \d+")
# Objects Dagster adds by itself, which take no description: the implicit job of all assets, and the automation
# sensor it creates for assets with an automation condition that no sensor of ours targets (search_index).
DAGSTER_IMPLICIT = {"job __ASSET_JOB", "sensor default_automation_condition_sensor"}


def _plain(text: str) -> str:
    return " ".join(text.split())  # a wrapped help line must not hide "seed\n  001"


def _clean(texts: dict[str, str]) -> None:
    found = {where: _plain(text) for where, text in texts.items() if INTERNAL_REFERENCE.search(_plain(text))}
    assert not found, found


@pytest.fixture(scope="module")
def locations(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, dg.Definitions]]:
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(registry.FLEET_ROOT_ENV, str(tmp_path_factory.mktemp("fleet")))  # the location needs a root
        from memory_pipeline.fleet.definitions import location

        yield {"single": definitions.defs(), "fleet": location()}


def _config_descriptions(config_type: Any, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for name, field in (getattr(config_type, "fields", None) or {}).items():
        if field.description:
            out[f"{where}.{name}"] = field.description
        out.update(_config_descriptions(field.config_type, f"{where}.{name}"))
    inner = getattr(config_type, "inner_type", None)
    return out | (_config_descriptions(inner, f"{where}[]") if inner is not None else {})


def _objects(defs: dg.Definitions) -> dict[str, str | None]:
    """Every job, schedule, sensor, asset and asset check, by kind and name, with its description."""
    repo = defs.get_repository_def()
    graph = defs.resolve_asset_graph()
    found: dict[str, str | None] = {}
    for key in graph.get_all_asset_keys():
        found[f"asset {key.to_user_string()}"] = graph.get(key).description
    for check_key in graph.asset_check_keys:
        found[f"check {check_key.asset_key.to_user_string()}:{check_key.name}"] = (
            graph.get_check_spec(check_key).description
        )
    for job in defs.resolve_all_job_defs():
        found[f"job {job.name}"] = job.description
    for schedule in repo.schedule_defs:
        found[f"schedule {schedule.name}"] = schedule.description
    for sensor in repo.sensor_defs:
        found[f"sensor {sensor.name}"] = sensor.description
    return found


@pytest.mark.parametrize("name", ["single", "fleet"])
def test_every_job_schedule_sensor_asset_and_check_has_a_description(
    locations: dict[str, dg.Definitions], name: str
) -> None:
    found = _objects(locations[name])
    assert {k.split()[0] for k in found} == {"asset", "check", "job", "schedule", "sensor"}
    assert not [where for where, text in found.items() if not (text and text.strip()) and where not in DAGSTER_IMPLICIT]


@pytest.mark.parametrize("name", ["single", "fleet"])
def test_no_dagster_text_cites_a_seed_section_or_an_issue(locations: dict[str, dg.Definitions], name: str) -> None:
    defs = locations[name]
    texts = {where: text for where, text in _objects(defs).items() if text}
    for job in defs.resolve_all_job_defs():  # an op's description is its function's docstring unless given
        for op in job.graph.iterate_op_defs():
            if op.description:
                texts[f"op {op.name}"] = op.description
            if op.config_schema and op.config_schema.config_type:
                texts |= _config_descriptions(op.config_schema.config_type, f"op {op.name} config")
    graph = defs.resolve_asset_graph()
    for key in graph.get_all_asset_keys():
        for label, value in (graph.get(key).metadata or {}).items():
            texts[f"asset {key.to_user_string()} metadata {label}"] = f"{label} {value}"
    for key, resource in defs.get_repository_def().get_top_level_resources().items():
        texts[f"resource {key}"] = resource.description or ""
        if resource.config_schema and resource.config_schema.config_type:
            texts |= _config_descriptions(resource.config_schema.config_type, f"resource {key}")
    _clean(texts)


def test_mcp_tools_and_their_arguments_cite_no_seed_section(tmp_path: Path) -> None:
    from memory_pipeline.mcp.server import INSTRUCTIONS, build_server

    server = build_server(tmp_path, record_usage=False)
    tools = anyio.run(server.list_tools)
    assert {t.name for t in tools} >= {"search", "context", "flush"}
    texts = {t.name: json.dumps(t.model_dump(mode="json"), ensure_ascii=False) for t in tools}
    _clean({**texts, "instructions": INSTRUCTIONS})


def _parsers(parser: argparse.ArgumentParser, path: str) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_cli_help_cites_no_seed_section(monkeypatch: pytest.MonkeyPatch) -> None:
    from memory_pipeline.cli import build_parser

    monkeypatch.setenv("COLUMNS", "100")
    helps = {path: p.format_help() for path, p in _parsers(build_parser(), "memory-pipeline")}
    assert len(helps) > 20 and "memory-pipeline context" in helps  # every domain's subcommands are rendered
    _clean(helps)


# What users read names no design seed, no issue and no source file: "the seed's prompt", "issue" and a number,
# "operator/recovery.py". Maintainer references belong in `#` comments next to the code.
MAINTAINER_WORDS = re.compile(r"(?i)\bseeds?\b|\bseed's\b|\bissue \d+|\b[\w.-]+/[\w/.-]*\.py\b")


def _user_words(texts: dict[str, str]) -> None:
    found = {where: _plain(text) for where, text in texts.items() if MAINTAINER_WORDS.search(_plain(text))}
    assert not found, found


def _ui_texts(defs: dg.Definitions) -> dict[str, str]:
    """Every description the UI shows: assets, asset checks, jobs, schedules, sensors, resources and their
    config fields, as Dagster's API returns them."""
    texts = {where: text for where, text in _objects(defs).items() if text}
    for key, resource in defs.get_repository_def().get_top_level_resources().items():
        if resource.description:
            texts[f"resource {key}"] = resource.description
        if resource.config_schema and resource.config_schema.config_type:
            texts |= _config_descriptions(resource.config_schema.config_type, f"resource {key}")
    return texts


@pytest.mark.parametrize("name", ["single", "fleet"])
def test_ui_descriptions_speak_to_users(locations: dict[str, dg.Definitions], name: str) -> None:
    texts = _ui_texts(locations[name])
    assert len(texts) > 40 and {"asset", "check", "job", "schedule", "sensor", "resource"} <= {
        where.split()[0] for where in texts
    }
    _user_words(texts)


def test_the_nights_report_line_speaks_to_users(tmp_path: Path) -> None:
    """The Reporter's line in the run's log, from a real night, and the clustering reason it carries for every
    embedder with a default of its own (and one without)."""
    from memory_pipeline.definitions import defs_with
    from memory_pipeline.embedding import defaults
    from memory_pipeline.embedding.spec import HASHING
    from memory_pipeline.resources import EmbedderResource
    from memory_pipeline.store import MemoryStore
    from memory_pipeline.store.importers import import_jsonl
    from memory_pipeline_tests.conftest import resources_for

    home = tmp_path / "ws"
    home.mkdir()
    notes = [{"id": f"n{i}", "content": f"The staging host is db-stage-{i % 2}.", "created_at": f"2026-09-0{i}"}
             for i in range(1, 5)]  # fmt: skip
    (tmp_path / "n.jsonl").write_text("\n".join(json.dumps(n) for n in notes) + "\n")
    import_jsonl(MemoryStore(home / "memory.duckdb"), tmp_path / "n.jsonl")
    resources = resources_for(home) | {"embedder": EmbedderResource(model=HASHING)}
    with dg.DagsterInstance.ephemeral() as instance:
        result = defs_with(resources).resolve_job_def("nightly_consolidation").execute_in_process(
            instance=instance, raise_on_error=False
        )
        assert result.success
        logs = [e.user_message for e in instance.all_logs(result.run_id)]
    [line] = [m for m in logs if m.startswith("Reporter: ")]
    texts = {"report line": line}
    for model in [*defaults._table()["models"], "some-plugin/model"]:
        texts[f"clustering reason for {model}"] = defaults.describe(defaults.resolve(model))
    _user_words(texts)
