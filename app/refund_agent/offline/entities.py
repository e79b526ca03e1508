"""Entity extraction from free user text: ids, names, money, places, dates.

Users write however they like ("a1001", "order 1001", "€40", "in euros"), so every
extractor accepts the common spellings and normalises them to what the tools take.
No Northwind data lives here: names, SKUs and products are resolved with tools.
"""
from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from functools import lru_cache

from .lexicon import lexicon_word
from .scan import Scan

CURRENCY_WORDS = {
    "usd": "USD", "us dollars": "USD", "us dollar": "USD", "dollars": "USD", "dollar": "USD",
    "bucks": "USD", "eur": "EUR", "euros": "EUR", "euro": "EUR", "gbp": "GBP", "pounds": "GBP",
    "pound": "GBP", "sterling": "GBP", "quid": "GBP", "sgd": "SGD", "singapore dollars": "SGD",
    "singapore dollar": "SGD", "sing dollars": "SGD",
}
SYMBOLS = {"$": "USD", "us$": "USD", "€": "EUR", "£": "GBP", "s$": "SGD"}
_CUR_WORD = (r"(?:us\s+dollars?|singapore\s+dollars?|sing\s+dollars|usd|eur|gbp|sgd|euros?|"
             r"dollars?|bucks|pounds?|sterling|quid)")
_NUM = r"\d+(?:,\d{3})*(?:\.\d+)?(?:,\d{1,2}(?!\d))?"  # "1,200" and "64,50" (a decimal comma)

COUNTRIES = {
    "germany": "DE", "portugal": "PT", "united kingdom": "GB", "great britain": "GB", "britain": "GB",
    "england": "GB", "scotland": "GB", "wales": "GB", "singapore": "SG", "united states": "US",
    "america": "US", "the us": "US", "the usa": "US", "france": "FR", "spain": "ES", "italy": "IT", "netherlands": "NL",
    "ireland": "IE", "austria": "AT", "belgium": "BE", "canada": "CA", "australia": "AU", "japan": "JP",
    # German, French and Spanish names
    "deutschland": "DE", "allemagne": "DE", "alemania": "DE", "großbritannien": "GB", "royaume-uni": "GB",
    "reino unido": "GB", "vereinigtes königreich": "GB", "singapur": "SG", "singapour": "SG",
    "frankreich": "FR", "francia": "FR", "spanien": "ES", "espagne": "ES", "españa": "ES",
    "estados unidos": "US", "états-unis": "US", "vereinigte staaten": "US",
    # people of a country ("a German customer")
    "german": "DE", "portuguese": "PT", "british": "GB", "singaporean": "SG", "american": "US",
    "french": "FR", "spanish": "ES", "italian": "IT", "dutch": "NL", "irish": "IE",
}
COUNTRY_CODES = {"UK": "GB", "GB": "GB", "US": "US", "USA": "US", "DE": "DE", "PT": "PT", "SG": "SG",
                 "FR": "FR", "ES": "ES", "IT": "IT", "NL": "NL", "IE": "IE"}
# Codes that are also ordinary words ("us", "it", German/French/Spanish "de", "es", "ie" for i.e.)
# count in upper case only; the others in any case ("a uk customer", "vat for sg").
_WORD_LIKE_CODES = frozenset({"US", "DE", "ES", "IT", "IE"})
_ANY_CASE_CODE = re.compile(r"(?<![\w.-])(" + "|".join(c.lower() for c in COUNTRY_CODES if c not in _WORD_LIKE_CODES)
                            + r")(?![\w-]|\.\s*\d)", re.I)

KNOWN_CITIES = ("lisbon", "london", "porto", "paris", "berlin", "madrid", "singapore", "new york",
                "manchester", "munich", "amsterdam", "dublin", "rome", "barcelona")

# Product nouns people use -> the word the catalog search understands.
PRODUCT_WORDS = {
    "keyboards": "keyboard", "keyboard": "keyboard", "headphones": "headphones",
    "headphone": "headphones", "headset": "headphones", "earphones": "headphones",
    "laptops": "laptop", "laptop": "laptop", "notebook computer": "laptop", "mice": "mouse",
    "mouse": "mouse", "monitor": "monitor", "monitors": "monitor", "webcam": "webcam",
    "charger": "charger", "tablet": "tablet", "speaker": "speaker", "speakers": "speaker",
}

