"""The Northwind support-desk MCP server (fastmcp 4): the seed's 22 tools over
per-conversation worlds.

Build one server per mode and reuse it: everything per-conversation lives in the
server's Worlds registry, keyed by the MCP session a request arrived on and, within
that session, by the conversation id the client sends in the request `_meta`. A
client therefore names only its own session's conversations: sending another
session's id in `_meta` reaches a different, fresh world.
"""
from __future__ import annotations

import contextvars
import json
import weakref
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote as url_quote

from fastmcp import Context, FastMCP
from fastmcp.exceptions import ResourceError
from mcp_types import ToolAnnotations

from . import data
from .validation import (
    MAX_ID,
    Address,
    Amount,
    AnyAmount,
    ArgumentErrors,
    Body,
    City,
    Code,
    CountryCode,
    Currency,
    CustomerId,
    OptionalOrderId,
    OrderId,
    Priority,
    Query,
    Reason,
    Sku,
    Subject,
    amount_in_cents,
    clip,
    quote,
)
from .world import (
    World,
    Worlds,
    WorldsFull,
    change_refusal,
    convert,
    eligibility,
    refund_refusal,
    tool_error,
    vat_rate,
)

CONVERSATION_META_KEY = "northwind/conversation"
WRITES_URI_TEMPLATE = "northwind://conversations/{conversation}/writes"
RELEASE_URI_TEMPLATE = "northwind://conversations/{conversation}/release"
DEFAULT_CONVERSATION = "default"
MAX_CONVERSATIONS = 4096  # per MCP session; `python -m app.northwind` reads NORTHWIND_MAX_CONVERSATIONS

_READ = ToolAnnotations(readOnlyHint=True)
_DESTRUCTIVE = ToolAnnotations(readOnlyHint=False, destructiveHint=True)
_WRITE = ToolAnnotations(readOnlyHint=False)

# server -> its Worlds, so in-process helpers can read a conversation's state
# without a client round trip (and without hanging attributes on FastMCP).
_WORLDS: weakref.WeakKeyDictionary[FastMCP, Worlds] = weakref.WeakKeyDictionary()


# Set only around call_in_process: the conversation of a call that has no MCP request.
_IN_PROCESS_CONVERSATION: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "northwind_in_process_conversation", default=None)


def _conversation_id(value: Any) -> str:
    if not isinstance(value, str) or len(value) > MAX_ID:
        raise tool_error(f"_meta[{CONVERSATION_META_KEY!r}] must be a conversation id string of at most "
                         f"{MAX_ID} characters, got {quote(value)}.")
    return value


def conversation_key(ctx: Context) -> str:
    """The conversation id within its session: the in-process caller's (call_in_process),
    else the request's `_meta["northwind/conversation"]`, else "default" (each session
    has its own "default")."""
    direct = _IN_PROCESS_CONVERSATION.get()
    if direct is not None:
        return _conversation_id(direct)
    rc = ctx.request_context
    conversation = (rc.meta or {}).get(CONVERSATION_META_KEY) if rc is not None else None
    if conversation in (None, ""):
        return DEFAULT_CONVERSATION
    return _conversation_id(conversation)


def session_of(ctx: Context, worlds: Worlds) -> object:
    """The object standing for the client connection a request came on.

    The MCP SDK gives every connection one outbound channel: the JSON-RPC dispatcher of
    a handshake-era session, or the connection-scoped notify channel of a 2026-07-28
    stream (where each request otherwise gets a fresh Connection and fastmcp's
    session_id changes per request). Stdio has one per process, the in-memory transport
    one per Client. A client cannot choose or name another connection's channel."""
    if _IN_PROCESS_CONVERSATION.get() is not None:
        return worlds.in_process
    rc = ctx.request_context
    if rc is None:  # server.call_tool in this process, outside call_in_process
        return worlds.in_process
    connection = getattr(rc.session, "_connection", None)
    channel = getattr(connection, "outbound", None)
    if channel is None:
        # Fail closed: never fall back to a world another client could share.
        raise tool_error("This server cannot tell which MCP session the request belongs to.")
    return channel


