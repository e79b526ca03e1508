"""What the server tests share: one call through an MCP client, for one conversation."""
from __future__ import annotations

import json
import uuid

from app.northwind import CONVERSATION_META_KEY, writes_uri


def new_conversation(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:10]}"


async def call(client, conv, name, **args):
    """A tool's parsed reply over MCP, with the conversation id in the request _meta
    (conv None: no _meta at all, as a plain MCP client would send)."""
    meta = {CONVERSATION_META_KEY: conv} if conv is not None else None
    return (await client.call_tool(name, args, meta=meta)).data


async def writes(client, conv) -> list[dict]:
    """A conversation's write log, read over MCP on the client's own session (the only
    session that can see it)."""
    [content] = await client.read_resource(writes_uri(conv))
    return json.loads(content.text)