# Capitalised words that start sentences or name things other than people.
_NOT_NAMES = frozenset("""
nothing something anything everything nobody somebody anybody everybody noone someone anyone everyone
a an the i i'm im hi hello hey dear thanks thank please can could would will should shall may
might must do does did is are was were be been what whats what's when where which who whom whose
why how if is it its it's my our your their his her we you they he she this that these those
order orders refund refunds cancel change update ship send email e-mail write draft reply open
create apply give list show tell find check summarise summarize explain recommend compose
delete remove help just also and or but so yes no ok okay sure hmm great perfect one two
customer customers client manager supervisor admin store shop team support northwind
monday tuesday wednesday thursday friday saturday sunday january february march april may june
july august september october november december jan feb mar apr jun jul aug sep sept oct nov dec
road rd street st avenue ave lane ln drive dr way boulevard blvd square sq
calle avenida plaza paseo rue chemin allée place straße strasse weg platz gasse allee
lisbon london porto paris berlin madrid singapore york new manchester munich amsterdam dublin
rome barcelona germany portugal france spain italy britain england scotland wales ireland
america united kingdom states netherlands austria belgium canada australia japan uk us usa eu
usd eur gbp sgd euro euros dollar dollars pound pounds vat tax sku dhl ups fedex trk
policy rules system tool result note notes internal id ids
sie ich wir ihr ihre ihren mein meine bitte der die das den dem des ein eine einen einem mit und oder
für von auf nach hallo danke guten tag vous je nous la le les du des un une et ou pour merci bonjour
madame monsieur el los las del por favor para mi su usted hola gracias buenos señor señora
""".split())

# Any dash people or word processors type between the letter and the digits ("A‑1004").
_DASH = "-\u2010\u2011\u2012\u2013\u2014\u2212"
ORDER_RE = re.compile(
    rf"(?<![\w-])[Aa][{_DASH}\s]?(\d{{4}})(?!\d)"
    r"|\b(?:orders?|bestellung(?:en)?|commandes?|pedidos?)(?:\s+(?:no\.?|nr\.?|n°|numbers?|num|ids?|#|número|numéro))?"
    r"\s*#?\s*(\d{4})(?!\d)"
    r"|(?<![\w-])#(\d{4})(?!\d)", re.I)
# "orders 1001 and 1008", "A-1001, 1003 & 1008": bare numbers continuing a list of order ids.
_ORDER_LIST_TAIL = re.compile(r"\s*(?:,|&|\+|/|\band\b|\bor\b|\bet\b|\bund\b|\by\b)\s*#?(\d{4})(?![\d.,/-]\d|\s*[%€£$]|"
                              r"\s*(?:eur|usd|gbp|sgd|euros?|dollars?|pounds?|points?)\b)", re.I)


def order_mentions(text: str) -> list[tuple[str, int, int, int]]:
    """Every order id in the text: (id, start, end, where its list starts), lists of bare
    numbers after one included ("not orders 1001 and 1003": both follow the "not")."""
    return list(_order_mentions(text))


# A clause is read for its orders by extract, by intents and twice by clauses.py: found once.
@lru_cache(maxsize=16)
def _order_mentions(text: str) -> tuple[tuple[str, int, int, int], ...]:
    out = []
    for m in ORDER_RE.finditer(text):
        out.append(("A-" + next(g for g in m.groups() if g), m.start(), m.end(), m.start()))
        end = m.end()
        while (t := _ORDER_LIST_TAIL.match(text, end)) and not ORDER_RE.match(text, t.start(1) - 1):
            out.append(("A-" + t.group(1), t.start(1), t.end(1), m.start()))
            end = t.end()
    return tuple(sorted(out, key=lambda x: x[1]))


