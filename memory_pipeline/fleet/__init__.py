"""A fleet of agents (issue 21): the agent registry, the fleet's nightly cost budget, the fleet report's rows.
Pure logic; the Dagster side is the fleet code location, `memory_pipeline.fleet_definitions`."""
