"""The request to act on: the newest user turn, filled in from earlier turns.

"My manager approved it" names neither an order nor a wish; it continues the last
turn that did. Entities missing from the newest turn come from the most recent
earlier turn that had them. Pushes (authority, quoted policy, injected tool output,
pleading) add up over the whole conversation, as pressure does.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from .clauses import REFUSAL, corrected_index
from .conditions import AMOUNT_IF
from .entities import ORDER_RE, Amount
from .intents import Turn, understand


def clauses_refusal(low: str) -> bool:
    """ "no", "no thanks", "don't", "leave it": the answer to a clarifying question is no."""
    return bool(REFUSAL.match(low) or re.match(r"^\W*(?:no|nope|nah|leave it|never ?mind|don'?t)\b", low))

FULL = re.compile(r"\bin full\b|\bfull (?:refund|amount|price|total)\b|\bfully\b|\bentire\b|\beverything\b"
                  r"|\bevery (?:penny|cent)\b"
                  r"|\bwhole (?:amount|order|thing)\b|\ball (?:of )?(?:the|my|their) money\b")
PARTIAL = re.compile(r"\bpartial(?:ly)?\b|\bpart of\b")
REFUND_BARE = re.compile(r"\brefund(?:ing)?\s+(?:of\s+|just\s+|only\s+)?(\d+(?:\.\d+)?)(?![\d-]|\s*(?:days?|%))"
                         r"|(?<![\w.-])(\d+(?:\.\d+)?)\s+back\b", re.I)


# "ok", "d'accord", "vale" only acknowledge ("ok thanks"); a yes or a go-ahead asks for the write.
GO_AHEAD = re.compile(r"^\W*(?:yes|yeah|yep|yup|sure|please do|go ahead|do it|proceed|confirmed?|ja|oui|s[ií]|"
                      r"absolutely|definitely)\b"
                      r"|\b(?:go ahead|do it|please do|proceed|go for it|let'?s do (?:it|that)|sounds good|that works)\b")


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
    targets: dict[str, list[str]] = field(default_factory=dict)   # intent -> the orders of its clause
    declined: list[tuple[str, list[str]]] = field(default_factory=list)
    side_questions: list[str] = field(default_factory=list)
    unsure: list[tuple[str, list[str], str]] = field(default_factory=list)  # writes to ask about first
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
        if self.now.ents.amounts or REFUND_BARE.search(self.now.numtext):
            return bool(FULL.search(self.now.low))
        return any(FULL.search(t.low) for t in self._intent_turns())

    def full_for(self, order_id: str) -> bool:
        """Is a full refund asked for on this order? With several orders in a turn, an
        "in full" belongs to the order it sits next to ("40 EUR on A-1001 and the full amount on A-1008")."""
        turns = [self.now] if self.now.ents.amounts or REFUND_BARE.search(self.now.numtext) \
            else self._intent_turns()
        return any(_full_in(t, order_id) for t in turns)

    def orders_for(self, intent: str) -> list[str]:
        """The orders one intent is about: those of its own clause; else the request's
        orders no other intent (or declined write) of the turn claims; else all of them."""
        own = self.targets.get(intent)
        if own:
            return list(own)
        claimed = {o for k, ids in self.targets.items() if k != intent for o in ids}
        claimed |= {o for _, ids in self.declined for o in ids}
        rest = [o for o in self.orders if o not in claimed]
        # never an order this very intent was told to leave alone ("refund all but A-1003")
        kept = {o for a, ids in self.declined if a == intent for o in ids}
        return rest or [o for o in self.orders if o not in kept]

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
                m = REFUND_BARE.search(turn.numtext)
                if m:
                    amounts = [Amount(float(m.group(1) or m.group(2)), None, m.start())]
            if not amounts:
                continue
            amounts = _asked_amounts(turn.numtext, amounts)
            if order_id not in turn.ents.orders or len(turn.ents.orders) == 1:
                return amounts[corrected_index(turn.numtext, [a.start for a in amounts])]
            spans, where = _order_spans(turn.numtext), _Sentences(turn.numtext)
            mine = [a for a in amounts if (_bound(turn.numtext, a) or where.only_order(a)
                                           or _nearest(spans, a.start, a.start + 1)) == order_id]
            return mine[0] if mine else None
        return None

    def fraction(self) -> float | None:
        for turn in self._intent_turns():
            if turn.ents.fraction and re.search(r"\bhalf\b|\bthird\b|\bquarter\b", turn.low):
                return turn.ents.fraction
            # "25% of A-1008", "20 percent of the total": a share of the order, not an amount
            pct = re.search(r"(\d+(?:\.\d+)?)\s?(?:%|percent|per cent)\s+(?:of\b|back\b|refund)", turn.numtext, re.I)
            if pct and 0 < float(pct.group(1)) <= 100:
                return float(pct.group(1)) / 100
        return None


# A clause that tells what was paid ("I paid 60 SGD for express shipping") names a price, not
# the money asked back; the amount comes from a clause that asks for it.
_PAID = re.compile(r"\b(?:paid|spent|charged|cost|costs|bought|was|were)\b")


def _asked_amounts(text: str, amounts: list[Amount]) -> list[Amount]:
    if len(amounts) < 2:
        return amounts
    # each part read once, each amount placed by bisection: a part per amount cost the square
    parts = [m.span() for m in _PART.finditer(text)]
    told_parts = [bool(_PAID.search(text, x, y)) and not REFUND_WORD.search(text, x, y) for x, y in parts]
    # nor is the bound of a condition ("if it's under 30 dollars")
    conditions = [m.span() for m in AMOUNT_IF.finditer(text)]

    def within(spans: list[tuple[int, int]], pos: int) -> int | None:
        i = bisect_right(spans, (pos, float("inf"))) - 1  # sorted, not overlapping
        return i if i >= 0 and spans[i][0] <= pos < spans[i][1] else None

    def told(a: Amount) -> bool:
        i = within(parts, a.start)
        return i is not None and told_parts[i]
    kept = [a for a in amounts if not told(a) and within(conditions, a.start) is None]
    return kept or amounts


REFUND_WORD = re.compile(r"\brefund|\bback\b|\breimburs", re.I)
_PART = re.compile(r"(?:[^,;.!?\n]|[.,](?=\d))+")  # a text's parts between punctuation (not "12.50")


class _Spans(dict):
    """order id -> its mentions' spans, and all spans sorted by start (they do not overlap)."""

    def __init__(self, items):
        super().__init__(items)
        self.sorted = sorted((sp[0], sp[1], oid) for oid, sps in self.items() for sp in sps)
        self.starts = [s for s, _, _ in self.sorted]