CUSTOMER_RE = re.compile(rf"(?<![\w-])[Cc][{_DASH}\s]?(\d{{3}})(?!\d)"
                         r"|\bcustomer(?:\s+(?:id|no\.?|number|#))?\s*#?\s*(\d{3})(?![\d.,]\d|\s*(?:points|days|years))",
                         re.I)
EMAIL_RE = Scan()  # [\w.+-]+@[\w-]+(?:\.[\w-]+)+, linear on long runs (scan.py)
SKU_RE = re.compile(r"\bsku[-\s]?([a-z]{2}\d{1,2})\b", re.I)
DATE_RE = re.compile(r"\b(20\d\d-\d\d-\d\d)\b")
TODAY_RE = re.compile(r"\btoday(?:'s date)?\s+(?:is|=|:)\s*(20\d\d-\d\d-\d\d)", re.I)
NAME_WORD = re.compile(r"[A-Z][a-z]+(?:[-'][A-Z]?[a-z]+)?")
POSSESSIVE_RE = re.compile(r"\b([A-Z][a-z]+)(?:'s|’s)\b")
CODE_RE = re.compile(r"\b(?:code|coupon|voucher|promo)\s*:?\s*([A-Za-z]*\d[A-Za-z0-9]*|[A-Z][A-Z0-9]{3,})\b"
                     r"|\b([A-Z]{3,}\d{1,3})\b")
ADDRESS_RE = re.compile(
    r"(?:\b(?:to|is|at|be|now|auf|nach|a|à|en)\s*:?|:)\s+(\d+[A-Za-z]?\s+[^.!?\n]*?)(?:\s+instead)?(?=[.!?](?:\s|$)|$|\n)",
    re.M)
# Street first, number after ("Hauptstraße 5, 10115 Berlin", "Calle Mayor 10, Madrid"), after "to"
# or its German/French/Spanish words.
ADDRESS_STREET_FIRST = re.compile(
    r"\b(?:to|auf|nach|an|à|a|en)\s+((?:[A-ZÄÖÜ][\w.'-]*|de|del|la|le|des)(?:\s+(?:[A-ZÄÖÜ][\w.'-]*|de|del|la|le|des)){0,4}"
    r"\s+\d+[a-z]?,\s*[^.!?\n]+?)(?:\s+instead)?(?=[.!?](?:\s|$)|$|\n)", re.M)

_AMOUNT_PATTERNS = (
    re.compile(rf"(?P<sym>us\$|s\$|[$€£])\s?(?P<num>{_NUM})", re.I),
    re.compile(rf"(?<![\w.-])(?P<num>{_NUM})\s?(?P<word>{_CUR_WORD}|[€£$])(?![a-z])", re.I),
    re.compile(rf"\b(?P<word>usd|eur|gbp|sgd)\s?(?P<num>{_NUM})(?!\d)", re.I),
)
_BARE_NUM = re.compile(rf"(?<![\w.$€£#-])(?P<num>{_NUM})(?![\d%]|-day|\s?days?\b)")
TARGET_CUR_RE = re.compile(rf"\b(?:in|to|into|as)\s+(?:(?:us|american)\s+)?(?P<word>{_CUR_WORD})\b", re.I)


@dataclass(frozen=True)
class Amount:
    value: float
    currency: str | None  # None: the user gave a bare number
    start: int


@dataclass
class Entities:
    orders: list[str] = field(default_factory=list)
    order_pos: list[int] = field(default_factory=list)
    customers: list[str] = field(default_factory=list)
    emails: list[str] = field(default_factory=list)
    names: list[str] = field(default_factory=list)
    skus: list[str] = field(default_factory=list)
    products: list[str] = field(default_factory=list)
    cities: list[str] = field(default_factory=list)
    amounts: list[Amount] = field(default_factory=list)
    bare_numbers: list[float] = field(default_factory=list)
    target_currency: str | None = None
    currencies: list[str] = field(default_factory=list)
    countries: list[str] = field(default_factory=list)
    dates: list[str] = field(default_factory=list)
    today: str | None = None
    priority: str | None = None
    code: str | None = None
    address: str | None = None
    percent: float | None = None
    fraction: float | None = None  # "half" -> 0.5

    @property
    def has_customer(self) -> bool:
        return bool(self.customers or self.emails or self.names)


