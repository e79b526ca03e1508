"""How sure the reader is that a clause asks for a write: act only when sure.

A write is sure when its clause is a plain request (an imperative, "please", "can you",
"I want") for an action with a clear object, and nothing in its scope could turn it
around: a negation, an irony or sarcasm marker, a hedge, a condition the tools cannot
check, a rhetorical or echo question, a report of what someone else said. Each cue
lowers the score; so do words the reader cannot place in front of the request ("The last
thing I want is a refund"): a construction it does not know lowers confidence, it never
defaults to acting. Below SURE the model asks a short question and writes nothing; a
following "yes" makes the write (request.py).

The reading is of the English gloss (lexicon.py); the known words below include the other
languages' function words the gloss leaves as they are.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .scan import Scan

SURE = 0.5

# Words that carry no wish of their own: function words of the six languages read, courtesy,
# request frames, objects and amounts. Anything else in front of a request is unexplained.
_FUNCTION = frozenset("""
a an the my your our their his her its it this that these those me you us i we he she they them him
for of on in to from with at by and or also so then now just please pls plz kindly can could would will
shall may might do did does is are was were be been am get got have has had let make go ahead want need
like love appreciate grateful really very quickly asap today right away immediately too as well all both
each every whole entire full fully half amount total back money partial partly only order orders number
id hi hello hey dear team support sir madam ok okay thanks thank thx ty cheers yes sure first second
third fourth next finally lastly one two three four five things requests items again still instead
actually there here someone somebody anyone anybody help mine process issue arrange put start initiate
submit request requested file raise log open create apply use redeem give send ship deliver change update
escalate what's whats when where which who how is isn't it's i'd i'm i'll i've you're we'd we're
for me note quick favour favor kind if possible able go through straight
der die das den dem des ein eine einen einem einer sie ich wir mir mich uns ihr ihre ihren meine meinen
bitte doch mal gerne gern noch danke hallo le la les l du des de vous je nous moi votre vos mon ma mes
merci bonjour el los las del usted mi por favor gracias hola il lo gli di della dello per grazie ciao
buongiorno o os as do da dos das obrigado obrigada olá um uma
""".split())
_WORD = re.compile(r"[a-zà-ÿ']+")
# Cues that can turn a request around, by kind. Each is a class of constructions, not a phrase
# to fix: the unexplained-words rule catches what these miss.
IRONY = re.compile(r"\bsaid no ?(?:one|body)\b|\byeah,? right\b|\bas if\b|\bjust kidding\b|\bkidding\b|\bjoking\b"
                   r"|\bjk\b|\blol\b|\bhaha\w*\b|\blmao\b|/s\b|\bnot!|\bdream on\b|\bin your dreams\b"
                   r"|\bover my dead body\b|\bnot in a million\b|\bthe last thing\b|\bwhy on earth\b"
                   r"|\b(?:oh|yeah),? sure\b|\bsure,? because\b|\blike (?:that'?s|that is|i'?d|i would)\b"
                   r"|\bof all (?:the )?things\b|\bno way\b")
HEDGE = re.compile(r"\bmaybe\b|\bperhaps\b|\bkind of\b|\bsort of\b|\bkinda\b|\bsorta\b|\bi (?:guess|suppose|think)\b"
                   r"|\bprobably\b|\bpossibly\b|\bnot sure\b|\bunsure\b|\bhaven'?t (?:decided|made up)\b"
                   r"|\b(?:undecided|on the fence|torn)\b|\bor not\b|\bmight\b|\bcould be\b|\bwhat do you think\b"
                   r"|\bshould i\b|\bthinking (?:about|of)\b|\bconsidering\b|\bnot (?:today|yet|now)\b|\blater\b"
                   r"|\bnext (?:week|month|time)\b|\bsomeday\b|\bone day\b")
# what someone else said or wants: "my sister says", "he told me to", "they want me to"
REPORTED = re.compile(r"\b(?:says?|said|told|tells|suggest\w*|recommend\w*|wants? me to|asked me to|reckons?|"
                      r"thinks?|claims?)\b")
KEEP = re.compile(r"\b(?:keep(?:ing)?|hold(?:ing)? on to) (?:it|them|this|that|these|those|the (?:item|headphones|keyboard|"
                  r"laptop|mouse|order))\b|\bi(?:'ll| will|'m going to) keep\b|\blove (?:it|them|these|this)\b(?! if| when)"
                  r"|\bi(?:'m| am) happy with (?:it|them)\b")
CONDITION = re.compile(r"\b(?:if|unless|provided|as long as|in case|only when|once)\b")
# conditions the tools can settle: the model checks them itself
CHECKABLE = re.compile(r"\b(?:deliver\w*|arriv\w*|ship\w*|dispatch\w*|processing|cancel\w*|eligib\w*|returnable"
                       r"|(?:return )?window|within|in stock|allowed|possible|you can|you could|you are able"
                       r"|it'?s ok|okay|limit|over|under|above|below|still|late|refunded|not yet|already"
                       r"|on (?:its|the) way|in transit|sent|out for|left the|price|cost|stock"
                       # an amount compared with a number: conversion settles it ("less than 200 US dollars")
                       r"|less than|more than|at (?:most|least)|comes? to|amounts? to|total)\b")
_REASON = re.compile(r"\b(?:because|since|'?cause|coz|cos|given that|as (?:it|they|the|my|i|we|he|she))\b|[:(]")
# A negation after the request that governs the act or the speaker's sincerity ("..., not!", "said no
# one ever", "or not", "not really", "don't do it"), not one about a noun ("no questions asked").
_TAKES_BACK = re.compile(r"(?:\bnot|\bno|\bnever|n't)\b(?!\s*(?:(?:for|on|the|order)\s+)*§)(?=\W*$|\s+(?:\w+\s+){0,2}?(?:it|that|this|one|body|do|doing|refund\w*|"
                         r"cancel\w*|really|sure|serious|kidding|ever|yet|now|today|anymore|after all)\b)")
NEGATION = re.compile(r"\b(?:not|no|never|nothing|none|nobody|neither|nor)\b|n't\b")


# Frames that ask for something to be done (or wished for): their object is the request.
FRAME = re.compile(r"\b(?:please|pls|plz|kindly)\b|\b(?:can|could|would|will) (?:you|u|someone|somebody)\b"
                   r"|\b(?:can|could|may) (?:i|we) (?:please )?(?:get|have)\b|\bif you (?:could|would|can)\b"
                   r"|\bi(?:'d| would)? (?:really |just |only )?(?:like|love|want|need|wish)\b|\bi(?:'d| would) (?:accept|"
                   r"take|settle for|prefer|appreciate)\b|\bgo ahead and\b|\bwould you mind\b|\bany chance\b"
                   r"|\b(?:any|is there a) way (?:you|to)\b(?:\s+(?:could|can|would))?|\b(?:don'?t|do not) forget to\b"
                   r"|\bremember to\b|\bmake sure (?:to|you)\b"
                   r"|\b(?:let'?s|time to)\b")
WISH = re.compile(r"\bi(?:'d| would) (?:accept|take|settle for|be (?:happy|ok|okay|fine) with|prefer|appreciate|welcome)\b"
                  r"|\bi(?:'m| am) (?:asking|requesting|hoping)\b|\bi(?:'d| would) be (?:\w+ )?grateful\b"
                  r"|\bi expect\b|\b(?:it|that|this|the address) (?:should|needs to|must|has to) be\b"
                  r"|\b(?:don'?t|do not) forget to\b|\bremember to\b|\bmake sure (?:to|you)\b|\b(?:want|need|like) (?:it|them|this|that|a-?\d{4}|my order) (?:to be )?(?:refunded|"
                  r"cancell?ed)\b")
# A request for "it" to be done, naming no act of its own: it asks for the act just named.
DO_IT = re.compile(r"\b(?:process|do|handle|issue|sort|action|approve|make|get|put) (?:it|this|that|them)\b|\bgo ahead\b"
                   r"|\bmake it happen\b")
# Past or present statements ("I got a refund for A-1001", "A-1004 was cancelled") tell; they don't ask.
_STATEMENT = re.compile(r"\b(?:got|was|were|had|did|received|already|have been|has been|is being|said|yesterday|"
                        r"last (?:week|month|time))\b|\b\w+ed\b(?= (?:a|the|my|it|on|last|yesterday))")


def _telegraphic(g: str, trigger: tuple[int, int]) -> bool:
    """ "A-1004 cancel", "refund 1008 pls": no frame, but nothing else in the clause either."""
    words = _WORD.findall(g[:trigger[0]] + " " + g[trigger[1]:])
    return not _unexplained(words) and not _STATEMENT.search(g) and len(words) <= 6


@dataclass(frozen=True)
class Sureness:
    score: float
    why: tuple[str, ...] = ()

    @property
    def sure(self) -> bool:
        return self.score >= SURE


def _unexplained(words: list[str]) -> list[str]:
    return [w for w in words if w not in _FUNCTION and not w.isdigit() and len(w) > 1]


def _blank(text: str, pattern: re.Pattern | Scan, mark: str = " ") -> str:
    return pattern.sub(lambda m: mark * len(m.group(0)), text)


# ids, amounts, currencies, or an email (the last alternative; Scan keeps it linear on long runs)
_OBJECTS = Scan(r"(?<![\w-])(?:a-?\d{4}|#\d{4}|c-?\d{3}|sku-?\w+)(?![\w-])|\d+(?:[.,]\d+)?\s?%?"
                r"|[$€£]|\b(?:eur|usd|gbp|sgd|euros?|dollars?|pounds?|quid|bucks|percent)\b")


# What the whole message says is read once per message, not once per write it asks for
# (a message of many requests would otherwise be read again for each one).
@lru_cache(maxsize=64)
def _ironic(message_gloss: str) -> bool:
    return bool(IRONY.search(message_gloss))


@lru_cache(maxsize=64)
def _kept(message_gloss: str) -> bool:
    """Do the message's statements (its sentences that are not questions) say the item is kept?"""
    statements = " ".join(x for x in re.split(r"(?<=[.!?])\s+", message_gloss) if not x.strip().endswith("?"))
    return bool(KEEP.search(statements))


