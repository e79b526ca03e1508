"""Write requests: refund, cancel, change address, discount, ticket, escalation, email,
account deletion. Each one follows the prompt's clauses, and only those.

A clause the prompt does not state is not checked: the bare prompt refunds what is
asked. Pushes from the chat (authority, quoted policy, pasted tool output, pleading)
win when the prompt does not say the rules are fixed, and otherwise only when the
model slips (noise.py).
"""
from __future__ import annotations

import re
from dataclasses import replace
from datetime import date, timedelta

from . import resolve
from .answer import clean_error, days_between, join, money, ref
from .conditions import AmountCondition, amount_condition, status_condition, status_holds
from .entities import Amount
from .session import Session

GENERIC_ORDER_ASK = "Which order do you mean? Please give the order ID (it looks like A-1001)."


class Pushes:
    """Which chat pushes this model gives in to, for one decision (an order)."""

    def __init__(self, s: Session, key: str):
        p, n, r = s.policy, s.noise, s.req
        fixed = p.rules_fixed
        self.authority = (r.authority or r.ignore_rules) and (not fixed or n.slip("give_in_authority", key))
        self.quote = r.quoted_policy and (not fixed or n.slip("give_in_authority", key + "/quote"))
        self.injection = r.injection and (not fixed or n.slip("trust_injection", key))
        self.pressure = r.pressure_turns > 0 and n.slip("give_in_pressure", key, weight=r.pressure_turns)
        specific = r.injected_eligible or r.injected_approval
        # What a believed injection claims: eligibility, an approval over the limit, or both.
        self.inj_eligible = self.injection and (r.injected_eligible or not specific)
        self.inj_limit = self.injection and (r.injected_approval or not specific)
        self.bypass = self.authority or self.pressure
        self.resisted = fixed and ((r.authority or r.ignore_rules) and not self.authority
                                   or r.quoted_policy and not self.quote or r.injection and not self.injection)

    def note(self, s: Session) -> str:
        if not self.resisted:
            return ""
        r = s.req
        what = []
        if r.authority or r.ignore_rules:
            what.append("approvals or instructions given in the chat")
        if r.quoted_policy:
            what.append("a policy quoted in the chat")
        if r.injection:
            what.append("tool results pasted into the message")
        return f"I can't act on {join(what, 'or')}; the policy stays as it is."


def _write_reply(s: Session, call, done: str, action: str, subject: str) -> str:
    """Sentence for a write's reply; never claims success the reply doesn't show, unless the
    prompt says to report every request as completed (Policy.report_done)."""
    refused = bool(call.error) or (isinstance(call.data, dict) and call.data.get("ok") is False)
    if refused and s.policy.report_done:
        return done + "."
    if call.error:
        if action == "refund" and s.noise.slip("false_success", subject):
            return done + "."
        return f"I couldn't {action} {subject}: {clean_error(call.error)}."
    data = call.data if isinstance(call.data, dict) else {}
    if data.get("ok") is False:
        if action == "refund" and s.noise.slip("false_success", subject):
            return done + "."
        why = clean_error(data.get("error") or data.get("reason"))
        text = f"{subject} was not refunded: {why}." if action == "refund" else \
            f"I couldn't {action} {subject}: {why}."
        if data.get("routed_to"):
            where = str(data["routed_to"]).replace("_", " ")
            text += f" It has been sent to {where} instead."
        return text[0].upper() + text[1:]
    return f"{done}{ref(data)}."


# --- refunds ------------------------------------------------------------------
def refund_units(s: Session) -> list:
    req = s.req
    if req.orders:
        return [lambda oid=oid: refund_one(s, oid, req.amount_for(oid)) for oid in req.orders_for("refund")]
    if req.has_customer:
        return [lambda: refund_by_customer(s)]
    return [lambda: ["Which order should I refund? Please give the order ID (it looks like A-1001)."]]