def _uniq(items):
    seen, out = set(), []
    for item in items:
        if item not in seen:
            seen.add(item)
            out.append(item)
    return out


def currency_of(word: str) -> str | None:
    w = re.sub(r"\s+", " ", word.strip().lower())
    return SYMBOLS.get(w) or CURRENCY_WORDS.get(w)


_DECIMAL_COMMA = re.compile(r",\d{1,2}$")


def _number(text: str) -> float | None:
    """The number's value; None for one whose separators make no number ("12,501.234,56": a
    decimal comma after a decimal point), which is then read as no number at all."""
    try:
        if _DECIMAL_COMMA.search(text):  # a decimal comma: "12,50", "1.234,56" (its dots group thousands)
            return float(text.replace(".", "").replace(",", "."))
        return float(text.replace(",", ""))
    except ValueError:
        return None


def _amounts(text: str, taken: list[tuple[int, int]]) -> list[Amount]:
    found: list[Amount] = []
    # inside[p]: p is in a taken or found span. A match overlaps one when its first or last
    # character is inside (s <= start < e or s < end <= e); checking every span for every
    # match cost the square of the number of amounts ("$1 " * 20000).
    inside = bytearray(len(text) + 1)
    for s, e in taken:
        inside[s:e] = b"\x01" * max(0, e - s)
    for pattern in _AMOUNT_PATTERNS:
        for m in pattern.finditer(text):
            if inside[m.start()] or inside[m.end() - 1]:
                continue
            cur = currency_of(m.group("sym") if "sym" in m.groupdict() and m.group("sym") else m.group("word"))
            value = _number(m.group("num"))
            if value is not None:
                found.append(Amount(value, cur, m.start()))
            inside[m.start():m.end()] = b"\x01" * (m.end() - m.start())  # no piece of it read again
    found.sort(key=lambda a: a.start)
    return found


def _not_name(word: str) -> bool:
    """Ordinary words, product nouns ("Wireless Mouse" names a product, not a person) and
    words the lexicon translates ("Schicken Sie") are not parts of a person's name."""
    w = word.lower()
    return w in _NOT_NAMES or w in PRODUCT_WORDS or lexicon_word(w)


_WORD = re.compile(r"[A-Za-z][A-Za-z'’-]*")


def _names(text: str) -> list[str]:
    """Two adjacent capitalised words that are not ordinary words ("Ana Silva"),
    plus possessive first names ("Dana's"). Scans word by word so "Summarise Ben
    Okafor" still finds "Ben Okafor"."""
    words = [(m.group(0), m.start(), m.end()) for m in _WORD.finditer(text)]
    names, i = [], 0
    while i < len(words) - 1:
        (w1, _, e1), (w2, s2, _) = words[i], words[i + 1]
        if not ("A" <= w1[0] <= "Z" and "A" <= w2[0] <= "Z"):  # NAME_WORD's first letter, cheaply
            i += 1
            continue
        w2 = w2[:-2] if w2.endswith(("'s", "’s")) else w2
        if (NAME_WORD.fullmatch(w1) and NAME_WORD.fullmatch(w2) and text[e1:s2] == " "
                and not _not_name(w1) and not _not_name(w2)):
            names.append(f"{w1} {w2}")
            i += 2
            continue
        i += 1
    for m in POSSESSIVE_RE.finditer(text):
        word = m.group(1)
        if not _not_name(word) and not any(word in n.split() for n in names):
            names.append(word)
    return _uniq(names)


