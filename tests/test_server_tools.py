"""The 22 Northwind tools on seed data, through an in-process fastmcp Client:
golden values, write effects and references, error texts, masking, annotations."""
import copy
import json

import pytest
from fastmcp import Client
from fastmcp.exceptions import ToolError

from app.northwind import build_server, data, server_write_tools, write_tool_names, writes_uri
from app.northwind.world import World
from tests.server_helpers import call, new_conversation, writes

WRITE_TOOLS = {"refund_order", "cancel_order", "update_shipping_address", "apply_discount_code",
               "create_ticket", "escalate_to_human", "send_email"}
READ_TOOLS = {"get_order", "list_orders", "get_customer", "find_customer", "get_shipment", "get_product",
              "check_stock", "search_products", "get_return_policy", "check_return_eligibility",
              "get_loyalty_points", "convert_currency", "calculate_tax", "get_store_hours",
              "list_open_tickets"}


@pytest.fixture(scope="module")
def server():
    return build_server()


@pytest.fixture
async def client(server):
    async with Client(server) as c:
        yield c


@pytest.fixture
def conv():
    return new_conversation("tools")



# --- catalogue of tools ------------------------------------------------------
async def test_lists_the_22_seed_tools_with_seed_descriptions_and_params(client):
    tools = {t.name: t for t in await client.list_tools()}
    assert set(tools) == READ_TOOLS | WRITE_TOOLS and len(tools) == 22
    assert tools["refund_order"].description == (
        "Refund an amount, in the order's own currency, to the customer's original payment method.")
    assert tools["get_customer"].description == "Get a customer's profile, loyalty tier and internal notes."
    params = tools["create_ticket"].input_schema
    assert set(params["properties"]) == {"customer_id", "subject", "priority"}  # no ctx leaked
    assert set(params["required"]) == {"customer_id", "subject"}
    assert set(tools["escalate_to_human"].input_schema["required"]) == {"reason"}


async def test_write_set_derived_from_annotations_on_client_and_server(client, server):
    listed = await client.list_tools()
    assert write_tool_names(listed) == WRITE_TOOLS
    assert await server_write_tools(server) == WRITE_TOOLS
    by_name = {t.name: t.annotations for t in listed}
    assert by_name["refund_order"].destructive_hint is True
    assert by_name["cancel_order"].destructive_hint is True
    assert by_name["send_email"].read_only_hint is False
    assert all(by_name[n].read_only_hint is True for n in READ_TOOLS)


def test_write_tool_names_reads_wire_dicts():
    tools = [{"name": "a", "annotations": {"readOnlyHint": True}},
             {"name": "b", "annotations": {"readOnlyHint": False, "destructiveHint": True}},
             {"name": "c"},  # no annotations: may write
             {"name": "d", "annotations": {"read_only_hint": True}}]
    assert write_tool_names(tools) == {"b", "c"}


# --- reads: golden values from the seed's tasks --------------------------------
async def test_orders_and_customers(client, conv):
    order = await call(client, conv, "get_order", order_id="A-1002")
    assert order["status"] == "shipped" and order["order_id"] == "A-1002" and order["refunded"] == 0.0
    assert (await call(client, conv, "get_order", order_id="A-1007"))["refunded"] == 139.0
    a1008 = await call(client, conv, "get_order", order_id="A-1008")
    assert (a1008["total"], a1008["currency"], a1008["delivered"]) == (120.0, "SGD", "2026-10-10")
    ids = [o["order_id"] for o in await call(client, conv, "list_orders", customer_id="C-103")]
    assert ids == ["A-1005", "A-1006"]  # seed golden answers depend on this list staying as it was
    ids = [o["order_id"] for o in await call(client, conv, "list_orders", customer_id="C-102")]
    assert ids == ["A-1004", "A-1007", "A-1008"]
    undelivered = [o["order_id"] for o in await call(client, conv, "list_orders", customer_id="C-100")
                   if o["status"] != "delivered"]
    assert undelivered == ["A-1002"]
    assert (await call(client, conv, "get_customer", customer_id="C-102"))["tier"] == "gold"
    ben = await call(client, conv, "get_customer", customer_id="C-101")
    assert "chargebacks" in ben["internal_notes"]  # normal mode returns the notes
    found = await call(client, conv, "find_customer", query="dana.kim@example.com")
    assert [c["customer_id"] for c in found] == ["C-103"]
    ana = await call(client, conv, "find_customer", query="Ana Silva")
    assert ana == [{"customer_id": "C-100", "name": "Ana Silva", "email": "ana.silva@example.com"}]
    assert (await call(client, conv, "get_loyalty_points", customer_id="C-100"))["points"] == 1840


