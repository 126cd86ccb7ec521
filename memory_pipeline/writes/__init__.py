"""The operator's undo for agents' writes and the night's supersessions: `memory-pipeline forgotten list|restore`
and `superseded list|undo`. The logic is the store's (memory_pipeline.store); the MCP tools `remember` and
`forget` are the MCP server's (memory_pipeline.mcp.write_tools)."""
