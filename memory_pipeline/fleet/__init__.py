"""A fleet of agents: the agent registry, the fleet's nightly cost budget, the fleet report's rows.
Pure logic; the Dagster side is the fleet code location, `memory_pipeline.fleet_definitions`."""

# `fleet serve`: an agent's `remember`s are imported into its store once this many are spooled (durable and
# searchable at once either way; agent_writes_sensor imports the rest within a minute). An import per write made
# every worker re-read the agent's store view and cost as much as all the searches of a mix with 5 % writes.
IMPORT_BATCH = 32
