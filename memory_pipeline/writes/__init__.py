"""Agents' writes: the `remember` and `forget` MCP tools and the operator's `forgotten` command. The
logic is the store's (memory_pipeline.store.remember); this domain is the interface to it."""