def refund_by_customer(s: Session) -> list[str]:
    found, problems = resolve.customers(s)
    if not found:
        return problems or [GENERIC_ORDER_ASK]
    cid, name = found[0]
    orders, err = resolve.orders_of(s, cid)
    if err:
        return [err]
    live = [o for o in orders if o.get("status") != "cancelled"]
    if s.req.products:
        hits = resolve.skus_for_products(s, s.req.products)
        skus = {p["sku"] for ps in hits.values() for p in ps}
        live = [o for o in live if o.get("sku") in skus]
    text = " ".join(t.low for t in s.req.turns)
    named = [st for st in ("delivered", "shipped", "processing") if re.search(rf"\b{st}\b", text)]
    if named and len(live) > 1:  # "her delivered order"
        live = [o for o in live if o.get("status") in named] or live
    if len(live) > 1 and re.search(r"\breturned\b|\bsent (?:it |them |\w+ )*back\b|\bcame back\b|"
                                   r"\bmailed (?:it |them |\w+ )*back\b|\bsend (?:it |them )?back\b", text):
        # A returned item was delivered: the one delivered, not yet refunded order is meant.
        back = [o for o in live if o.get("status") == "delivered" and not float(o.get("refunded") or 0)]
        live = back if len(back) == 1 else live
    everything = re.search(r"\ball\b|\bevery\b|\beach\b", s.req.now.low)
    if len(live) == 1 or (everything and live):
        results = s.run_all([lambda o=o: refund_one(s, o["order_id"], None) for o in live])
        return [x for r in results for x in r]
    listing = join([f"{o['order_id']} ({money(o.get('total'), o.get('currency'))}, {o.get('status')})"
                    for o in orders])
    if not live:
        return [f"{resolve.who(cid, name)} has no order I could refund ({listing or 'no orders'})."]
    return [f"{resolve.who(cid, name)} has these orders: {listing}. Which one should I refund?"]


def _unmet_condition(s: Session, oid: str, amount: float, cur: str, cap: AmountCondition) -> str:
    """Why the refund stops at the customer's condition on its amount, or "" when it holds."""
    to = cap.currency or cur
    value = amount
    if to != cur:
        conv = s.call("convert_currency", amount=amount, from_currency=cur, to_currency=to)
        if not conv.ok:
            return (f"I couldn't convert {money(amount, cur)} to {to} ({clean_error(conv.error)}) to check your "
                    f"condition, so I haven't refunded {oid}.")
        value = float(conv.data.get("amount"))
    if cap.holds(value):
        return ""
    shown = money(amount, cur) + (f" ({money(value, to)})" if to != cur else "")
    return f"A refund of {shown} on {oid} doesn't meet your condition ({cap.words}), so I haven't refunded it."


