"""`python -m app.northwind [--hardened]` serves the same server over stdio, the
conversation meta survives the real transport, bad arguments and malformed lines get
short errors and change nothing, and sessions do not see each other's worlds."""
import asyncio
import json
from pathlib import Path

import pytest
from fastmcp import Client
from fastmcp.client.transports import StdioTransport

from tests import prefork

REPO = Path(__file__).resolve().parent.parent


def stdio_client(*flags: str) -> Client:
    # keep_alive=False: the subprocess ends with the client instead of lingering.
    return Client(StdioTransport(command=prefork.python(), args=["-m", "app.northwind", *flags],
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


# --- integrity probes through the real stdio server ------------------------------------
BIG = "x" * 10_000_000  # a 10 MB argument


async def refunded_and_writes(c, conv) -> tuple[float, list]:
    order = await c.call_tool("get_order", {"order_id": "A-1001"}, meta={"northwind/conversation": conv})
    [log] = await c.read_resource(f"northwind://conversations/{conv}/writes")
    return order.data["refunded"], json.loads(log.text)


@pytest.mark.parametrize("flags", [(), ("--hardened",)])
async def test_stdio_bad_arguments_are_short_errors_and_change_nothing(flags):
    conv = "probe"
    meta = {"northwind/conversation": conv}
    probes = [
        ("refund_order", {"order_id": "A-1001", "amount": "NaN"}, "amount: Input should be a valid number"),
        ("refund_order", {"order_id": "A-1001", "amount": "Infinity"}, "amount: Input should be a valid number"),
        ("refund_order", {"order_id": "A-1001", "amount": float("nan")}, "amount: Input should be a valid number"),
        ("refund_order", {"order_id": "A-1001", "amount": True}, "amount: Input should be a valid number"),
        ("refund_order", {"order_id": "A-1001", "amount": -129}, "amount: must be greater than 0"),
        ("refund_order", {"order_id": BIG, "amount": 1}, "order_id: at most 200 characters allowed"),
        ("update_shipping_address", {"order_id": "A-1004", "address": BIG}, "address: at most 2000 characters"),
        ("cancel_order", {"order_id": BIG}, "order_id: at most 200 characters allowed"),
        ("create_ticket", {"customer_id": "C-100", "subject": "s", "priority": "urgent"},
         "priority: must be one of low, normal, high"),
    ]
    async with stdio_client(*flags) as c:
        for name, args, expected in probes:
            result = await c.call_tool(name, args, meta=meta, raise_on_error=False)
            text = result.content[0].text
            assert result.is_error and expected in text, (name, text)
            assert len(text) < 300  # a prefix of the input at most, never the input
        assert await refunded_and_writes(c, conv) == (0.0, [])
        order = await c.call_tool("get_order", {"order_id": "A-1004"}, meta=meta)
        assert order.data["status"] == "processing" and "address" not in order.data
        # over-payment: an error in normal mode, a refusal in hardened mode; never written
        over = await c.call_tool("refund_order", {"order_id": "A-1001", "amount": 129.01}, meta=meta,
                                 raise_on_error=False)
        if flags:
            assert over.data["ok"] is False and "above what was paid" in over.data["error"]
        else:
            assert over.is_error and over.content[0].text == (
                "Refund of 129.01 EUR is above what was paid for A-1001 (129.00 EUR).")
        assert await refunded_and_writes(c, conv) == (0.0, [])
        # the one real refund still works once; a second is refused
        ok = await c.call_tool("refund_order", {"order_id": "A-1001", "amount": 129}, meta=meta)
        assert ok.data["ok"] is True
        again = await c.call_tool("refund_order", {"order_id": "A-1001", "amount": 1}, meta=meta,
                                  raise_on_error=False)
        assert again.is_error or again.data["ok"] is False
        refunded, log = await refunded_and_writes(c, conv)
    assert refunded == 129.0 and [w["amount"] for w in log] == [129.0]


async def test_stdio_another_session_cannot_see_a_conversations_writes():
    meta = {"northwind/conversation": "shared-id"}
    async with stdio_client() as owner, stdio_client() as other:
        await owner.call_tool("refund_order", {"order_id": "A-1001", "amount": 129}, meta=meta)
        assert (await refunded_and_writes(owner, "shared-id"))[0] == 129.0
        assert await refunded_and_writes(other, "shared-id") == (0.0, [])


class RawStdio:
    """The stdio server driven line by line, for what no SDK client sends."""

    def __init__(self, proc):
        self.proc = proc

    async def send(self, line: str) -> None:
        self.proc.stdin.write(line.encode() + b"\n")
        await self.proc.stdin.drain()

    async def reply(self) -> dict:
        # Waits for the server's next line (the signal); the bound only stops a hung test.
        while True:
            line = await asyncio.wait_for(self.proc.stdout.readline(), 120)
            assert line, "the server closed stdout"
            message = json.loads(line)
            if "id" in message:  # skip notifications
                return message


@pytest.fixture
async def raw():
    proc = await asyncio.create_subprocess_exec(
        prefork.python(), "-m", "app.northwind", cwd=str(REPO), stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    try:
        yield RawStdio(proc)
    finally:
        proc.stdin.close()
        await proc.wait()


async def test_stdio_malformed_json_gets_a_parse_error_and_the_server_carries_on(raw):
    await raw.send('{"jsonrpc": "2.0", "id": 1, "method": ')
    parse = await raw.reply()
    assert (parse["id"], parse["error"]["code"]) == (None, -32700)
    assert parse["error"]["message"].startswith("Parse error: Invalid JSON: EOF while parsing")
    await raw.send("[1, 2, 3]")
    error = (await raw.reply())["error"]
    assert error["code"] == -32600 and error["message"].startswith("Invalid Request")
    await raw.send("{" + "x" * 1_000_000)  # a 1 MB bad line: the error stays short
    big = await raw.reply()
    assert big["error"]["code"] == -32700 and len(json.dumps(big)) < 300
    await raw.send('{"jsonrpc": "2.0", "id": 2, "method": "ping"}')
    assert await raw.reply() == {"jsonrpc": "2.0", "id": 2, "result": {}}


async def test_stdio_nan_and_infinity_literals_are_rejected(raw):
    """Python's JSON reader accepts NaN and Infinity literals; a raw client can send them."""
    await raw.send(json.dumps({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "raw", "version": "0"}}}))
    assert "result" in await raw.reply()
    await raw.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')
    for i, literal in enumerate(["NaN", "Infinity", "-Infinity", "1e999"], start=1):
        call = {"jsonrpc": "2.0", "id": i, "method": "tools/call",
                "params": {"name": "refund_order", "arguments": {"order_id": "A-1001", "amount": 0}}}
        await raw.send(json.dumps(call).replace('"amount": 0', f'"amount": {literal}'))
        result = (await raw.reply())["result"]
        assert result["isError"] is True, literal
        assert "amount: Input should be a finite number" in result["content"][0]["text"], literal
    await raw.send('{"jsonrpc": "2.0", "id": 9, "method": "tools/call", "params": {"name": "get_order", '
                   '"arguments": {"order_id": "A-1001"}}}')
    assert (await raw.reply())["result"]["structuredContent"]["refunded"] == 0.0


@pytest.mark.parametrize("bad_id", ["null", "1.5", "true", "{}", '{"a": 1}', "[]", "[1]"])
async def test_stdio_request_with_an_invalid_id_gets_an_invalid_request_error(raw, bad_id):
    """Ids are strings or integers: the SDK reads any other id as a notification, which gets
    no reply, so a client waiting on it would hang. It gets -32600 with id null instead."""
    await raw.send(f'{{"jsonrpc": "2.0", "id": {bad_id}, "method": "ping"}}')
    error = await raw.reply()
    assert error["id"] is None and error["error"]["code"] == -32600
    assert error["error"]["message"].startswith("Invalid Request: id must be a string or an integer, got ")
    await raw.send('{"jsonrpc": "2.0", "method": "notifications/initialized"}')  # a real notification: no reply
    await raw.send('{"jsonrpc": "2.0", "id": "next", "method": "ping"}')  # and the server carries on
    assert await raw.reply() == {"jsonrpc": "2.0", "id": "next", "result": {}}
