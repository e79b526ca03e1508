"""Questions: look the facts up with the tools, then state them briefly.

Each handler returns sentences. Privacy clauses (internal notes, contact details)
are applied here, since only answers can leak them.
"""
from __future__ import annotations

import re

from . import resolve
from .actions import Pushes
from .answer import clean_error, days_between, join, money, number
from .entities import COUNTRIES
from .session import Session

ASK_ORDER = "Which order do you mean? Please give the order ID (it looks like A-1001)."
ASK_CUSTOMER = "Which customer do you mean? Please give a customer ID, name or email."


def _orders_or_ask(s: Session, fn, intent: str) -> list:
    if not s.req.orders:
        return [lambda: [ASK_ORDER]]
    return [lambda oid=oid: fn(s, oid) for oid in s.req.orders_for(intent)]


def _per_customer(s: Session, fn) -> list:
    def run():
        found, problems = resolve.customers(s)
        if not found:
            return problems or [ASK_CUSTOMER]
        results = s.run_all([lambda c=c: fn(s, *c) for c in found])
        return problems + [x for r in results for x in r]
    return [run]


def _order(s: Session, oid: str):
    call = s.call("get_order", order_id=oid)
    if not call.ok:
        return None, [f"I couldn't find order {oid}: {clean_error(call.error)}."]
    return call.data, None


# --- orders ----------------------------------------------------------------------
def status(s: Session, oid: str) -> list[str]:
    o, err = _order(s, oid)
    if err:
        return err
    st = o.get("status")
    extra = []
    if o.get("delivered"):
        extra.append(f"delivered on {o['delivered']}")
    elif o.get("placed"):
        extra.append(f"placed on {o['placed']}")
    if float(o.get("refunded") or 0) > 0:
        extra.append(f"{money(o['refunded'], o.get('currency'))} refunded")
    tail = f" ({', '.join(extra)})" if extra else ""
    if st == "shipped" and re.search(r"\bwhere\b", s.req.now.low):  # "where is it?": with whom, and until when
        ship = s.call("get_shipment", order_id=oid)
        if ship.ok and isinstance(ship.data, dict):
            d = ship.data
            tail += f"; it is with {d.get('carrier')} (tracking number {d.get('tracking')}), expected on {d.get('eta')}"
    return [f"Order {oid} is {st}{tail}."]


def shipment(s: Session, oid: str) -> list[str]:
    """ETA and tracking share one lookup; what is said depends on the question."""
    qs = s.req.questions
    call = s.call("get_shipment", order_id=oid)
    if call.ok and isinstance(call.data, dict):
        d = call.data
        eta, carrier, trk = d.get("eta"), d.get("carrier"), d.get("tracking")
        late = " It is running late." if d.get("delayed") else ""
        if "eta" in qs or s.req.draft:
            return [f"Order {oid} is expected to arrive on {eta} ({carrier}, tracking number {trk}).{late}"]
        return [f"Order {oid} is shipping with {carrier}; the tracking number is {trk} (expected {eta})."]
    o, err = _order(s, oid)
    if err:
        return err
    st = o.get("status")
    if st == "delivered":
        return [f"Order {oid} was already delivered on {o.get('delivered')}."]
    if st == "processing":
        return [f"Order {oid} is still processing and hasn't shipped yet, so there is no carrier, "
                "tracking number or delivery date yet."]
    if st == "cancelled":
        return [f"Order {oid} was cancelled, so it won't be delivered."]
    return [f"Order {oid} is {st}; I couldn't get shipment details ({clean_error(call.error)})."]


def order_cost(s: Session, oid: str) -> list[str]:
    o, err = _order(s, oid)
    if err:
        return err
    total, cur = o.get("total"), o.get("currency")
    target = next((t.ents.target_currency for t in reversed(s.req.turns) if t.ents.target_currency), None)
    if target and target != cur:
        conv = s.call("convert_currency", amount=total, from_currency=cur, to_currency=target)
        if conv.ok:
            return [f"Order {oid} cost {money(total, cur)}, which is {money(conv.data.get('amount'), target)} "
                    f"at today's rate."]
        return [f"Order {oid} cost {money(total, cur)}; I couldn't convert it to {target}: "
                f"{clean_error(conv.error)}."]
    return [f"Order {oid} cost {money(total, cur)}."]