def judge(gloss: str, trigger: tuple[int, int], *, request: bool, message_gloss: str,
          action: str, after: str = "", described: bool = False) -> Sureness:
    """How sure a reading of `gloss` (one clause) as a request for `action` is.

    `trigger` is the span of the words asking for it; `request`: the clause has a request
    frame; `message_gloss`: the whole message (irony anywhere turns it all); `after`: the
    clause right after this one, when it has no wish of its own (an afterthought); `described`:
    that clause asks for "it" to be done, so this one only describes the act."""
    score, why = 1.0, []

    def lower(factor: float, reason: str) -> None:
        nonlocal score
        score *= factor
        why.append(reason)

    g = _blank(gloss.lower(), _OBJECTS, "§")  # objects kept as marks: "not A-1008" leaves one out
    # A heading or a form's label before a colon or line break ("Returns desk, two for today:")
    # introduces the request; it is not a word in front of it.
    head = max(g.rfind(":", 0, trigger[0]), g.rfind("\n", 0, trigger[0]))
    if head >= 0 and not (REPORTED.search(g[:head]) or HEDGE.search(g[:head])):  # "my sister says:" still reports
        g = " " * (head + 1) + g[head + 1:]
    before, tail = g[:trigger[0]], g[trigger[1]:]
    # A condition the tools can check ("... only if it hasn't shipped yet") is judged as a
    # condition below, not read as words that take the request back.
    cond = CONDITION.search(tail)
    if cond and CHECKABLE.search(tail[cond.end():cond.end() + 60]):
        tail = tail[:cond.start()]
    # A leading condition ("if A-1004 hasn't shipped yet, cancel it") is judged as a condition below.
    lead = re.match(r"^\W*(?:if|unless|provided(?: that)?|as long as|in case|once)\b[^,]*,\s*", before)
    if lead:
        before = " " * lead.end() + before[lead.end():]
    request = request or bool(WISH.search(g)) or _telegraphic(g, trigger)
    # A reason given for the request ("... because it might be broken") does not qualify it.
    reason = _REASON.search(tail)
    if reason:
        tail = tail[:reason.start()]
    cond_text = g[trigger[1]:]  # the whole tail, for the condition rule
    g = before + g[trigger[0]:trigger[1]] + tail
    if not request:
        lower(0.45, "it is not put as a request")
    if _ironic(message_gloss) or IRONY.search(after):
        lower(0.3, "it reads as ironic")
    if HEDGE.search(g) or HEDGE.search(after):
        lower(0.35, "it sounds undecided")
    # Words between the request's frame ("could you", "please", "I want") and the act must be
    # understood; words before the frame are context ("I sent it back on Monday and ..."),
    # unless the frame is the head of a description ("the last thing I want is a refund").
    frames = list(FRAME.finditer(before))
    near = before[frames[-1].end():] if frames else before
    far = before[:frames[-1].start()] if frames else ""
    unknown = _unexplained(_WORD.findall(near))
    if frames and re.match(r"\s*(?:is|was|would be)\b", near):
        unknown += _unexplained(_WORD.findall(far))
    if REPORTED.search(before):
        lower(0.35, "it reports what someone else said")
    elif described:
        pass  # the words before the act describe it; the request is the next clause
    elif len(unknown) >= 2:
        lower(0.35, "I could not read the words before the request")
    elif unknown:
        lower(0.8, "one word before the request was unclear")
    cond = CONDITION.search(g) or CONDITION.search(cond_text)
    where = g if CONDITION.search(g) else cond_text
    if cond and not CHECKABLE.search(where[cond.end():cond.end() + 60]):
        lower(0.4, "it depends on a condition I can't check")
    if _TAKES_BACK.search(tail) or _TAKES_BACK.search(after):
        lower(0.4, "what follows the request takes it back")
    if action in ("refund", "cancel") and _kept(message_gloss):
        lower(0.4, "the message says the item is being kept")
    stripped = gloss.strip()
    if stripped.endswith("?") and not request_question(stripped) and _IMPERATIVE.match(stripped.lower()):
        lower(0.45, "it is put as a question")
    return Sureness(round(score, 3), tuple(why))


