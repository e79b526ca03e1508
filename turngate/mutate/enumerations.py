"""The `list` operator's second half: widen or narrow an enumerated condition.

operators.py already drops each item of a comma list of three or more ("order, customer or
product"). A condition is often shorter ("delivered or shipped", '"processing"', "EUR or USD"),
and a plain "X or Y" cannot be told from prose ("cancelled or have their address changed") by
its shape. So an enumeration of fewer than three items, and any widening, needs to know that the
items are *siblings*: words of one closed family below (order statuses, currencies, weekdays...),
or codes in capitals. That is what makes an added item plausible and the edit deterministic,
with no model: the sibling added is the family's member nearest the listed ones.

    narrow  "delivered or shipped" -> "delivered" / "shipped"           (two siblings: one dropped)
    widen   "EUR, USD or GBP" -> "EUR, USD, GBP or CHF"                 (a list of siblings: one added)
            "only for delivered orders" -> "only for delivered or shipped orders"
                                        (one family word in a sentence with "only": the condition
                                         it states gets an alternative)

A number's unit ("200 USD") is the `unit` operator's, never an enumeration.
"""
from __future__ import annotations

import re

# Each family in an order where neighbours are the plausible swaps: the sibling added is the
# member nearest a listed one (ties: the earlier), so the same list always gets the same one.
# Capitalised members match only as written ("May" the month, never "may" the verb).
FAMILIES: tuple[tuple[str, ...], ...] = (
    ("processing", "shipped", "delivered", "returned", "cancelled", "pending"),                 # order status
    ("USD", "EUR", "GBP", "CHF", "CAD", "AUD", "SGD", "JPY"),                                 # currency
    ("order", "customer", "product", "account", "payment", "shipment"),                        # records
    ("damaged", "defective", "missing", "late", "lost"),                                        # return reasons
    ("email", "phone", "chat", "SMS", "letter"),                                                # channels
    ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"),
    ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
     "November", "December"),
    ("admin", "manager", "supervisor", "agent", "customer"),                                     # roles
)
# A lone word is widened only when it names a state or kind an "only" condition admits; a lone
# record, role or day ("one named customer") is the subject of a rule, not its condition.
LONE = frozenset({0, 1, 3})
_INDEX: dict[str, set[int]] = {}
for _f, _words in enumerate(FAMILIES):
    for _w in _words:
        _INDEX.setdefault(_w, set()).add(_f)

_ITEM = r'"?[A-Za-z][\w-]*"?'
_MIDDLE = rf"{_ITEM}(?: (?!(?:or|and)\b){_ITEM}){{0,2}}"  # between commas an item may be words: "wrong item"
# "a or b", "a, b and c", "a, b c, or d": the first and last items one word each (where a list
# starts and ends in prose is otherwise unknown), whole words only
_ENUM = re.compile(rf"(?<![\w\"-])({_ITEM}(?:, {_MIDDLE})*),? (or|and) ({_ITEM})(?![\w\"-])")
_WORD = re.compile(rf"(?<![\w\"-]){_ITEM}(?![\w\"-])")
_CODE = re.compile(r"[A-Z]{2,4}")


def _bare(item: str) -> str:
    return item.strip('"')


def _family(items: list[str]) -> int | None:
    """The family every item belongs to (the first such), or None."""
    common = None
    for item in items:
        word = _bare(item)  # a lower-case member also matches capitalised, as a sentence starts
        got = _INDEX.get(word, set()) | {f for f in _INDEX.get(word.lower(), set()) if FAMILIES[f][0].islower()}
        common = got if common is None else common & got
    return min(common) if common else None


def _siblings(items: list[str]) -> tuple[bool, int | None]:
    """Whether the items are an enumeration of siblings, and their family. Two items must both be
    of one (or codes, or quoted); a comma list of three or more is an enumeration by its shape,
    and two of its items in one family name the family ("damaged, wrong item or missing")."""
    bare = [_bare(i) for i in items]
    if (family := _family(items)) is not None:
        return True, family
    if len(items) > 2:
        pairs = [_family([x, y]) for i, x in enumerate(items) for y in items[i + 1:]]
        if found := [f for f in pairs if f is not None]:
            return True, min(found)
    return all(_CODE.fullmatch(b) for b in bare) or all(i.startswith('"') and i.endswith('"') for i in items), None


def _nearest(items: list[str], family: int) -> str | None:
    """The family member nearest a listed item, not already listed; written like the items."""
    words = FAMILIES[family]
    listed = {_bare(i).lower() for i in items}
    at = [words.index(w) for w in words if w.lower() in listed]
    free = [(min(abs(k - a) for a in at), k) for k, w in enumerate(words) if w.lower() not in listed]
    if not free:
        return None
    new = words[min(free)[1]]
    like = _bare(items[-1])
    if like[:1].isupper() and not new[:1].isupper():
        new = new.capitalize()
    return f'"{new}"' if items[-1].startswith('"') else new


def _join(items: list[str], conj: str) -> str:
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + f" {conj} " + items[-1]


def _after_number(s: str, at: int) -> bool:
    return bool(re.search(r"\d[\s-]?\Z", s[:at]))


def enumeration_edits(s: str) -> list[tuple[int, int, str, str]]:
    """(start, end, replacement, kind) inside the sentence s: each enumeration of siblings
    narrowed by one item (each in turn) and widened by its family's nearest missing member; a
    lone status, currency or reason widened in an "only" sentence. Nothing where no enumeration
    of siblings is found."""
    out: list[tuple[int, int, str, str]] = []
    taken: list[tuple[int, int]] = []
    for m in _ENUM.finditer(s):
        items = [*m.group(1).split(", "), m.group(3)]
        sibling, family = _siblings(items)
        if _after_number(s, m.start()) or not sibling:
            continue
        taken.append(m.span())
        for k in range(len(items)):  # of a one-word comma list operators.py made the same text first
            out.append((m.start(), m.end(), _join(items[:k] + items[k + 1:], m.group(2)),
                        f"dropped {_bare(items[k])!r}"))
        if family is not None and (new := _nearest(items, family)):
            out.append((m.start(), m.end(), _join([*items, new], m.group(2)), f"added {_bare(new)!r}"))
    if re.search(r"\bonly\b", s, re.I):
        for m in _WORD.finditer(s):
            if any(a <= m.start() < b for a, b in taken) or _after_number(s, m.start()) or \
                    re.search(r"\bbe(en|ing)? \Z", s[:m.start()]):  # "can be cancelled": an act, not a state
                continue
            family = _family([m.group()])
            if family in LONE and (new := _nearest([m.group()], family)):
                out.append((m.start(), m.end(), f"{m.group()} or {new}", f"added {_bare(new)!r}"))
    return out