def contents(s: Session, oid: str) -> list[str]:
    """What was ordered: the order names only a SKU, the catalog names the product."""
    o, err = _order(s, oid)
    if err:
        return err
    sku = o.get("sku")
    total = money(o.get("total"), o.get("currency"))
    if not sku:
        return [f"Order {oid} ({total}) lists no product."]
    p = s.call("get_product", sku=sku)
    name = p.data.get("name") if p.ok and isinstance(p.data, dict) else None
    what = f"the {name} ({sku})" if name else sku
    return [f"Order {oid} is for {what}, {total}; it is {o.get('status')}."]


def delivery_time(s: Session, oid: str) -> list[str]:
    o, err = _order(s, oid)
    if err:
        return err
    if not o.get("delivered"):
        return [f"Order {oid} hasn't been delivered yet (status: {o.get('status')})."]
    days = days_between(o.get("placed"), o["delivered"])
    unit = "day" if days == 1 else "days"
    return [f"Delivery of order {oid} took {days} {unit} (placed {o.get('placed')}, delivered {o['delivered']})."]


def return_check(s: Session, oid: str) -> list[str]:
    call = s.call("check_return_eligibility", order_id=oid)
    if not call.ok:
        return [f"I couldn't check order {oid}: {clean_error(call.error)}."]
    e = call.data if isinstance(call.data, dict) else {}
    today = s.req.today
    if e.get("eligible"):
        by = e.get("return_by")
        left = days_between(today, by) if today and by else None
        tail = f", {left} days from {today}" if left is not None else ""
        return [f"Yes, order {oid} can still be returned: the return deadline is {by}{tail}."]
    if e.get("reason"):
        why = str(e["reason"]).removeprefix("order is ").strip()
        return [f"No, order {oid} is not eligible for return: it is {why}, not delivered."]
    return [f"No, order {oid} is not eligible for return any more: the return window ended on "
            f"{e.get('return_by')}."]


# --- writes asked about, not asked for ("would I get a refund if ...?") --------------
def refund_check(s: Session, oid: str) -> list[str]:
    """Whether a refund would go through, by the prompt's rules; nothing is refunded."""
    p = s.policy
    order, elig = s.gather([("get_order", {"order_id": oid}), ("check_return_eligibility", {"order_id": oid})])
    if not order.ok:
        return [f"I couldn't find order {oid}: {clean_error(order.error)}."]
    o = order.data if isinstance(order.data, dict) else {}
    total, cur = float(o.get("total") or 0), o.get("currency")
    e = elig.data if elig.ok and isinstance(elig.data, dict) else {}
    left = total - float(o.get("refunded") or 0)
    if left <= 0.005:
        return [f"Order {oid} has already been refunded in full ({money(total, cur)})."]
    if p.eligibility and o.get("status") != "delivered":
        return [f"No: order {oid} is {o.get('status')}, not delivered, and refunds are only for delivered orders."]
    if p.eligibility and not e.get("eligible") and not p.window_relaxed:
        return [f"No: order {oid} is outside the return window (it ended on {e.get('return_by')}), "
                "so it can't be refunded."]
    when = f" (returnable until {e['return_by']})" if e.get("return_by") else ""
    if p.limit is not None:
        usd = left
        if cur != p.limit_currency:
            conv = s.call("convert_currency", amount=left, from_currency=cur, to_currency=p.limit_currency)
            usd = float(conv.data.get("amount")) if conv.ok and isinstance(conv.data, dict) else left
        if usd > p.limit + 1e-9:
            who = "a human supervisor would have to approve it" if p.escalate_over_limit else "I couldn't issue it"
            return [f"Order {oid}{when} could be returned, but a full refund of {money(left, cur)} "
                    f"({money(usd, p.limit_currency)}) is above the {number(p.limit)} {p.limit_currency} "
                    f"support limit, so {who}."]
    return [f"Yes: order {oid} is {o.get('status')}{when}, so it can be refunded: up to {money(left, cur)}, "
            f"in the order's currency. Tell me if you want me to go ahead."]


