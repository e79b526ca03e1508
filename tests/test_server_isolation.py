"""Per-conversation worlds: no state leaks between conversations or MCP sessions,
references count per conversation, a session's conversations are its own (the _meta
id selects only within it), the per-session cap never evicts a conversation with
writes, and a conversation stays cheap enough for the benchmark."""
import asyncio
import gc
import json
import uuid

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from app.northwind import (
    build_server,
    call_in_process,
    release_conversation,
    server_worlds,
    server_writes,
    writes_uri,
)
from app.northwind.world import Worlds
from tests.server_helpers import call, new_conversation, writes


@pytest.fixture(scope="module")
def server():
    return build_server()


new_conv = new_conversation


async def refund_and_cancel(client, i: int) -> tuple[str, list[dict]]:
    """One conversation: refund A-1001 by a conversation-specific amount, cancel
    A-1004, then read both back and the conversation's write log."""
    conv = new_conv(f"iso{i}")
    amount = float(i + 1)
    before = await call(client, conv, "get_order", order_id="A-1004")
    refund = await call(client, conv, "refund_order", order_id="A-1001", amount=amount)
    await asyncio.sleep(0)  # let the other conversations interleave
    cancel = await call(client, conv, "cancel_order", order_id="A-1004")
    a1001 = await call(client, conv, "get_order", order_id="A-1001")
    a1004 = await call(client, conv, "get_order", order_id="A-1004")
    assert before["status"] == "processing"  # no other conversation's cancel leaked in
    assert (refund["reference"], cancel["reference"]) == ("W-0001", "W-0002")
    assert a1001["refunded"] == amount and a1004["status"] == "cancelled"
    return conv, await writes(client, conv)


async def test_50_concurrent_conversations_do_not_leak(server):
    async with Client(server) as one, Client(server) as two:  # 25 conversations on each session
        results = await asyncio.gather(*(refund_and_cancel(one if i % 2 else two, i) for i in range(50)))
    assert len({conv for conv, _ in results}) == 50
    for i, (_, log) in enumerate(results):
        assert log == [
            {"action": "refund", "order_id": "A-1001", "amount": float(i + 1), "reference": "W-0001"},
            {"action": "cancel", "order_id": "A-1004", "reference": "W-0002"},
        ]


async def test_one_client_many_conversations_by_meta(server):
    a, b = new_conv("a"), new_conv("b")
    async with Client(server) as c:
        await call(c, a, "cancel_order", order_id="A-1004")
        assert (await call(c, b, "get_order", order_id="A-1004"))["status"] == "processing"
        ref_b = await call(c, b, "escalate_to_human", reason="check")
        ref_a = await call(c, a, "escalate_to_human", reason="check")
        log_b = await writes(c, b)
    assert (ref_a["reference"], ref_b["reference"]) == ("W-0002", "W-0001")
    assert log_b == [{"action": "escalate", "reason": "check", "order_id": "", "reference": "W-0001"}]


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_another_session_cannot_reach_a_conversation_by_its_meta_id(mode):
    """The _meta id selects a conversation within the caller's own MCP session only:
    a second client sending the same id (or none) gets fresh worlds, on the 2026-07-28
    protocol (no MCP session id) as on the handshake protocol."""
    kw = {} if mode == "auto" else {"mode": "legacy"}
    fresh = build_server()
    async with Client(fresh, **kw) as owner, Client(fresh, **kw) as other:
        for conv in ("shared-id", None):  # None: no _meta at all, the session's "default"
            await call(owner, conv, "refund_order", order_id="A-1001", amount=129)
            await call(owner, conv, "cancel_order", order_id="A-1004")
            assert (await call(owner, conv, "get_order", order_id="A-1001"))["refunded"] == 129.0
            seen = await call(other, conv, "get_order", order_id="A-1001")
            assert seen["refunded"] == 0.0
            assert (await call(other, conv, "get_order", order_id="A-1004"))["status"] == "processing"
            assert (await call(other, conv, "refund_order", order_id="A-1001", amount=129))["ok"] is True
            assert [w["action"] for w in await writes(owner, conv or "default")] == ["refund", "cancel"]
            assert [w["action"] for w in await writes(other, conv or "default")] == ["refund"]
    async with Client(fresh, **kw) as later:  # a new session starts from the seed again
        assert (await call(later, "shared-id", "get_order", order_id="A-1001"))["refunded"] == 0.0
        assert await writes(later, "shared-id") == []


async def test_in_process_conversations_are_not_reachable_over_mcp():
    fresh = build_server()
    await call_in_process(fresh, "conv-x", "cancel_order", {"order_id": "A-1004"})
    async with Client(fresh) as c:
        assert (await call(c, "conv-x", "get_order", order_id="A-1004"))["status"] == "processing"
        assert await writes(c, "conv-x") == []
    assert [w["action"] for w in server_writes(fresh, "conv-x")] == ["cancel"]


async def test_a_session_s_worlds_go_with_it():
    fresh = build_server()
    async with Client(fresh) as c:
        await call(c, "w1", "cancel_order", order_id="A-1004")
        await call(c, None, "get_order", order_id="A-1001")
        assert len(server_worlds(fresh)) == 2
    gc.collect()  # the session's channel is gone; its worlds are unreachable and dropped
    assert len(server_worlds(fresh)) == 0


