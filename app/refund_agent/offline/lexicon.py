"""A message's English gloss: what the intent patterns read.

German, French and Spanish words for the main intents become their English words
("erstatten" -> "refund", "annulez" -> "cancel", "¿dónde está?" -> "where is"), and a
misspelt intent word becomes the word it is one or two edits away from ("refnud" ->
"refund", "adress" -> "address"). Order ids, numbers and unknown words stay as they
are, so entities can still be read from the gloss. Lower case throughout.
"""
from __future__ import annotations

import re
from functools import lru_cache

from .scan import FOLDS, NEEDLE_LETTERS, pieces

# (pattern, English). Applied in order: longer phrases before the words inside them.
_PHRASES: list[tuple[str, str]] = [
    # --- German -------------------------------------------------------------------------
    (r"\bmit (?:einem|einer|jemandem)\s*(?:echten\s+)?(?:menschen|mitarbeiter\w*|person|vorgesetzten|"
     r"manager|betreuer)?\s*(?:sprechen|reden)\b", "speak to a human"),
    (r"\bzurück(?:geben|senden|schicken|gesendet|geschickt)\b|\bretournier\w*|\bumtauschen\b", "return"),
    (r"\b(?:zurück|rück)?erstatt\w*|\brückerstattung\b|\bgutschrift\b", "refund"),
    (r"\bstornier\w*|\bstorno\w*|\bannullier\w*", "cancel"),
    (r"\b(?:liefer|versand)?adresse\b|\banschrift\b", "address"),
    (r"\bänder\w*|\baktualisier\w*", "change"),
    (r"\bwo (?:ist|bleibt)\b", "where is"), (r"\bbestellung(?:en)?\b", "order"),
    (r"\bkann ich\b", "can i"), (r"\bkönnen sie\b|\bkannst du\b", "can you"),
    (r"\bkönnten sie\b|\bkönntest du\b|\bwürden sie\b|\bwürdest du\b", "could you"),
    # asking for a person: "Verbinden Sie mich mit ...", "Holen Sie mir einen Vorgesetzten"
    (r"\bverbinden sie mich mit\b|\bverbinde mich mit\b|\bhol(?:en sie|t)? mir\b", "put me through to"),
    (r"\bvorgesetzte[nr]?\b|\bchef\b|\bteamleiter\w*", "supervisor"), (r"\bmenschen\b|\bmensch\b", "human"), (r"\bnoch\b", "still"),
    (r"\bich (?:möchte|will|wollte|würde gerne?) (?:nur |bloß |gerne? )?wissen\b|\bich frage mich\b", "i just want to know"),
    (r"\bob\b", "whether"), (r"\bwurden?\b", "was"),
    (r"\bbis wann\b", "until when"), (r"\bwarum\b|\bwieso\b|\bweshalb\b", "why"), (r"\bletzte[rn]? tag\b", "last day"),
    (r"\b(?:schicken|senden|schreiben)\b", "send"), (r"\bgeld\b", "money"), (r"\bzurück\b", "back"),
    (r"\bmehrwertsteuer\b|\bmwst\b|\bumsatzsteuer\b", "vat"), (r"\bsteuern?\b", "tax"),
    (r"\bnicht (?:nötig|notwendig)\b", "no need"), (r"\bist\b", "is"), (r"\bsind\b", "are"),
    (r"\bschon\b|\bbereits\b", "already"), (r"\bwird\b", "is"),
    (r"\b(?:in )?bearbeit(?:et|ung)\b", "processing"), (r"\bbitte\b", "please"), (r"\bich (?:möchte|will|hätte gerne?|brauche)\b", "i want"),
    (r"\bnicht\b", "not"), (r"\bkein(?:e|en|er)?\b", "no"), (r"\bnichts\b", "nothing"),
    (r"\bwie ?viel\w*", "how much"), (r"\b(?:ge)?kostet\b", "cost"), (r"\bwann\b", "when"),
    (r"\bgeliefert\b|\bzugestellt\b", "delivered"), (r"\bversandt\b|\bverschickt\b|\bunterwegs\b", "shipped"),
    (r"\bangekommen\b", "arrived"), (r"\bkommt\b(.{0,40}?)\ban\b", r"arrives\1"), (r"\bankommen\b", "arrive"), (r"\bsendungsverfolgung\w*|\btracking-?nummer\b|\bsendungsnummer\b", "tracking number"),
    (r"\btreuepunkte\b|\bpunkte\b", "points"), (r"\bvollständig\w*|\bkomplett\b|\bden vollen betrag\b", "in full"),
    (r"\bdeutschland\b", "germany"), (r"\bfrankreich\b", "france"), (r"\bspanien\b", "spain"),
    (r"\bvereinigte[ns]? königreich\b|\bgroßbritannien\b", "united kingdom"), (r"\bsingapur\b", "singapore"),
    (r"\bmeine?[rsn]?\b", "my"), (r"\bund\b", "and"), (r"\baber\b", "but"), (r"\bauch\b", "also"), (r"\bstatus\b", "status"),
    # --- French -------------------------------------------------------------------------
    (r"\bparler (?:à|a|avec) (?:un |une )?(?:humain|personne|quelqu'un|conseill\w+|responsable|superviseur|"
     r"agent|manager|vrai\w*)\b", "speak to a human"),
    (r"\b(?:pas besoin|inutile) d(?:e\s+|')", "no need to "),
    # "n'annulez pas", "ne me remboursez pas", "n'annulez surtout pas": one word may sit between
    (r"\bn(?:e\s+|')(\S+)(\s+(?:surtout|vraiment|toujours|encore|donc|me|m'|le|la|les|l'|nous)?\S*)?\s+"
     r"(?:pas|jamais|plus|rien)\b", r"not \1\2"),
    (r"\bne (?:pas|jamais)\b", "not"), (r"\bpas d(?:e\s+|')|\baucune?\b", "no "),
    (r"\brembours\w*", "refund"), (r"\b(?:mon|l') ?argent\b", "money"),
    (r"\bannul\w*", "cancel"), (r"\badresse\b", "address"), (r"\bchangez\b|\bchanger\b|\bmodifi\w*", "change"),
    (r"\boù en est\b|\boù est\b", "where is"), (r"\bstatut\b|\bétat\b", "status"), (r"\bcommande\b", "order"),
    (r"\bretourn\w*|\brenvoy\w*", "return"), (r"\bencore\b", "still"),
    (r"\bpuis-je\b|\bje peux\b|\best-ce que je peux\b", "can i"),
    (r"\bpassez-moi\b|\bpasse-moi\b|\bmettez-moi en relation avec\b", "put me through to"),
    (r"\bhumain\b|\bêtre humain\b", "human"), (r"\bresponsable\b|\bsup[ée]rieur\b", "manager"),
    (r"\bsuperviseur\b", "supervisor"), (r"\bpouvez-vous\b|\bpourriez-vous\b", "can you"),
    (r"\bje (?:veux|voulais|voudrais|souhaite|souhaiterais) (?:juste |seulement |simplement )?savoir(?: si)?\b"
     r"|\bj'aimerais (?:juste |seulement )?savoir(?: si)?\b|\bje me demande si\b", "i just want to know whether"),
    (r"\bjusqu'(?:à|a) quand\b", "until when"), (r"\bpourquoi\b", "why"),
    (r"\benvoy\w* (?:un |une )?(?:e-?mail|courriel|mail|message)\b", "send an email"), (r"\bcourriel\b", "email"),
    (r"\bs'il (?:vous|te) pla[iî]t\b|\bsvp\b", "please"),
    (r"\bje (?:voudrais|veux|souhaite)\b|\bj'aimerais\b", "i want"),
    (r"\btva\b", "vat"), (r"\bcombien\b", "how much"), (r"\bco[uû]t[ée]?\b", "cost"),
    (r"\blivrée?s?\b", "delivered"), (r"\bexpédiée?s?\b", "shipped"), (r"\bsuivi\b", "tracking"),
    (r"\bquand\b", "when"), (r"\ben totalité\b|\bintégralement\b|\ben entier\b", "in full"),
    (r"\ballemagne\b", "germany"), (r"\broyaume-uni\b", "united kingdom"), (r"\bespagne\b", "spain"),
    (r"\bétats-unis\b", "united states"), (r"\bsingapour\b", "singapore"),
    (r"\b(?:ma|mon|mes)\b", "my"), (r"\bmais\b", "but"), (r"\baussi\b", "also"),
    # --- Spanish ------------------------------------------------------------------------
    (r"\bhablar con (?:una persona|un humano|alguien|un supervisor|un agente|un responsable|un encargado)"
     r"(?: real)?\b", "speak to a human"),
    (r"\b(?:me |nos )?devuelv\w*(?: el| mi)? dinero\b", "money back"),
    (r"\breembols\w*", "refund"), (r"\bdinero\b", "money"),
    (r"\bdevolver\w*|\bdevuelvo\b|\bdevoluci[oó]n\b", "return"),
    (r"\bcancel(?:e|ar|en|a|o|ad)\b|\banul(?:e|ar|en|a)\b", "cancel"),
    (r"\bdirecci[oó]n\b", "address"), (r"\bcambi(?:e|ar|en)\b|\bmodifi(?:que|car)\b", "change"),
    (r"\bd[oó]nde est[aá]\b", "where is"), (r"\bestado\b", "status"), (r"\bpedido\b", "order"),
    (r"\btodav[ií]a\b|\ba[uú]n\b", "still"), (r"\bpuedo\b", "can i"), (r"\bpuede(?:n)?\b", "can you"),
    (r"\bpodr[ií]a(?:n|s)?\b", "could you"),
    (r"\bp[aá]s(?:e|a)me con\b|\bcon[eé]cte(?:me|nme) con\b", "put me through to"),
    (r"\bhumano\b", "human"), (r"\bencargad[oa]\b|\bgerente\b|\bjef[ea]\b", "manager"),
    (r"\b(?:s[oó]lo |solamente )?(?:quiero|quisiera|necesito) (?:s[oó]lo |solamente )?saber(?: si)?\b"
     r"|\bme pregunto si\b", "i just want to know whether"),
    (r"\bhasta cu[aá]ndo\b", "until when"), (r"\bpor qu[eé]\b", "why"),
    (r"\b(?:env[ií]\w*|mand\w*) un (?:correo|email|e-mail|mensaje)\b", "send an email"), (r"\bcorreo\b", "email"),
    (r"\bno (?:quiero|quisiera|necesito)\b", "i don't want"),
    (r"\bno (?:hace falta|es necesario)\b", "no need to"), (r"\bsin\b", "without"),
    (r"\bning[uú]n(?:a|o)?\b", "no"), (r"\bnada\b", "nothing"), (r"\bestá\b", "is"), (r"\bpor favor\b", "please"),
    (r"\bquiero\b|\bquisiera\b|\bme gustar[ií]a\b", "i want"), (r"\bnecesit(?:o|amos)\b", "i need"),
    (r"\biva\b", "vat"), (r"\bcu[aá]nto\w*", "how much"), (r"\bcost[oó]\b", "cost"),
    (r"\bseguimiento\b|\brastreo\b", "tracking"), (r"\bentregad[oa]\b", "delivered"), (r"\bllega\w*", "arrives"), (r"\benviad[oa]\b", "shipped"), (r"\bcu[aá]ndo\b", "when"),
    (r"\bcompleto\b|\btotalmente\b|\ben su totalidad\b|\bcompleta\b", "in full"),
    (r"\bsigue\b", "is it still"), (r"\ben proceso\b|\bprocesando\b", "processing"),
    (r"\balemania\b", "germany"), (r"\breino unido\b", "united kingdom"), (r"\bespaña\b", "spain"),
    (r"\b(?:mi|mis)\b", "my"), (r"\bestados unidos\b", "united states"), (r"\bpero\b", "but"), (r"\btambi[eé]n\b", "also"),
    # --- Italian and Portuguese: the main intents' words ------------------------------------
    (r"\bparlare con (?:un |una )?(?:persona|umano|operatore|responsabile|supervisore)\b"
     r"|\bfalar com (?:um |uma )?(?:pessoa|humano|atendente|supervisor|respons[aá]vel)\b", "speak to a human"),
    (r"\brimbors\w*", "refund"), (r"\bannull\w*", "cancel"), (r"\bindirizzo\b|\bmorada\b|\bendereço\b", "address"),
    (r"\bdov'?[eè]\b|\bdove si trova\b|\bonde est[aá]\b", "where is"), (r"\bordine\b|\bencomenda\b", "order"),
    (r"\bvorrei\b|\bvoglio\b|\bquero\b|\bgostaria de\b", "i want"),
    (r"\bpotete\b|\bpotreste\b|\bpuò\b|\bpuoi\b|\bpotrebbe\b|\bpodem\b|\bpoderia\b|\bpode\b", "can you"),
    (r"\bspedit[oaie]\b", "shipped"), (r"\bconsegnat[oaie]\b|\bentregues?\b", "delivered"),
    (r"\bnon\b|\bnão\b|\bnao\b", "not"), (r"\b(?:il )?mi[oa]\b|\bmiei\b|\bmeu\b|\bminha\b", "my"),
    (r"\bsoldi\b|\bdenaro\b|\bdinheiro\b", "money"), (r"\bindietro\b|\bde volta\b", "back"),
    (r"\bper intero\b|\bper completo\b|\bintegralmente\b", "in full"), (r"\bstato\b", "status"),
    (r"\bquando\b", "when"), (r"\bgrazie\b|\bobrigad[oa]\b", "thanks"),
    # --- texting ("can u cancel it", "ur order") and articles, after every phrase that spells them out
    (r"(?<![\w-])u(?![\w-])", "you"), (r"(?<![\w-])ur(?![\w-])", "your"),
    (r"\b(?:un|une|una|einen|einem|einer)\b", "a"),
]
_COMPILED = [(re.compile(p, re.I), r) for p, r in _PHRASES]

