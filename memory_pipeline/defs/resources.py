"""The resources every domain shares: store, embedder, llm, engine, notifier (from the environment)."""

import dagster as dg

from memory_pipeline.resources.defaults import default_resources


@dg.definitions
def shared_resources() -> dg.Definitions:
    return dg.Definitions(resources=default_resources())
