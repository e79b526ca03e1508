"""Number words to digits ("sixty euros" -> "60 euros"), in English and a few German,
French and Spanish words, keeping every other character where it was.

The result has the same length as the input (the digits are right-aligned in the span
the words took), so positions found in it line up with positions in the original text.
"""
from __future__ import annotations

import re
from functools import lru_cache

_UNITS = {
    # English
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
    # German
    "eins": 1, "zwei": 2, "drei": 3, "vier": 4, "fünf": 5, "sechs": 6, "sieben": 7, "acht": 8, "neun": 9,
    "zehn": 10, "zwölf": 12,
    # French
    "un": 1, "deux": 2, "trois": 3, "quatre": 4, "cinq": 5, "sept": 7, "huit": 8, "neuf": 9, "dix": 10,
    "onze": 11, "douze": 12, "quinze": 15,
    # Spanish
    "uno": 1, "dos": 2, "tres": 3, "cuatro": 4, "cinco": 5, "seis": 6, "siete": 7, "ocho": 8, "nueve": 9,
    "diez": 10, "doce": 12, "quince": 15,  # not "once", an English word
}
_TENS = {
    "twenty": 20, "thirty": 30, "forty": 40, "fourty": 40, "fifty": 50, "sixty": 60, "seventy": 70,
    "eighty": 80, "ninety": 90,
    "zwanzig": 20, "dreißig": 30, "dreissig": 30, "vierzig": 40, "fünfzig": 50, "sechzig": 60,
    "siebzig": 70, "achtzig": 80, "neunzig": 90,
    "vingt": 20, "trente": 30, "quarante": 40, "cinquante": 50, "soixante": 60,
    "veinte": 20, "treinta": 30, "cuarenta": 40, "cincuenta": 50, "sesenta": 60, "setenta": 70,
    "ochenta": 80, "noventa": 90,
}
# Not French "cent": "not a cent" is English.
_HUNDRED = {"hundred": 100, "hundert": 100, "einhundert": 100, "cien": 100,
            "ciento": 100, "doscientos": 200, "trescientos": 300}
_THOUSAND = {"thousand": 1000, "tausend": 1000, "mille": 1000, "mil": 1000}
_JOIN = {"and", "und", "et", "y", "-"}
# "one" and "a" alone are too often not numbers ("this one", "a refund").
_CURRENCY_AFTER = re.compile(r"\s*(?:euros?|eur|dollars?|usd|bucks|pounds?|quid|gbp|sgd|sterling|[€£$])", re.I)

_WORD = re.compile(r"[a-zA-Zäöüßéèêàç]+|-")
_DE_COMPOUND = re.compile(r"^(ein|zwei|drei|vier|fünf|sechs|sieben|acht|neun)und(\w+zig|dreißig)$")


def _value(word: str) -> tuple[str, int] | None:
    w = word.lower()
    if w in _UNITS:
        return "unit", _UNITS[w]
    if w in _TENS:
        return "tens", _TENS[w]
    if w in _HUNDRED:
        return "hundred", _HUNDRED[w]
    if w in _THOUSAND:
        return "thousand", _THOUSAND[w]
    m = _DE_COMPOUND.match(w)  # fünfundzwanzig
    if m and m.group(2) in _TENS:
        unit = {"ein": 1}.get(m.group(1), _UNITS.get(m.group(1), 0))
        return "tens", _TENS[m.group(2)] + unit
    return None


@lru_cache(maxsize=2048)
def words_to_digits(text: str) -> str:
    tokens = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    out = list(text)
    i = 0
    while i < len(tokens):
        if _value(tokens[i][0]) is None or tokens[i][0] == "-":
            i += 1
            continue
        total, current, j, last_end, words = 0, 0, i, tokens[i][1], 0
        while j < len(tokens):
            tok, start, end = tokens[j]
            gap = text[last_end:start]
            if j > i and gap.strip() not in ("", "-"):
                break
            if tok.lower() in _JOIN and j + 1 < len(tokens) and _value(tokens[j + 1][0]):
                j += 1
                last_end = end
                continue
            v = _value(tok)
            if v is None:
                break
            kind, n = v
            if kind == "hundred":
                current = (current or 1) * n if n == 100 else current + n
            elif kind == "thousand":
                total += (current or 1) * n
                current = 0
            else:
                current += n
            words += 1
            last_end = end
            j += 1
        value = total + current
        span_start, span_end = tokens[i][1], last_end
        followed_by_money = bool(_CURRENCY_AFTER.match(text, span_end))
        if words and (value >= 10 or followed_by_money) and not (words == 1 and tokens[i][0].lower() in
                                                                 ("un", "uno", "one") and not followed_by_money):
            digits = str(value)
            width = span_end - span_start
            if len(digits) <= width:
                out[span_start:span_end] = list(digits.rjust(width))
        i = max(j, i + 1)
    return "".join(out)