# A question that asks for the act ("can you refund it?", "would you cancel A-1004?") is a request;
# an imperative said as a question ("Refund A-1008?") echoes it back.
_ASKING = re.compile(r"\b(?:can|could|would|will|may) (?:you|u|someone|somebody|(?:i|we) (?:please |still )?(?:get|have|speak|"
                     r"talk|ask))\b|\bplease\b|\bpls\b"
                     r"|\bany chance\b|\bwould you mind\b|\bis it (?:ok|okay|possible)\b|\bpossible to\b")


_IMPERATIVE = re.compile(r"^\W*(?:(?:and|so|then|just|also|ok(?:ay)?)\W+)*(?:refund|cancel|change|update|ship|send|e-?mail|"
                         r"apply|escalate|open|create|delete|remove|give|process|issue)\b")


def request_question(clause: str) -> bool:
    return bool(_ASKING.search(clause.lower()))


# --- unknown language ---------------------------------------------------------------------
# Function words of the languages the reader knows; a message with several words and none of
# these (nor any word the patterns key on) is in a language it does not read.
_KNOWN_LANG = _FUNCTION | frozenset("""
refund cancel address status order where when what why how shipped delivered return tracking money
not no is are was my your the and but with for to of in on it this that i you we please thanks
ist und nicht mein meine bitte wann wo warum est et pas mon ma mes où quand pourquoi es y no mi
mis dónde cuándo por qué non è il mio dove quando perché não é o meu onde quando porque
ich möchte habe hat über mit einem einer eine zu von für auf im am wie was wer sehr schon
je suis ai avez une un des pour avec sur dans que qui yo tengo tiene una para con en quien
io ho ha sono che eu tenho tem com em
up down out off over yet nothing something anything everything nobody someone anyone everyone
""".split())


def unreadable(message_gloss: str) -> bool:
    """Several words, few of them known: not a message it can act on or answer."""
    text = re.sub(r"\b[ldmst]'", " ", _blank(message_gloss.lower(), _OBJECTS))  # elisions: l'ordine
    words = [w for w in _WORD.findall(text) if len(w) > 1]
    known = sum(w in _KNOWN_LANG for w in words)
    # a shared short word ("de" in Dutch) is not a language read: most words must be known
    return len(words) >= 2 and known * 3 < len(words)
