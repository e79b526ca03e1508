"""The stdio transport with an answer for lines that are not JSON-RPC.

The MCP SDK's stdio reader turns a malformed line into an exception item, and the
dispatcher only logs it at DEBUG: the client gets no reply and waits forever. Here the
SDK's reader is wrapped, and such a line gets the JSON-RPC 2.0 error it calls for,
with id null (the id of an unparsable message cannot be known): -32700 Parse error
for invalid JSON, -32600 Invalid Request for JSON that is not a JSON-RPC message.
The error names the problem, never the line.
"""
from __future__ import annotations

from contextlib import asynccontextmanager, suppress

import anyio
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError
from pydantic import ValidationError


def error_reply(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read as a message."""
    errors = exc.errors(include_url=False) if isinstance(exc, ValidationError) else []
    if any(e["type"] == "json_invalid" for e in errors):
        code, message = PARSE_ERROR, "Parse error"
    else:
        code, message = INVALID_REQUEST, "Invalid Request"
    # pydantic's messages name a position, not the input; cut anyway, errors stay short.
    reason = errors[0]["msg"][:100] if errors else type(exc).__name__
    return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=code, message=f"{message}: {reason}"))


@asynccontextmanager
async def stdio_answering_bad_lines():
    """Like mcp.server.stdio.stdio_server (same (read, write) streams), but a line
    that is not a JSON-RPC message is answered instead of dropped."""
    async with stdio_server() as (read, write):
        relay_send, relay_receive = create_context_streams[SessionMessage | Exception](0)

        async def relay() -> None:
            async with relay_send:
                async for item in read:
                    if isinstance(item, Exception):
                        # The server may have closed its side already; the reply is then moot.
                        with suppress(anyio.ClosedResourceError, anyio.BrokenResourceError):
                            await write.send(SessionMessage(error_reply(item)))
                    else:
                        await relay_send.send(item)

        async with anyio.create_task_group() as tg:
            tg.start_soon(relay)
            yield relay_receive, write
            tg.cancel_scope.cancel()


def run(server) -> None:
    """server.run(transport="stdio") with the answering reader in place of the SDK's."""
    from fastmcp.server.mixins import transport

    if getattr(transport, "stdio_server", None) is not stdio_server:
        # fastmcp no longer serves stdio through this name: fail loudly, not silently.
        raise RuntimeError("fastmcp's stdio transport changed; update app/northwind/stdio.py")
    transport.stdio_server = stdio_answering_bad_lines  # this process serves only this server
    server.run(transport="stdio", show_banner=False)