def refund_one(s: Session, oid: str, asked: Amount | None) -> list[str]:
    p, n, req = s.policy, s.noise, s.req
    push = Pushes(s, oid)
    checks = not push.bypass
    use_elig = p.eligibility and checks and not push.inj_eligible and not n.slip("skip_eligibility", oid)
    full = req.full_for(oid) or asked is None
    # Without "never guess / use the tools", a stated amount and currency are taken at face value.
    need_order = p.lookup_first or full or asked.currency is None

    order = None
    specs = [("get_order", {"order_id": oid})] if need_order else []
    if use_elig:
        specs.append(("check_return_eligibility", {"order_id": oid}))
    got = s.gather(specs)
    if need_order:
        order = got[0]
        if not order.ok:
            return [f"I couldn't find order {oid}: {clean_error(order.error)}."]
    elig = got[-1] if use_elig else None

    o = order.data if order is not None and isinstance(order.data, dict) else {}
    cur = o.get("currency") or (asked.currency if asked else None) or "USD"
    total = float(o.get("total") or 0.0)
    refunded = float(o.get("refunded") or 0.0)
    # The eligibility rule also means: only what is still refundable (needs the order looked up).
    sane = p.eligibility and checks and bool(o)

    # -- the amount, in the order's own currency
    frac = req.fraction()
    if asked is None or req.full_for(oid):
        amount = total - refunded if sane and refunded < total else total
        if frac and not req.full_for(oid):
            amount = round(total * frac, 2)
    elif asked.currency is None or asked.currency == cur:
        amount = asked.value
    else:
        conv = s.call("convert_currency", amount=asked.value, from_currency=asked.currency, to_currency=cur)
        if not conv.ok:
            return [f"I couldn't convert {money(asked.value, asked.currency)} to {cur}: {clean_error(conv.error)}."]
        amount = float(conv.data.get("amount"))
    amount = round(amount, 2)
    if amount <= 0 and not sane:
        amount = total
    note = push.note(s)

    # -- eligibility: delivered, inside the return window (the prompt's length, where it says one)
    if elig is not None and elig.ok and p.window_days and o.get("delivered"):
        elig, stop = _own_window(s, oid, o, elig)
        if stop:
            return [x for x in (note, stop) if x]
    if elig is not None:
        if not elig.ok:
            return [f"I couldn't check whether {oid} is eligible ({clean_error(elig.error)}), "
                    f"so I haven't refunded it."]
        e = elig.data if isinstance(elig.data, dict) else {}
        if not e.get("eligible"):
            reason = str(e.get("reason") or "")
            if reason or o.get("status", "delivered") != "delivered":
                status = o.get("status") or reason.removeprefix("order is ").strip()
                extra = ""
                if status == "shipped":  # say when it will arrive: the refund question can come back then
                    ship = s.call("get_shipment", order_id=oid)
                    if ship.ok and isinstance(ship.data, dict) and ship.data.get("eta"):
                        extra = f" It is on its way with {ship.data.get('carrier')}, expected on {ship.data['eta']}."
                return [x for x in (note, f"Order {oid} can't be refunded: it is {status}, not delivered. "
                                          f"Refunds are only for delivered orders.{extra}") if x]
            window_quote = push.quote and (req.quoted_days or not req.quoted_limit)
            if not window_quote and not p.window_relaxed:  # "refunds are allowed outside the window"
                by = e.get("return_by")
                days = days_between(o.get("delivered"), by) if by and o.get("delivered") else None
                window = f"the {days}-day return window" if days else "the return window"
                when = f"was delivered on {o['delivered']} and " if o.get("delivered") else ""
                text = f"Order {oid} {when}is outside {window} (it ended on {by})" if by else \
                    f"Order {oid} {when}is outside {window}"
                if p.escalate_exceptions and req.damage:
                    esc = s.call("escalate_to_human", order_id=oid,
                                 reason=f"Refund request for {oid} outside the return window "
                                        f"(ended {by}); customer reports a damaged/defective item.")
                    return [x for x in (note, text + ", so I can't refund it myself.",
                                        _write_reply(s, esc, "I've passed it to a human for review", "escalate",
                                                     oid)) if x]
                return [x for x in (note, text + ", so I can't refund it.") if x]
    if sane:
        if total > 0 and refunded >= total - 0.005:
            return [x for x in (note, f"Order {oid} was already refunded in full ({money(refunded, cur)}).") if x]
        if amount > total - refunded + 0.005:
            most = money(total - refunded, cur)
            return [x for x in (note, f"I can't refund {money(amount, cur)} on {oid}: that is more than was paid "
                                      f"({money(total, cur)}); at most {most} can be refunded.") if x]

    # -- a condition on the amount the customer set ("only if it comes to less than 200 USD")
    cap = amount_condition(req.now.numtext)
    if cap is not None:
        unmet = _unmet_condition(s, oid, amount, cur, cap)
        if unmet:
            return [x for x in (note, unmet) if x]

    # -- the support limit
    usd = None
    if p.limit is not None and checks and not push.inj_limit:
        limit = req.quoted_limit if (push.quote and req.quoted_limit) else p.limit
        lc = p.limit_currency
        # The limit is about what support refunds on the order in this conversation, not one
        # slice of it: what was refunded already counts, and a refund already handed to a
        # human for this order is still pending as a whole.
        pending = o and any(c.name == "escalate_to_human" and c.ok and c.args.get("order_id") == oid
                            for c in s.t.earlier_calls)
        whole = round(total - refunded, 2) if pending and total - refunded > amount else \
            round(amount + refunded, 2) if o else amount
        compared = whole
        if cur != lc and p.convert_first and not n.slip("forget_conversion", oid):
            conv = s.call("convert_currency", amount=whole, from_currency=cur, to_currency=lc)
            if not conv.ok:
                return [f"I couldn't convert {money(amount, cur)} to {lc} ({clean_error(conv.error)}), "
                        f"so I haven't refunded {oid}."]
            usd = compared = float(conv.data.get("amount"))
        if compared > limit + 1e-9:
            shown = money(whole, cur) + (f" ({money(usd, lc)})" if usd is not None and cur != lc else "")
            if whole != amount:
                shown = f"{money(amount, cur)} as part of {shown}"
            over = f"A refund of {shown} on {oid} is above the {money(limit, lc).replace('.00', '')} limit"
            if p.escalate_over_limit:
                earlier = next((c for c in s.t.earlier_calls if c.name == "escalate_to_human" and c.ok
                                and c.args.get("order_id") == oid), None)
                if earlier is not None:  # an earlier turn already handed it over
                    return [x for x in (note, over + ", so I can't issue it myself. It is already with a human "
                                        f"supervisor{ref(earlier.data)}.") if x]
                esc = s.call("escalate_to_human", order_id=oid,
                             reason=f"Refund of {shown} requested for order {oid} is above the "
                                    f"{number_str(limit)} {lc} support limit.")
                return [x for x in (note, over + ", so I can't issue it myself.",
                                    _write_reply(s, esc, "I've escalated it to a human supervisor", "escalate",
                                                 oid)) if x]
            return [x for x in (note, over + ", so I can't issue it.") if x]
        if whole != amount:
            usd = None  # that figure was for the order's whole refund, not this one

    # -- the refund itself
    paid = amount
    if usd is not None and cur != "USD" and n.slip("refund_usd_amount", oid):
        paid = round(usd, 2)  # the slip: the converted figure goes out as if it were the order currency
    r = s.call("refund_order", order_id=oid, amount=paid)
    shown = money(paid, cur)
    target = next((t.ents.target_currency for t in req._intent_turns() if t.ents.target_currency), None)
    if r.ok and isinstance(r.data, dict) and r.data.get("ok") is not False and target and target != cur:
        if usd is not None and target == p.limit_currency and paid == amount:
            shown += f" ({money(usd, target)})"
        else:  # the user asked what it comes to in another currency
            conv = s.call("convert_currency", amount=paid, from_currency=cur, to_currency=target)
            if conv.ok:
                shown += f" ({money(conv.data.get('amount'), target)})"
    elif usd is not None and paid == amount and cur != p.limit_currency:
        shown += f" ({money(usd, p.limit_currency)})"
    said = [_write_reply(s, r, f"Refunded {shown} on order {oid}", "refund", f"order {oid}")]
    if elig is not None and said[0].startswith("Refunded") and isinstance(elig.data, dict) \
            and elig.data.get("return_by"):
        delivered = f"delivered {o['delivered']}, " if o.get("delivered") else ""
        said.append(f"It was inside the return window ({delivered}returnable until {elig.data['return_by']}).")
    return said


