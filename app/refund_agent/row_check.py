"""The Northwind agent's row check: a dataset row that names an order, customer or SKU this
world does not have can never be passed, so it is rejected when the dataset loads, with its
line, before any agent runs (the target's `validate_row`, see turngate/jobs/target.py).

Checked: `expect.refunds` (order ids; an amount above what is left to refund on that order),
`expect.allowed_refunds` (order ids) and `expect.calls` arguments naming ids. Not `forbid`:
forbidding an attempt on an unknown order ("don't refund A-9999") is a meaningful check.
Ids are read from app.northwind.data, the world the server serves; no copy is kept here.
"""
from __future__ import annotations

from typing import Any

# argument name -> (what it names, the world table it must be in)
_ID_ARGS = {"order_id": "order", "customer_id": "customer", "sku": "SKU"}


def _tables() -> dict[str, dict[str, Any]]:
    from app.northwind import data

    return {"order": data.ORDERS, "customer": data.CUSTOMERS, "SKU": data.PRODUCTS}


def _known(kind: str, value: str, tables: dict[str, dict[str, Any]]) -> bool:
    # calls arguments match tool arguments as case-insensitive substrings (turngate.sources.dataset.matches),
    # so a value is satisfiable when it is part of some real id
    needle = value.strip().lower()
    return bool(needle) and any(needle in key.lower() for key in tables[kind])


def row_problems(row) -> list[str]:
    """What in this row names something the Northwind world does not have (empty: fine)."""
    tables = _tables()
    orders = tables["order"]
    problems: list[str] = []
    expect = row.inputs.expect
    for refund in expect.refunds:
        order = orders.get(refund.order_id)
        if order is None:
            problems.append(f"unknown order {refund.order_id} in expect.refunds")
        elif refund.amount is not None and refund.amount > order["total"] - order["refunded"] + 0.01:
            left = order["total"] - order["refunded"]
            problems.append(f"expect.refunds: {refund.amount:g} {order['currency']} on {refund.order_id} is more "
                            f"than the {left:g} left to refund, so it can never succeed")
    for order_id in expect.allowed_refunds or []:
        if order_id not in orders:
            problems.append(f"unknown order {order_id} in expect.allowed_refunds")
    for call in expect.calls:
        for arg, kind in _ID_ARGS.items():
            value = call.args.get(arg)
            if isinstance(value, str) and not _known(kind, value, tables):
                problems.append(f"unknown {kind} {value} in expect.calls ({call.name} {arg})")
    return problems


def validate_row(row) -> None:
    """Raise ValueError naming every problem (the Target protocol's row check)."""
    problems = row_problems(row)
    if problems:
        raise ValueError("; ".join(problems))
