"""fastmcp Client -> LangChain tools, keeping each tool's structured reply.

Why not langchain-mcp-adapters: its 0.3.x line pins mcp<2 and breaks against fastmcp 4
(mcp 2). This adapter is small: list the server's tools once per connection, wrap each as
a StructuredTool whose reply is (content for the model, parsed reply as the artifact), so
the Turn records the real result rather than the text the model saw.

One connection serves many conversations at once: every call carries the conversation
id in the request's _meta, and the server keeps one world per conversation. That avoids
a server start or an MCP handshake per conversation. When the server lives in this process
(the in-memory transport the evals use), tool calls go to it directly through
app.northwind.call_in_process: the same tools, middleware and errors, minus the JSON-RPC
round trip; stdio (and any other MCP client) goes through the protocol.
"""
from __future__ import annotations

import json
import os
import sys
from typing import TYPE_CHECKING, Any

from langchain_core.runnables import RunnableConfig
from langchain_core.tools import BaseTool, StructuredTool, ToolException

if TYPE_CHECKING:
    from fastmcp import Client, FastMCP

CONVERSATION_META = "northwind/conversation"


def parse_reply(text: str) -> Any:
    """A tool's text reply as data: JSON when it is JSON, else the string itself."""
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return text


def _reply_text(result) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def _error_text(exc: BaseException) -> str:
    return f"Error: {exc}"


class Connection:
    """One MCP client connection and the LangChain tools that call through it."""

    def __init__(self, client: Client | None = None, *, server: FastMCP | None = None):
        self.client = client
        self.tools: list[BaseTool] = []
        self.write_tools: frozenset[str] = frozenset()
        self.graphs: dict = {}  # compiled agent graphs over these tools, see agent.build_graph
        # The server object when it lives in this process (the in-memory transport): tool calls
        # and the write log then skip the protocol.
        self.local_server = server if server is not None else getattr(client.transport, "server", None)

    async def open(self) -> Connection:
        from app.northwind import write_tool_names

        if self.client is None:
            # Given the server itself, no MCP client at all (fastmcp's client stack, auth
            # included, costs ~0.2 s to import): its own listing runs the same middleware
            # and gives the same tool definitions as tools/list.
            listed = [tool.to_mcp_tool() for tool in await self.local_server.list_tools()]
        else:
            await self.client.__aenter__()
            listed = await self.client.list_tools()
        self.tools = [self._wrap(tool) for tool in listed]
        self.write_tools = write_tool_names(listed)
        return self

    async def close(self) -> None:
        if self.client is not None:
            await self.client.__aexit__(None, None, None)

    def _wrap(self, tool) -> BaseTool:
        name = tool.name
        client = self.client
        local = self.local_server

        async def call(config: RunnableConfig, **arguments: Any) -> tuple[str, Any]:
            conversation = config["configurable"]["northwind_conversation"]
            if local is not None:  # same tools and errors, no JSON-RPC round trip
                from fastmcp.exceptions import ToolError

                from app.northwind import call_in_process

                try:
                    result = await call_in_process(local, conversation, name, arguments)
                except ToolError as exc:
                    raise ToolException(str(exc)) from exc
                text = _reply_text(result)
                return (text, parse_reply(text))
            try:
                result = await client.call_tool(name, arguments, meta={CONVERSATION_META: conversation},
                                                raise_on_error=False, timeout=TOOL_TIMEOUT_S)
            except TimeoutError as exc:
                raise ToolNoReply(f"tool {name} did not answer within {TOOL_TIMEOUT_S:g} s") from exc
            text = _reply_text(result)
            if result.is_error:
                raise ToolException(text)
            data = parse_reply(text)
            return (text, data)

        return StructuredTool(
            name=name,
            description=tool.description or name,
            args_schema=tool.input_schema,
            coroutine=call,
            response_format="content_and_artifact",
            handle_tool_error=_error_text,
        )

    async def writes(self, conversation: str) -> list[dict]:
        """The server's own write log for one conversation: read in-process when the server
        lives here (no protocol round trip per run), else as its MCP resource."""
        if self.local_server is not None:
            from app.northwind import server_writes

            return server_writes(self.local_server, conversation)
        contents = await self.client.read_resource(f"northwind://conversations/{conversation}/writes")
        return json.loads(contents[0].text) if contents else []

    async def release(self, conversation: str) -> None:
        """Free a finished conversation's world on the server: the server never evicts a
        world with writes on its own, and one connection serves every conversation of a gate,
        so an unreleased world would count against the session's cap (4,096) until the
        connection closes. In process directly; over MCP by reading its release resource."""
        if self.local_server is not None:
            from app.northwind import release_conversation

            release_conversation(self.local_server, conversation)
            return
        from app.northwind import release_uri

        await self.client.read_resource(release_uri(conversation))


class ToolNoReply(Exception):
    """A tool call got no reply in time. Not a ToolException on purpose: it ends the run,
    and the Turn keeps the call with no result, so scorers fail it closed."""


TOOL_TIMEOUT_S = 30.0


def target_for(transport: str, hardened: bool):
    """What a fastmcp Client connects to: the server object (in-process) or a stdio child."""
    if transport == "memory":
        from app.northwind import build_server

        return build_server(hardened=hardened)
    if transport == "stdio":
        from fastmcp.client.transports import StdioTransport

        args = ["-m", "app.northwind"] + (["--hardened"] if hardened else [])
        # The MCP SDK passes a child only a safe subset of the environment; forward ours
        # (NORTHWIND_FAULT among them) explicitly.
        env = {k: v for k, v in os.environ.items()
               if k in ("PATH", "HOME", "PYTHONPATH", "NORTHWIND_FAULT", "NORTHWIND_MAX_CONVERSATIONS")}
        env["FASTMCP_LOG_LEVEL"] = os.environ.get("FASTMCP_LOG_LEVEL", "WARNING")  # no start-up banner per run
        return StdioTransport(command=sys.executable, args=args, env=env, keep_alive=False)
    raise ValueError(f"unknown transport {transport!r} (memory or stdio)")
