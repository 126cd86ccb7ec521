"""The MCP server: `memory-pipeline mcp` for one agent, and the tools the fleet gateway serves for many.

`server` defines the tools (`search`, `context`, `flush`, and `remember`/`forget` from `write_tools`) and the
read-only resources; `arguments` checks a call's arguments and names what is wrong; `stdio` and `http` are the
transports; `frames` answers a frame that is not one JSON-RPC message (a stdio line, an HTTP body — the gateway's
too). The server is an entry point: it wires search, context and the journals together."""
