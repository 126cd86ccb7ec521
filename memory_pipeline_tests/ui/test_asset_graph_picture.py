"""The README's picture of the `abstraction` group (docs/asset-graph.png) shows the group the definitions hold:
the slow UI test (test_dagster_server.py) records what it waited to see in the picture, and retakes the picture
when that differs; this fast test fails as soon as an asset or a check is added that the committed picture lacks."""

from __future__ import annotations

from memory_pipeline.settings import REPO_ROOT
from memory_pipeline_tests.ui.picture import SHOWN, group_now, texts

PICTURE = REPO_ROOT / "docs" / "asset-graph.png"


def test_the_readme_picture_shows_the_groups_assets_and_checks_as_defined() -> None:
    recorded = texts(PICTURE).get(SHOWN)
    assert recorded == group_now(), (
        "docs/asset-graph.png is older than the definitions: retake it with `RUN_SLOW=1 .venv/bin/python -m pytest "
        "-n 0 memory_pipeline_tests/ui/test_dagster_server.py -k 'nightly_run or browser'`"
    )