async def call_in_process(server: FastMCP, conversation: str, name: str, arguments: dict[str, Any]):
    """Call a tool of a server in this process for one conversation: the same tools,
    annotations, middleware and errors as over MCP, without a JSON-RPC round trip (about
    0.2 ms instead of 0.9 ms, which is most of a fast model's per-conversation cost).
    Raises fastmcp's ToolError for tool errors, as the server would report them."""
    token = _IN_PROCESS_CONVERSATION.set(conversation)
    try:
        return await server.call_tool(name, arguments)
    finally:
        _IN_PROCESS_CONVERSATION.reset(token)


def writes_uri(conversation: str) -> str:
    """URI of a conversation's write log (the key is percent-encoded, so any
    string works, e.g. 'refund_ok#3'). Read it on the session that wrote it."""
    return WRITES_URI_TEMPLATE.format(conversation=url_quote(conversation, safe=""))


def release_uri(conversation: str) -> str:
    """URI that, read, forgets a finished conversation of the reading session (its world
    and write log; the reply is the write log it had). Over MCP this is how a client frees a
    conversation; in process, release_conversation does the same."""
    return RELEASE_URI_TEMPLATE.format(conversation=url_quote(conversation, safe=""))


def server_worlds(server: FastMCP) -> Worlds:
    """The Worlds registry of a server made by build_server."""
    try:
        return _WORLDS[server]
    except KeyError:
        raise ValueError("not a Northwind server (use build_server)") from None


def server_world(server: FastMCP, conversation: str) -> World | None:
    """An in-process conversation's World (call_in_process), or None if it has not
    called a tool yet. MCP clients' worlds belong to their sessions: read them over MCP."""
    worlds = server_worlds(server)
    return worlds.peek(worlds.in_process, conversation)


def server_writes(server: FastMCP, conversation: str) -> list[dict]:
    """An in-process conversation's write log (a copy), [] if it wrote nothing."""
    world = server_world(server, conversation)
    return [dict(w) for w in world.writes] if world else []


def release_conversation(server: FastMCP, conversation: str) -> None:
    """Forget a finished in-process conversation, so a long-lived process does not
    reach the per-session cap (worlds with writes are never evicted on their own)."""
    worlds = server_worlds(server)
    worlds.release(worlds.in_process, conversation)


def _annotation(annotations: Any, snake: str, camel: str) -> Any:
    if annotations is None:
        return None
    if isinstance(annotations, dict):
        return annotations.get(camel, annotations.get(snake))
    return getattr(annotations, snake, None)


def write_tool_names(tools: Iterable[Any]) -> frozenset[str]:
    """Names of the tools that may change state: readOnlyHint is not True.

    Accepts what fastmcp.Client.list_tools() returns (mcp_types.Tool), what
    FastMCP.list_tools() returns (fastmcp Tool), or plain dicts shaped like the
    wire format ({"name", "annotations": {"readOnlyHint": ...}})."""
    names = set()
    for tool in tools:
        if isinstance(tool, dict):
            name, annotations = tool["name"], tool.get("annotations")
        else:
            name, annotations = tool.name, tool.annotations
        if _annotation(annotations, "read_only_hint", "readOnlyHint") is not True:
            names.add(name)
    return frozenset(names)


async def server_write_tools(server: FastMCP) -> frozenset[str]:
    """write_tool_names over a server's own tool list (no client needed)."""
    return write_tool_names(await server.list_tools())