# Ordinary lower-case words; a lower-case "name" must avoid them ("ana silva points?").
_COMMON = _NOT_NAMES | frozenset("""
points point balance loyalty account accounts tier level status orders order items item stock price prices
cost costs money refund refunds return returns ticket tickets email emails address phone notes note many much
all any some every each open opened closed support help please thanks total totals sum history list lists
summary details detail info information profile name names id ids number numbers customer customers client
clients user users people person purchase purchases bought buy product products store shop hours today
tomorrow yesterday week weeks day days month months year years time times late early new old good bad
last first next other another same own whole entire full half part with without from into onto about above
below under over after before since until between against through during per via as at by for of on in
to up down out off again still yet already also too very really just only even ever never not no nor
get got give gave have has had having make made take took see saw look find found tell told ask asked
want wanted need needed know knew think thought say said send sent keep kept let put set go went come came
there here where when how why what which who whose whom that this these those them they their theirs
her hers him his she he it its we us our ours you your yours me mine i am is are was were be been being
do does did done can could will would shall should may might must a an the and or but if then else so
because than like such more most less least few lot lots kind sort type
high low normal priority urgent code codes discount discounts coupon voucher promo right now plain words word
simple short long brief quick reply answer message letter apology draft write explain summarise summarize
delivered shipped shipping shipment processing cancelled canceled pending arrived arrive arrival delivery
tracking carrier track package parcel broken damaged faulty defective working work works policy rule rules
manager supervisor boss staff team approved approve ok okay yes yeah sure fine great nice happy unhappy sorry
late early fast slow cheap expensive budget left available back anyway again once twice exception full partial
amount amounts usd eur gbp sgd euros dollars pounds tax vat country city town street road home office
internal private personal data contact details chat prompt instructions tool result results system
asks whether wants wonder wondering today tonight thing things stuff someone somebody anyone everyone
""".split())


# Only where a name is expected: message start, after "for/of/does/customer...", or possessive.
_CUE = r"(?:^|\b(?:for|of|does|is|has|customer|client|to|about|named|called|from|with)\s)"
_LOOSE_NAME = re.compile(rf"{_CUE}(?=([a-z]{{2,}})\s([a-z]{{2,}})\b)|\b(?=([a-z]{{2,}})\s([a-z]{{2,}})'s\b)")
_NOT_NAME_CHARS = re.compile(r"[^a-z' ]+")


def _loose_names(low: str) -> list[str]:
    """Lower-case names ("ana silva's points"): two uncommon words in a row."""
    out = []
    for m in _LOOSE_NAME.finditer(low):
        a, b = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if a not in _COMMON and b not in _COMMON:
            out.append(f"{a.title()} {b.title()}")
    return _uniq(out)


def _word_patterns(words, escape: bool) -> list[re.Pattern]:
    """One compiled `\bword\b` per word, made once: every clause of a message is searched for
    every product, city and country, and building each pattern anew cost more than the search."""
    return [re.compile(rf"\b{re.escape(w) if escape else w}\b") for w in words]


def _literal(word: str, escape: bool) -> str | None:
    """The substring `\\bword\\b` cannot match without (a cheap test first), or None when the
    word is a pattern of its own."""
    return word if escape or re.escape(word) == word.replace(" ", "\\ ") else None


_PRODUCT_RX: list[tuple[re.Pattern, str, str]] = []
_CITY_RX: list[tuple[re.Pattern, str, str | None]] = []
_COUNTRY_RX: list[tuple[re.Pattern, str, str | None]] = []


# Any product, city or country name as a substring: `\bname\b` cannot match without one.
_PRODUCT_ANY = re.compile("|".join(map(re.escape, PRODUCT_WORDS)))
_COUNTRY_ANY = re.compile("|".join(map(re.escape, COUNTRIES)))
_STORE_WORDS = ("store", "shop", "branch")  # the two store patterns need one (case as written)
_STORE_CITY = re.compile(r"\b(?:the\s+)?([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)\s+(?:store|shop|branch)\b")
_STORE_IN_CITY = re.compile(r"\b(?:store|shop|branch)\s+in\s+([A-Z][a-z]+(?:\s[A-Z][a-z]+)?)")
_CODE_WORD = re.compile(r"\b([A-Z]{2,3})\b")


def _products(low: str) -> list[str]:
    if not _PRODUCT_RX:
        _PRODUCT_RX.extend(zip(_word_patterns(PRODUCT_WORDS, True), PRODUCT_WORDS.values(), PRODUCT_WORDS,
                               strict=True))
    if not _PRODUCT_ANY.search(low):  # a clause naming none (most) is not tried word by word
        return []
    return _uniq(query for rx, query, word in _PRODUCT_RX if word in low and rx.search(low))


