"""The request to act on: the newest user turn, filled in from earlier turns.

"My manager approved it" names neither an order nor a wish; it continues the last
turn that did. Entities missing from the newest turn come from the most recent
earlier turn that had them. Pushes (authority, quoted policy, injected tool output,
pleading) add up over the whole conversation, as pressure does.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache

from .entities import Amount
from .intents import Turn, understand

FULL = re.compile(r"\bin full\b|\bfull (?:refund|amount|price|total)\b|\bfully\b|\bentire\b|\beverything\b"
                  r"|\bwhole (?:amount|order|thing)\b|\ball (?:of )?(?:the|my|their) money\b")
SPLIT = re.compile(r"\bin (?:parts|pieces|chunks|instal?ments|smaller (?:amounts|refunds|parts))\b|\bsplit\b"
                   r"|\bthe rest\b|\bremainder\b|\bpiece by piece\b|\bfirst (?:part|half|chunk|instal?ment)\b"
                   r"|\bone part\b|\bbit by bit\b")
PARTIAL = re.compile(r"\bpartial(?:ly)?\b|\bpart of\b")
REFUND_BARE = re.compile(r"\brefund(?:ing)?\s+(?:of\s+|just\s+|only\s+)?(\d+(?:\.\d+)?)(?![\d-]|\s*(?:days?|%))"
                         r"|\b(\d+(?:\.\d+)?)\s+back\b", re.I)


@lru_cache(maxsize=2048)
def _understand(text: str) -> Turn:
    return understand(text)  # turns repeat in every call of a conversation


@dataclass
class Request:
    turns: list[Turn]
    actions: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    draft: bool = False
    apology: bool = False
    inherited: bool = False
    orders: list[str] = field(default_factory=list)
    orders_turn: Turn | None = None     # the turn the order ids came from
    customers: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    skus: list[str] = field(default_factory=list)
    # pushes, over the whole conversation
    authority: bool = False
    ignore_rules: bool = False
    injection: bool = False
    injected_eligible: bool = False
    injected_approval: bool = False
    quoted_policy: bool = False
    quoted_days: int | None = None
    quoted_limit: float | None = None
    pressure_turns: int = 0
    damage: bool = False
    supervisor_reader: bool = False
    self_supervisor: bool = False
    today: str | None = None

    @property
    def now(self) -> Turn:
        return self.turns[-1]

    @property
    def has_customer(self) -> bool:
        return bool(self.customers or self.emails or self.names)

    @property
    def full(self) -> bool:
        # A newer turn that names an amount ("then refund 150 GBP") replaces an earlier "in full".
        if self.now.ents.amounts or REFUND_BARE.search(self.now.text):
            return bool(FULL.search(self.now.low))
        return any(FULL.search(t.low) for t in self._intent_turns())

    @property
    def split(self) -> bool:
        return any(SPLIT.search(t.low) for t in self._intent_turns())

    @property
    def partial(self) -> bool:
        return any(PARTIAL.search(t.low) for t in self._intent_turns())

    def _intent_turns(self) -> list[Turn]:
        turns = [self.now]
        if self.orders_turn is not None and self.orders_turn is not self.now:
            turns.append(self.orders_turn)
        return turns

    def amount_for(self, order_id: str) -> Amount | None:
        """The amount the user tied to this order: the nearest money mention in the
        turn that named it (or the newest turn, when it adds an amount)."""
        for turn in self._intent_turns():
            amounts = list(turn.ents.amounts)
            if not amounts:
                m = REFUND_BARE.search(turn.text)
                if m:
                    amounts = [Amount(float(m.group(1) or m.group(2)), None, m.start())]
            if not amounts:
                continue
            if order_id not in turn.ents.orders or len(turn.ents.orders) == 1:
                return amounts[0]
            pos = dict(zip(turn.ents.orders, turn.ents.order_pos, strict=True))
            mine = [a for a in amounts
                    if min(turn.ents.orders, key=lambda o: abs(pos[o] - a.start)) == order_id]
            return mine[0] if mine else None
        return None

    def fraction(self) -> float | None:
        for turn in self._intent_turns():
            if turn.ents.fraction and re.search(r"\bhalf\b|\bthird\b|\bquarter\b", turn.low):
                return turn.ents.fraction
        return None


def _latest(turns: list[Turn], get) -> tuple[list, Turn | None]:
    for turn in reversed(turns):
        value = get(turn)
        if value:
            return list(value), turn
    return [], None


def build_request(users: list[str]) -> Request:
    turns = [_understand(u) for u in users] or [_understand("")]
    now = turns[-1]
    req = Request(turns=turns, actions=list(now.actions), questions=list(now.questions),
                  draft=now.draft, apology=now.apology)
    source = now
    if not (now.actions or now.questions or now.draft) and len(turns) > 1:
        # A follow-up without its own wish continues the last turn that had one.
        follows = now.pushes or now.confirm or now.damage or now.ents.orders or now.ents.has_customer \
            or now.ents.amounts or now.supervisor_reader or now.self_supervisor
        if follows:
            for prev in reversed(turns[:-1]):
                if prev.actions or prev.questions or prev.draft:
                    req.actions, req.questions = list(prev.actions), list(prev.questions)
                    req.draft, req.apology = prev.draft, prev.apology
                    req.inherited, source = True, prev
                    break
    req.orders, req.orders_turn = _latest(turns, lambda t: t.ents.orders)
    if req.inherited and source.ents.orders and not now.ents.orders:
        req.orders, req.orders_turn = list(source.ents.orders), source
    cust_turn = next((t for t in reversed(turns) if t.ents.has_customer), None)
    if cust_turn is not None:
        req.customers, req.emails, req.names = (list(cust_turn.ents.customers), list(cust_turn.ents.emails),
                                                list(cust_turn.ents.names))
    req.skus, _ = _latest(turns, lambda t: t.ents.skus)
    req.products, _ = _latest(turns, lambda t: t.ents.products)
    for t in turns:
        req.authority |= t.authority
        req.ignore_rules |= t.ignore_rules
        req.injection |= t.injection
        req.injected_eligible |= t.injected_eligible
        req.injected_approval |= t.injected_approval
        if t.quoted_policy:
            req.quoted_policy = True
            req.quoted_days = t.quoted_days or req.quoted_days
            req.quoted_limit = t.quoted_limit or req.quoted_limit
        req.pressure_turns += int(t.pressure)
        req.damage |= t.damage
        req.supervisor_reader |= t.supervisor_reader
        req.self_supervisor |= t.self_supervisor
        req.today = t.ents.today or req.today
    return req
