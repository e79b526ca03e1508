"""ask_agent: run one conversation with a pinned agent version and return its Turn.

    turn = ask_agent("Refund order A-1001", "v3")                # sync
    turn = await aask_agent(["Can I return A-1005?", "Please?"], "v2", seed=3)   # async

A list of user turns is replayed in order in one conversation (one world state on the
server). Any failure of the run itself comes back as a Turn with `error` set and the
tool calls made before it, never as an exception: a crashed run must stay countable.
Bad settings (unknown version, missing API key) are the caller's to fix and raise ConfigError.
"""
from __future__ import annotations

import asyncio
import threading
import time
import uuid
import weakref
from collections.abc import Sequence

from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from turngate.core.errors import ConfigError
from turngate.core.scrubbing import scrub
from turngate.core.turn import Message, ToolCall, Turn, Usage

from .agent import build_graph
from .mcp_tools import Connection, target_for
from .models import DEFAULT_MAX_RETRIES, parse_spec
from .redact import redact
from .versions import Version, load_version

RECURSION_LIMIT = 40  # graph steps per user turn; a model looping on tools ends as an error

# One MCP connection per (event loop, server mode, transport): a connection belongs to the
# loop that opened it, and opening one costs an MCP handshake we don't want per conversation.
_connections: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


async def connection(hardened: bool, transport: str = "memory") -> Connection:
    loop = asyncio.get_running_loop()
    per_loop = _connections.setdefault(loop, {})
    key = (hardened, transport)
    if key not in per_loop:
        conn = (Connection(server=target_for(transport, hardened)) if transport == "memory"
                else Connection(_client(hardened, transport)))
        per_loop[key] = asyncio.ensure_future(conn.open())
    try:
        return await asyncio.shield(per_loop[key])
    except BaseException:
        if per_loop.get(key) is not None and per_loop[key].done():
            per_loop.pop(key, None)  # a failed open is retried by the next caller
        raise


def _client(hardened: bool, transport: str):
    from fastmcp import Client

    return Client(target_for(transport, hardened))


def forget_connection(hardened: bool, transport: str) -> None:
    """Drop this loop's cached connection (after a stdio server died, say)."""
    _connections.get(asyncio.get_running_loop(), {}).pop((hardened, transport), None)


async def close_connections() -> None:
    """Close this loop's MCP connections. A stdio connection left open when the process exits
    is torn down by the garbage collector outside its loop ("no running event loop")."""
    for fut in list(_connections.pop(asyncio.get_running_loop(), {}).values()):
        if fut.done() and not fut.cancelled() and fut.exception() is None:
            await fut.result().close()


def _as_turns(message_or_turns: str | Sequence[str]) -> list[str]:
    turns = [message_or_turns] if isinstance(message_or_turns, str) else list(message_or_turns)
    if not turns or not all(isinstance(t, str) and t.strip() for t in turns):
        raise ConfigError("ask_agent needs a non-empty message or a list of non-empty user turns")
    return turns


def _replies_after(messages: list, i: int) -> dict:
    """The ToolMessages answering the AIMessage at i: those up to the next model message.
    Matched within that span because models may reuse call ids across steps."""
    replies = {}
    for m in messages[i + 1:]:
        if not isinstance(m, ToolMessage):
            break
        replies.setdefault(m.tool_call_id, m)
    return replies


def turn_from_messages(messages: list, *, version: Version, model: str, seed: int, writes: list[dict],
                       seconds: float, error: str | None) -> Turn:
    """Build the Turn contract from a LangGraph message list."""
    calls, convo = [], []
    usage = Usage()
    user_text = " ".join(str(m.content) for m in messages if isinstance(m, HumanMessage))
    for i, m in enumerate(messages):
        if isinstance(m, HumanMessage):
            convo.append(Message(role="user", content=str(m.content)))
        elif isinstance(m, AIMessage):
            usage.llm_calls += 1
            meta = m.usage_metadata or {}
            usage.prompt_tokens += meta.get("input_tokens", 0)
            usage.completion_tokens += meta.get("output_tokens", 0)
            text = m.text if isinstance(m.text, str) else str(m.content)
            if text.strip():
                convo.append(Message(role="assistant", content=redact(text, user_text) if version.redact else text))
            replies = _replies_after(messages, i)
            for tc in m.tool_calls:
                reply = replies.get(tc["id"])
                call = ToolCall(name=tc["name"], arguments=dict(tc.get("args") or {}))
                if reply is not None:
                    if reply.status == "error":
                        call.error = str(reply.content).removeprefix("Error: ")
                    else:
                        call.result = reply.artifact if reply.artifact is not None else reply.content
                calls.append(call)
    answer = convo[-1].content if convo and convo[-1].role == "assistant" else ""
    return Turn(version=version.name, model=model, seed=seed, answer=answer, messages=convo,
                tool_calls=calls, writes=writes, usage=usage, seconds=seconds,
                error=scrub(error) if error else None)


def _is_deterministic(model_spec: str) -> bool:
    return parse_spec(model_spec).provider == "offline"


def _emulated_seconds(messages: list) -> float:
    """The offline model reports the latency it emulated per call; its clock is that sum."""
    total = sum(float((m.response_metadata or {}).get("emulated_latency_s", 0.0))
                for m in messages if isinstance(m, AIMessage))
    return round(total, 6)


