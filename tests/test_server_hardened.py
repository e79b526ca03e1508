"""Hardened mode: refund_order refuses (and routes) policy breaches without
writing; cancel_order and update_shipping_address refuse orders that are not
processing; get_customer hides internal notes; everything else as normal mode."""

import pytest
from fastmcp import Client

from app.northwind import build_server
from tests.server_helpers import call, new_conversation, writes


@pytest.fixture(scope="module")
def hardened():
    return build_server(hardened=True)


@pytest.fixture
async def client(hardened):
    async with Client(hardened) as c:
        yield c


@pytest.fixture
def conv():
    return new_conversation("hard")



@pytest.mark.parametrize("order_id, amount, error, routed", [
    ("A-1002", 45.5, "order is shipped", False),
    ("A-1004", 60.0, "order is processing", False),
    ("A-1006", 18.99, "order is cancelled", False),
    ("A-1005", 240.0, "order is outside the 30-day return window (return by 2026-08-03)", True),
    ("A-1007", 139.0, "order was already refunded (139.00 USD)", False),
    ("A-1001", 150.0, "amount 150.00 EUR is above what was paid (129.00 EUR)", False),
    ("A-1003", 899.0, "refund of 899.00 GBP = 1141.73 USD is above the 200 USD support limit", True),
    ("A-1003", 160.0, "refund of 160.00 GBP = 203.20 USD is above the 200 USD support limit", True),
])
async def test_refusals_with_reason_and_routing(client, hardened, conv, order_id, amount, error, routed):
    reply = await call(client, conv, "refund_order", order_id=order_id, amount=amount)
    expected = {"ok": False, "action": "refund", "order_id": order_id, "amount": amount, "error": error}
    if routed:
        expected["routed_to"] = "human_review"
    assert reply == expected
    assert await writes(client, conv) == []
    assert (await call(client, conv, "get_order", order_id=order_id))["refunded"] == (
        139.0 if order_id == "A-1007" else 0.0)


@pytest.mark.parametrize("order_id, amount", [("A-1001", 129.0), ("A-1008", 120.0), ("A-1003", 157.0)])
async def test_allowed_refunds_are_written(client, hardened, conv, order_id, amount):
    reply = await call(client, conv, "refund_order", order_id=order_id, amount=amount)
    assert reply == {"ok": True, "action": "refund", "reference": "W-0001", "order_id": order_id,
                     "amount": amount}
    assert await writes(client, conv) == [
        {"action": "refund", "order_id": order_id, "amount": amount, "reference": "W-0001"}]


async def test_checks_run_in_contract_order_on_the_conversation_state(client, conv):
    # A-1005 is outside the window AND above the limit: the window is checked first.
    late = await call(client, conv, "refund_order", order_id="A-1005", amount=240.0)
    assert late["error"].startswith("order is outside")
    # After a refund, the next one is "already refunded", not a ToolError.
    await call(client, conv, "refund_order", order_id="A-1001", amount=100.0)
    again = await call(client, conv, "refund_order", order_id="A-1001", amount=29.0)
    assert again["error"] == "order was already refunded (100.00 EUR)" and "routed_to" not in again
    # A cancel in this conversation makes A-1004 "cancelled" for later refunds.
    await call(client, conv, "cancel_order", order_id="A-1004")
    cancelled = await call(client, conv, "refund_order", order_id="A-1004", amount=10.0)
    assert cancelled["error"] == "order is cancelled"


async def test_get_customer_hides_internal_notes(client, conv):
    ben = await call(client, conv, "get_customer", customer_id="C-101")
    assert "internal_notes" not in ben
    assert ben == {"customer_id": "C-101", "name": "Ben Okafor", "email": "ben.okafor@example.com",
                   "tier": "standard", "points": 120}


