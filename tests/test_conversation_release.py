"""Finished conversations release their world on every transport, so a gate of any size
gives the same verdicts over stdio as in memory. The server's per-session cap (4,096 by
default) is lowered through NORTHWIND_MAX_CONVERSATIONS, so a few dozen conversations show
what 4,096 would: none refused, none silently answered without its write."""
from __future__ import annotations

import json

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from app.northwind import CONVERSATION_META_KEY, release_uri, writes_uri
from app.refund_agent.client import aask_agent, close_connections
from tests import prefork
from tests.test_gate import run as run_gate
from tests.test_server_stdio import REPO

CAP = 3


def capped_stdio_client(cap: int) -> Client:
    env = {"NORTHWIND_MAX_CONVERSATIONS": str(cap), "FASTMCP_LOG_LEVEL": "WARNING"}
    return Client(StdioTransport(command=prefork.python(), args=["-m", "app.northwind"], cwd=str(REPO), env=env,
                                 keep_alive=False))


async def cancel(client, conv: str):
    return await client.call_tool("cancel_order", {"order_id": "A-1004"}, meta={CONVERSATION_META_KEY: conv},
                                  raise_on_error=False)


async def test_the_lowered_cap_refuses_a_new_conversation_until_one_is_released():
    """The control: the cap is real over stdio, and reading the release URI frees a slot."""
    async with capped_stdio_client(CAP) as c:
        for i in range(CAP):
            assert not (await cancel(c, f"c{i}")).is_error
        refused = await cancel(c, "one-too-many")
        assert refused.is_error and "No new conversation" in refused.content[0].text
        [released] = await c.read_resource(release_uri("c0"))
        assert [w["action"] for w in json.loads(released.text)] == ["cancel"]  # the log it had
        [gone] = await c.read_resource(writes_uri("c0"))
        assert json.loads(gone.text) == []  # the id now names a fresh world
        assert not (await cancel(c, "one-too-many")).is_error
        [other] = await c.read_resource(writes_uri("c1"))
        assert len(json.loads(other.text)) == 1  # releasing one conversation touched no other


async def test_more_conversations_than_the_cap_all_write_over_stdio(monkeypatch):
    monkeypatch.setenv("NORTHWIND_MAX_CONVERSATIONS", str(CAP))
    try:
        turns = [await aask_agent("Please cancel order A-1004", "v3", seed=seed, transport="stdio")
                 for seed in range(3 * CAP)]
    finally:
        await close_connections()
    for turn in turns:
        assert turn.error is None
        assert not any(c.error and "No new conversation" in c.error for c in turn.tool_calls)
        assert [w["action"] for w in turn.writes] == ["cancel"]


def _verdicts(record: dict) -> list:
    return sorted((r["row_id"], r["seed"], sorted((k, v["passed"]) for k, v in r["verdicts"].items()),
                   [w["action"] for w in r["turn"]["writes"]]) for r in record["runs"])


def test_a_gate_over_stdio_past_the_cap_matches_the_same_gate_in_memory(tmp_path, monkeypatch):
    monkeypatch.setenv("NORTHWIND_MAX_CONVERSATIONS", str(CAP))
    args = ["--version", "v3", "--only", "refund_ok", "cancel_ok", "address_ok", "discount", "ticket_high",
            "--seeds", "0-2", "--parallelism", str(CAP - 1)]  # the cap bounds conversations live at once
    mem_code, mem, _ = run_gate(tmp_path / "memory", *args)
    stdio_code, stdio, _ = run_gate(tmp_path / "stdio", *args, "--transport", "stdio")
    writing = [r for r in stdio["runs"] if r["turn"]["writes"]]
    assert len(writing) > 2 * CAP  # the stdio session saw far more conversations with writes than its cap
    assert not [c for r in stdio["runs"] for c in r["turn"]["tool_calls"]
                if c.get("error") and "No new conversation" in c["error"]]
    assert stdio_code == mem_code
    assert _verdicts(stdio) == _verdicts(mem)