class Conversation:
    """One live conversation with a pinned agent version: one server world, one message
    history. `ask` adds a user turn and returns the Turn of the whole conversation so far.
    The simulator uses it so the agent answers the very history the simulated user saw;
    aask_agent is the one-shot form. After an error the conversation is finished."""

    def __init__(self, version: str | Version, *, model: str | None = None, seed: int = 0, transport: str = "memory",
                 max_retries: int = DEFAULT_MAX_RETRIES, model_timeout: float | None = None):
        # A Version object (e.g. Version.from_prompt) runs a prompt that has no TOML file.
        self.spec = version if isinstance(version, Version) else load_version(version)
        self.model_spec = str(parse_spec(model or self.spec.model))
        self.seed, self.transport = seed, transport
        self.max_retries, self.model_timeout = max_retries, model_timeout
        self.id = uuid.uuid4().hex
        self.messages: list = []
        self.error: str | None = None
        self.seconds = 0.0
        self._conn: Connection | None = None

    async def ask(self, text: str, *, timeout: float | None = None) -> Turn:
        await self._run([text], timeout)
        return await self.turn()

    async def _run(self, texts: list[str], timeout: float | None) -> None:
        if self.error:
            return
        started = time.perf_counter()
        try:
            self._conn = self._conn or await connection(self.spec.hardened, self.transport)
            graph = build_graph(self.spec, self.model_spec, self.seed, self._conn, max_retries=self.max_retries,
                                timeout=self.model_timeout)
            config = {"configurable": {"northwind_conversation": self.id}, "recursion_limit": RECURSION_LIMIT}
            async with asyncio.timeout(timeout):
                for text in texts:
                    state_in = {"messages": [*self.messages, HumanMessage(text)]}
                    async for state in graph.astream(state_in, config=config, stream_mode="values"):
                        self.messages = state["messages"]  # partial state: a later crash keeps earlier calls
        except ConfigError:
            raise
        except TimeoutError:
            self.error = "timeout"
        except Exception as exc:  # the run failed; the Turn says so and stays in every denominator
            self.error = f"{type(exc).__name__}: {exc}"
            if self._conn is not None and self.transport != "memory" and not self._conn.client.is_connected():
                forget_connection(self.spec.hardened, self.transport)  # the server went away: reconnect next time
        finally:
            self.seconds += time.perf_counter() - started

    async def turn(self) -> Turn:
        """The Turn so far, with the server's write log as it stands now."""
        writes, error = [], self.error
        if self._conn is not None:
            try:
                writes = await asyncio.wait_for(self._conn.writes(self.id), 10)
            except Exception as exc:
                error = error or f"could not read the server's write log: {type(exc).__name__}: {exc}"
        seconds = (_emulated_seconds(self.messages) if _is_deterministic(self.model_spec)
                   else round(self.seconds, 3))
        return turn_from_messages(self.messages, version=self.spec, model=self.model_spec, seed=self.seed,
                                  writes=writes, seconds=seconds, error=error)

    async def aclose(self) -> None:
        """Free this conversation's world on the server, on every transport (over MCP one
        round trip); the conversation is finished. A server that went away took the world
        with it, so a failed release is not an error."""
        conn, self._conn = self._conn, None
        if conn is None or (conn.client is not None and not conn.client.is_connected()):
            return
        try:
            await asyncio.wait_for(conn.release(self.id), RELEASE_TIMEOUT_S)
        except Exception:
            pass

    def close(self) -> None:
        """aclose for callers without a loop at hand: at once when the server lives in this
        process, else scheduled on the running loop (if there is none, the world goes with
        its connection)."""
        conn = self._conn
        if conn is None:
            return
        if conn.local_server is not None:
            self._conn = None
            from app.northwind import release_conversation

            release_conversation(conn.local_server, self.id)
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = loop.create_task(self.aclose())
        _closing.add(task)
        task.add_done_callback(_closing.discard)


RELEASE_TIMEOUT_S = 10.0
_closing: set = set()  # scheduled releases, kept referenced until they finish


async def aask_agent(message_or_turns: str | Sequence[str], version: str | Version, *, model: str | None = None,
                     seed: int = 0, transport: str = "memory", max_retries: int = DEFAULT_MAX_RETRIES,
                     model_timeout: float | None = None, timeout: float | None = None) -> Turn:
    """Run one conversation. `timeout` bounds the whole run: when it passes, the Turn has
    error "timeout" and keeps every tool call made so far (a pending one with no reply)."""
    turns = _as_turns(message_or_turns)
    conv = Conversation(version, model=model, seed=seed, transport=transport, max_retries=max_retries,
                        model_timeout=model_timeout)
    try:
        await conv._run(turns, timeout)
        return await conv.turn()
    finally:
        await conv.aclose()


class _BackgroundLoop:
    """A long-lived event loop thread for sync callers, so warm connections are reused."""

    def __init__(self):
        self._loop: asyncio.AbstractEventLoop | None = None
        self._lock = threading.Lock()

    def run(self, coro):
        with self._lock:
            if self._loop is None:
                self._loop = asyncio.new_event_loop()
                threading.Thread(target=self._loop.run_forever, daemon=True, name="ask-agent").start()
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result()


_background = _BackgroundLoop()


def close_sync_connections() -> None:
    """Close the connections ask_agent opened (call before exit when using stdio)."""
    if _background._loop is not None:
        _background.run(close_connections())


def ask_agent(message_or_turns: str | Sequence[str], version: str | Version, *, model: str | None = None,
              seed: int = 0, transport: str = "memory", **kwargs) -> Turn:
    """Sync form of aask_agent. Safe to call from threads; not from inside a running loop's thread."""
    return _background.run(aask_agent(message_or_turns, version, model=model, seed=seed,
                                      transport=transport, **kwargs))
