"""A message split into clauses, and for each clause what grammar says about its wishes:
negation and its scope, and whether it asks a question or makes a request.

"Refund A-1008 in full, but don't cancel A-1004." is two clauses: a refund request for
A-1008 and a negated cancel of A-1004. "Would I get a refund if I returned A-1001?" is a
question about a refund, not a request for one. All of it reads the English gloss
(lexicon.py), so German, French and Spanish clauses follow the same rules.
"""
from __future__ import annotations

import re
from bisect import bisect_left
from dataclasses import dataclass

from .lexicon import gloss
from .scan import RunStarts, gaps

# Sentence ends, and dashes between words (not the one inside "A-1001").
# Numbered items ("1) cancel A-1004 2) status of A-1002") are clauses too.
_BOUNDARY = RunStarts(r"(?<=[.?!;])\s+|\n+|\s+[-–—]+\s+|\.\.\.+\s*|\s+(?=\d\)\s)",
                      r"(?<=[.?!;])\s+|\n+|(?<!\s)\s+[-–—]+\s+|\.\.\.+\s*|(?<!\s)\s+(?=\d\)\s)")
# A conjunction starts a new clause when what follows it is a request or a question of its own.
_CONJ_HEAD = r",\s+(?:(?:and|but|also|then|so|plus|und|aber|et|mais|y|pero)\s+)?|"
_CONJ_TAIL = r"\s+(?:and|but|also|plus|und|aber|et|mais|y|pero|\+|&)\s+"
_CONJ = RunStarts(_CONJ_HEAD + _CONJ_TAIL, _CONJ_HEAD + r"(?<!\s)" + _CONJ_TAIL, re.I)
CLAUSE_START = re.compile(
    r"^(?:(?:please|pls|plz|kindly|also|then|just|so|now|and|but|oh|ok(?:ay)?|(?:first|second|third|fourth)(?:ly)?,?|"
    r"next,?|finally,?|lastly,?)\s+)*"
    r"(?:refund|cancel|change|update|ship|send|e-?mail|apply|open|create|escalate|give|process|issue|check|"
    r"tell|let|show|find|look|what(?:'s|s)?|when|where|which|who|why|how|is|are|was|has|have|can|could|would|"
    r"will|do|does|did|don'?t|dont|do not|never|not|no need|i(?:'d| would)? (?:just |only |really )?(?:like|want|need))\b"
    # object first, verb last (German word order): "..., aber A-1008 erstatten"
    r"|^(?:a-?\d{4}|#\d{4}|order \d{4})\s+(?:(?:please|also|then|still)\s+)?(?:refund|cancel|change|update)\b")

# Negation cues that govern a following verb: volitional and imperative forms only
# ("I didn't get my refund" complains about the past; it does not decline one).
_NEG_BEFORE = re.compile(
    r"(?<!why )\b(?:(?:rather|prefer(?:red)?(?: it)?(?: if)?) (?:you|we|they) (?:didn'?t|did not|wouldn'?t|would not)|"
    r"do not|don'?t|dont|does not|doesn'?t|never|no need (?:to|for)|not|without|"
    r"hold off(?: on)?|never ?mind|rather not|instead of|rather than|refrain from|avoid|skip|"
    r"forget(?: about)?|(?:decided|decide) against|shouldn'?t|should not|mustn'?t|must not|won'?t need|"
    r"no longer (?:need|want))\b")
_NEG_AFTER = re.compile(r"^\W*(?:\w+\W+){0,3}?(?:is |are )?(?:not|\w*n't|no longer) (?:needed|necessary|required|wanted)"
                        r"|^[\w-]+\s+nothing\b"
                        r"|^\W*(?:\w+\W+){0,3}?(?:is|are) (?:not|no longer) (?:needed|necessary)")
_GAP_STOP = re.compile(r"[,;:]|\b(?:but|and then|instead|please|so)\b")
# A whole message that puts writes on hold ("before you do anything, ...").
HOLD = re.compile(r"\bbefore (?:you |we )?(?:do|doing|change|changing|refund|refunding|cancel|cancelling|process|"
                  r"processing|touch|touching) (?:anything|it|that|this|him|her|them|[a-z]+ [a-z]+)\b"
                  r"|\bdon'?t (?:do|change|touch) anything\b|\bwithout (?:doing|changing|touching) anything\b"
                  r"|\b(?:just|only) (?:asking|checking|wondering|curious)\b")

