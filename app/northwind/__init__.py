"""Northwind support desk: the MCP server the agent under test talks to."""
from .data import REFUND_LIMIT_USD, RETURN_DAYS, TODAY, USD_PER, VAT
from .server import (
    CONVERSATION_META_KEY,
    DEFAULT_CONVERSATION,
    WRITES_URI_TEMPLATE,
    build_server,
    call_in_process,
    conversation_key,
    release_conversation,
    release_uri,
    server_world,
    server_worlds,
    server_write_tools,
    server_writes,
    write_tool_names,
    writes_uri,
)
from .world import World, Worlds

__all__ = [
    "CONVERSATION_META_KEY",
    "DEFAULT_CONVERSATION",
    "REFUND_LIMIT_USD",
    "RETURN_DAYS",
    "TODAY",
    "USD_PER",
    "VAT",
    "WRITES_URI_TEMPLATE",
    "call_in_process",
    "World",
    "Worlds",
    "build_server",
    "conversation_key",
    "release_conversation",
    "release_uri",
    "server_world",
    "server_worlds",
    "server_write_tools",
    "server_writes",
    "write_tool_names",
    "writes_uri",
]