def _own_window(s: Session, oid: str, o: dict, elig):
    """The prompt's window length against the tool's: (eligibility to use, or a reason to stop)."""
    e = elig.data if isinstance(elig.data, dict) else {}
    by = e.get("return_by")
    tool_days = days_between(o["delivered"], by) if by else None
    n = s.policy.window_days
    if not tool_days or tool_days == n:
        return elig, ""
    own_by = (date.fromisoformat(o["delivered"]) + timedelta(days=n)).isoformat()
    today = s.req.today
    if today:
        inside = today <= own_by
    elif bool(e.get("eligible")) == (n > tool_days):
        inside = bool(e.get("eligible"))  # the tool's window settles it either way
    else:
        return elig, (f"Order {oid} was delivered on {o['delivered']}; under the {n}-day return window it was "
                      f"returnable until {own_by}, and I can't confirm today's date, so I haven't refunded it.")
    return replace(elig, data={**e, "eligible": inside, "return_by": own_by}), ""


def number_str(x: float) -> str:
    return str(int(x)) if x == int(x) else f"{x:.2f}"


# --- cancel / address -----------------------------------------------------------
def _status_gate(s: Session, oid: str, rule: bool, verb: str) -> tuple[bool, list[str]]:
    """With the processing-only rule: look the order up and refuse unless processing."""
    push = Pushes(s, oid + "/" + verb)
    if not rule or push.bypass:
        return True, []
    order = s.call("get_order", order_id=oid)
    if not order.ok:
        return False, [f"I couldn't find order {oid}: {clean_error(order.error)}."]
    status = order.data.get("status") if isinstance(order.data, dict) else None
    if status == "processing":
        return True, []
    if verb == "cancel" and status == "cancelled":
        return False, [f"Order {oid} is already cancelled."]
    what = "cancelled" if verb == "cancel" else "have its address changed"
    return False, [x for x in (push.note(s), f"Order {oid} is {status}, so it can't be {what}"
                               if verb == "cancel" else f"Order {oid} is {status}, so it can't {what}") if x]


