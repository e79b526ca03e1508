"""What the server tests share: one call through an MCP client, for one conversation."""
from __future__ import annotations

import uuid

from app.northwind import CONVERSATION_META_KEY


def new_conversation(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def call(client, conv, name, **args):
    """A tool's parsed reply over MCP, with the conversation id in the request _meta
    (conv None: no _meta at all, as a plain MCP client would send)."""
    meta = {CONVERSATION_META_KEY: conv} if conv is not None else None
    return (await client.call_tool(name, args, meta=meta)).data
