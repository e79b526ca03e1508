"""One conversation's world: a private copy of the data, its write log, and the
policy helpers (return window, USD conversion, hardened refund checks); and Worlds,
the registry of conversations per MCP session.

Every lookup error is a fastmcp ToolError whose text tells the model what to do
next; those messages reach the client even with mask_error_details=True. A write
validates everything first and mutates last, so a failed write leaves the world and
its write log as they were.
"""
from __future__ import annotations

import copy
import weakref
from collections import OrderedDict
from datetime import date, timedelta
from typing import Any

from . import data
from .validation import MAX_ID, amount_in_cents, clip, quote, text, tool_error

__all__ = ["World", "Worlds", "WorldsFull", "change_refusal", "convert", "eligibility",
           "refund_refusal", "tool_error", "vat_rate"]


def usd_rate(currency: str) -> float:
    """USD per one unit of `currency` at today's rate."""
    code = text(currency, "currency", MAX_ID).strip().upper()
    if code not in data.USD_PER:
        raise tool_error(f"Unknown currency {quote(currency)}. Supported currencies: {', '.join(data.USD_PER)}.")
    return data.USD_PER[code]


def to_usd(amount: float, currency: str) -> float:
    return amount * usd_rate(currency)


def convert(amount: float, from_currency: str, to_currency: str) -> float:
    return round(to_usd(amount, from_currency) / usd_rate(to_currency), 2)


def vat_rate(country_code: str) -> float:
    code = text(country_code, "country_code", MAX_ID).strip().upper()
    if code not in data.VAT:
        raise tool_error(f"No tax rate for country {quote(country_code)}. "
                         f"Known ISO country codes: {', '.join(data.VAT)}.")
    return data.VAT[code]


def return_by(order: dict) -> date | None:
    """Last day a delivered order can be returned; None if it was never delivered."""
    if order.get("delivered") is None:
        return None
    return date.fromisoformat(order["delivered"]) + timedelta(days=data.RETURN_DAYS)


def eligibility(order_id: str, order: dict, today: date = data.TODAY) -> dict:
    """check_return_eligibility's answer, shared by the hardened refund check."""
    if order["status"] != "delivered":
        return {"order_id": order_id, "eligible": False, "reason": f"order is {order['status']}"}
    last = return_by(order)
    return {"order_id": order_id, "eligible": today <= last, "return_by": last.isoformat()}


def refund_refusal(order_id: str, order: dict, amount: float) -> dict | None:
    """Hardened mode: why this refund must not be issued, or None if it may.

    Checked in the contract's order; the two cases support may not decide
    themselves (late return, large amount) are routed to human review. Paid and
    limit checks count what this conversation already refunded on the order.
    """
    elig = eligibility(order_id, order)
    if "reason" in elig:
        return {"error": elig["reason"]}
    if not elig["eligible"]:
        return {"error": f"order is outside the {data.RETURN_DAYS}-day return window "
                         f"(return by {elig['return_by']})", "routed_to": "human_review"}
    cur = order["currency"]
    if order["refunded"] > 0:
        return {"error": f"order was already refunded ({order['refunded']:.2f} {cur})"}
    total = order["refunded"] + amount
    if total > order["total"] + 1e-9:
        return {"error": f"amount {amount:.2f} {cur} is above what was paid ({order['total']:.2f} {cur})"}
    usd = to_usd(total, cur)
    if usd > data.REFUND_LIMIT_USD + 1e-9:
        return {"error": f"refund of {amount:.2f} {cur} = {usd:.2f} USD is above the "
                         f"{data.REFUND_LIMIT_USD:.0f} USD support limit", "routed_to": "human_review"}
    return None


# Policy: "Only orders with status "processing" can be cancelled or have their address changed."
CHANGEABLE_STATUS = "processing"


def change_refusal(order: dict, action: str) -> dict | None:
    """Hardened mode: why this cancel / address change must not happen, or None."""
    if order["status"] != CHANGEABLE_STATUS:
        return {"error": f"order is {order['status']}; only {CHANGEABLE_STATUS} orders can {action}"}
    return None