# A phrase made only of plain words ("\\bnicht\\b|\\bkein\\b") can only match where one of them is a
# substring of the lower-cased text, unless the text holds a character re.I folds onto one of their
# letters that lower() leaves as it is: FOLDS (tests/test_offline_linear.py derives them from all
# of Unicode). Without those the cheap test skips a substitution that would change nothing; each
# phrase read the whole of a long message.
_PLAIN = re.compile(rf"(?:\\b)?([{NEEDLE_LETTERS}]+)(?:\\b)?")


def _needles(pattern: str) -> tuple[str, ...] | None:
    alts = [_PLAIN.fullmatch(a) for a in pattern.split("|")]
    return tuple(m.group(1) for m in alts) if all(alts) else None


# Any other phrase: the pieces of plain letters one of which every match holds ("erstatt" in
# "\\b(?:zurück|rück)?erstatt\\w*"), read off the parsed pattern (scan.pieces): the ~95 such
# phrases each read all of a long message (0.2 s at 64K).
_NEEDLES = [_needles(p) or pieces(p, re.I) for p, _ in _PHRASES]

# Words the intent patterns key on; a token one edit away (two for long words) is taken for it.
VOCABULARY = ("refund", "refunded", "refunding", "cancel", "cancelled", "address", "return", "returned",
              "status", "tracking", "escalate", "delivered", "delivery", "shipped", "shipping", "eligible",
              "deadline", "change", "update", "email", "arrive", "arrived", "supervisor", "please", "receipt")