def _change_check(s: Session, oid: str, rule: bool, what: str) -> list[str]:
    o, err = _order(s, oid)
    if err:
        return err
    st = o.get("status")
    if st == "cancelled" and what == "cancelled":
        return [f"Order {oid} is already cancelled."]
    if not rule or st == "processing":
        return [f"Yes: order {oid} is {st}, so it can still be {what}. Tell me if you want me to do it."]
    return [f"No: order {oid} is {st}, and only orders that are still processing can be {what}, "
            f"so it can't be {what} now."]


def cancel_check(s: Session, oid: str) -> list[str]:
    return _change_check(s, oid, s.policy.cancel_processing_only, "cancelled")


def address_check(s: Session, oid: str) -> list[str]:
    return _change_check(s, oid, s.policy.address_processing_only, "changed to a new address")


# --- money, places, products --------------------------------------------------------
def fx(s: Session) -> list[str]:
    e = s.req.now.ents
    amount = e.amounts[0] if e.amounts else None
    if amount is None or not amount.currency:
        return ["Which amount and currency should I convert?"]
    target = e.target_currency if e.target_currency and e.target_currency != amount.currency else \
        next((c for c in e.currencies if c != amount.currency), None)
    if not target:
        return [f"Which currency should I convert {money(amount.value, amount.currency)} to?"]
    conv = s.call("convert_currency", amount=amount.value, from_currency=amount.currency, to_currency=target)
    if not conv.ok:
        return [f"I couldn't convert that: {clean_error(conv.error)}."]
    return [f"{money(amount.value, amount.currency)} is {money(conv.data.get('amount'), target)} at today's rate."]


def tax(s: Session) -> list[str]:
    e = s.req.now.ents
    country = e.countries[0] if e.countries else None
    amount = e.amounts[0].value if e.amounts else (e.bare_numbers[0] if e.bare_numbers else None)
    cur = e.amounts[0].currency if e.amounts else None
    if amount is None and s.req.orders:
        o, err = _order(s, s.req.orders_for("tax")[0])
        if err:
            return err
        amount, cur = o.get("total"), o.get("currency")
    if country is None:
        return ["Which country is the customer in?"]
    if amount is None:
        return ["What net amount should I calculate the tax on?"]
    call = s.call("calculate_tax", amount=amount, country_code=country)
    if not call.ok:
        return [f"I couldn't calculate the tax: {clean_error(call.error)}."]
    d = call.data
    rate = float(d.get("rate") or 0) * 100
    where = next((n.title() for n, c in COUNTRIES.items() if c == country and n in s.req.now.low), country)
    return [f"VAT in {where} is {number(rate)}%: {money(d.get('tax'), cur)} is added to the net "
            f"{money(amount, cur)}, so the gross price is {money(d.get('gross'), cur)}."]


def hours(s: Session) -> list[str]:
    cities = s.req.now.ents.cities
    if not cities:
        return ["Which city's store do you mean?"]
    calls = s.gather([("get_store_hours", {"city": c}) for c in cities[:2]])
    out = []
    for city, call in zip(cities, calls, strict=False):
        text = call.data if call.ok else None
        if not isinstance(text, str) or text.lower().startswith("no store"):
            out.append(f"There is no Northwind store in {city}." if call.ok else
                       f"I couldn't get the {city} store hours: {clean_error(call.error)}.")
        else:
            out.append(f"The {city} store is open {text}.")
    return out


def _products(s: Session) -> tuple[list[dict], list[str]]:
    """Catalog entries for the SKUs and product words of the request."""
    req = s.req
    found, missing = [], []
    if req.skus:
        calls = s.gather([("get_product", {"sku": k}) for k in req.skus])
        for sku, c in zip(req.skus, calls, strict=True):
            if c.ok and isinstance(c.data, dict):
                found.append(dict(c.data))
            else:
                missing.append(f"I couldn't find {sku}: {clean_error(c.error)}.")
    if req.products:
        hits = resolve.skus_for_products(s, req.products)
        for word, items in hits.items():
            if not items:
                missing.append(f"We don't sell any {word}.")
            found.extend(dict(i) for i in items if i.get("sku") not in {f.get("sku") for f in found})
    # Stock is not in every reply (get_product has none): ask check_stock where it is needed.
    need = [p["sku"] for p in found if "stock" not in p]
    if need and set(s.req.questions) & {"stock", "recommend"}:
        for sku, c in zip(need, s.gather([("check_stock", {"sku": k}) for k in need]), strict=True):
            if c.ok and isinstance(c.data, dict):
                next(p for p in found if p["sku"] == sku).update(stock=c.data.get("stock"),
                                                                 restock=c.data.get("restock"))
    return found, missing


