"""Turning what the user named into ids: customers by name/email, orders by customer."""
from __future__ import annotations

from .session import Session


def customers(s: Session) -> tuple[list[tuple[str, str | None]], list[str]]:
    """(customer id, name) pairs for the customers the request names, and problems
    to tell the user (no match, several matches)."""
    req = s.req
    if req.customers:
        return [(cid, None) for cid in req.customers], []
    refs = req.emails or req.names
    if not refs:
        return [], []
    calls = s.gather([("find_customer", {"query": ref}) for ref in refs])
    found, problems = [], []
    for ref, call in zip(refs, calls, strict=True):
        if not call.ok:
            problems.append(f"I couldn't look up {ref}: {call.error}.")
            continue
        matches = call.data if isinstance(call.data, list) else []
        exact = [m for m in matches if str(m.get("name", "")).lower() == ref.lower()
                 or str(m.get("email", "")).lower() == ref.lower()]
        pick = exact or matches
        if not pick:
            problems.append(f"I couldn't find a customer matching {ref}.")
        elif len(pick) > 1:
            names = ", ".join(f"{m.get('name')} ({m.get('customer_id')})" for m in pick)
            problems.append(f"Several customers match {ref}: {names}. Which one do you mean?")
        else:
            found.append((pick[0]["customer_id"], pick[0].get("name")))
    return found, problems


def who(cid: str, name: str | None) -> str:
    return f"{name} ({cid})" if name else cid


def orders_of(s: Session, cid: str) -> tuple[list[dict] | None, str | None]:
    call = s.call("list_orders", customer_id=cid)
    if not call.ok:
        return None, f"I couldn't list the orders of {cid}: {call.error}."
    return (call.data if isinstance(call.data, list) else []), None


def skus_for_products(s: Session, words: list[str]) -> dict[str, list[dict]]:
    """Catalog search per product word -> matching products."""
    calls = s.gather([("search_products", {"query": w}) for w in words])
    return {w: (c.data if c.ok and isinstance(c.data, list) else []) for w, c in zip(words, calls, strict=True)}