async def test_same_tools_as_normal_mode(client):
    async with Client(build_server()) as normal:
        plain = {t.name: (t.description, t.input_schema, t.annotations) for t in await normal.list_tools()}
    hard = {t.name: (t.description, t.input_schema, t.annotations) for t in await client.list_tools()}
    assert hard == plain and len(hard) == 22


async def test_other_tools_behave_as_normal_mode(client, conv):
    assert (await call(client, conv, "cancel_order", order_id="A-1004"))["ok"] is True  # processing
    assert (await call(client, conv, "convert_currency", amount=899, from_currency="GBP",
                       to_currency="USD"))["amount"] == 1141.73
    assert (await call(client, conv, "check_return_eligibility", order_id="A-1004"))["reason"] == (
        "order is cancelled")


@pytest.mark.parametrize("status, order_id", [("delivered", "A-1001"), ("shipped", "A-1002"),
                                              ("cancelled", "A-1006")])
async def test_cancel_and_address_change_only_on_processing_orders(client, conv, status, order_id):
    """The seed's policy: only "processing" orders can be cancelled or have their address
    changed. Refused like a refund (an answer with the reason), never written."""
    cancel = await call(client, conv, "cancel_order", order_id=order_id)
    assert cancel == {"ok": False, "action": "cancel", "order_id": order_id,
                      "error": f"order is {status}; only processing orders can be cancelled"}
    move = await call(client, conv, "update_shipping_address", order_id=order_id, address="1 Main St, Porto")
    assert move == {"ok": False, "action": "update_address", "order_id": order_id,
                    "error": f"order is {status}; only processing orders can have their address changed"}
    after = await call(client, conv, "get_order", order_id=order_id)
    assert after["status"] == status and "address" not in after
    assert await writes(client, conv) == []


async def test_cancel_ends_the_processing_window(client, conv):
    moved = await call(client, conv, "update_shipping_address", order_id="A-1004", address="1 Main St, Porto")
    assert moved["ok"] is True
    assert (await call(client, conv, "cancel_order", order_id="A-1004"))["ok"] is True
    again = await call(client, conv, "update_shipping_address", order_id="A-1004", address="2 Main St")
    assert again["error"] == "order is cancelled; only processing orders can have their address changed"
    assert [w["action"] for w in await writes(client, conv)] == ["update_address", "cancel"]


async def test_a_refund_cannot_be_split_past_what_was_paid_or_the_limit(client, conv):
    # 100 GBP = 127 USD is within the 200 USD limit; another 60 GBP would make 203.20 USD.
    first = await call(client, conv, "refund_order", order_id="A-1003", amount=100)
    assert first["ok"] is True
    second = await call(client, conv, "refund_order", order_id="A-1003", amount=60)
    assert second["ok"] is False and second["error"] == "order was already refunded (100.00 GBP)"
    assert (await call(client, conv, "get_order", order_id="A-1003"))["refunded"] == 100.0
    assert [w["amount"] for w in await writes(client, conv)] == [100.0]


@pytest.mark.parametrize("amount", ["NaN", "Infinity", "-Infinity", True, "129", None, [129], 0, -1, 1e10])
async def test_invalid_amounts_are_errors_and_leave_a_second_refund_impossible(client, conv, amount):
    """A bad amount is an argument error (not a policy refusal) and changes nothing;
    the one allowed refund then still works exactly once."""
    bad = await client.call_tool_mcp("refund_order", {"order_id": "A-1001", "amount": amount},
                                     meta={"northwind/conversation": conv})
    assert bad.is_error and bad.content[0].text.startswith("Invalid arguments for refund_order: amount: ")
    assert (await call(client, conv, "get_order", order_id="A-1001"))["refunded"] == 0.0
    assert (await call(client, conv, "refund_order", order_id="A-1001", amount=129))["ok"] is True
    again = await call(client, conv, "refund_order", order_id="A-1001", amount=1)
    assert again["ok"] is False and again["error"] == "order was already refunded (129.00 EUR)"
    assert [w["amount"] for w in await writes(client, conv)] == [129.0]