def _order_spans(text: str) -> _Spans:
    spans: dict[str, list[tuple[int, int]]] = {}
    for m in ORDER_RE.finditer(text):
        spans.setdefault("A-" + next(g for g in m.groups() if g), []).append(m.span())
    return _Spans(spans)


def _nearest(spans: _Spans, start: int, end: int) -> str | None:
    """The order id closest to a mention, measured between their nearer ends (the smallest id
    of those equally close). Only the mentions over it and those right before and after it can
    be closest, as mentions do not overlap: found by bisection, not by measuring every one."""
    def gap(span):
        s, e = span
        return start - e if e <= start else (s - end if s >= end else 0)
    i = bisect_left(spans.starts, end)  # spans.sorted[i] is the first to start at or after the mention's end
    j = i - 1
    while j >= 0 and spans.sorted[j][1] > start:  # over the mention (ends are sorted like starts)
        j -= 1
    near = spans.sorted[max(0, j):i + 1]  # and the one right before and the one right after
    best = min(((gap((s, e)), oid) for s, e, oid in near), default=None)
    return best[1] if best else None


_BOUND = re.compile(r"[^\d.?!;,]{0,25}?\b(?:on|of|for|from|to|off)\s+(?:the\s+)?(?:order\s+)?#?\s*")


def _bound(text: str, amount: Amount) -> str | None:
    """The order an amount is said to be on ("50 SGD on A-1008", "20 EUR of order 1001")."""
    digits = _DIGITS.match(text, amount.start)  # at the position, not on a copy of the rest
    end = digits.end() if digits else amount.start
    m = _BOUND.match(text, end)
    o = ORDER_RE.match(text, m.end()) if m else None
    return ("A-" + next(g for g in o.groups() if g)) if o else None


