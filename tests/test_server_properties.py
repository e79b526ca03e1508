"""Property: no sequence of tool calls, however malformed, makes a conversation's write
log disagree with its world, leaves a non-finite number anywhere, changes anything on a
failed or refused call, or breaks get_order. Hardened mode additionally never lets a
write through that its policy forbids.

Random tool names (the server's own and made-up ones), random argument names and
JSON-ish values: NaN, infinities, bools, huge and negative numbers, wrong types,
huge strings, numbers as strings; mixed with valid ids and amounts so that the
successful paths are exercised too.
"""
from __future__ import annotations

import asyncio
import copy
import json
import math
import uuid

from fastmcp.exceptions import ToolError
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from app.northwind import build_server, call_in_process, data, release_conversation, server_world
from app.northwind.world import to_usd

SERVERS = {False: build_server(), True: build_server(hardened=True)}
TOOLS = {t.name: t for t in asyncio.run(SERVERS[False].list_tools())}
PARAMS = sorted({p for t in TOOLS.values() for p in t.parameters.get("properties", {})})
READ_ONLY = {name for name, t in TOOLS.items() if t.annotations and t.annotations.read_only_hint}

ids = st.sampled_from([*data.ORDERS, *data.CUSTOMERS, *data.PRODUCTS, "A-9999", "C-999", "", " A-1001"])
weird_numbers = st.sampled_from([math.nan, math.inf, -math.inf, 1e308, -1e308, 5e-324, -0.0, 0, -1,
                                 10**30, 2**63, 0.001, 0.004, 0.005, 129.001])
amounts = st.sampled_from([1, 0.01, 10, 45.5, 60, 100, 120, 129, 129.0, 139, 157, 160, 200, 240, 899])
words = st.sampled_from(["NaN", "nan", "Infinity", "-Infinity", "inf", "1e999", "129", "true", "null",
                         "EUR", "usd", "DE", "lisbon", "AUTUMN10", "low", "normal", "high", "urgent", "@"])
huge = st.sampled_from(["x" * 100_000, "é" * 5_000, "A-1001" * 1_000])
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.floats(), weird_numbers,
                    amounts, ids, words, st.text(max_size=12), huge)
values = st.one_of(scalars, st.lists(scalars, max_size=3), st.dictionaries(st.text(max_size=5), scalars, max_size=2))
tool_names = st.one_of(st.sampled_from(sorted(TOOLS)), st.sampled_from(sorted(TOOLS)),
                       st.text(max_size=20), st.just("refund_order" * 10_000))


@st.composite
def tool_calls(draw):
    name = draw(tool_names)
    own = list(TOOLS[name].parameters.get("properties", {})) if name in TOOLS else []
    keys = draw(st.lists(st.sampled_from(own or PARAMS), unique=True, max_size=len(own) or 2))
    if draw(st.integers(0, 19)) == 0:
        keys += [f"k{i}" for i in range(500)]  # many unknown arguments: still a short error
    if own and draw(st.booleans()):
        keys = own  # all parameters: the calls that can succeed
    args = {k: draw(values) for k in keys}
    if draw(st.integers(0, 9)) == 0:
        args[draw(st.one_of(st.text(max_size=8), huge))] = draw(values)  # an unknown argument
    return name, args


def snapshot(world) -> tuple:
    return copy.deepcopy((world.orders, world.customers, world.writes)) if world else None


def walk(value):
    """Every scalar inside a nested structure."""
    if isinstance(value, dict):
        for v in value.values():
            yield from walk(v)
    elif isinstance(value, list | tuple):
        for v in value:
            yield from walk(v)
    else:
        yield value


def replay_checks(world, hardened: bool) -> None:
    """The write log, replayed on the seed, must give the world; hardened writes must obey the policy."""
    orders = copy.deepcopy(data.ORDERS)
    for n, w in enumerate(world.writes, start=1):
        assert w["reference"] == f"W-{n:04d}"
        order = orders.get(w.get("order_id"))
        if w["action"] == "refund":
            amount = w["amount"]
            assert type(amount) is float and math.isfinite(amount) and amount >= 0.01
            assert amount == round(amount, 2)
            assert order["refunded"] == 0 or not hardened  # one refund per order
            order["refunded"] = round(order["refunded"] + amount, 2)
            assert order["refunded"] <= order["total"] + 1e-9  # never more than was paid
            if hardened:
                assert order["status"] == "delivered" and order["delivered"] >= "2026-09-15"
                assert to_usd(order["refunded"], order["currency"]) <= data.REFUND_LIMIT_USD + 1e-9
        elif w["action"] in ("cancel", "update_address"):
            assert not hardened or order["status"] == "processing"
            if w["action"] == "cancel":
                order["status"] = "cancelled"
            else:
                order["address"] = w["address"]
        else:
            assert w["action"] in ("discount", "ticket", "escalate", "email")
    assert world.orders == orders
    assert world.customers == data.CUSTOMERS


async def run_sequence(hardened: bool, calls: list) -> None:
    server = SERVERS[hardened]
    conv = f"prop-{uuid.uuid4().hex}"
    try:
        for name, args in calls:
            before = snapshot(server_world(server, conv))
            try:
                result = await call_in_process(server, conv, name, args)
            except ToolError as exc:  # the only way a call may fail: an error the model can read
                assert len(str(exc)) < 400, str(exc)[:200]
                after = snapshot(server_world(server, conv))
                assert after == before or (before is None and after[2] == [])  # nothing changed
                continue
            reply = result.structured_content  # None for plain-text replies
            after = snapshot(server_world(server, conv))
            if name in READ_ONLY or (isinstance(reply, dict) and reply.get("ok") is False):
                assert after == before or (before is None and after[2] == [])
            else:
                assert len(after[2]) == (len(before[2]) if before else 0) + 1  # one write, logged once
        world = server_world(server, conv)
        if world is None:
            return
        assert all(not isinstance(v, float) or math.isfinite(v) for v in walk((world.orders, world.writes)))
        replay_checks(world, hardened)
        for order_id, order in world.orders.items():  # get_order works on every order afterwards
            got = await call_in_process(server, conv, "get_order", {"order_id": order_id})
            assert json.loads(got.content[0].text) == {"order_id": order_id, **order}
    finally:
        release_conversation(server, conv)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hardened=st.booleans(), calls=st.lists(tool_calls(), min_size=1, max_size=12))
def test_no_call_sequence_makes_the_write_log_disagree_with_the_world(hardened, calls):
    asyncio.run(run_sequence(hardened, calls))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(hardened=st.booleans(),
       steps=st.lists(st.tuples(st.sampled_from(["refund_order", "cancel_order", "update_shipping_address",
                                                 "get_order"]),
                                st.sampled_from(list(data.ORDERS)),
                                st.one_of(amounts, weird_numbers, st.floats(0, 1000), words)),
                      min_size=1, max_size=10))
def test_well_formed_write_sequences_keep_the_books(hardened, steps):
    """Fewer malformed calls, more that succeed: refunds, cancels and address changes on
    real orders in any order, as a model (or an attacker) could chain them."""
    calls = []
    for name, order_id, value in steps:
        args = {"order_id": order_id}
        if name == "refund_order":
            args["amount"] = value
        elif name == "update_shipping_address":
            args["address"] = f"{value} Main St"
        calls.append((name, args))
    asyncio.run(run_sequence(hardened, calls))