def _cities(text: str, low: str) -> list[str]:
    out = []
    if any(w in text for w in _STORE_WORDS):
        for m in _STORE_CITY.finditer(text):
            if m.group(1).lower() not in ("the", "your", "our", "which", "what", "northwind"):
                out.append(m.group(1))
        for m in _STORE_IN_CITY.finditer(text):
            out.append(m.group(1))
    if not _CITY_RX:
        _CITY_RX.extend(zip(_word_patterns(KNOWN_CITIES, False), KNOWN_CITIES,
                            [_literal(c, False) for c in KNOWN_CITIES], strict=True))
    out += [city.title() for rx, city, lit in _CITY_RX if (lit is None or lit in low) and rx.search(low)]
    return _uniq(out)


def _countries(text: str, low: str) -> list[str]:
    found = []
    if not _COUNTRY_RX:
        _COUNTRY_RX.extend(zip(_word_patterns(COUNTRIES, False), COUNTRIES.values(),
                               [_literal(c, False) for c in COUNTRIES], strict=True))
    for rx, code, lit in _COUNTRY_RX if _COUNTRY_ANY.search(low) else ():
        m = rx.search(low) if lit is None or lit in low else None
        if m:
            found.append((m.start(), code))
    for m in _CODE_WORD.finditer(text):
        if m.group(1) in COUNTRY_CODES:
            found.append((m.start(), COUNTRY_CODES[m.group(1)]))
    for m in _ANY_CASE_CODE.finditer(text):
        found.append((m.start(), COUNTRY_CODES[m.group(1).upper()]))
    return _uniq(code for _, code in sorted(found))


# What most of extract's patterns need: a digit (ids, dates, amounts, addresses, percentages),
# a capital (a person's name). Most clauses of a long message hold neither; each pattern read
# each clause all the same. Tested once per text, so a pattern that cannot match is not tried.
_DIGIT = re.compile(r"\d")
_CAPITAL = re.compile(r"[A-Z]")
_CODE_CUES = ("code", "coupon", "voucher", "promo")  # CODE_RE without a digit needs one (case as written)
_ID_LIKE = re.compile(r"(?i)(?:a-?\d{4}|c-?\d{3}|sku-?\w+|w-?\d+|t-?\d+)")
_PRIORITY_CUES = ("prio", "urgent", "asap")  # one is in every priority pattern
_HIGH = re.compile(r"\bhigh[- ]priority|\bpriority:?\s*high\b|\burgent\b|\basap\b|\bhigh prio\b")
_LOW = re.compile(r"\blow[- ]priority|\bpriority:?\s*low\b|\bnot urgent\b")
_NORMAL = re.compile(r"\bnormal[- ]priority|\bpriority:?\s*normal\b")
_PERCENT = re.compile(r"(?<!\d)(\d+(?:\.\d+)?)\s?%")  # (?<!\d): never a retry inside a run of digits
_HALF = re.compile(r"\bhalf\b|\b50 ?%")
_THIRD = re.compile(r"\b(?:a |one[- ])?third\b")
_QUARTER = re.compile(r"\b(?:a |one[- ])?quarter\b")