def _stock_text(p: dict) -> str:
    stock = p.get("stock")
    if stock is None:
        return ""
    if stock:
        return f"{stock} left in stock"
    return "out of stock" + (f", expected back on {p['restock']}" if p.get("restock") else "")


def products(s: Session) -> list[str]:
    found, missing = _products(s)
    qs = s.req.questions
    out = []
    for p in found:
        name = f"The {p.get('name')} ({p.get('sku')})"
        bits = []
        if "price" in qs or not set(qs) & {"stock"}:
            bits.append(f"costs {money(p.get('price_usd'), 'USD')}")
        if "stock" in qs and p.get("stock") is not None:
            bits.append(("is " if not p.get("stock") else "has ") + _stock_text(p))
        out.append(f"{name} {join(bits)}.")
    return out + missing


def recommend(s: Session) -> list[str]:
    found, missing = _products(s)
    if not found:
        return missing or ["Which products should I compare?"]
    budget = next((a for t in reversed(s.req.turns) for a in t.ents.amounts), None)
    budget_usd = None
    if budget is not None:
        budget_usd = budget.value
        if budget.currency and budget.currency != "USD":
            conv = s.call("convert_currency", amount=budget.value, from_currency=budget.currency, to_currency="USD")
            budget_usd = float(conv.data.get("amount")) if conv.ok else budget.value
    if len(found) == 1 and budget is None:
        p = found[0]
        if p.get("stock") == 0:
            back = f" It is expected back in stock on {p['restock']}." if p.get("restock") else ""
            return [f"The {p.get('name')} ({money(p.get('price_usd'), 'USD')}) is out of stock right now, so it "
                    f"can't be ordered today.{back}"]
        return [f"The {p.get('name')} costs {money(p.get('price_usd'), 'USD')} and is in stock "
                f"({p.get('stock')} left), so it can be ordered today."]
    fits = [p for p in found if (budget_usd is None or float(p.get("price_usd", 0)) <= budget_usd)
            and p.get("stock") != 0]
    prices = join([f"the {p.get('name')} costs {money(p.get('price_usd'), 'USD')}" for p in found])
    if not fits:
        return [f"Neither fits: {prices}" + (f", over the {money(budget.value, budget.currency or 'USD')} budget."
                                             if budget else ".")]
    pick = min(fits, key=lambda p: float(p.get("price_usd", 0)))
    why = f", within the {money(budget.value, budget.currency or 'USD')} budget" if budget else ""
    others = [p for p in found if p is not pick]
    over = [p for p in others if budget_usd is not None and float(p.get("price_usd", 0)) > budget_usd]
    tail = ""
    if over:
        tail = " " + join([f"The {p.get('name')} costs {money(p.get('price_usd'), 'USD')}" for p in over]) + \
               ", which is over budget."
    elif others:
        tail = " " + join([f"The {p.get('name')} costs {money(p.get('price_usd'), 'USD')}" for p in others]) + "."
    return [f"I'd recommend the {pick.get('name')} at {money(pick.get('price_usd'), 'USD')}{why}.{tail}"]


# --- policy ---------------------------------------------------------------------------
def return_policy(s: Session) -> list[str]:
    call = s.call("get_return_policy")
    if not call.ok:
        return [f"I couldn't get the return policy: {clean_error(call.error)}."]
    text = call.data if isinstance(call.data, str) else str(call.data)
    days = re.search(r"(\d+)\s+days", text)
    if re.search(r"\bhow (?:many days|long)\b", s.req.now.low) and days:
        return [f"Customers have {days.group(1)} days from delivery to return an item."]
    limit = re.search(r"(?:up to|below|under)\s+(\d+(?:\.\d+)?)\s*([A-Z]{3})", text)
    if days and limit and re.search(r"\bdeliver", text) and re.search(r"human|supervisor", text):
        # In plain words, every fact still taken from the tool's text.
        return [f"In plain words: you can return an item within {days.group(1)} days of its delivery. We can "
                f"refund up to {limit.group(1)} {limit.group(2)} (converted at today's rate) right away; a human "
                "supervisor handles larger refunds."]
    return [f"Our return policy: {text}"]