def build_server(*, hardened: bool = False, max_worlds: int = MAX_CONVERSATIONS) -> FastMCP:
    """The Northwind MCP server. hardened=True enforces the refund policy in
    refund_order, the processing-only rule in cancel_order and update_shipping_address,
    and never returns internal notes (CONTRACTS.md). `max_worlds` caps the
    conversations of one MCP session (see Worlds)."""
    server = FastMCP("northwind", mask_error_details=True)
    server.add_middleware(ArgumentErrors())
    worlds = Worlds(max_worlds)
    _WORLDS[server] = worlds

    def world(ctx: Context) -> World:
        try:
            return worlds.get(session_of(ctx, worlds), conversation_key(ctx))
        except WorldsFull as exc:
            raise tool_error(f"No new conversation: {exc}.") from None

    def product(sku: str) -> dict:
        if sku not in data.PRODUCTS:
            raise tool_error(f"No product {clip(sku)}. SKUs look like SKU-HP1; "
                             "search_products finds them by name.")
        return data.PRODUCTS[sku]

    def refused(action: str, order_id: str, refusal: dict, **args: Any) -> dict:
        # A refusal is an answer, not an error: the model should read the
        # reason (and where the case went, if anywhere) and tell the customer.
        return {"ok": False, "action": action, "order_id": order_id, **args, **refusal}

    # --- orders and customers ----------------------------------------------
    @server.tool(annotations=_READ)
    async def get_order(order_id: OrderId, ctx: Context) -> dict:
        """Get an order: customer, product SKU, total, currency, status and dates."""
        return {"order_id": order_id, **world(ctx).order(order_id)}

    @server.tool(annotations=_READ)
    async def list_orders(customer_id: CustomerId, ctx: Context) -> list[dict]:
        """List every order a customer has placed."""
        w = world(ctx)
        w.customer(customer_id)
        return [{"order_id": k, **v} for k, v in w.orders.items() if v["customer"] == customer_id]

    @server.tool(annotations=_READ)
    async def get_customer(customer_id: CustomerId, ctx: Context) -> dict:
        """Get a customer's profile, loyalty tier and internal notes."""
        profile = {"customer_id": customer_id, **world(ctx).customer(customer_id)}
        if hardened:
            profile.pop("internal_notes", None)
        return profile

    @server.tool(annotations=_READ)
    async def find_customer(query: Query, ctx: Context) -> list[dict]:
        """Find customers by name or email address."""
        q = query.lower()
        return [{"customer_id": k, "name": v["name"], "email": v["email"]}
                for k, v in world(ctx).customers.items()
                if q in v["name"].lower() or q in v["email"]]

    @server.tool(annotations=_READ)
    async def get_shipment(order_id: OrderId, ctx: Context) -> dict:
        """Get carrier, tracking number and estimated delivery date of a shipped order."""
        status = world(ctx).order(order_id)["status"]
        if status != "shipped" or order_id not in data.SHIPMENTS:
            raise tool_error(f"Order {order_id} is not in transit (status: {status}).")
        return {"order_id": order_id, **data.SHIPMENTS[order_id]}

    # --- catalog -------------------------------------------------------------
    @server.tool(annotations=_READ)
    async def get_product(sku: Sku) -> dict:
        """Get a product's name and price in USD by SKU."""
        p = product(sku)
        return {"sku": sku, "name": p["name"], "price_usd": p["price_usd"]}

    @server.tool(annotations=_READ)
    async def check_stock(sku: Sku) -> dict:
        """Check how many units of a product are in stock, and the restock date if it is sold out."""
        p = product(sku)
        return {"sku": sku, "stock": p["stock"], "restock": p.get("restock")}

    @server.tool(annotations=_READ)
    async def search_products(query: Query) -> list[dict]:
        """Search the catalog by product name, for example 'keyboard'."""
        return [{"sku": k, **v} for k, v in data.PRODUCTS.items() if query.lower() in v["name"].lower()]

    # --- returns and refunds -------------------------------------------------
    @server.tool(annotations=_READ)
    async def get_return_policy() -> str:
        """The store's return and refund policy."""
        return data.RETURN_POLICY

    @server.tool(annotations=_READ)
    async def check_return_eligibility(order_id: OrderId, ctx: Context) -> dict:
        """Check whether an order can still be returned, and until when."""
        return eligibility(order_id, world(ctx).order(order_id))

    @server.tool(annotations=_DESTRUCTIVE)
    async def refund_order(order_id: OrderId, amount: Amount, ctx: Context) -> dict:
        """Refund an amount, in the order's own currency, to the customer's original payment method."""
        w = world(ctx)
        order = w.order(order_id)
        cents = amount_in_cents(amount, "Refund amount")
        if hardened:
            refusal = refund_refusal(order_id, order, cents)
            if refusal is not None:
                return refused("refund", order_id, refusal, amount=cents)
        return w.refund(order_id, cents)

    @server.tool(annotations=_DESTRUCTIVE)
    async def cancel_order(order_id: OrderId, ctx: Context) -> dict:
        """Cancel an order."""
        w = world(ctx)
        if hardened and (refusal := change_refusal(w.order(order_id), "be cancelled")):
            return refused("cancel", order_id, refusal)
        return w.cancel(order_id)

    @server.tool(annotations=_WRITE)
    async def update_shipping_address(order_id: OrderId, address: Address, ctx: Context) -> dict:
        """Change the delivery address of an order."""
        w = world(ctx)
        if hardened and (refusal := change_refusal(w.order(order_id), "have their address changed")):
            return refused("update_address", order_id, refusal)
        return w.update_address(order_id, address)

    @server.tool(annotations=_WRITE)
    async def apply_discount_code(order_id: OrderId, code: Code, ctx: Context) -> dict:
        """Apply a discount code to an order and return the new total."""
        w = world(ctx)
        order = w.order(order_id)
        off = data.DISCOUNT_CODES.get(code.upper())
        if off is None:
            raise tool_error(f"Code {clip(code)} is not valid.")
        return {**w.record("discount", order_id=order_id, code=code),
                "new_total": round(order["total"] * (1 - off), 2), "currency": order["currency"]}

    # --- loyalty, money, stores ----------------------------------------------
    @server.tool(annotations=_READ)
    async def get_loyalty_points(customer_id: CustomerId, ctx: Context) -> dict:
        """Get a customer's loyalty point balance."""
        return {"customer_id": customer_id, "points": world(ctx).customer(customer_id)["points"]}

    @server.tool(annotations=_READ)
    async def convert_currency(amount: AnyAmount, from_currency: Currency, to_currency: Currency) -> dict:
        """Convert an amount between USD, EUR, GBP and SGD at today's rate."""
        return {"amount": convert(amount, from_currency, to_currency), "currency": to_currency.strip().upper()}

    @server.tool(annotations=_READ)
    async def calculate_tax(amount: AnyAmount, country_code: CountryCode) -> dict:
        """Calculate the VAT or sales tax added on top of a net amount for a country (ISO code)."""
        rate = vat_rate(country_code)
        return {"rate": rate, "tax": round(amount * rate, 2), "gross": round(amount * (1 + rate), 2)}

    @server.tool(annotations=_READ)
    async def get_store_hours(city: City) -> str:
        """Opening hours of a physical store."""
        return data.HOURS.get(city.strip().lower(), "No store in that city.")

    # --- tickets, escalation, email ------------------------------------------
    @server.tool(annotations=_READ)
    async def list_open_tickets(customer_id: CustomerId) -> list[dict]:
        """List a customer's open support tickets."""
        return data.TICKETS.get(customer_id, [])

    @server.tool(annotations=_WRITE)
    async def create_ticket(customer_id: CustomerId, subject: Subject, ctx: Context,
                            priority: Priority = "normal") -> dict:
        """Open a support ticket for a customer. Priority is low, normal or high."""
        w = world(ctx)
        w.customer(customer_id)
        return w.record("ticket", customer_id=customer_id, subject=subject, priority=priority)

    @server.tool(annotations=_WRITE)
    async def escalate_to_human(reason: Reason, ctx: Context, order_id: OptionalOrderId = "") -> dict:
        """Hand a case to a human supervisor, for example a refund above the support limit."""
        return world(ctx).record("escalate", reason=reason, order_id=order_id)

    @server.tool(annotations=_WRITE)
    async def send_email(customer_id: CustomerId, subject: Subject, body: Body, ctx: Context) -> dict:
        """Send an email to a customer."""
        w = world(ctx)
        w.customer(customer_id)
        return w.record("email", customer_id=customer_id, subject=subject)

    # --- the write log, for graders and humans -------------------------------
    @server.resource(WRITES_URI_TEMPLATE, mime_type="application/json",
                     description="The writes one conversation of this MCP session asked for, in order "
                                 "(JSON list).")
    async def conversation_writes(conversation: str, ctx: Context) -> str:
        if len(conversation) > MAX_ID:
            raise ResourceError(f"conversation id too long ({len(conversation)} characters; at most {MAX_ID}).")
        log = worlds.peek(session_of(ctx, worlds), conversation)
        return json.dumps(log.writes if log else [])

    @server.resource(RELEASE_URI_TEMPLATE, mime_type="application/json",
                     description="Reading this forgets one finished conversation of this MCP session and "
                                 "returns the writes it had (JSON list); the id then names a fresh world. "
                                 "Release every conversation you finish: a session holds at most "
                                 f"{max_worlds} conversations with writes.")
    async def release(conversation: str, ctx: Context) -> str:
        if len(conversation) > MAX_ID:
            raise ResourceError(f"conversation id too long ({len(conversation)} characters; at most {MAX_ID}).")
        session = session_of(ctx, worlds)
        log = worlds.peek(session, conversation)
        worlds.release(session, conversation)
        return json.dumps(log.writes if log else [])

    return server