async def test_past_the_cap_new_conversations_are_refused_and_none_with_writes_is_evicted():
    small = build_server(max_worlds=3)
    async with Client(small) as c, Client(small) as other:
        await call(c, "r1", "get_order", order_id="A-1001")  # no writes: may be dropped
        await call(c, "w1", "cancel_order", order_id="A-1004")
        await call(c, "w2", "cancel_order", order_id="A-1004")
        await call(c, "w3", "cancel_order", order_id="A-1004")  # full: drops r1 (same as a fresh world)
        assert len(server_worlds(small)) == 3
        with pytest.raises(ToolError, match=r"^No new conversation: this session already has 3 conversations "
                                            r"with writes, the server's limit; open a new MCP session"):
            await call(c, "w4", "get_order", order_id="A-1001")
        for conv in ("w1", "w2", "w3"):  # every conversation with writes is intact and usable
            assert (await call(c, conv, "get_order", order_id="A-1004"))["status"] == "cancelled"
            assert [w["action"] for w in await writes(c, conv)] == ["cancel"]
        with pytest.raises(ToolError, match="No new conversation"):  # r1 was dropped: it would be new
            await call(c, "r1", "get_order", order_id="A-1001")
        # another session has its own cap
        assert (await call(other, "w4", "cancel_order", order_id="A-1004"))["ok"] is True


async def test_released_in_process_conversations_free_their_slot():
    small = build_server(max_worlds=2)
    for conv in ("a", "b"):
        await call_in_process(small, conv, "cancel_order", {"order_id": "A-1004"})
    with pytest.raises(ToolError, match="No new conversation"):
        await call_in_process(small, "c", "get_order", {"order_id": "A-1004"})
    release_conversation(small, "a")
    assert server_writes(small, "a") == []
    await call_in_process(small, "c", "cancel_order", {"order_id": "A-1004"})
    assert [w["action"] for w in server_writes(small, "c")] == ["cancel"]


@pytest.mark.parametrize("conv, shown", [(12345, "12345"), ("x" * 10_000_000, "'" + "x" * 40 + "…'"),
                                         (["a"], "['a']")])
async def test_conversation_ids_must_be_short_strings(server, conv, shown):
    async with Client(server) as c:
        result = await c.call_tool_mcp("get_order", {"order_id": "A-1001"},
                                       meta={"northwind/conversation": conv})
    assert result.is_error
    text = result.content[0].text
    assert text == (f"_meta['northwind/conversation'] must be a conversation id string of at most 200 "
                    f"characters, got {shown}.")


async def test_reading_the_write_log_creates_no_world():
    fresh = build_server()
    async with Client(fresh) as c:
        [content] = await c.read_resource(writes_uri(new_conv("ghost")))
        assert json.loads(content.text) == []
        assert len(server_worlds(fresh)) == 0


async def test_conversation_ids_with_url_characters(server):
    conv = f"refund_ok#3 / run {uuid.uuid4().hex[:6]}"
    async with Client(server) as c:
        await call(c, conv, "cancel_order", order_id="A-1004")
        [content] = await c.read_resource(writes_uri(conv))
    assert json.loads(content.text)[0]["action"] == "cancel"


async def test_in_process_calls_keep_conversations_apart():
    """call_in_process (what the evals' adapter uses) gives each conversation its own world."""
    from fastmcp.exceptions import ToolError

    from app.northwind import build_server, call_in_process, server_writes

    server = build_server()
    first = await call_in_process(server, "conv-a", "refund_order", {"order_id": "A-1001", "amount": 129.0})
    assert '"reference":"W-0001"' in first.content[0].text.replace(" ", "")
    other = await call_in_process(server, "conv-b", "refund_order", {"order_id": "A-1001", "amount": 129.0})
    assert '"ok":true' in other.content[0].text.replace(" ", "")  # conv-a's refund is not conv-b's
    with pytest.raises(ToolError, match="already refunded"):
        await call_in_process(server, "conv-a", "refund_order", {"order_id": "A-1001", "amount": 1.0})
    assert [w["reference"] for w in server_writes(server, "conv-a")] == ["W-0001"]
    assert [w["order_id"] for w in server_writes(server, "conv-b")] == ["A-1001"]


async def test_the_agent_frees_its_in_process_worlds():
    """aask_agent reads the write log into the Turn, then releases the world, so a long
    gate (rows x trials) never meets the per-session cap."""
    from app.refund_agent.client import aask_agent, connection

    turn = await aask_agent("Cancel order A-1004, the customer changed their mind.", "v3")
    assert [w["action"] for w in turn.writes] == ["cancel"]
    assert len(server_worlds((await connection(True)).local_server)) == 0


def test_a_flood_of_new_ids_does_not_evict_a_live_conversation():
    """The issue's probe, 4,500 fresh ids after a write at the default cap (4,096), on the
    registry itself for speed (the MCP path is test_past_the_cap_..., with a small cap)."""
    worlds = Worlds()
    session = worlds.in_process  # any weak-referenceable object stands for a session
    worlds.get(session, "live").refund("A-1001", 129)
    for i in range(4_500):
        worlds.get(session, f"flood-{i}")
    assert len(worlds) == 4_096
    live = worlds.peek(session, "live")
    assert [w["action"] for w in live.writes] == ["refund"] and live.orders["A-1001"]["refunded"] == 129.0
