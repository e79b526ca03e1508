"""The stdio transport with an answer for lines that are not JSON-RPC.

The MCP SDK's stdio reader turns a malformed line into an exception item, and the
dispatcher only logs it at DEBUG: the client gets no reply and waits forever. Here the
SDK's reader is wrapped, and such a line gets the JSON-RPC 2.0 error it calls for,
with id null (the id of an unparsable message cannot be known): -32700 Parse error
for invalid JSON, -32600 Invalid Request for JSON that is not a JSON-RPC message.
The error names the problem, never the line.

A request whose `id` is null, a fraction, a boolean, an object or an array is not a request
the SDK knows (ids are strings or integers): its reader takes it for a notification, which
gets no reply, and the client waits forever. The reader here refuses such a line instead:
-32600 Invalid Request, id null (the id it sent cannot be echoed as a valid one).
"""
from __future__ import annotations

import json
from contextlib import asynccontextmanager, suppress
from typing import Any

import anyio
import mcp.server.stdio as sdk_stdio
import mcp_types
from mcp.server.stdio import stdio_server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, PARSE_ERROR, ErrorData, JSONRPCError, JSONRPCNotification
from pydantic import ValidationError


class InvalidId(ValueError):
    """A JSON-RPC message with an `id` member that is neither a string nor an integer."""


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, float):
        return "a non-integer number"
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "an array"
    return type(value).__name__


class _StrictIdAdapter:
    """The SDK's message adapter, except that a line it reads as a notification but which
    carries an `id` member (so its sender waits for a reply) raises InvalidId."""

    def validate_json(self, data, **kwargs):
        message = mcp_types.jsonrpc_message_adapter.validate_json(data, **kwargs)
        if isinstance(message, JSONRPCNotification):  # rare: initialized, cancelled, progress
            try:
                raw = json.loads(data)
            except (ValueError, RecursionError):
                return message
            if isinstance(raw, dict) and "id" in raw:
                raise InvalidId(f"id must be a string or an integer, got {_kind(raw['id'])}")
        return message

    def __getattr__(self, name: str):
        return getattr(mcp_types.jsonrpc_message_adapter, name)


class _StrictIdTypes:
    """What mcp.server.stdio calls `types` (mcp_types), with the strict adapter."""
    jsonrpc_message_adapter = _StrictIdAdapter()

    def __getattr__(self, name: str):
        return getattr(mcp_types, name)


def error_reply(exc: Exception) -> JSONRPCError:
    """The JSON-RPC error for a line the SDK could not read as a message."""
    if isinstance(exc, InvalidId):
        return JSONRPCError(jsonrpc="2.0", id=None, error=ErrorData(code=INVALID_REQUEST,
                                                                    message=f"Invalid Request: {exc}"))
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
    if getattr(sdk_stdio, "types", None) is not mcp_types:
        raise RuntimeError("the MCP SDK's stdio reader changed; update app/northwind/stdio.py")
    transport.stdio_server = stdio_answering_bad_lines  # this process serves only this server
    sdk_stdio.types = _StrictIdTypes()  # lines with an invalid id get an error, not silence
    server.run(transport="stdio", show_banner=False)