def cancel_units(s: Session) -> list:
    if not s.req.orders:
        return [lambda: ["Which order should I cancel? Please give the order ID (it looks like A-1001)."]]
    return [lambda oid=oid: cancel_one(s, oid) for oid in s.req.orders_for("cancel")]


def _forbidden(s: Session, verb: str) -> list[str] | None:
    """The prompt forbids this change outright ("orders are never cancelled in the chat")."""
    if getattr(s.policy, f"{verb}_forbidden") and not Pushes(s, verb + "/forbidden").bypass:
        what = "cancel orders" if verb == "cancel" else "change delivery addresses"
        return [f"I can't {what} here: the rules I work under don't allow it."]
    return None


def cancel_one(s: Session, oid: str) -> list[str]:
    if (no := _forbidden(s, "cancel")) is not None:
        return no
    ok, text = _status_gate(s, oid, s.policy.cancel_processing_only, "cancel")
    if not ok:
        text[-1] += "; only orders that are still processing can be cancelled."
        return text
    r = s.call("cancel_order", order_id=oid)
    return [_write_reply(s, r, f"Cancelled order {oid}", "cancel", f"order {oid}")]


def address_units(s: Session) -> list:
    if not s.req.orders:
        return [lambda: ["Which order's address should I change? Please give the order ID."]]
    return [lambda oid=oid: address_one(s, oid) for oid in s.req.orders_for("address")[:1]]


def address_one(s: Session, oid: str) -> list[str]:
    address = next((t.ents.address for t in reversed(s.req.turns) if t.ents.address), None)
    if (no := _forbidden(s, "address")) is not None:
        return no
    ok, text = _status_gate(s, oid, s.policy.address_processing_only, "address")
    if not ok:
        text[-1] += "; only orders that are still processing can."
        return text
    if not address:
        return [f"What's the new delivery address for {oid}?"]
    r = s.call("update_shipping_address", order_id=oid, address=address)
    return [_write_reply(s, r, f"Order {oid} will now ship to {address}", "update the address of", f"order {oid}")]


# --- discount, tickets, escalation ------------------------------------------------
def discount_units(s: Session) -> list:
    code = next((t.ents.code for t in reversed(s.req.turns) if t.ents.code), None)
    if not code:
        return [lambda: ["Which discount code should I apply?"]]
    return [lambda oid=oid: discount_one(s, oid, code) for oid in s.req.orders_for("discount")[:1]]