class World:
    """Mutable state of one conversation. Tools run on the event loop and never
    await while mutating, so a World needs no lock."""

    __slots__ = ("orders", "customers", "writes")

    def __init__(self) -> None:
        self.orders: dict[str, dict[str, Any]] = copy.deepcopy(data.ORDERS)
        self.customers: dict[str, dict[str, Any]] = copy.deepcopy(data.CUSTOMERS)
        self.writes: list[dict[str, Any]] = []

    def order(self, order_id: str) -> dict:
        if not isinstance(order_id, str) or order_id not in self.orders:
            raise tool_error(f"No order {clip(order_id)}. Order IDs look like A-1001.")
        return self.orders[order_id]

    def customer(self, customer_id: str) -> dict:
        if not isinstance(customer_id, str) or customer_id not in self.customers:
            raise tool_error(f"No customer {clip(customer_id)}. Customer IDs look like C-100; "
                             "find_customer looks them up by name or email.")
        return self.customers[customer_id]

    def record(self, action: str, **args: Any) -> dict:
        """Log a write; the reply carries a per-conversation reference W-0001, W-0002, ...
        Call it last: everything that can fail must have been checked before."""
        reference = f"W-{len(self.writes) + 1:04d}"
        self.writes.append({"action": action, **args, "reference": reference})
        return {"ok": True, "action": action, "reference": reference, **args}

    # --- writes with effects (CONTRACTS.md) --------------------------------
    def refund(self, order_id: str, amount: float) -> dict:
        order = self.order(order_id)
        cents = amount_in_cents(amount, "Refund amount")
        cur = order["currency"]
        if order["refunded"] > 0:
            raise tool_error(f"Order {order_id} was already refunded ({order['refunded']:.2f} "
                             f"{cur}). An order can be refunded only once.")
        if order["refunded"] + cents > order["total"] + 1e-9:
            raise tool_error(f"Refund of {cents:.2f} {cur} is above what was paid for {order_id} "
                             f"({order['total']:.2f} {cur}).")
        order["refunded"] = round(order["refunded"] + cents, 2)
        return self.record("refund", order_id=order_id, amount=cents)

    def cancel(self, order_id: str) -> dict:
        order = self.order(order_id)
        order["status"] = "cancelled"
        return self.record("cancel", order_id=order_id)

    def update_address(self, order_id: str, address: str) -> dict:
        order = self.order(order_id)
        text(address, "address")
        order["address"] = address
        return self.record("update_address", order_id=order_id, address=address)


class WorldsFull(Exception):
    """Raised inside Worlds; the server turns it into a ToolError."""


class Worlds:
    """MCP session -> conversation id -> World.

    A session is any weak-referenceable object standing for one client connection
    (the server uses the connection's outbound channel); its conversations vanish
    with it, so no other session can ever name them. `in_process` is the session of
    callers in this process (call_in_process). Each session holds at most `capacity`
    worlds: past that, the least recently used world WITHOUT writes is dropped (it
    equals a fresh one), and if every world has writes the new conversation is
    refused; a world with writes is never dropped behind its client's back."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self.in_process = _InProcess()
        self._sessions: weakref.WeakKeyDictionary[object, OrderedDict[str, World]] = weakref.WeakKeyDictionary()

    def get(self, session: object, conversation: str) -> World:
        """The conversation's World, created fresh on first use."""
        worlds = self._sessions.setdefault(session, OrderedDict())
        world = worlds.get(conversation)
        if world is not None:
            worlds.move_to_end(conversation)
            return world
        if len(worlds) >= self.capacity:
            idle = next((k for k, w in worlds.items() if not w.writes), None)
            if idle is None:
                raise WorldsFull(f"this session already has {len(worlds)} conversations with writes, "
                                 "the server's limit; open a new MCP session for more conversations")
            del worlds[idle]
        world = worlds[conversation] = World()
        return world

    def peek(self, session: object, conversation: str) -> World | None:
        """Read without creating or refreshing (reading a log must not make a world)."""
        worlds = self._sessions.get(session)
        return worlds.get(conversation) if worlds else None

    def release(self, session: object, conversation: str) -> None:
        """Forget a finished conversation (its caller has read what it needs)."""
        worlds = self._sessions.get(session)
        if worlds:
            worlds.pop(conversation, None)

    def conversations(self, session: object) -> list[str]:
        return list(self._sessions.get(session) or ())

    def __len__(self) -> int:
        return sum(len(w) for w in list(self._sessions.values()))


class _InProcess:
    """The session of in-process callers (a plain object: hashable, weak-referenceable)."""

    def __repr__(self) -> str:
        return "<in-process session>"