# Mood. A hypothetical asks what would happen; it never writes.
_HYPOTHETICAL = re.compile(gaps(
    r"\bif (?:i|we|they|he|she)\b[^?]*\b(?:would|will|could)\b|\b(?:would|will) (?:i|we)\b|\bam i\b"
    r"|\bdo i (?:get|qualify|have)\b|\bwhat (?:would|happens|if)\b|\bhow (?:would|does|do)\b"
    r"|\bwould (?:it|that|this|a-?\d{4})\b|\bwhich currency\b"
    r"|\bhow (?:can|could|should|do|would) (?:i|we)\b|\bwhat do (?:i|we) (?:need|have) to\b|\bshould (?:i|we)\b"
    r"|\b(?:tell me|check|know|ask|wonder(?:ing)?|see|find out|let me know|confirm)\s+(?:if|whether)\b"
    # weighing it up ("I'm thinking about cancelling A-1004") asks for nothing yet
    r"|\b(?:thinking (?:about|of)|considering|contemplating|debating|not sure (?:if|whether|i want|about))\b"
    r"|\b(?:might|may) (?:want|need|have) to\b"
    r"|\bentitled to\b|\bif (?:i|we)\b[^?]*\?\s*$"))
# Conventional polite requests that look like questions about possibility.
_POLITE = re.compile(r"\bwould it be possible to\b|\bany chance (?:of|you|to)\b|\bif you (?:could|would|can)\b"
                     r"|\bwould you (?:mind|be able|kindly|please)\b|\bany way you (?:could|can)\b"
                     r"|^\W*(?:mind|how about) (?:refunding|cancell?ing|changing|updating|applying|sending)\b")
_EMBEDDED = re.compile(r"\b(?:if|whether)\b")
_POSSIBLE = re.compile(gaps(
    r"\bis it (?:still )?possible\b|\bis there (?:a|any) way\b|\bpossible to\b|\beligible\b|\brefundable\b"
    r"|\bqualif|\b(?:i|we) (?:\w+ )?able to\b"
    r"|\b(?:can|could) (?:it|this|that|order|a-?\d{4}|the order|my order|they)\b[^?]*\bbe\b"
    r"|\b(?:can|could) (?:it|this|that|a-?\d{4}|the order|my order) still\b"))
# What may come before an imperative: courtesy, and list markers ("three things: cancel A-1004, ...").
_LIST_MARK = (r"(?:(?:one|two|three|four|five|a few|some|several|a couple of|\d+) (?:more )?(?:things|requests|"
              r"questions|items)|(?:first|second|third|fourth)(?:ly)?|next|finally|lastly|\d\)|\d\.)")
REQUEST = re.compile(
    r"^\W*(?:(?:please|pls|plz|kindly|just|only|now|so|then|ok(?:ay)?|fine|and|also|sorry|hi|hello|hey|"
    + _LIST_MARK + r")\W+)*"
    r"(?:refund|cancel|change|update|ship|send|e-?mail|apply|use|open|create|file|raise|log|escalate|"
    r"delete|remove|give|process|issue|make|do (?:it|that|this|the)|redeem|reroute|redirect|deliver|put|get|stop|call off)\b"
    r"|\bplease\b|\bpls\b|\bplz\b|\bi(?:'d| would) (?:like|love|appreciate)\b|\bi want\b|\bi need\b|\bi wish\b"
    r"|\b(?:can|could|would|will) (?:you|someone|somebody|anyone|anybody)\b|\bwould you mind\b|\b(?:any chance|is it ok if|is it okay if) you\b|\b(?:can|could|may) (?:i|we) (?:get|have|speak|talk|ask)\b"
    r"|\bgo ahead\b|\bjust\b|\bi(?:'m| am) asking\b|\b(?:that|this) one\b|\bnow\b|\bit would be (?:great|nice|good)\b"
    r"|\bi(?:'d| would) be (?:\w+ )?grateful\b|\bif you (?:could|would|can)\b|\blet me have\b|\bgive me\b|\basap\b|\bwould be fair\b")