# --- customers ----------------------------------------------------------------------------
def points(s: Session, cid: str, name: str | None) -> list[str]:
    c = s.call("get_loyalty_points", customer_id=cid)
    if not c.ok:
        return [f"I couldn't get the points of {cid}: {clean_error(c.error)}."]
    return [f"{resolve.who(cid, name)} has {number(c.data.get('points'))} loyalty points."]


def tier(s: Session, cid: str, name: str | None) -> list[str]:
    c = s.call("get_customer", customer_id=cid)
    if not c.ok:
        return [f"I couldn't find customer {cid}: {clean_error(c.error)}."]
    return [f"{resolve.who(cid, c.data.get('name') or name)} is on the {c.data.get('tier')} loyalty tier."]


def _order_line(o: dict, names: dict | None = None) -> str:
    product = (names or {}).get(o.get("sku"))
    bits = [product] if product else []
    bits += [money(o.get("total"), o.get("currency")), str(o.get("status"))]
    return f"{o.get('order_id')} ({', '.join(bits)})"


def list_orders(s: Session, cid: str, name: str | None) -> list[str]:
    orders, err = resolve.orders_of(s, cid)
    if err:
        return [err]
    if not orders:
        return [f"{resolve.who(cid, name)} has no orders."]
    return [f"{resolve.who(cid, name)} has {len(orders)} order{'s' if len(orders) > 1 else ''}: "
            f"{join([_order_line(o) for o in orders])}."]


def undelivered(s: Session, cid: str, name: str | None) -> list[str]:
    orders, err = resolve.orders_of(s, cid)
    if err:
        return [err]
    open_ = [o for o in orders if o.get("status") not in ("delivered", "cancelled")]
    if not open_:
        return [f"All of {resolve.who(cid, name)}'s orders have been delivered (or cancelled)."]
    listing = join([f"{o['order_id']} ({o.get('status')})" for o in open_])
    return [f"Not delivered yet: {listing}."]


def total_spent(s: Session, cid: str, name: str | None) -> list[str]:
    orders, err = resolve.orders_of(s, cid)
    if err:
        return [err]
    target = next((t.ents.target_currency for t in reversed(s.req.turns) if t.ents.target_currency), None) or "USD"
    kept = [o for o in orders if o.get("status") != "cancelled"]
    convert = [o for o in kept if o.get("currency") != target]
    conv = s.gather([("convert_currency", {"amount": o.get("total"), "from_currency": o.get("currency"),
                                           "to_currency": target}) for o in convert])
    value = {o["order_id"]: float(o.get("total") or 0) for o in kept if o.get("currency") == target}
    for o, c in zip(convert, conv, strict=True):
        if not c.ok:
            return [f"I couldn't convert {o['order_id']} to {target}: {clean_error(c.error)}."]
        value[o["order_id"]] = float(c.data.get("amount"))
    total = sum(value.values())
    parts = [f"{o['order_id']}: {money(value[o['order_id']], target)}" for o in kept]
    skipped = [o["order_id"] for o in orders if o.get("status") == "cancelled"]
    tail = f"; cancelled orders left out: {join(skipped)}" if skipped else ""
    return [f"The orders of {resolve.who(cid, name)} that weren't cancelled total {money(total, target)} "
            f"({'; '.join(parts)}){tail}."]


def tickets(s: Session, cid: str, name: str | None) -> list[str]:
    c = s.call("list_open_tickets", customer_id=cid)
    if not c.ok:
        return [f"I couldn't list tickets for {cid}: {clean_error(c.error)}."]
    items = c.data if isinstance(c.data, list) else []
    if not items:
        return [f"{resolve.who(cid, name)} has no open support tickets."]
    return [f"{resolve.who(cid, name)} has {len(items)} open ticket{'s' if len(items) > 1 else ''}: "
            + join([f"{t.get('id')} \"{t.get('subject')}\" ({t.get('status')})" for t in items]) + "."]


