"""What the tools and the people in the conversation established: the only sources the
judge may hold an answer to (plus the written policy)."""
from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import date, timedelta
from itertools import combinations

from turngate.plugin import Case, ToolCall, ok

from . import text as T
from .policy_facts import PolicyFacts


@dataclass
class OrderFacts:
    status: str | None = None
    currency: str | None = None
    total: float | None = None
    delivered: date | None = None
    refunded: float | None = None
    eligible: bool | None = None
    customer: str | None = None
    seen: set[str] = field(default_factory=set)  # every status the tools showed, in any call


@dataclass
class Evidence:
    text: str  # user messages, tool arguments and results, the policy (cleaned)
    numbers: set[float] = field(default_factory=set)
    days: set[tuple[int, int]] = field(default_factory=set)  # (month, day)
    notes: list[str] = field(default_factory=list)  # internal notes any tool returned
    names: dict[str, set[str]] = field(default_factory=dict)  # customer id -> name parts, email

    def has_number(self, value: float, rounded: bool = False) -> bool:
        """A source gives this number; `rounded`: the answer wrote a whole number, which may
        round a source's value ('about 139 USD' for 139.32)."""
        slack = 1.0 if rounded else 0.011
        return any(abs(value - k) <= 0.011 or (rounded and abs(value - k) < slack) for k in self.numbers)


def _walk(value, key=""):
    """(key, leaf) pairs of a JSON value."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _walk(v, str(k))
    elif isinstance(value, list):
        for v in value:
            yield from _walk(v, key)
    else:
        yield key, value


def _records(value):
    """Every dict inside a tool result (a list result holds several records)."""
    if isinstance(value, dict):
        yield value
        for v in value.values():
            yield from _records(v)
    elif isinstance(value, list):
        for v in value:
            yield from _records(v)


def _iso(value) -> date | None:
    try:
        return date.fromisoformat(str(value)[:10])
    except ValueError:
        return None


def order_facts_before(calls: list[ToolCall], upto: int) -> dict[str, OrderFacts]:
    """What the tool results before call number `upto` said about each order."""
    facts: dict[str, OrderFacts] = {}
    for c in calls[:upto]:
        if isinstance(c.result, dict) and c.result.get("ok") is True and c.name == "cancel_order":
            f = facts.setdefault(str(c.arguments.get("order_id", "")).upper(), OrderFacts())
            f.status = "cancelled"
            f.seen.add("cancelled")
        if ok(c) and c.name == "refund_order":
            f = facts.setdefault(str(c.arguments.get("order_id", "")).upper(), OrderFacts())
            f.refunded = (f.refunded or 0) + float(c.arguments.get("amount") or 0)
        for rec in _records(c.result):
            oid = str(rec.get("order_id", "")).upper()
            if not oid or rec.get("ok") is not None:
                continue  # write replies echo arguments; they are not facts about the order
            f = facts.setdefault(oid, OrderFacts())
            if isinstance(rec.get("status"), str):
                f.status = rec["status"].lower()
                f.seen.add(f.status)
            if isinstance(rec.get("currency"), str) and "total" in rec:
                f.currency = rec["currency"].upper()
            if isinstance(rec.get("total"), (int, float)):
                f.total = float(rec["total"])
            if rec.get("delivered"):
                f.delivered = _iso(rec["delivered"]) or f.delivered
            if isinstance(rec.get("refunded"), (int, float)):
                f.refunded = float(rec["refunded"])
            if isinstance(rec.get("customer"), str):
                f.customer = rec["customer"].upper()
            if isinstance(rec.get("eligible"), bool):
                f.eligible = rec["eligible"]
                reason = str(rec.get("reason", ""))
                if m := re.search(r"order is (\w+)", reason):
                    f.status = m.group(1).lower()
                    f.seen.add(f.status)
    return facts


def rates_seen(calls: list[ToolCall], policy: PolicyFacts) -> dict[str, float]:
    """USD per unit of each currency: the policy's rates, overridden by convert_currency replies."""
    rates = dict(policy.usd_per)
    for c in calls:
        if c.name == "convert_currency" and isinstance(c.result, dict):
            try:
                amount = float(c.arguments.get("amount"))
                got = float(c.result.get("amount"))
            except (TypeError, ValueError):
                continue
            frm = str(c.arguments.get("from_currency", "")).upper()
            to = str(c.result.get("currency") or c.arguments.get("to_currency", "")).upper()
            if to == "USD" and amount:
                rates[frm] = got / amount
    return rates


def gather(case: Case, policy_text: str, policy: PolicyFacts) -> Evidence:
    calls = case.turn.tool_calls
    parts = [case.user_text, policy_text]
    notes: list[str] = []
    names: dict[str, set[str]] = {}
    for c in calls:
        parts.append(json.dumps(c.arguments))
        if c.result is not None:
            parts.append(json.dumps(c.result, ensure_ascii=False))
        if c.error:
            parts.append(c.error)
        for key, leaf in _walk(c.result):
            if "note" in key.lower() and isinstance(leaf, str) and leaf.strip():
                notes.append(leaf)
        for rec in _records(c.result):
            cid = rec.get("customer_id")
            if isinstance(cid, str) and rec.get("ok") is None:
                known = names.setdefault(cid.upper(), set())
                known.update(p.lower() for p in str(rec.get("name", "")).split() if len(p) > 1)
                if rec.get("email"):
                    known.add(str(rec["email"]).lower())
    text = T.clean(" ".join(parts))
    ev = Evidence(text=text, notes=notes, names=names)
    # numbers: written ones, the policy's, conversions at the rates, percentages of rates
    # numbers people wrote, not the pieces of dates and ids ("10" in 2026-10-15, "1" in W-0001)
    ev.numbers.update(float(n) for n in re.findall(T.NUM, T.ID.sub(" ", T.DMY.sub(" ", T.ISO.sub(" ", text)))))
    rates = rates_seen(calls, policy)
    for amount, cur in T.money(text) + [(f.total, f.currency) for f in order_facts_before(calls, len(calls)).values()
                                        if f.total is not None and f.currency]:
        if cur in rates:
            usd = amount * rates[cur]
            ev.numbers.update(round(usd / r, 2) for r in rates.values())
    ev.numbers.update(round(n * 100, 2) for n in list(ev.numbers) if 0 < n < 1)
    # dates: written ones, today, delivery + window; and day counts between them
    known = {d for d, _ in T.dates(text) if d}
    if policy.today:
        known.add(policy.today)
    if policy.window_days:
        for f in order_facts_before(calls, len(calls)).values():
            if f.delivered:
                known.add(f.delivered + timedelta(days=policy.window_days))
    ev.days.update((d.month, d.day) for d in known)
    ev.days.update(md for d, md in T.dates(text) if d is None)
    ev.numbers.update(abs((a - b).days) for a, b in combinations(known, 2))
    return ev
