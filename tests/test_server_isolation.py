"""Per-conversation worlds: no state leaks between conversations, references
count per conversation, the conversation key falls back as CONTRACTS.md says,
and a conversation stays cheap enough for the benchmark."""
import asyncio
import json
import time
import uuid

import pytest
from fastmcp import Client

from app.northwind import build_server, server_world, server_worlds, server_writes, writes_uri
from tests.server_helpers import call, new_conversation


@pytest.fixture(scope="module")
def server():
    return build_server()


new_conv = new_conversation


async def refund_and_cancel(server, i: int) -> tuple[str, list[dict]]:
    """One conversation on its own client: refund A-1001 by a conversation-specific
    amount, cancel A-1004, then read both back."""
    conv = new_conv(f"iso{i}")
    amount = float(i + 1)
    async with Client(server) as c:
        before = await call(c, conv, "get_order", order_id="A-1004")
        refund = await call(c, conv, "refund_order", order_id="A-1001", amount=amount)
        await asyncio.sleep(0)  # let the other conversations interleave
        cancel = await call(c, conv, "cancel_order", order_id="A-1004")
        a1001 = await call(c, conv, "get_order", order_id="A-1001")
        a1004 = await call(c, conv, "get_order", order_id="A-1004")
    assert before["status"] == "processing"  # no other conversation's cancel leaked in
    assert (refund["reference"], cancel["reference"]) == ("W-0001", "W-0002")
    assert a1001["refunded"] == amount and a1004["status"] == "cancelled"
    return conv, [refund, cancel]


async def test_50_concurrent_conversations_do_not_leak(server):
    results = await asyncio.gather(*(refund_and_cancel(server, i) for i in range(50)))
    assert len({conv for conv, _ in results}) == 50
    for i, (conv, _) in enumerate(results):
        assert server_writes(server, conv) == [
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
        [content] = await c.read_resource(writes_uri(b))
    assert (ref_a["reference"], ref_b["reference"]) == ("W-0002", "W-0001")
    assert json.loads(content.text) == [{"action": "escalate", "reason": "check", "order_id": "",
                                         "reference": "W-0001"}]


async def test_without_meta_modern_connections_share_default(server):
    # 2026-07-28 connections (Client's default) have no MCP session, so every
    # request without our meta lands in the "default" world.
    fresh = build_server()
    async with Client(fresh) as c1:
        await call(c1, None, "cancel_order", order_id="A-1004")
    async with Client(fresh) as c2:
        assert (await call(c2, None, "get_order", order_id="A-1004"))["status"] == "cancelled"
    assert [w["action"] for w in server_writes(fresh, "default")] == ["cancel"]


async def test_without_meta_legacy_sessions_each_get_a_world():
    fresh = build_server()
    async with Client(fresh, mode="legacy") as c1:
        await call(c1, None, "cancel_order", order_id="A-1004")
        assert (await call(c1, None, "get_order", order_id="A-1004"))["status"] == "cancelled"
    async with Client(fresh, mode="legacy") as c2:
        assert (await call(c2, None, "get_order", order_id="A-1004"))["status"] == "processing"
    assert server_writes(fresh, "default") == []
    assert len(server_worlds(fresh)) == 2  # one per session id


async def test_worlds_are_a_bounded_lru():
    small = build_server(max_worlds=3)
    async with Client(small) as c:
        for conv in ("w1", "w2", "w3"):
            await call(c, conv, "cancel_order", order_id="A-1004")
        await call(c, "w1", "get_order", order_id="A-1001")  # w1 is now most recent
        await call(c, "w4", "get_order", order_id="A-1001")  # evicts w2
    worlds = server_worlds(small)
    assert len(worlds) == 3 and "w2" not in worlds
    assert server_writes(small, "w1")[0]["action"] == "cancel"
    assert server_world(small, "w2") is None


async def test_reading_the_write_log_creates_no_world(server):
    conv = new_conv("ghost")
    async with Client(server) as c:
        [content] = await c.read_resource(writes_uri(conv))
    assert json.loads(content.text) == []
    assert server_world(server, conv) is None


async def test_conversation_ids_with_url_characters(server):
    conv = f"refund_ok#3 / run {uuid.uuid4().hex[:6]}"
    async with Client(server) as c:
        await call(c, conv, "cancel_order", order_id="A-1004")
        [content] = await c.read_resource(writes_uri(conv))
    assert json.loads(content.text)[0]["action"] == "cancel"


async def test_a_conversation_is_fast_in_process(server):
    """Budget for the benchmark: connect, list tools, 5 calls. Minimum of 10
    runs so a busy machine does not make it flaky; measured ~8 ms."""
    async def conversation() -> float:
        conv = new_conv("speed")
        start = time.perf_counter()
        async with Client(server) as c:
            await c.list_tools()
            await call(c, conv, "find_customer", query="Ana Silva")
            await call(c, conv, "list_orders", customer_id="C-100")
            await call(c, conv, "check_return_eligibility", order_id="A-1001")
            await call(c, conv, "convert_currency", amount=129, from_currency="EUR", to_currency="USD")
            await call(c, conv, "refund_order", order_id="A-1001", amount=129)
        return time.perf_counter() - start

    await conversation()  # warm-up
    assert min([await conversation() for _ in range(10)]) < 0.050


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