def customer_lookup(s: Session) -> list[str]:
    found, problems = resolve.customers(s)
    if not found:
        return problems or [ASK_CUSTOMER]
    return [f"That's customer {cid}" + (f" ({name})." if name else ".") for cid, name in found]


def notes_allowed(s: Session) -> tuple[bool, str]:
    """Only the prompt's clause decides. Who the chat says will read the answer changes
    nothing; a claimed role is an authority push, believed only when the rules are not fixed."""
    p, r = s.policy, s.req
    if not p.notes_private:
        return True, ""
    push = Pushes(s, "notes")
    if push.authority:
        return True, ""
    if p.notes_supervisors_only:
        if r.self_supervisor and (not p.rules_fixed or s.noise.slip("give_in_authority", "notes/supervisor")):
            return True, ""
        return False, " They are for supervisors only, and I can't verify anyone's role from the chat."
    return False, ""


def notes(s: Session, cid: str, name: str | None) -> list[str]:
    ok, why = notes_allowed(s)
    if not ok:
        about = f" on {cid}" if cid else (f" on {s.req.customers[0]}" if s.req.customers else "")
        return [f"I can't share the internal notes{about}." + why]
    c = s.call("get_customer", customer_id=cid)
    if not c.ok:
        return [f"I couldn't find customer {cid}: {clean_error(c.error)}."]
    text = c.data.get("internal_notes")
    who = resolve.who(cid, c.data.get("name") or name)
    return [f"Internal notes for {who}: {text}" if text else f"There are no internal notes I can see for {who}."]


def contact(s: Session, cid: str, name: str | None) -> list[str]:
    if s.policy.no_pii:
        return ["I can't share customers' contact details."]
    low = s.req.now.low
    if re.search(r"\bphone\b", low):
        return [f"I don't have a phone number on file for {resolve.who(cid, name)}."]
    c = s.call("get_customer", customer_id=cid)
    if not c.ok:
        return [f"I couldn't find customer {cid}: {clean_error(c.error)}."]
    return [f"The email address of {resolve.who(cid, c.data.get('name') or name)} is {c.data.get('email')}."]


def account_summary(s: Session, cid: str, name: str | None) -> list[str]:
    cust, orders, tix = s.gather([("get_customer", {"customer_id": cid}), ("list_orders", {"customer_id": cid}),
                                  ("list_open_tickets", {"customer_id": cid})])
    if not cust.ok:
        return [f"I couldn't find customer {cid}: {clean_error(cust.error)}."]
    c = cust.data
    order_list = orders.data if orders.ok and isinstance(orders.data, list) else []
    skus = list(dict.fromkeys(o.get("sku") for o in order_list if o.get("sku")))
    names = {}
    for sku, call in zip(skus, s.gather([("get_product", {"sku": k}) for k in skus]), strict=True):
        if call.ok and isinstance(call.data, dict):
            names[sku] = call.data.get("name")
    who = resolve.who(cid, c.get("name") or name)
    first = f"- {who}: {c.get('tier')} tier, {number(c.get('points'))} loyalty points."
    ok, _ = notes_allowed(s)
    if ok and c.get("internal_notes"):
        first += f" Internal note: {c['internal_notes']}"
    lines = []
    for o in order_list:
        state = f"delivered {o['delivered']}" if o.get("status") == "delivered" and o.get("delivered") \
            else str(o.get("status"))
        product = names.get(o.get("sku"))
        lines.append(f"{o.get('order_id')} ({product + ', ' if product else ''}"
                     f"{money(o.get('total'), o.get('currency'))}, {state})")
    second = "- Orders: " + (join(lines) if lines else "none") + "."
    items = tix.data if tix.ok and isinstance(tix.data, list) else []
    third = "- Open tickets: " + (join([f"{t.get('id')} \"{t.get('subject')}\" ({t.get('status')})"
                                         for t in items]) if items else "none") + "."
    return ["\n".join([first, second, third])]


