"""Reading an answer: sentences and clauses, negation and modality, money, dates and ids.

Wording-robust on purpose: claims are found by verb lemmas and tense markers, not by
fixed sentences, and a few other languages' refund/cancel/email words are known.
"""
from __future__ import annotations

import re
from datetime import date

MONTHS = {m: i + 1 for i, m in enumerate(
    ["january", "february", "march", "april", "may", "june", "july", "august", "september", "october",
     "november", "december"])}
MONTHS.update({m[:3]: n for m, n in list(MONTHS.items())})
MONTHS["sept"] = 9
CURRENCY_WORDS = {"eur": "EUR", "euro": "EUR", "euros": "EUR", "€": "EUR", "usd": "USD", "dollar": "USD",
                  "dollars": "USD", "$": "USD", "us$": "USD", "gbp": "GBP", "pound": "GBP", "pounds": "GBP",
                  "£": "GBP", "sgd": "SGD", "s$": "SGD"}
_CUR = r"(?:eur|euros?|€|usd|us\$|dollars?|\$|gbp|pounds?|£|sgd|s\$)"
NUM = r"\d+(?:\.\d+)?"
MONEY = re.compile(rf"(?:(?P<pre>{_CUR})\s?(?P<a>{NUM})|(?P<b>{NUM})\s?(?P<post>{_CUR})(?![a-z]))")
ID = re.compile(r"\b(?:sku-[a-z0-9]+|[a-z]{1,4}-\d{2,6})\b")
ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
DMY = re.compile(r"\b(\d{1,2})\.(\d{1,2})\.(\d{4})\b")
_MON = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|jun(?:e)?|jul(?:y)?|aug(?:ust)?|sept?(?:ember)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
MONTH_DAY = re.compile(rf"\b{_MON}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?\b(?:,?\s+(\d{{4}}))?")
DAY_MONTH = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON}\b\.?(?:,?\s+(\d{{4}}))?")
DURATION = re.compile(r"\b(\d+)(?:\s?(?:-|to)\s?(\d+))?\s+(?:business\s+|working\s+|calendar\s+)?(hours?|days?|weeks?|months?)\b")

NEGATION = re.compile(r"(n't|n’t)\b|\b(not|no|never|nothing|none|neither|nor|cannot|unable|without|yet to|"
                      r"nicht|kein\w*|pas|jamais|não|nao|niet|geen|nunca)\b")
# words that make a clause hypothetical, a question or an offer rather than a report of a fact
MODAL = re.compile(r"\b(if|once|when|whether|unless|until|after|would|could|can|may|might|shall|should i|"
                   r"want me to|like me to|let me know|tried|try|attempted|attempt|please|able to|"
                   r"wenn|falls|si|se|als)\b|\?")
FUTURE = re.compile(r"\b(will|'ll|’ll|going to|shall)\b")


def clean(text: str) -> str:
    """Lower case, dashes unified, thousands separators dropped, decimal commas to points,
    markdown emphasis removed."""
    text = text.lower().replace("\u2011", "-").replace("\u2013", "-").replace("\u2014", "-")
    text = re.sub(r"(?<=\d),(?=\d{3}\b)", "", text)
    text = re.sub(r"(?<=\d),(?=\d{1,2}\b)", ".", text)
    return re.sub(r"[*`#]+|(?<!\w)_+|_+(?!\w)", "", text)  # markdown emphasis, not tool_names


def sentences(text: str) -> list[str]:
    parts = re.split(r"(?<=[.!?])\s+|\n+|^\s*[-•]\s+", clean(text), flags=re.M)
    return [p.strip(" -•") for p in parts if p and p.strip(" -•")]


def clauses(sentence: str) -> list[str]:
    """Split a sentence where a new statement can begin, so a negation or an 'if' governs
    only its own part."""
    parts = re.split(r"\s*[;,]\s+|\s+-\s+|\s*\(|\)\s*|\s+\b(?:and|but|so|which|although|though|while|"
                     r"because|since|as|whereas|y|e|et|und|en|pero|mais|aber|maar)\b\s+", sentence)
    return [p.strip() for p in parts if p and p.strip()]


def negated(clause: str) -> bool:
    return bool(NEGATION.search(clause))


def hypothetical(clause: str) -> bool:
    return bool(MODAL.search(clause))


def money(text: str) -> list[tuple[float, str]]:
    """(amount, currency) pairs written in text (already cleaned)."""
    out = []
    for m in MONEY.finditer(text):
        raw, cur = (m.group("a"), m.group("pre")) if m.group("a") else (m.group("b"), m.group("post"))
        out.append((float(raw), CURRENCY_WORDS.get(cur.strip(), cur.upper())))
    return out


def dates(text: str, default_year: int | None = None) -> list[tuple[date | None, tuple[int, int]]]:
    """Dates written in text: ISO, dd.mm.yyyy and spelled months. Returns (full date or None,
    (month, day))."""
    out = []

    def add(y, mo, d):
        try:
            full = date(int(y), int(mo), int(d)) if y else None
        except ValueError:
            full = None
        if 1 <= int(mo) <= 12 and 1 <= int(d) <= 31:
            out.append((full, (int(mo), int(d))))

    for y, mo, d in ISO.findall(text):
        add(y, mo, d)
    for d, mo, y in DMY.findall(text):
        add(y, mo, d)
    for mon, d, y in MONTH_DAY.findall(text):
        add(y or None, MONTHS[mon[:4].rstrip(".") if mon.startswith("sept") else mon[:3]], d)
    for d, mon, y in DAY_MONTH.findall(text):
        add(y or None, MONTHS[mon[:4] if mon.startswith("sept") else mon[:3]], d)
    return out


def strip_facts(text: str) -> str:
    """Text with ids, dates and money removed: what is left are bare numbers."""
    for pattern in (ID, ISO, DMY, MONTH_DAY, DAY_MONTH, MONEY, DURATION):
        text = pattern.sub(" ", text)
    return text


# Words after which a status is not asserted but bounds or denies the time of another event:
# "cancelled before it was delivered", "refunded instead of being shipped", "until it ships".
_UNASSERTED = re.compile(r"\b(?:before|until|till|prior to|instead of|rather than|without|in case|as if|so that|"
                         r"ahead of|never|not|bevor|avant|antes de)\b.*$")


def asserted(clause: str) -> str:
    """The part of a clause that states something as a fact: what a temporal, counterfactual
    or negative subordinate part governs is cut off."""
    return _UNASSERTED.sub(" ", clause)
