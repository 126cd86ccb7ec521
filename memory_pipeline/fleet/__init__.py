"""A fleet of agents, all in this package: the agent registry, the fleet's nightly cost budget, the fleet report's
rows and the gateway (pure logic, in its modules); the fleet's code location (`definitions.py`, loaded as
`-m memory_pipeline.fleet.definitions`); its servers and the commands that run them (`processes/`)."""

# `fleet serve`: an agent's `remember`s are imported into its store once this many are spooled (durable and
# searchable at once either way; agent_writes_sensor imports the rest within a minute). An import per write made
# every worker re-read the agent's store view and cost as much as all the searches of a mix with 5 % writes.
IMPORT_BATCH = 32