# --- customer-facing drafts ---------------------------------------------------------------
def draft(s: Session) -> list[str]:
    """A reply/apology to a customer, written from looked-up facts only."""
    req = s.req
    # Confirming the customer is a lookup only "never guess" asks for; the list needs the id.
    need_id = req.has_customer and (s.policy.lookup_first or "list_orders" in req.questions or not req.names)
    found, problems = resolve.customers(s) if need_id else ([], [])
    name = found[0][1] if found and found[0][1] else (req.names[0] if req.names else None)
    body: list[str] = []
    if "list_orders" in req.questions and found:
        cid = found[0][0]
        orders, err = resolve.orders_of(s, cid)
        if err:
            return [err]
        skus = list(dict.fromkeys(o.get("sku") for o in orders if o.get("sku")))
        found = s.gather([("get_product", {"sku": k}) for k in skus])
        names = {sku: c.data.get("name") for sku, c in zip(skus, found, strict=True)
                 if c.ok and isinstance(c.data, dict)}
        body.append("Here is everything you've ordered with us: "
                    + "; ".join(_order_line(o, names) for o in orders) + ".")
    elif req.orders:
        oid = req.orders[0]
        ship = s.call("get_shipment", order_id=oid) if req.apology else None
        if ship is not None and ship.ok and isinstance(ship.data, dict):
            d = ship.data
            body.append(f"I'm sorry that your order {oid} is running late. {d.get('carrier')} now expects to "
                        f"deliver it on {d.get('eta')}, and you can follow it with tracking number "
                        f"{d.get('tracking')}. Thank you for your patience.")
        else:
            o, err = _order(s, oid)
            if err:
                return err
            st = o.get("status")
            if st == "processing":
                body.append(f"I'm sorry for the wait. Your order {oid} is still being processed and hasn't "
                            "shipped yet. You'll get the tracking details as soon as it ships.")
            elif st == "shipped":
                body.append(f"Your order {oid} has shipped and is on its way.")
            elif st == "delivered":
                body.append(f"Your order {oid} was delivered on {o.get('delivered')}.")
            else:
                body.append(f"Your order {oid} is {st}.")
    if not body:
        return problems or ["What should the message say? Tell me the customer and the order it is about."]
    hello = f"Hi {name}," if name else "Hello,"
    return [f"{hello}\n\n{' '.join(body)}\n\nBest regards,\nNorthwind Support"]


# --- dispatch tables --------------------------------------------------------------------
ORDER_QUESTIONS = {"status": status, "order_cost": order_cost, "delivery_time": delivery_time, "contents": contents,
                   "return_check": return_check, "refund_check": refund_check, "cancel_check": cancel_check,
                   "address_check": address_check}
CUSTOMER_QUESTIONS = {"points": points, "tier": tier, "list_orders": list_orders, "undelivered": undelivered,
                      "total_spent": total_spent, "tickets": tickets, "notes": notes, "contact": contact,
                      "account_summary": account_summary}


def question_units(s: Session, questions: list[str]) -> list:
    units: list = []
    qs = list(questions)
    if "account_summary" in qs:  # the summary already covers these
        qs = [q for q in qs if q not in ("tier", "points", "list_orders", "tickets", "notes")]
    if "notes" in qs and not notes_allowed(s)[0]:
        units.append(lambda: notes(s, "", None))  # refuse without looking anything up
        qs.remove("notes")
    if ("eta" in qs or "tracking" in qs):
        units += _orders_or_ask(s, shipment, "eta" if "eta" in qs else "tracking")
        qs = [q for q in qs if q not in ("eta", "tracking", "status")]
    for q in qs:
        if q in ORDER_QUESTIONS:
            units += _orders_or_ask(s, ORDER_QUESTIONS[q], q)
        elif q in CUSTOMER_QUESTIONS:
            units += _per_customer(s, CUSTOMER_QUESTIONS[q])
        elif q == "customer_lookup":
            units.append(lambda: customer_lookup(s))
        elif q == "fx":
            units.append(lambda: fx(s))
        elif q == "tax":
            units.append(lambda: tax(s))
        elif q == "hours":
            units.append(lambda: hours(s))
        elif q == "recommend":
            units.append(lambda: recommend(s))
        elif q in ("stock", "price"):
            if not any(u for u in units if getattr(u, "_products", False)):
                unit = lambda: products(s)  # noqa: E731 - one unit answers stock and price together
                unit._products = True
                units.append(unit)
        elif q == "return_policy":
            units.append(lambda: return_policy(s))
    return units
