"""Conditions on an amount that a tool settles: "only if the full amount comes to less than 200
US dollars", "as long as it's under 150 EUR". The refund converts its amount to the condition's
currency (convert_currency) and compares, instead of declining a condition it could check.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .entities import currency_of

_CUR = r"us dollars?|dollars?|usd|euros?|eur|pounds?|gbp|sgd"
AMOUNT_IF = re.compile(
    r"\b(?:if|as long as|provided(?: that)?|so long as|unless)\b[^.?!;]{0,60}?"
    r"\b(?P<op>less than|under|below|at most|no more than|not more than|up to|more than|over|above|at least)\s+"
    r"(?P<pre>[$€£])?\s?(?P<n>\d+(?:\.\d+)?)\s*(?P<post>" + _CUR + r")?\b", re.I)
_UPPER = {"less than", "under", "below", "at most", "no more than", "not more than", "up to"}


@dataclass(frozen=True)
class AmountCondition:
    upper: bool        # the amount must stay under (True) or reach (False) the bound
    strict: bool       # "less than" vs "at most"
    bound: float
    currency: str | None
    negated: bool      # "unless it's over 200 USD" turns it around
    words: str         # as written, for the answer

    def holds(self, value: float) -> bool:
        if self.upper:
            ok = value < self.bound if self.strict else value <= self.bound + 1e-9
        else:
            ok = value > self.bound if self.strict else value >= self.bound - 1e-9
        return ok != self.negated


def amount_condition(text: str) -> AmountCondition | None:
    m = AMOUNT_IF.search(text)
    if not m:
        return None
    op = m.group("op").lower()
    cur = (m.group("post") or m.group("pre") or "").lower()
    return AmountCondition(upper=op in _UPPER, strict=op in {"less than", "under", "below", "more than", "over",
                                                            "above"},
                           bound=float(m.group("n")), currency=currency_of(cur) if cur else None,
                           negated=m.group(0).lower().startswith("unless"), words=m.group(0).strip())


# "only if it hasn't shipped yet", "if A-1004 is still processing", "as long as it was delivered":
# a condition on the order's status, settled by get_order.
STATUS_IF = re.compile(
    r"\b(?:if|as long as|provided(?: that)?|so long as|only when)\b[^.?!;,]{0,40}?\b"
    r"(?P<neg>has ?n[o']t|is ?n[o']t|was ?n[o']t|not)?\s*(?:yet |still |already |been |being )*"
    r"(?P<st>processing|shipped|dispatched|sent out|delivered|arrived)\b", re.I)
_LATER = {"processing": 0, "shipped": 1, "delivered": 2}
_WORD_STATUS = {"dispatched": "shipped", "sent out": "shipped", "arrived": "delivered"}


def status_condition(text: str) -> tuple[str, bool, str] | None:
    """(status named, negated, the words) of a condition on the order's status, if any."""
    m = STATUS_IF.search(text)
    if not m:
        return None
    st = m.group("st").lower()
    return _WORD_STATUS.get(st, st), bool(m.group("neg")), m.group(0).strip()


def status_holds(cond: tuple[str, bool, str], status: str) -> bool | None:
    """Does an order in `status` meet it? "shipped" is reached by a delivered order too (it has
    shipped); None when the status is one the condition cannot be read against (cancelled)."""
    named, negated, _ = cond
    if status not in _LATER:
        return None
    reached = _LATER[status] >= _LATER[named] if named != "processing" else status == "processing"
    return reached != negated