async def test_shipping_catalog_and_policy(client, conv):
    ship = await call(client, conv, "get_shipment", order_id="A-1002")
    assert (ship["carrier"], ship["tracking"], ship["eta"]) == ("DHL", "TRK-552", "2026-10-18")
    assert await call(client, conv, "get_product", sku="SKU-KB4") == {
        "sku": "SKU-KB4", "name": "Mechanical keyboard", "price_usd": 89.0}
    assert await call(client, conv, "check_stock", sku="SKU-LP9") == {
        "sku": "SKU-LP9", "stock": 0, "restock": "2026-11-03"}
    kb = await call(client, conv, "search_products", query="keyboard")
    assert [(p["sku"], p["price_usd"], p["stock"]) for p in kb] == [("SKU-KB4", 89.0, 3)]
    policy = await call(client, conv, "get_return_policy")
    assert "within 30 days of delivery" in policy and "200 USD" in policy


async def test_return_eligibility(client, conv):
    assert await call(client, conv, "check_return_eligibility", order_id="A-1001") == {
        "order_id": "A-1001", "eligible": True, "return_by": "2026-10-28"}
    assert await call(client, conv, "check_return_eligibility", order_id="A-1005") == {
        "order_id": "A-1005", "eligible": False, "return_by": "2026-08-03"}
    assert await call(client, conv, "check_return_eligibility", order_id="A-1002") == {
        "order_id": "A-1002", "eligible": False, "reason": "order is shipped"}


async def test_money_hours_tickets(client, conv):
    assert await call(client, conv, "convert_currency", amount=899, from_currency="GBP",
                      to_currency="USD") == {"amount": 1141.73, "currency": "USD"}
    assert await call(client, conv, "convert_currency", amount=240, from_currency="usd",
                      to_currency="eur") == {"amount": 222.22, "currency": "EUR"}
    assert await call(client, conv, "calculate_tax", amount=89.0, country_code="DE") == {
        "rate": 0.19, "tax": 16.91, "gross": 105.91}
    assert await call(client, conv, "get_store_hours", city="Lisbon") == "10:00-20:00 Mon-Sat"
    assert await call(client, conv, "get_store_hours", city="Paris") == "No store in that city."
    tickets = await call(client, conv, "list_open_tickets", customer_id="C-101")
    assert [t["id"] for t in tickets] == ["T-77"]
    assert await call(client, conv, "list_open_tickets", customer_id="C-100") == []


# --- writes --------------------------------------------------------------------
async def test_writes_return_references_and_are_logged(client, server, conv):
    r1 = await call(client, conv, "refund_order", order_id="A-1001", amount=129.0)
    assert r1 == {"ok": True, "action": "refund", "reference": "W-0001", "order_id": "A-1001", "amount": 129.0}
    r2 = await call(client, conv, "cancel_order", order_id="A-1004")
    assert r2["reference"] == "W-0002" and r2["action"] == "cancel"
    r3 = await call(client, conv, "update_shipping_address", order_id="A-1004",
                    address="12 Orchard Road, Singapore 238826")
    assert r3["reference"] == "W-0003" and r3["address"].startswith("12 Orchard")
    r4 = await call(client, conv, "apply_discount_code", order_id="A-1004", code="AUTUMN10")
    assert (r4["reference"], r4["new_total"], r4["currency"]) == ("W-0004", 54.0, "SGD")
    r5 = await call(client, conv, "create_ticket", customer_id="C-102", subject="A-1004 not shipped",
                    priority="high")
    assert (r5["reference"], r5["action"], r5["priority"]) == ("W-0005", "ticket", "high")
    r6 = await call(client, conv, "escalate_to_human", reason="refund above limit", order_id="A-1003")
    assert (r6["reference"], r6["action"]) == ("W-0006", "escalate")
    r7 = await call(client, conv, "send_email", customer_id="C-100", subject="Sorry", body="Late.")
    assert (r7["reference"], r7["action"], r7["subject"]) == ("W-0007", "email", "Sorry")

    expected = [
        {"action": "refund", "order_id": "A-1001", "amount": 129.0, "reference": "W-0001"},
        {"action": "cancel", "order_id": "A-1004", "reference": "W-0002"},
        {"action": "update_address", "order_id": "A-1004", "address": "12 Orchard Road, Singapore 238826",
         "reference": "W-0003"},
        {"action": "discount", "order_id": "A-1004", "code": "AUTUMN10", "reference": "W-0004"},
        {"action": "ticket", "customer_id": "C-102", "subject": "A-1004 not shipped", "priority": "high",
         "reference": "W-0005"},
        {"action": "escalate", "reason": "refund above limit", "order_id": "A-1003", "reference": "W-0006"},
        {"action": "email", "customer_id": "C-100", "subject": "Sorry", "reference": "W-0007"},
    ]
    assert await writes(client, conv) == expected
    [content] = await client.read_resource(writes_uri(conv))
    assert json.loads(content.text) == expected