_DIGITS = re.compile(r"[\d.,]+")
_AFTER_END = re.compile(r"[.?!;\n]\s")  # a sentence starts after this
_END = re.compile(r"[.?!;\n](?=\s|$)")  # ... and ends before this


class _Sentences:
    """The sentences of a text, found once for all its amounts (each amount used to read the text
    before and after it, and its sentence again: the square of the number of amounts)."""

    def __init__(self, text: str):
        self.text = text
        self.starts = [m.end() for m in _AFTER_END.finditer(text)]  # as finditer on any prefix finds them
        self.ends = [m.start() for m in _END.finditer(text)]
        self.ids: dict[tuple[int, int], str | None] = {}

    def only_order(self, amount: Amount) -> str | None:
        """The one order named in the sentence an amount is in ("A-1008: refund 30 SGD.")."""
        i = bisect_right(self.starts, amount.start)
        start = self.starts[i - 1] if i else 0
        j = bisect_left(self.ends, amount.start)
        end = self.ends[j] if j < len(self.ends) else len(self.text)
        if (start, end) not in self.ids:
            # from start (after a space, or 0) to end: as on the slice text[start:end]
            ids = {"A-" + next(g for g in m.groups() if g) for m in ORDER_RE.finditer(self.text, start, end)}
            self.ids[start, end] = ids.pop() if len(ids) == 1 else None
        return self.ids[start, end]


def _full_in(turn: Turn, order_id: str) -> bool:
    hits = list(FULL.finditer(turn.low))
    if not hits:
        return False
    spans = _order_spans(turn.low)
    if len(spans) <= 1 or order_id.lower() not in {o.lower() for o in spans}:
        return True
    return any((_nearest(spans, m.start(), m.end()) or "").lower() == order_id.lower() for m in hits)


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
                  draft=now.draft, apology=now.apology, targets=dict(now.targets), declined=list(now.declined),
                  side_questions=list(now.side_questions), unsure=list(now.unsure))
    source = now
    if len(turns) > 1 and not (now.actions or now.declined or now.hold or now.unsure) and turns[-2].unsure:
        # The answer to "Do you want me to refund A-1008?": a yes makes the write, anything else doesn't.
        prev = turns[-2]
        if GO_AHEAD.search(now.low) and not now.thanks and not clauses_refusal(now.low):
            for action, ids, _ in prev.unsure:
                if action not in req.actions:
                    req.actions.append(action)
                req.targets.setdefault(action, []).extend(o for o in ids if o not in req.targets.get(action, []))
            req.inherited, source = True, prev
            if not any(t.ents.orders for t in turns):  # "Did you mean A-1008?" "yes"
                req.orders = list(dict.fromkeys(o for _, ids, _ in prev.unsure for o in ids))
        elif now.confirm is False and clauses_refusal(now.low):
            req.declined = [(a, ids) for a, ids, _ in prev.unsure]
    # A declined or held turn ("don't refund it yet") starts nothing, and continues nothing either.
    if not (now.actions or now.questions or now.draft or now.declined or now.hold or req.inherited) \
            and len(turns) > 1:
        # A follow-up without its own wish continues the last turn that had one.
        follows = now.pushes or now.confirm or now.damage or now.ents.orders or now.ents.has_customer \
            or now.ents.amounts or now.supervisor_reader or now.self_supervisor
        if follows:
            for prev in reversed(turns[:-1]):
                if prev.actions or prev.questions or prev.draft:
                    req.actions, req.questions = list(prev.actions), list(prev.questions)
                    req.targets = {} if now.ents.orders else dict(prev.targets)
                    req.draft, req.apology = prev.draft, prev.apology
                    req.inherited, source = True, prev
                    if GO_AHEAD.search(now.low) and not now.thanks:
                        # "yes, go ahead" after "would I get a refund?": now it is asked for
                        for write, check in (("refund", "refund_check"), ("cancel", "cancel_check"),
                                             ("address", "address_check")):
                            if check in req.questions:
                                req.questions.remove(check)
                                req.actions.append(write)
                                req.targets[write] = req.targets.pop(check, [])
                    break
    guessed = list(req.orders)
    req.orders, req.orders_turn = _latest(turns, lambda t: t.ents.orders)
    req.orders = req.orders or guessed
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
