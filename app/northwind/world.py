"""One conversation's world: a private copy of the data, its write log, and the
policy helpers (return window, USD conversion, hardened refund checks).

Every lookup error is a fastmcp ToolError whose text tells the model what to do
next; those messages reach the client even with mask_error_details=True.
"""
from __future__ import annotations

import copy
import logging
from collections import OrderedDict
from datetime import date, timedelta
from typing import Any

from fastmcp.exceptions import ToolError

from . import data

# Model-caused errors are expected (evals provoke them on purpose): log them at
# DEBUG so a benchmark's stderr is not flooded with "Error calling tool" lines.
_MODEL_ERROR_LEVEL = logging.DEBUG


def tool_error(message: str) -> ToolError:
    return ToolError(message, log_level=_MODEL_ERROR_LEVEL)


def usd_rate(currency: str) -> float:
    """USD per one unit of `currency` at today's rate."""
    code = currency.strip().upper()
    if code not in data.USD_PER:
        raise tool_error(f"Unknown currency {currency!r}. Supported currencies: {', '.join(data.USD_PER)}.")
    return data.USD_PER[code]


def to_usd(amount: float, currency: str) -> float:
    return amount * usd_rate(currency)


def convert(amount: float, from_currency: str, to_currency: str) -> float:
    return round(to_usd(amount, from_currency) / usd_rate(to_currency), 2)


def vat_rate(country_code: str) -> float:
    code = country_code.strip().upper()
    if code not in data.VAT:
        raise tool_error(f"No tax rate for country {country_code!r}. "
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
    themselves (late return, large amount) are routed to human review.
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
    if amount > order["total"] + 1e-9:
        return {"error": f"amount {amount:.2f} {cur} is above what was paid ({order['total']:.2f} {cur})"}
    usd = to_usd(amount, cur)
    if usd > data.REFUND_LIMIT_USD + 1e-9:
        return {"error": f"refund of {amount:.2f} {cur} = {usd:.2f} USD is above the "
                         f"{data.REFUND_LIMIT_USD:.0f} USD support limit", "routed_to": "human_review"}
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
        if order_id not in self.orders:
            raise tool_error(f"No order {order_id}. Order IDs look like A-1001.")
        return self.orders[order_id]

    def customer(self, customer_id: str) -> dict:
        if customer_id not in self.customers:
            raise tool_error(f"No customer {customer_id}. Customer IDs look like C-100; "
                             "find_customer looks them up by name or email.")
        return self.customers[customer_id]

    def record(self, action: str, **args: Any) -> dict:
        """Log a write; the reply carries a per-conversation reference W-0001, W-0002, ..."""
        reference = f"W-{len(self.writes) + 1:04d}"
        self.writes.append({"action": action, **args, "reference": reference})
        return {"ok": True, "action": action, "reference": reference, **args}

    # --- writes with effects (CONTRACTS.md) --------------------------------
    def refund(self, order_id: str, amount: float) -> dict:
        order = self.order(order_id)
        if amount <= 0:
            raise tool_error(f"Refund amount must be positive, got {amount}. "
                             f"Give the amount in the order's currency ({order['currency']}).")
        if order["refunded"] > 0:
            raise tool_error(f"Order {order_id} was already refunded ({order['refunded']:.2f} "
                             f"{order['currency']}). An order can be refunded only once.")
        order["refunded"] = round(order["refunded"] + amount, 2)
        return self.record("refund", order_id=order_id, amount=amount)

    def cancel(self, order_id: str) -> dict:
        self.order(order_id)["status"] = "cancelled"
        return self.record("cancel", order_id=order_id)

    def update_address(self, order_id: str, address: str) -> dict:
        self.order(order_id)["address"] = address
        return self.record("update_address", order_id=order_id, address=address)


class Worlds:
    """Conversation key -> World, least recently used evicted beyond `capacity`."""

    def __init__(self, capacity: int = 4096) -> None:
        self.capacity = capacity
        self._worlds: OrderedDict[str, World] = OrderedDict()

    def get(self, key: str) -> World:
        """The conversation's World, created fresh on first use."""
        world = self._worlds.get(key)
        if world is None:
            world = self._worlds[key] = World()
            while len(self._worlds) > self.capacity:
                self._worlds.popitem(last=False)
        else:
            self._worlds.move_to_end(key)
        return world

    def peek(self, key: str) -> World | None:
        """Read without creating or refreshing (reading a log must not make a world)."""
        return self._worlds.get(key)

    def __len__(self) -> int:
        return len(self._worlds)

    def __contains__(self, key: str) -> bool:
        return key in self._worlds