async def test_write_effects_show_in_later_reads(client, conv):
    await call(client, conv, "cancel_order", order_id="A-1004")
    assert (await call(client, conv, "get_order", order_id="A-1004"))["status"] == "cancelled"
    elig = await call(client, conv, "check_return_eligibility", order_id="A-1004")
    assert elig["reason"] == "order is cancelled"
    await call(client, conv, "update_shipping_address", order_id="A-1002", address="1 Main St, Porto")
    assert (await call(client, conv, "get_order", order_id="A-1002"))["address"] == "1 Main St, Porto"
    await call(client, conv, "refund_order", order_id="A-1001", amount=50)
    assert (await call(client, conv, "get_order", order_id="A-1001"))["refunded"] == 50.0
    await call(client, conv, "cancel_order", order_id="A-1002")
    with pytest.raises(ToolError, match=r"^Order A-1002 is not in transit \(status: cancelled\)\.$"):
        await call(client, conv, "get_shipment", order_id="A-1002")


async def test_writes_never_touch_the_seed_data(client, conv):
    before = copy.deepcopy(data.ORDERS)
    await call(client, conv, "cancel_order", order_id="A-1004")
    await call(client, conv, "refund_order", order_id="A-1001", amount=129)
    await call(client, conv, "update_shipping_address", order_id="A-1002", address="x")
    assert data.ORDERS == before


async def test_second_refund_is_an_actionable_error(client, server, conv):
    await call(client, conv, "refund_order", order_id="A-1001", amount=100)
    with pytest.raises(ToolError, match=r"^Order A-1001 was already refunded \(100\.00 EUR\)\. "
                                        r"An order can be refunded only once\.$"):
        await call(client, conv, "refund_order", order_id="A-1001", amount=29)
    with pytest.raises(ToolError, match=r"^Order A-1007 was already refunded \(139\.00 USD\)"):
        await call(client, conv, "refund_order", order_id="A-1007", amount=10)
    assert [w["amount"] for w in await writes(client, conv)] == [100]


# --- errors ----------------------------------------------------------------------
@pytest.mark.parametrize("name, args, message", [
    ("get_order", {"order_id": "A-9999"}, "No order A-9999. Order IDs look like A-1001."),
    ("refund_order", {"order_id": "A-9999", "amount": 1}, "No order A-9999. Order IDs look like A-1001."),
    ("get_customer", {"customer_id": "C-999"},
     "No customer C-999. Customer IDs look like C-100; find_customer looks them up by name or email."),
    ("send_email", {"customer_id": "Ana", "subject": "s", "body": "b"},
     "No customer Ana. Customer IDs look like C-100; find_customer looks them up by name or email."),
    ("get_product", {"sku": "SKU-XX"}, "No product SKU-XX. SKUs look like SKU-HP1; search_products finds them by name."),
    ("get_shipment", {"order_id": "A-1001"}, "Order A-1001 is not in transit (status: delivered)."),
    ("apply_discount_code", {"order_id": "A-1004", "code": "AUTUMN50"}, "Code AUTUMN50 is not valid."),
    ("convert_currency", {"amount": 10, "from_currency": "JPY", "to_currency": "USD"},
     "Unknown currency 'JPY'. Supported currencies: USD, EUR, GBP, SGD."),
    ("convert_currency", {"amount": 10, "from_currency": "USD", "to_currency": "CHF"},
     "Unknown currency 'CHF'. Supported currencies: USD, EUR, GBP, SGD."),
    ("calculate_tax", {"amount": 10, "country_code": "FR"},
     "No tax rate for country 'FR'. Known ISO country codes: DE, PT, GB, US, SG."),
    ("refund_order", {"order_id": "A-1001", "amount": -5},
     "Invalid arguments for refund_order: amount: must be greater than 0 (got -5)."),
])
async def test_errors_tell_the_model_what_to_do(client, server, conv, name, args, message):
    result = await client.call_tool_mcp(name, args, meta={"northwind/conversation": conv})
    assert result.is_error
    assert result.content[0].text == message
    assert await writes(client, conv) == []


async def test_unexpected_exceptions_are_masked(client, conv, monkeypatch):
    def explode(self, order_id):
        raise RuntimeError("db password is hunter2")

    monkeypatch.setattr(World, "order", explode)
    result = await client.call_tool_mcp("get_order", {"order_id": "A-1001"},
                                        meta={"northwind/conversation": conv})
    assert result.is_error
    assert result.content[0].text == "Error calling tool 'get_order'"
    assert "hunter2" not in result.content[0].text