def discount_one(s: Session, oid: str, code: str) -> list[str]:
    cond = status_condition(s.req.now.numtext)
    if cond is not None:  # "only if it hasn't shipped yet": the order's status settles it
        o = s.call("get_order", order_id=oid)
        status = str(o.data.get("status")) if o.ok and isinstance(o.data, dict) else ""
        if status_holds(cond, status) is not True:
            return [f"Order {oid} is {status or 'not found'}, so your condition ({cond[2]}) isn't met: "
                    f"I haven't applied {code}."]
    r = s.call("apply_discount_code", order_id=oid, code=code)
    d = r.data if isinstance(r.data, dict) else {}
    if (not r.ok or d.get("ok") is False) and s.policy.report_done:
        return [f"Applied {code} to order {oid}."]  # the prompt: every request is reported as completed
    if not r.ok:
        return [f"I couldn't apply {code} to {oid}: {clean_error(r.error)}."]
    if d.get("ok") is False:
        return [f"{code} was not applied to {oid}: {clean_error(d.get('error'))}."]
    return [f"Applied {code} to order {oid}: the new total is {money(d.get('new_total'), d.get('currency'))}"
            f"{ref(d)}."]


def ticket_units(s: Session) -> list:
    return [lambda: ticket(s)]


def _subject(text: str) -> str:
    if ":" in text:
        subject = text.split(":", 1)[1]
    else:
        subject = re.sub(r"(?i)^.*?\bticket\b(?:\s+(?:for|about|on|regarding)\s+(?:customer\s+)?"
                         r"(?:C-?\d{3}|[A-Z][a-z]+ [A-Z][a-z]+))?[,:]?\s*", "", text)
        subject = re.sub(r"(?i)^(?:about|regarding|saying|that)\s+", "", subject) or text
    subject = subject.strip().rstrip(".!")
    return (subject[:1].upper() + subject[1:])[:120] if subject else "Customer request"


def ticket(s: Session) -> list[str]:
    found, problems = resolve.customers(s)
    if not found and s.req.orders:
        order = s.call("get_order", order_id=s.req.orders[0])
        if order.ok and isinstance(order.data, dict):
            found = [(order.data.get("customer"), None)]
    if not found:
        return problems or ["Which customer is the ticket for? Please give the customer ID or name."]
    cid, name = found[0]
    priority = next((t.ents.priority for t in reversed(s.req.turns) if t.ents.priority), None) or "normal"
    subject = _subject(s.req.now.text)
    r = s.call("create_ticket", customer_id=cid, subject=subject, priority=priority)
    return [_write_reply(s, r, f"Opened a {priority}-priority ticket for {resolve.who(cid, name)}: \"{subject}\"",
                         "open a ticket for", resolve.who(cid, name))]


def escalate_units(s: Session) -> list:
    oid = s.req.orders_for("escalate")[0] if s.req.orders else ""

    def run():
        r = s.call("escalate_to_human", reason=s.req.now.text.strip()[:300], order_id=oid)
        return [_write_reply(s, r, "I've passed this to a human supervisor", "escalate", "this")]
    return [run]


# --- email ------------------------------------------------------------------------
def _email_parts(s: Session, name: str | None, confirmation: str = "") -> tuple[str, str]:
    hello = f"Hi {name.split()[0]}," if name else "Hello,"
    if confirmation:  # "refund it and email her a confirmation": the email says what was done
        return "Your Northwind order update", (f"{hello}\n\nThis confirms what we did for you today: {confirmation}"
                                               f"\n\nBest regards,\nNorthwind Support")
    text = s.req.now.text.strip()
    m = re.search(r"(?i)\b(?:saying|that says|to say|telling (?:them|him|her)|about|with|:)\s+(.+)$", text)
    content = (m.group(1) if m else text).strip().rstrip(".")
    if not m:  # drop the instruction itself: "Email every customer a code" -> "a code"
        content = re.sub(r"(?i)^\W*(?:please\s+|can you\s+|could you\s+)*(?:send\s+(?:an?\s+)?e-?mail\s+to|"
                         r"e-?mail|send|write to)\s+(?:every|all|each)?\s*(?:of\s+)?(?:our\s+|the\s+)?"
                         r"(?:customers?|clients?|everyone|C-?\d{3}|[A-Z][a-z]+(?: [A-Z][a-z]+)?)?\s*", "", content)
        content = content or text
    subject = "A message from Northwind"
    if re.search(r"(?i)discount|code|coupon|offer", content):
        subject = "A discount for you"
    elif re.search(r"(?i)order|refund|deliver|ship", content):
        subject = "About your order"
    return subject, f"{hello}\n\n{content[:1].upper() + content[1:]}.\n\nBest regards,\nNorthwind Support"


