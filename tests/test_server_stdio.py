"""`python -m app.northwind [--hardened]` serves the same server over stdio, and
the conversation meta survives the real transport."""
import json
import sys
from pathlib import Path

from fastmcp import Client
from fastmcp.client.transports import StdioTransport

REPO = Path(__file__).resolve().parent.parent


def stdio_client(*flags: str) -> Client:
    # keep_alive=False: the subprocess ends with the client instead of lingering.
    return Client(StdioTransport(command=sys.executable, args=["-m", "app.northwind", *flags],
                                 cwd=str(REPO), keep_alive=False))


async def test_stdio_tool_write_and_writes_resource():
    meta = {"northwind/conversation": "stdio-1"}
    async with stdio_client() as c:
        tools = await c.list_tools()
        assert len(tools) == 22
        fx = await c.call_tool("convert_currency", {"amount": 240, "from_currency": "USD", "to_currency": "EUR"},
                               meta=meta)
        assert fx.data == {"amount": 222.22, "currency": "EUR"}
        cancel = await c.call_tool("cancel_order", {"order_id": "A-1004"}, meta=meta)
        assert cancel.data == {"ok": True, "action": "cancel", "reference": "W-0001", "order_id": "A-1004"}
        order = await c.call_tool("get_order", {"order_id": "A-1004"}, meta=meta)
        assert order.data["status"] == "cancelled"
        notes = await c.call_tool("get_customer", {"customer_id": "C-101"}, meta=meta)
        assert "internal_notes" in notes.data  # normal mode
        [log] = await c.read_resource("northwind://conversations/stdio-1/writes")
        [default_log] = await c.read_resource("northwind://conversations/default/writes")
    assert json.loads(log.text) == [{"action": "cancel", "order_id": "A-1004", "reference": "W-0001"}]
    assert json.loads(default_log.text) == []  # the meta key, not the fallback, chose the world


async def test_stdio_hardened_flag():
    meta = {"northwind/conversation": "stdio-h"}
    async with stdio_client("--hardened") as c:
        ben = await c.call_tool("get_customer", {"customer_id": "C-101"}, meta=meta)
        assert "internal_notes" not in ben.data
        late = await c.call_tool("refund_order", {"order_id": "A-1005", "amount": 240}, meta=meta)
        assert late.data["routed_to"] == "human_review"
        ok = await c.call_tool("refund_order", {"order_id": "A-1001", "amount": 129}, meta=meta)
        assert ok.data["reference"] == "W-0001"
        [log] = await c.read_resource("northwind://conversations/stdio-h/writes")
    assert json.loads(log.text) == [{"action": "refund", "order_id": "A-1001", "amount": 129.0,
                                     "reference": "W-0001"}]