def extract(text: str) -> Entities:
    """All entities of one user message, in the order they appear."""
    low = text.lower()
    e = Entities()
    digits = _DIGIT.search(text) is not None
    at = "@" in text  # every email holds one
    taken: list[tuple[int, int]] = []
    if digits:
        _ids(text, e, taken)
    for m in EMAIL_RE.finditer(text) if at else ():
        e.emails.append(m.group(0).lower())
        taken.append(m.span())
    e.emails = _uniq(e.emails)
    if digits:
        _skus_and_dates(text, e, taken)
    e.names = _names(EMAIL_RE.sub(" ", text) if at else text) if _CAPITAL.search(text) else []
    if not e.names:
        scrubbed = _NOT_NAME_CHARS.sub(" ", EMAIL_RE.sub(" ", low) if at else low).strip()
        e.names = [n for n in _loose_names(scrubbed)
                   if not any(w.lower() in PRODUCT_WORDS or w.lower() in COUNTRIES for w in n.split())]
    e.products = _products(low)
    e.cities = _cities(text, low)
    e.countries = _countries(text, low)
    if digits:
        e.amounts = _amounts(text, taken)
        e.bare_numbers = _bare_numbers(text, taken, e.amounts)
    target = TARGET_CUR_RE.search(text)
    e.target_currency = currency_of(target.group("word")) if target else None
    e.currencies = _uniq([a.currency for a in e.amounts if a.currency]
                         + ([e.target_currency] if e.target_currency else []))
    e.priority = _priority(low)
    if digits or any(w in text for w in _CODE_CUES):
        e.code = _code(text)
    if digits:
        addr = ADDRESS_RE.search(text) or ADDRESS_STREET_FIRST.search(text)
        if addr:
            e.address = addr.group(1).strip().rstrip(",;")
        pct = _PERCENT.search(text)
        e.percent = float(pct.group(1)) if pct else None
    e.fraction = _fraction(low, digits)
    return e


def _ids(text: str, e: Entities, taken: list[tuple[int, int]]) -> None:
    """Order and customer ids (both need digits)."""
    for oid, start, end, _ in order_mentions(text):
        e.orders.append(oid)
        e.order_pos.append(start)
        taken.append((start, end))
    # keep the first position of each id
    pairs = _uniq(zip(e.orders, e.order_pos, strict=True))
    seen: dict[str, int] = {}
    for oid, pos in pairs:
        seen.setdefault(oid, pos)
    e.orders, e.order_pos = list(seen), list(seen.values())
    for m in CUSTOMER_RE.finditer(text):
        e.customers.append("C-" + (m.group(1) or m.group(2)))
        taken.append(m.span())
    e.customers = _uniq(e.customers)


def _skus_and_dates(text: str, e: Entities, taken: list[tuple[int, int]]) -> None:
    """SKUs, dates and today's date (all need digits)."""
    for m in SKU_RE.finditer(text):
        e.skus.append("SKU-" + m.group(1).upper())
        taken.append(m.span())
    e.skus = _uniq(e.skus)
    for m in DATE_RE.finditer(text):
        e.dates.append(m.group(1))
        taken.append(m.span())
    today = TODAY_RE.search(text)
    e.today = today.group(1) if today else None


def _bare_numbers(text: str, taken: list[tuple[int, int]], amounts: list[Amount]) -> list[float]:
    # A bare number inside a taken span, holding an amount's start, or up to 12 characters after
    # one is not bare. Looked up by position (every span and amount per number cost the square).
    out = []
    in_taken = bytearray(len(text) + 1)
    for s, en in taken:
        in_taken[s:en] = b"\x01" * max(0, en - s)
    starts = [a.start for a in amounts]  # sorted
    for m in _BARE_NUM.finditer(text):
        if in_taken[m.start()] or bisect_right(starts, m.end()) > bisect_left(starts, m.start()):
            continue
        if bisect_right(starts, m.start()) > bisect_left(starts, m.start() - 12):
            continue
        if (value := _number(m.group("num"))) is not None:
            out.append(value)
    return out


def _priority(low: str) -> str | None:
    if not any(w in low for w in _PRIORITY_CUES):
        return None
    if _HIGH.search(low):
        return "high"
    if _LOW.search(low):
        return "low"
    return "normal" if _NORMAL.search(low) else None


def _code(text: str) -> str | None:
    for m in CODE_RE.finditer(text):
        code = m.group(1) or m.group(2)
        if code and not _ID_LIKE.fullmatch(code) and code.lower() not in ("to", "for", "on"):
            return code.upper()
    return None


def _fraction(low: str, digits: bool) -> float | None:
    if ("half" in low or digits) and _HALF.search(low):
        return 0.5
    if "third" in low and _THIRD.search(low):
        return 1 / 3
    if "quarter" in low and _QUARTER.search(low):
        return 0.25
    return None