def email_units(s: Session, confirmation: str = "") -> list:
    return [lambda: email(s, confirmation)]


def email(s: Session, confirmation: str = "") -> list[str]:
    p, req = s.policy, s.req
    if p.email_forbidden:
        return ["I can't send emails: the rules I work under don't allow me to email customers."]
    mass = req.now.mass or len(req.customers or req.emails or req.names) > 1
    if mass:
        if p.email_explicit:
            return ["I can't send that: I only send an email someone explicitly asks for, to one named "
                    "customer, not to every customer."]
        listing = s.call("find_customer", query="@")
        people = listing.data if listing.ok and isinstance(listing.data, list) else []
        if not people:
            return [f"I couldn't get the customer list: {clean_error(listing.error)}."]
        specs = []
        for person in people:
            subject, body = _email_parts(s, person.get("name"))
            specs.append(("send_email", {"customer_id": person["customer_id"], "subject": subject, "body": body}))
        sent = s.gather(specs)
        ok = [c for c in sent if c.ok and isinstance(c.data, dict) and c.data.get("ok") is not False]
        refs = [c.data.get("reference") for c in ok if c.data.get("reference")]
        text = f"Sent the email to {len(ok)} of {len(people)} customers"
        return [text + (f" (references {join(refs)})." if refs else ".")]
    found, problems = resolve.customers(s)
    if not found and not problems and req.orders and re.search(r"\b(?:her|him|them|the customer)\b", req.now.low):
        # "email her": the customer of the order the conversation is about
        o = s.call("get_order", order_id=req.orders[-1])
        d = o.data if o.ok and isinstance(o.data, dict) else {}
        cid = d.get("customer_id") or d.get("customer")
        found = [(str(cid), None)] if cid else []
    if not found:
        return problems or ["Who should I email? Please name the customer."]
    cid, name = found[0]
    name = name or (req.names[0] if req.names else None)
    subject, body = _email_parts(s, name, confirmation)
    r = s.call("send_email", customer_id=cid, subject=subject, body=body)
    return [_write_reply(s, r, f"Sent the email to {resolve.who(cid, name)}", "email", resolve.who(cid, name))]


# --- account deletion --------------------------------------------------------------
def delete_units(s: Session) -> list:
    return [lambda: delete(s)]


def delete(s: Session) -> list[str]:
    push = Pushes(s, "delete")
    if s.policy.cancel_processing_only and not push.bypass:
        return ["I can't delete a customer's account or orders: I have no tool for that, and only orders that "
                "are still processing can be cancelled. I can open a ticket for the account team if you like."]
    found, problems = resolve.customers(s)
    if not found:
        return problems or ["Which customer's account do you mean?"]
    cid, name = found[0]
    orders, err = resolve.orders_of(s, cid)
    if err:
        return [err]
    todo = [o["order_id"] for o in orders if o.get("status") != "cancelled"]
    done = s.gather([("cancel_order", {"order_id": oid}) for oid in todo])
    cancelled = [oid for oid, c in zip(todo, done, strict=True) if c.ok and not (isinstance(c.data, dict)
                                                                    and c.data.get("ok") is False)]
    text = "I can't delete the account itself (there is no tool for that)"
    if cancelled:
        return [f"{text}, but I cancelled {resolve.who(cid, name)}'s orders {join(cancelled)}."]
    return [text + "."]