_QUOTED = re.compile(r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|«[^»\n]{1,200}»|„[^“\n]{1,200}“")


def unquoted(text: str) -> str:
    """The text with quoted passages blanked out (same length): 'You wrote: "Refund A-1001"'
    reports a request, it doesn't make one."""
    return _QUOTED.sub(lambda m: " " * len(m.group(0)), text)


# An aside that only stresses ("do not, under any circumstances, cancel it") is not a clause.
_ASIDE = re.compile(r"[,–—]\s*(?:under (?:any|no) circumstances|whatever (?:happens|you do)|i repeat|ever|at all|"
                    r"by any means|for any reason|in any case|for now|for the time being)\s*,", re.I)


def _blank_asides(text: str) -> str:
    return _ASIDE.sub(lambda m: " " * len(m.group(0)), text)


# What the customer wants said to someone ("email Ana that her refund went through") is the
# message's content, not a request or a question of its own.
_REPORTED = re.compile(r"\b(?:e-?mail|tell|inform|notify|let (?:her|him|them|[A-Z][a-z]+) know|message|write to"
                       r"|send (?:her|him|them|[A-Z][a-z]+(?: [A-Z][a-z]+)?) (?:an? )?(?:e-?mail|note|message))\b"
                       r"[^.?!\n]{0,60}?\b(?:that|saying)\b([^.?!\n]*)")


# "email her to confirm the refund", "message Ana about her refund": what the message is about,
# up to the next conjunction (a request may follow: "... about it and refund A-1001").
_ABOUT = re.compile(r"\b(?:e-?mail|message|write to|send (?:her|him|them|[A-Z][a-z]+(?: [A-Z][a-z]+)?) "
                    r"(?:an? )?(?:e-?mail|note|message))\b[^.?!\n]{0,40}?\b(?:to (?:confirm|say|explain)|about|regarding"
                    r"|confirming)\b((?:(?!\b(?:and|but|then|also)\b)[^.?!\n]){1,80})")


def unreported(text: str) -> str:
    """The text with reported content blanked out (same length)."""
    def blank(m: re.Match) -> str:
        return m.group(0)[:m.start(1) - m.start()] + " " * len(m.group(1))
    return _ABOUT.sub(blank, _REPORTED.sub(blank, text))


def spans(text: str) -> list[tuple[int, int]]:
    """Clause spans of a message, in order."""
    text = _blank_asides(text)
    out: list[tuple[int, int]] = []
    start = 0
    for m in list(_BOUNDARY.finditer(text)) + [None]:
        end = m.start() if m else len(text)
        out += _split_conj(text, start, end)
        if m:
            start = m.end()
    return [(s, e) for s, e in out if text[s:e].strip(" ,.;:!?¿¡-")]


_CONDITION = re.compile(r"^\W*(?:if|unless|wenn|falls|si)\b", re.I)
_FRAME_ONLY = re.compile(r"^\W*(?:(?:can|could|would|will) (?:you|u)|please|pls|kindly)\W*$", re.I)


# Whether a new clause starts after a conjunction is read from the words that follow it, up to
# this many characters: glossing the whole rest of the clause at every conjunction made a long
# clause cost the square of its length. Longer than any real clause's start, and than every
# message the model is evaluated and tested on, so their answers are the same as without it.
CLAUSE_LOOKAHEAD = 256


def _split_conj(text: str, start: int, end: int) -> list[tuple[int, int]]:
    pieces, cur = [], start
    for m in _CONJ.finditer(text, start, end):
        right = gloss(text[m.end():min(end, m.end() + CLAUSE_LOOKAHEAD)]).lstrip(" ,")
        # "If I sent it back, would you refund it?" is one question: a condition keeps its clause.
        # "Could you also email her": a bare request frame is not a clause of its own either.
        left = text[cur:m.start()]
        if CLAUSE_START.match(right) and not _CONDITION.match(left) and not _FRAME_ONLY.match(left):
            pieces.append((cur, m.start()))
            cur = m.end()
    pieces.append((cur, end))
    return pieces


@dataclass(frozen=True)
class Mood:
    question: bool       # ends in "?" or opens with a question word
    hypothetical: bool   # asks what would happen / whether it is possible
    request: bool        # asks for something to be done


_QUESTION_OPEN = re.compile(r"^\W*(?:(?:and|also|so|but|ok(?:ay)?|hi|hey|hello)\W+)*"
                            r"(?:what|whats|when|where|which|who|why|how|is|are|was|were|has|have|had|can|could|"
                            r"would|will|do|does|did|am|may|should)\b"
                            # emphatic "do cancel it" is an imperative, not "do you ...?"
                            r"(?!\s+(?:please\s+)?(?:refund|cancel|change|update|send|apply|escalate|process|go ahead)\b)")


# "If it's still returnable, refund it": the condition is not the clause's wish; what follows it is.
_LEADING_CONDITION = re.compile(r"^\W*(?:if|unless|provided(?: that)?|as long as|in case|wenn|falls|si)\b[^,?]*,\s*")


# A form's field that names the request ("Request type: refund", "Action requested: cancel").
_FORM_REQUEST = re.compile(r"^\W*(?:request(?:ed)?(?: type)?|type of request|action(?: requested)?)\s*:\s*\w")


_ASKS_INFO = re.compile(r"\b(?:tell me|let me know|show me|(?:i|we) (?:want|need|would like|'d like) to know|"
                        r"i(?:'m| am) (?:wondering|curious))\b")


def mood(clause_gloss: str) -> Mood:
    g = clause_gloss.strip()
    question = g.endswith("?") or bool(_QUESTION_OPEN.match(g)) or bool(_ASKS_INFO.search(g))
    hypothetical = bool(_HYPOTHETICAL.search(g))
    possible = bool(_POSSIBLE.search(g))
    main = _LEADING_CONDITION.sub("", g, count=1)
    request = bool(REQUEST.search(g) or (main != g and REQUEST.search(main)) or _FORM_REQUEST.match(g))
    if _POLITE.search(g) and not re.search(r"\b(?:tell me|check|know|wonder\w*|see|find out|confirm)\s+"
                                          r"(?:if|whether)\b", g):
        return Mood(question=question, hypothetical=False, request=True)
    # "Would I get a refund if ...": what would happen, whatever polite words it uses.
    # "I need to know if I can still cancel it": wanting to know is not wanting it done.
    wants = re.sub(r"\b(?:want|need|like|wanted) to (?:know|ask|check|find out|understand)\b", " ", g)
    if hypothetical and (re.match(r"^\W*(?:what|how|when|which|why|who)\b", g)
                         or not re.search(r"\b(?:please|i want|i need|i(?:'d| would) like)\b", wants)):
        return Mood(question=True, hypothetical=True, request=False)
    if possible and not request:
        return Mood(question=True, hypothetical=True, request=False)
    return Mood(question=question, hypothetical=False, request=request)


# A clause that only says no ("No thanks.", "actually no, don't") takes back the writes
# of the clause before it.
REFUSAL = re.compile(r"^\W*(?:(?:actually|wait|hmm|oh|um|ok(?:ay)?|on second thought|please|so)\W+)*"
                     r"(?:no|nope|nah|not (?:yet|now)|don'?t|do not|never ?mind|forget (?:it|that|about it)|"
                     r"scratch that)(?:\W+(?:thanks?|thank you|don'?t|do not|do it|please|wait|yet|for now))*\W*$")


_FORGET = re.compile(r"\s*forget\b")
_SIX_WORDS = re.compile(r"\s*(?:\S+\s+){5}\S")  # the gap has more than 5 words (str.split's)
_DONT_AT_END = re.compile(r"\b(?:don'?t|do not|never)\Z")


def _neg_before_forget(before: str, at: int) -> bool:
    """`before[:at]` ends in "don't", "do not" or "never" and whitespace ("don't forget")."""
    end = at
    while end > 0 and before[end - 1].isspace():
        end -= 1
    return end < at and _DONT_AT_END.search(before, max(0, end - 8), end) is not None


_WHY = re.compile(r"^\W*(?:(?:and|but|so|ok(?:ay)?|hi|hello|hey)\W+)*(?:why|how come)\b")


def negated(clause_gloss: str, at: int) -> bool:
    """Does a negation cue govern the word at position `at` of the clause?"""
    if _WHY.match(clause_gloss):  # "why wasn't it refunded?" asks about what happened; it declines nothing
        return False
    before = _blank_asides(clause_gloss[:at])
    for m in _NEG_BEFORE.finditer(before):
        # Read from the cue on, not copied and split whole for every cue (a clause of
        # thousands of "not"s cost the square of its length); the same tests as on the gap.
        # "don't forget to refund it" asks for it
        if _FORGET.match(before, m.end()) or (m.group(0).startswith("forget") and _neg_before_forget(before, m.start())):
            continue
        if not _SIX_WORDS.match(before, m.end()) and not _GAP_STOP.search(before[m.end():]):
            return True
    # A bare "no" negates only the word right after it ("no refund", "no cancele"); "No I want
    # a refund" answers something else and then asks.
    if re.search(r"\bno\s+(?:\w+\s+)?$", before) and not re.search(r"\bno\s+(?:i|we|you|it)\s+$", before):
        return True
    return bool(_NEG_AFTER.search(clause_gloss[at:]))


# "Refund A-1008 but not A-1001", "everything except A-1003", "sauf A-1001": that order is left out.
_EXCEPT = re.compile(r"(?:\bnot|\bexcept(?: for)?|\bexcluding|\bother than|\bapart from|\bbesides|\bsauf|\bexcepto|"
                     r"\bsalvo|\bmenos|\baußer|\bausser|\bnicht|\bpas)\s+(?:(?:for|the|with|on|order|la|commande|el|"
                     r"pedido|die|bestellung|von|de)\s+)*#?$", re.I)


# Where a cue of _EXCEPT starts (its alternatives and the space after, as it reads them).
_EXCEPT_CUE = re.compile(r"(?=(?:\bnot|\bexcept|\bexcluding|\bother than|\bapart from|\bbesides|\bsauf|\bexcepto|"
                         r"\bsalvo|\bmenos|\baußer|\bausser|\bnicht|\bpas)\s)", re.I)


def excluded_orders(clause_text: str) -> list[str]:
    """Order ids a negation or an "except" right before them leaves out of the clause."""
    from .entities import order_mentions
    # The cue ends right before the list (the pattern ends in $): it is looked for in the text
    # before the list up to CLAUSE_LOOKAHEAD back, not in all of it again for every id; and
    # only where a cue starts in that window (found once in the clause), so an id with no cue
    # before it costs no search of its window ("A-1001 " * 9000 searched 9000 windows).
    found = order_mentions(clause_text)
    cues = [m.start() for m in _EXCEPT_CUE.finditer(clause_text)] if found else []

    def cued(head: int) -> bool:
        lo = max(0, head - CLAUSE_LOOKAHEAD)
        return bisect_left(cues, lo) < bisect_left(cues, head) and bool(_EXCEPT.search(clause_text, lo, head))
    return list(dict.fromkeys(oid for oid, _, _, head in found if cued(head)))


_DE_NEG = re.compile(r"\bnicht\b|\bnichts\b|\bkein(?:e|en|er)?\b", re.I)


def negated_clause(clause_text: str) -> bool:
    """German puts "nicht" after the verb ("Bitte storniere A-1004 nicht"): the clause is negated,
    unless it asks why ("Warum wurde A-1005 nicht erstattet?")."""
    return bool(_DE_NEG.search(clause_text)) and not _WHY.match(gloss(clause_text))


# A correction mid-message ("50 SGD, sorry I mean 30 SGD", "A-1001 - no wait, A-1008"): the value
# after the marker replaces the one before it.
CORRECTION = re.compile(r"\b(?:sorry|oops|i mean[t]?|no wait|wait|correction|make (?:that|it)|or rather|rather|"
                        r"scratch that|i meant|typo|my bad|not that|actually)\b[\s,:-]*|,\s*no\s*,", re.I)


def corrected_orders(clause_text: str) -> list[str]:
    """Order ids a correction marker right after them replaces with another id."""
    from .entities import order_mentions
    found = order_mentions(clause_text)
    out = []
    for (oid, _, end, _), (nxt, start, _, _) in zip(found, found[1:], strict=False):
        between = clause_text[end:start]
        if nxt != oid and CORRECTION.search(between) and len(between.split()) <= 6 \
                and oid not in [o for o, s, _, _ in found if s > start]:
            out.append(oid)
    return out


def corrected_index(text: str, starts: list[int]) -> int:
    """Of several values at these positions, the one a correction leaves standing (the last
    one after a marker), or 0 when nothing is corrected."""
    keep = 0
    for k in range(1, len(starts)):
        if CORRECTION.search(text[starts[k - 1]:starts[k]]):
            keep = k
    return keep
