"""`memory-pipeline mcp --transport http`: the SDK's streamable-HTTP app under uvicorn, as the SDK's own
`run("streamable-http")` serves it, with uvicorn's protocol swapped for one that bounds how long a request's
headers and body may take to arrive (operator/http_timeouts.py): a client that stalls mid-request has its
connection closed instead of holding it forever."""

from __future__ import annotations

import anyio
from mcp.server.mcpserver import MCPServer

from memory_pipeline.operator.http_timeouts import HTTP_PROTOCOL, read_timeouts


def serve_http(server: MCPServer, host: str, port: int) -> None:
    import uvicorn

    read_timeouts()  # a malformed bound is a configuration error before the port is taken
    app = server.streamable_http_app(host=host)
    config = uvicorn.Config(app, host=host, port=port, log_level=server.settings.log_level.lower(), http=HTTP_PROTOCOL)
    anyio.run(uvicorn.Server(config).serve)