# Real words close to a vocabulary word that must stay what they are.
_REAL_WORDS = frozenset("""
chance charge charged charges changed changes cancer statue states stated stats older order orders
returns refunds update updated updates address addresses email emails emailed delivers deliver
shipment shipments tracked tracker cancels canceled please pleased plead leased release
arrival arrives derive receive receipts escalated escalation""".split())

_TOKEN = re.compile(r"[a-zäöüßéèêàçñáíóú]+")


def _distance(a: str, b: str, cap: int) -> int:
    """Edit distance with adjacent transpositions (optimal string alignment), capped."""
    if abs(len(a) - len(b)) > cap:
        return cap + 1
    prev2, prev = None, list(range(len(b) + 1))
    for i, ca in enumerate(a, 1):
        cur = [i] + [0] * len(b)
        for j, cb in enumerate(b, 1):
            cur[j] = min(prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + (ca != cb))
            if i > 1 and j > 1 and ca == b[j - 2] and a[i - 2] == cb:
                cur[j] = min(cur[j], prev2[j - 2] + 1)
        if min(cur) > cap:
            return cap + 1
        prev2, prev = prev, cur
    return prev[-1]


@lru_cache(maxsize=8192)
def correct(token: str) -> str:
    """The vocabulary word a misspelt token stands for, or the token itself."""
    if len(token) < 5 or token in VOCABULARY or token in _REAL_WORDS:
        return token
    best, best_d = token, 99
    for word in VOCABULARY:
        cap = 1 if len(word) <= 6 else 2
        d = _distance(token, word, cap)
        if d <= cap and d < best_d:
            best, best_d = word, d
    return best


@lru_cache(maxsize=4096)
def gloss(text: str) -> str:
    low = text.lower().replace("’", "'").replace("¿", " ").replace("¡", " ")
    plain = not any(f in low for f in FOLDS)
    for (pattern, english), needles in zip(_COMPILED, _NEEDLES, strict=True):
        if plain and needles is not None and not any(n in low for n in needles):
            continue
        low = pattern.sub(english, low)
        plain = plain and not any(f in english for f in FOLDS)
    return _TOKEN.sub(lambda m: correct(m.group(0)), low)


@lru_cache(maxsize=4096)
def lexicon_word(word: str) -> bool:
    """Is this (capitalised) word one the lexicon translates? Such words are not names."""
    w = word.lower()
    return any(p.fullmatch(w) for p, _ in _COMPILED)
