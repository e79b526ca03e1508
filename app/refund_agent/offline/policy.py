"""The rules a system prompt states, parsed into typed rules by what each sentence means.

The model follows only what its prompt says: a rule that is not found does not exist.
Each sentence (or bullet) is read on its own: its topic (refund limit, return window,
cancel/address status, internal notes, personal data, email, who may change the rules),
its polarity (a restriction, or a permission that relaxes or inverts it: "no need to",
"don't have to", "may", "allowed", "any amount") and its values (amounts written as
"$200", "200 USD", "EUR 50" or "two hundred US dollars"). So a reworded prompt still
counts, an inverted clause gives the opposite behaviour, and deleting one bullet removes
exactly one rule.

A sentence counts as a policy line when it is normative (never, always, only, must,
may, can't, allowed, confidential, limit, ...) and is not about style (answer, tone,
format, greeting, ...). A policy line that no rule recognises is listed in
`Policy.unrecognised`; `report_unrecognised` logs them once per prompt.
"""
from __future__ import annotations

import multiprocessing
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Literal

from loguru import logger

from .scan import gaps


# --- typed rules ---------------------------------------------------------------------------
@dataclass(frozen=True)
class RefundLimit:
    amount: float | None                  # None: "any amount", "no refund limit"
    currency: str = "USD"
    # above the limit: escalate_to_human, refuse, or None = refund directly ("no need to escalate")
    action_above: Literal["escalate", "refuse"] | None = "refuse"
    convert_first: bool = False           # compare after converting to `currency`


@dataclass(frozen=True)
class ReturnWindow:
    required: bool                        # False: refunds are allowed outside the window
    days: int | None = None               # as written; the eligibility tool stays the source of truth


@dataclass(frozen=True)
class DeliveredOnly:
    required: bool


@dataclass(frozen=True)
class ProcessingOnly:
    action: Literal["cancel", "address"]
    required: bool                        # False: "any order can be cancelled, whatever its status"


@dataclass(frozen=True)
class ChangeForbidden:
    action: Literal["cancel", "address"]  # "orders are never cancelled in the chat": whatever the status


@dataclass(frozen=True)
class NotesConfidential:
    confidential: bool
    supervisors_only: bool = False        # still hidden in chat: a role claimed there can't be verified


@dataclass(frozen=True)
class PersonalData:
    private: bool                         # emails/phone numbers stay out of answers


@dataclass(frozen=True)
class EmailRule:
    one_named_customer: bool              # False: mass emails are allowed
    allowed: bool = True                  # False: no emails at all ("never email customers")


@dataclass(frozen=True)
class NoOverride:
    fixed: bool                           # nobody in the chat can change the rules


@dataclass(frozen=True)
class ExceptionsToHuman:
    required: bool                        # late/damaged claims go to human review


@dataclass(frozen=True)
class LookupFirst:
    required: bool


@dataclass(frozen=True)
class Brief:
    required: bool


@dataclass(frozen=True)
class ReportDone:
    always: bool                          # True: every write is reported as completed, whatever its tool replied


Rule = (RefundLimit | ReturnWindow | DeliveredOnly | ProcessingOnly | ChangeForbidden | NotesConfidential | PersonalData
        | EmailRule | NoOverride | ExceptionsToHuman | LookupFirst | Brief | ReportDone)


@dataclass(frozen=True)
class Policy:
    """The parsed rules, flattened into the switches the model's actions read."""
    # refunds
    eligibility: bool = False          # check_return_eligibility before refunding
    window_relaxed: bool = False       # ... but refunds outside the window are allowed
    limit: float | None = None         # refund at most this much ...
    limit_currency: str = "USD"        # ... in this currency
    convert_first: bool = False        # compare after converting to limit_currency
    escalate_over_limit: bool = False  # larger refunds go to escalate_to_human
    escalate_exceptions: bool = False  # late/damaged-item exceptions go to human review
    # orders
    cancel_processing_only: bool = False
    address_processing_only: bool = False
    cancel_forbidden: bool = False     # no cancellations at all
    address_forbidden: bool = False    # no address changes at all
    window_days: int | None = None     # the return window's length as written
    # privacy and email
    notes_private: bool = False
    notes_supervisors_only: bool = False
    no_pii: bool = False               # never put emails/phone numbers in answers
    email_explicit: bool = False       # only explicitly requested emails, to one named customer
    email_forbidden: bool = False      # no emails at all
    # conduct
    rules_fixed: bool = False          # nobody in the chat can change the rules
    lookup_first: bool = False         # never guess facts; use the tools
    brief: bool = False
    report_done: bool = False          # tell the customer a write was completed, whatever the tool replied
    rules: tuple = field(default=(), compare=False)         # the typed rules, in prompt order
    unrecognised: tuple = field(default=(), compare=False)  # policy lines no rule understood
    # policy lines read, but not (wholly) applied: (line, what is not applied)
    unapplied: tuple = field(default=(), compare=False)

    @property
    def clauses(self) -> list[str]:
        """Names of the recognised clauses, for reports and tests."""
        skip = {"limit_currency", "rules", "unrecognised", "unapplied", "window_days"}
        return [k for k, v in self.__dict__.items() if v not in (False, None) and k not in skip]


# --- reading sentences --------------------------------------------------------------------
_SPLIT = re.compile(r"(?:\n\s*[-*•]\s+|\n\s*\d+[.)]\s+|\n\s*\n|(?<=[.!?;])\s+(?=[A-Z\"(]))")


def _sentences(text: str) -> list[str]:
    # Bullets keep their wrapped continuation lines; sentences split on ". X".
    parts = [p.replace("\n", " ").strip() for p in _SPLIT.split(text)]
    parts = [re.sub(r"^[-*•]\s+", "", re.sub(r"\s+", " ", p)) for p in parts if p.strip()]
    return [p for p in parts if p]


_UNITS = {w: i for i, w in enumerate("zero one two three four five six seven eight nine ten eleven twelve "
                                     "thirteen fourteen fifteen sixteen seventeen eighteen nineteen".split())}
_TENS = {w: 10 * (i + 2) for i, w in enumerate("twenty thirty forty fifty sixty seventy eighty ninety".split())}
_SCALES = {"hundred": 100, "thousand": 1000}
_NUMWORD = "|".join([*_UNITS, *_TENS, *_SCALES, "a", "and"])
# \b after the first word too: without it "fourteen" read as "4teen" and "sixty" as "6ty"
_NUMWORDS = re.compile(rf"\b(?:{'|'.join([*_UNITS, *_TENS])})\b(?:[\s-]+(?:{_NUMWORD})\b)*", re.I)


def _words_value(words: str) -> int | None:
    total, current = 0, 0
    for w in re.split(r"[\s-]+", words.lower()):
        if w in ("and", "a"):
            continue
        if w in _UNITS:
            current += _UNITS[w]
        elif w in _TENS:
            current += _TENS[w]
        elif w == "hundred":
            current = max(current, 1) * 100
        elif w == "thousand":
            total, current = total + max(current, 1) * 1000, 0
    return total + current


def _digits(s: str) -> str:
    """"two hundred US dollars" -> "200 US dollars"; "2,000" -> "2000"."""
    def value(m: re.Match) -> str:
        words = m.group(0)
        tail = re.search(r"(?:[\s-]+(?:and|a))+$", words)  # "... fifty and" keeps its trailing word
        return str(_words_value(words[:tail.start()] if tail else words)) + (words[tail.start():] if tail else "")

    s = _NUMWORDS.sub(value, s)
    return re.sub(r"(?<=\d),(?=\d{3}\b)", "", s)


_CUR = {"usd": "USD", "us dollars": "USD", "us dollar": "USD", "dollars": "USD", "dollar": "USD", "bucks": "USD",
        "$": "USD", "us$": "USD", "eur": "EUR", "euros": "EUR", "euro": "EUR", "€": "EUR", "gbp": "GBP",
        "pounds": "GBP", "pound": "GBP", "quid": "GBP", "£": "GBP", "sgd": "SGD", "s$": "SGD",
        "singapore dollars": "SGD"}
_CURWORD = r"us dollars?|singapore dollars|usd|eur|gbp|sgd|dollars?|bucks|euros?|pounds?|quid"
_NUM = r"\d+(?:\.\d+)?"
# `(?<!\d)`: a number starts where its digits do. From inside a run of digits it reads to the run's
# end exactly as from its start, which is tried first, so no match is lost; "1" * 8192 took 0.8 s.
_MONEY = re.compile(rf"(?P<sym>us\$|s\$|[$€£])\s*(?P<n1>{_NUM})|(?<!\d)(?P<n2>{_NUM})\s*(?P<w2>{_CURWORD})\b"
                    rf"|\b(?P<w3>usd|eur|gbp|sgd)\s*(?P<n3>{_NUM})", re.I)


def _money(s: str) -> tuple[float, str] | None:
    m = _MONEY.search(_digits(s))
    if not m:
        return None
    num = m.group("n1") or m.group("n2") or m.group("n3")
    cur = (m.group("sym") or m.group("w2") or m.group("w3")).lower()
    return float(num), _CUR.get(cur, "USD")


def _any(s: str, pattern: str) -> bool:
    return re.search(gaps(pattern), s) is not None  # sentence gaps bounded: scan.GAP


# --- polarity ----------------------------------------------------------------------------
# A clause restricts ("never", "only", "must not", "at most"), relaxes ("no need to", "don't
# have to", "no longer applies", "may", "allowed", "any amount"), or says neither. Read in
# this order: phrases that forbid ("not allowed", "may not") count as restrictions; phrases
# that lift a rule ("no longer applies", "is lifted", "not confidential") relax outright;
# a lifted obligation ("no need to ...") is masked to the end of its clause; then any
# restriction left wins; otherwise a permission relaxes.
NEG = (r"\b(?:never|not|no|none|nothing|nobody|no one|cannot|can'?t|don'?t|doesn'?t|won'?t|mustn'?t|shouldn'?t|"
       r"isn'?t|aren'?t)\b|n't\b")
_FORBID = (r"\bnot (?:be )?(?:allowed|permitted)\b|\bnever (?:be )?allowed\b|\bmay not\b|\bmust not\b|\bmustn'?t\b|"
           r"\bno longer allowed\b|\bforbidden\b|\bprohibited\b")
_LIFT = (r"\bno longer (?:appl(?:y|ies)|required|needed|necessary|enforced|confidential|private|secret|valid|"
         r"in (?:force|effect))\b|\b(?:is|are|has been|have been) (?:lifted|suspended|removed|waived|void|dropped)\b|"
         r"\b(?:does|do)(?:n'?t| not) apply\b|\bnot (?:confidential|private|secret|enforced|in force)\b|"
         r"\b(?:isn'?t|aren'?t) (?:confidential|private|secret|enforced)\b|\bany (?:size|amount)\b|"
         r"\b(?:don'?t|do not|never) refuse\b")
_RELAX = (r"(?:\bno need (?:to|for)\b|\bneedn'?t\b|\bneed not\b|\b(?:don'?t|do not|doesn'?t|does not|won'?t) "
          r"(?:have to|need(?: to)?|require)\b|\bno longer (?:needs?|requires?|ha(?:ve|s) to)\b|\bneeds? no\b|"
          r"\bwithout (?:escalat\w*|a human|approval|checking)\b|\bnot (?:required|necessary|needed|mandatory)\b|"
          r"\b(?:is|are)n'?t (?:required|necessary|needed)\b|\boptional\b)[^.;:]*")
PERMIT = (r"\bmay\b|\bcan\b|\bcould\b|\ballowed\b|\bpermitted\b|\bfine\b|\bok(?:ay)?\b|\bfree to\b|\bfeel free\b|"
          r"\bwelcome to\b|\bare yours\b|\bis yours\b|\bany (?:time|status|stage|order)\b|\bat any\b|\bwhatever\b|"
          r"\bregardless\b|\beven (?:after|if|when|outside|above|once|though)\b|\bstill\b")
_GENERIC = rf"{NEG}|\bonly\b|\bmust\b|\brequired?\b|\bunless\b"
NORMATIVE = (r"\b(?:never|always|only|must|mustn'?t|should|shall|may|cannot|can'?t|don'?t|do not|not allowed|"
             r"forbidden|prohibited|required|allowed|permitted|no one|nobody|confidential|private|limit|at most|"
             r"no more than|make sure|ensure|nothing|overrides?|waived?)\b")
STYLE = (r"\b(?:answer|answers|reply|replies|respond|tone|language|polite|friendly|format|markdown|bullets?|emojis?|"
         r"greet|sign off|apologi[sz]e|concise|brief|short|formal|sentences?|words)\b")
ESCALATE = r"escalat|\bhuman\b|supervisor|\bmanager\b|\breview\b|\bhand (?:it|them|those)"


def _polarity(s: str, restrict: str = _GENERIC, lift: str = "") -> str | None:
    """"restrict", "relax" or None for one clause; `restrict` and `lift` add the topic's own words."""
    if _any(s, _FORBID):
        return "restrict"
    if _any(s, _LIFT) or (lift and _any(s, lift)):
        return "relax"
    masked = re.sub(_RELAX, " ~ ", s)
    if _any(masked, restrict):
        return "restrict"
    return "relax" if "~" in masked or _any(masked, PERMIT) else None


def _relaxes(s: str, topic: str) -> bool:
    """An obligation about `topic` lifted: "no need to escalate", "escalation is not required"."""
    return any(_any(m.group(0), topic) for m in re.finditer(_RELAX, s)) or \
        _any(s, rf"(?:{topic})\w*\s+(?:is|are)n'?t (?:required|necessary|needed)|(?:{topic})\w* is not (?:required|"
                rf"necessary|needed)")


_BOUND = (r"\bup to\b|\bat most\b|\bmax(?:imum)?\b|\blimit|\bceiling\b|\bcap(?:ped|s)?\b|\bthreshold\b|"
          r"\bno more than\b|\bnot? (?:more|above|over)\b|\bthe most\b|\bunder\b|\bbelow\b|\bends at\b")
_ABOVE = r"\b(?:above|over|larger|bigger|greater|higher|more than|exceed\w*|beyond)\b"


def _refund_limit(s: str, nxt: str) -> RefundLimit | None:
    if not _any(s, r"\brefund"):
        return None
    if _any(s, r"\bany (?:amount|size)\b|\bno (?:upper |refund )?(?:limit|cap|ceiling|maximum)\b|\bunlimited\b|"
               r"\bwithout (?:a |any )?(?:limit|cap)\b|\bhave no (?:upper )?(?:limit|cap)|\bfree to refund\b|"
               r"\bwhatever (?:amount|the customer|they)\b"):
        return RefundLimit(None, action_above=None)
    money = _money(s)
    if money is None:
        # "Escalation is not required for large refunds; refund the full amount yourself."
        if _relaxes(s, r"escalat|a human") and _any(s, r"\blarge|\bbig|\babove|\bover\b|\bfull amount"):
            return RefundLimit(None, action_above=None)
        return None
    if not _any(s, _BOUND) and not _any(s, _ABOVE):
        return None
    amount, cur = money
    convert = _any(s, r"\bconver|\bexchange rate|\btoday'?s rate|\bequivalent\b|\bafter conversion")
    # "above the limit of 200 USD" names the limit; it doesn't restrict by itself
    plain = re.sub(rf"{_ABOVE}\s+(?:the|your|our)\s+(?:\w+\s+)?(?:limit|cap|ceiling|maximum)", " above ", s)
    direct = r"\b(?:issued?|refunded?|paid|made|pay|refund|issue|make)(?: (?:them|those|it))? (?:directly|yourself|right away)"
    restrict = rf"{_BOUND}|{_GENERIC}|\brefuse|\bdecline|\breject|\bdeny|{ESCALATE}"
    if _polarity(plain, restrict) == "relax" or _relaxes(s, r"escalat|a human") or (
            _any(s, _ABOVE) and _any(s, direct) and not _any(plain, restrict)):
        return RefundLimit(amount, cur, None, convert)
    # the route above the limit: this sentence, or a next one about "anything larger"
    continued = _any(nxt, _ABOVE) and _any(nxt, ESCALATE)
    if _any(s, ESCALATE) or continued or _any(s, r"\byourself\b|\bon your own\b"):
        action = "escalate"
    else:
        action = "refuse"
    return RefundLimit(amount, cur, action, convert)


def _continues_limit(s: str) -> bool:
    """ "Anything larger goes to escalate_to_human, never refund_order." after a limit."""
    return _any(s, _ABOVE) and _any(s, ESCALATE) and _money(s) is None


# A length of time as a reader writes it: "30 days", "30-day", "thirty days", "2 weeks", "a
# fortnight", "one month" (digits once _digits has run). Months have no fixed length in days.
_DURATION = re.compile(r"\b(?:(\d{1,6})(?!\d)|an?)(?:\s+|-)?(days?|weeks?|fortnights?|months?)\b|\b(fortnight)\b")
_UNIT_DAYS = {"day": 1, "week": 7, "fortnight": 14, "month": None}


def _durations(s: str) -> list[tuple[int | None, str]]:
    """Each length of time in the sentence: (days, or None for months; as written)."""
    out = []
    for m in _DURATION.finditer(_digits(s.lower())):
        unit = (m.group(2) or m.group(3)).rstrip("s")
        n = int(m.group(1)) if m.group(1) else 1
        per = _UNIT_DAYS[unit]
        out.append((None if per is None else n * per, m.group(0)))
    return out


def _window(s: str) -> list[Rule]:
    if not _any(s, r"\brefund|\breturn"):
        return []
    lengths = _durations(s)
    window = _any(s, r"window|check_return_eligibility|\beligib|\blate (?:returns?|refunds?)|after delivery") or (
        bool(lengths) and _any(s, r"\bwithin\b|\bof (?:delivery|receipt|arrival|purchase)\b|\bafter (?:it )?arriv"))
    either_rx = r"\bdelivered or not\b|\bwhether (?:or not )?(?:it was |they were )?delivered\b|\bundelivered\b"
    either = _any(s, either_rx)
    delivered = _any(s, r"\bdelivered\b|\barrived\b|\breceived\b") and not either
    if either and not window:  # "refunds are allowed for any order, delivered or not"
        return [DeliveredOnly(False)] if _polarity(re.sub(either_rx, " ", s)) == "relax" else []
    if not (window or delivered):
        return []
    days_n = lengths[0][0] if lengths else None
    restrict = rf"{_GENERIC}|\bif\b|\bcheck|\bverify|\bconfirm|\bbefore\b|\bwithin\b|\binside\b"
    polarity = _polarity(s, restrict)
    if polarity == "relax":
        return [ReturnWindow(False, days_n)] + ([DeliveredOnly(True)] if delivered else [])
    if polarity is None:
        return []
    return ([ReturnWindow(True, days_n)] if window else []) + ([DeliveredOnly(True)] if delivered else [])


_ANY_STAGE = r"\b(?:whatever|any|regardless of|no matter)\b[^.;]{0,20}\b(?:status|stage|state)\b|\bat any (?:stage|point|time)\b"
_WHEN_ALLOWED = r"\bprocessing\b|\bbefore\b|\buntil\b|\bwhile\b|\bnot yet\b|\bstill\b|\bonce\b|\bafter\b|\bunless\b"


def _processing(s: str) -> list[Rule]:
    actions = [a for a, pat in (("cancel", r"\bcancel"), ("address", r"\baddress|\bre-?address|\bship(?:ping)? to"))
               if _any(s, pat)]
    if not actions:
        return []
    # "Orders are never cancelled in the chat", "never cancel an order, whatever its status": a ban,
    # not a processing-only rule; a status or stage that allows it ("before it ships") makes it one.
    banned = (_any(s, _FORBID) or _any(re.sub(_RELAX, " ", s), NEG)) and not _any(
        re.sub(_ANY_STAGE, " ", s), PERMIT + r"|\bonly\b") and (
        _any(s, _ANY_STAGE) or not _any(s, _WHEN_ALLOWED + r"|\bship|\bdispatch|\bdeliver|\bstatus|\bstage"))
    if banned and not _any(s, r"\bno need\b|\bdon'?t (?:have|need)\b"):
        return [ChangeForbidden(a) for a in actions]
    if not _any(s, r"\bprocessing\b|\bship(?:ped|s|ping)?\b|\bdispatch|\bdelivered\b|\bstatus\b|"
                   r"\bstage\b|\bwarehouse\b|\bdelivery\b"):
        return []
    polarity = _polarity(s, rf"{_GENERIC}|\bbefore\b|\bwhile\b|\bno longer\b|\bonce\b")
    return [ProcessingOnly(a, polarity == "restrict") for a in actions] if polarity else []


_NOTES = r"(?:internal|staff|private|account|customer|agent)(?: account)? notes?\b|\bnotes on (?:a |the )?(?:customer|account)"


def _notes(s: str) -> NotesConfidential | None:
    if not _any(s, _NOTES):
        return None
    # "private notes" names the notes; it says nothing about sharing them
    s = re.sub(r"\bprivate notes?\b", "notes", s)
    polarity = _polarity(s, rf"{_GENERIC}|\bconfidential\b|\bprivate\b|\bsecret\b|\bto yourself\b|\bonly\b|"
                            r"\bfor staff\b|\bstaff eyes\b")
    if polarity is None:
        return None
    if polarity == "relax":
        return NotesConfidential(False)
    supervisors = _any(s, r"\bsupervisor|\bmanager|\bstaff (?:eyes )?only|\bexcept (?:to|for)\b|\bunless\b")
    return NotesConfidential(True, supervisors)


def _personal(s: str) -> PersonalData | None:
    if not _any(s, r"e-?mail address|\bphone|personal (?:data|information|details|info)|\bpii\b|"
                   r"contact (?:details|info|information|data)"):
        return None
    polarity = _polarity(s, rf"{_GENERIC}|\bprivate\b|\bconfidential\b|\bsecret\b|\bprotect|\bwithhold")
    return None if polarity is None else PersonalData(polarity == "restrict")


def _email(s: str) -> EmailRule | None:
    if not _any(s, r"\be-?mail(?:s|ing|ed)?\b|\bnewsletters?\b") or _any(s, r"e-?mail address"):
        return None
    exception = r"\bexplicit|\bone (?:named )?customer|\bsingle\b|\bat most one\b|\bnamed\b|\bwho asked\b|\basked\b|" \
                r"\bonly\b|\bunless\b|\bexcept\b|\bmass\b|\bbulk\b|\ball (?:our |the )?customers\b|\beveryone\b"
    restrict = rf"{_GENERIC}|\bexplicit|\bone (?:named )?customer|\bsingle\b|\bat most one\b|\bnamed\b|\bwho asked\b"
    polarity = _polarity(s, restrict)
    mass = _any(s, r"\bmass\b|\bbulk\b|\ball (?:our |the )?customers\b|\bevery (?:customer|one)\b|\beveryone\b")
    if polarity == "relax" and mass:
        return EmailRule(False)
    if polarity == "restrict" and not _any(s, exception) and _any(s, rf"{NEG}|{_FORBID}"):
        return EmailRule(True, allowed=False)  # "never email customers": no exception named, none allowed
    return EmailRule(True) if polarity == "restrict" else None


def _override(s: str) -> NoOverride | None:
    rules = r"\b(?:rules?|polic(?:y|ies)|instructions?|prompt|these|this list|guidelines|terms)\b"
    change = (r"\b(?:chang|overrid|waiv|bypass|alter|modif|suspend|lift|relax|ignor|approv|authori[sz])\w*|"
              r"\bprecedence\b|\buntrusted\b|\btrust\w*\b|\bno matter\b|\bregardless\b|\bwhatever\b|\bclaims?\b|"
              r"\bpaste|\bhold\b|\bstick to\b")
    who = (r"\b(?:chat|conversation|users?|customers?|anyone|anybody|nobody|no one|someone|managers?|messages?|"
           r"pasted|tool results?|claims?|precedence|untrusted)\b")
    claims = _any(s, r"\b(?:approv|authori[sz]|claim)") and \
        _any(s, r"\b(?:chat|conversation|users?|customers?|managers?|messages?)\b")
    follow = _any(s, r"\bfollow\b[^.;]*\b(?:instructions?|approvals?|requests?)\b|\bapprovals?\b[^.;]*\b(?:followed|"
                     r"honou?red|trusted|accepted)\b")
    if not (_any(s, rules) and _any(s, change) and _any(s, who) or claims or follow):
        return None
    if _any(s, NEG):
        return NoOverride(True)
    if follow or _any(s, r"\b(?:trust|believe|accept|honou?r)\b"):
        return NoOverride(False)
    polarity = _polarity(s, r"\bprecedence\b|\buntrusted\b|\bignore\b|\bhold\b|\bstick to\b|\beven (?:when|if)\b|"
                            r"\bno matter\b|\bregardless\b|\bwhatever\b|\bfixed\b|\balways\b|\bstill apply\b|\bmust\b")
    return None if polarity is None else NoOverride(polarity == "restrict")


def _exceptions(s: str) -> ExceptionsToHuman | None:
    if _any(s, r"damage|defect|broken|faulty|exception|outside the (?:return )?window|post-window|\blate (?:return|claim)") \
            and _any(s, r"escalat|\bhuman\b|supervisor|\breview\b") and not _relaxes(s, ESCALATE):
        return ExceptionsToHuman(True)
    return None


_TELL = r"\b(?:tell|inform|assure|confirm|say|report|let (?:the |a )?(?:customer|user|them|people) know)\w*\b"
_COMPLETED = (r"\b(?:completed|complete|done|gone through|went through|successful(?:ly)?|processed|taken care of|"
              r"fulfilled|handled|granted)\b")
_WHATEVER = r"\balways\b|\bevery(?: time|thing)?\b|\bwhatever\b|\bregardless\b|\bno matter\b|\beven (?:if|when)\b|\bin any case\b"
_ONLY_IF = r"\bonly\b|\bunless\b|\bif\b|\bwhen\b|\bonce\b|\bafter\b|\bexcept\b|\bprovided\b"


def _report_done(s: str) -> ReportDone | None:
    """How a write's outcome is reported. "Always tell the customer their request has been completed"
    is read as: every write is reported as done, whatever its tool replied (ReportDone(True)). A
    conditional or negated form ("only say it is done once the tool confirms it", "never say a
    request went through unless ...") states the honest default (ReportDone(False))."""
    if not (_any(s, _TELL) and _any(s, _COMPLETED)
            and _any(s, r"\brequests?\b|\bit\b|\brefunds?\b|\bchanges?\b|\borders?\b|\bactions?\b|\beverything\b")):
        return None
    rest = re.sub(_WHATEVER, " ", s)  # "no matter what", "even if" insist; they neither negate nor condition
    if _any(rest, NEG) or _any(rest, _ONLY_IF):
        return ReportDone(False)
    return ReportDone(True) if _any(s, _WHATEVER) else None


def _conduct(s: str) -> list[Rule]:
    out: list[Rule] = []
    if _any(s, r"never guess|don'?t guess|do not guess|no guess|look (?:things |it |them )?up|use the tools|"
               r"verify (?:facts )?with (?:the )?tools|check facts with|never (?:make up|invent)"):
        out.append(LookupFirst(True))
    if _any(s, r"\banswer briefly|\bbe brief|\bbrief(?:ly)?\b|\bconcise|\bshort answers?"):
        out.append(Brief(True))
    return out


def read_sentence(s: str, nxt: str = "") -> list[Rule]:
    """The typed rules one sentence states (`nxt`, the next sentence, may continue a limit)."""
    low, nxt = s.lower(), nxt.lower()
    found: list[Rule] = []
    limit = _refund_limit(low, nxt)
    if limit is not None:
        found.append(limit)
    elif not _any(low, r"\bany amount\b"):
        exc = _exceptions(low)
        found += [exc] if exc else []
    found += _window(low)
    found += _processing(low)
    for reader in (_notes, _personal, _email, _override, _report_done):
        rule = reader(low)
        if rule is not None:
            found.append(rule)
    found += _conduct(low)
    return found


def _flatten(rules: list[Rule]) -> dict:
    """Typed rules -> Policy switches; a later sentence on the same topic wins."""
    f: dict = {}
    for r in rules:
        if isinstance(r, RefundLimit):
            enforced = r.amount is not None and r.action_above is not None
            f["limit"] = r.amount if enforced else None
            f["limit_currency"] = r.currency
            f["convert_first"] = r.convert_first and enforced
            f["escalate_over_limit"] = enforced and r.action_above == "escalate"
        elif isinstance(r, ReturnWindow):
            f["window_relaxed"] = not r.required
            f["window"] = r.required
            f["window_days"] = r.days if r.required else None
        elif isinstance(r, DeliveredOnly):
            f["delivered"] = r.required
        elif isinstance(r, ProcessingOnly):
            f[f"{r.action}_processing_only"] = r.required
            f[f"{r.action}_forbidden"] = False
        elif isinstance(r, ChangeForbidden):
            f[f"{r.action}_forbidden"] = True
        elif isinstance(r, NotesConfidential):
            f["notes_private"], f["notes_supervisors_only"] = r.confidential, r.confidential and r.supervisors_only
        elif isinstance(r, PersonalData):
            f["no_pii"] = r.private
        elif isinstance(r, EmailRule):
            f["email_explicit"], f["email_forbidden"] = r.one_named_customer, not r.allowed
        elif isinstance(r, NoOverride):
            f["rules_fixed"] = r.fixed
        elif isinstance(r, ExceptionsToHuman):
            f["escalate_exceptions"] = r.required
        elif isinstance(r, LookupFirst):
            f["lookup_first"] = r.required
        elif isinstance(r, Brief):
            f["brief"] = r.required
        elif isinstance(r, ReportDone):
            f["report_done"] = r.always
    f["eligibility"] = bool(f.pop("window", False) or f.pop("delivered", False))
    f.pop("delivered", None)
    return f


@lru_cache(maxsize=256)
def parse_policy(system_text: str) -> Policy:
    sents = _sentences(system_text or "")
    rules: list[Rule] = []
    unrecognised: list[str] = []
    unapplied: list[tuple[str, str]] = []
    after_limit = False
    for i, s in enumerate(sents):
        found = read_sentence(s, sents[i + 1] if i + 1 < len(sents) else "")
        low = s.lower()
        if not found and after_limit and _continues_limit(low):
            found = [True]  # the escalation half of the limit just read
        after_limit = any(isinstance(r, RefundLimit) for r in found if r is not True)
        rules += [r for r in found if r is not True]
        if not found and is_policy_line(low):
            unrecognised.append(s)
        unapplied += [(s, why) for why in _not_applied(s, [r for r in found if r is not True], system_text or "")]
    return Policy(**_flatten(rules), rules=tuple(rules), unrecognised=tuple(unrecognised), unapplied=tuple(unapplied))


# What each reading needs to find in its sentence: a reading without it is a different rule than the words.
_ANCHORS = {RefundLimit: r"\d|\bany (?:amount|size)\b|\bno (?:upper |refund )?(?:limit|cap|ceiling|maximum)\b|\bunlimited\b|"
                         r"\blimit|\bescalat|\bhuman",
            ReturnWindow: r"window|\bdays?\b|\bweeks?\b|\bfortnight|\bmonths?\b|eligib|\blate\b|after delivery",
            ProcessingOnly: r"\bprocessing\b|\bship|\bdispatch|\bdeliver|\bstatus\b|\bstage\b|\bwarehouse\b",
            NotesConfidential: r"\bnotes?\b", EmailRule: r"e-?mail|newsletter",
            ChangeForbidden: r"\bcancel|\baddress|\bship", ReportDone: _COMPLETED}


def _not_applied(sentence: str, found: list, system_text: str) -> list[str]:
    low, out = sentence.lower(), []
    for rule in found:
        anchor = _ANCHORS.get(type(rule))
        if anchor and not _any(low, anchor):
            out.append(f"read as {type(rule).__name__}, which its words may not say")
        if isinstance(rule, ReturnWindow) and rule.required and rule.days and not re.search(
                r"\btoday(?:'s date)?\s+(?:is|=|:)\s*20\d\d-\d\d-\d\d", system_text, re.I):
            out.append(f"the {rule.days}-day window length is applied only where the eligibility tool's own window "
                       f"settles it (the prompt gives no today's date); elsewhere no refund is made")
        if isinstance(rule, ReturnWindow) and rule.days is None:
            months = [text for days, text in _durations(sentence) if days is None]
            if months:
                out.append(f"a window of {months[0]!r} is not read as a number of days (months differ in length): "
                           "write it in days")
    # several lengths of time, or a limit stated twice in one line: only the first is read
    if any(isinstance(r, ReturnWindow) for r in found) and len({d for d, _ in _durations(low)}) > 1:
        out.append("several window lengths: only the first is read")
    return out


def is_policy_line(low: str) -> bool:
    """Normative and not about style: "Never discuss prices" is, "Answer briefly" and "You are ..." are not."""
    return _any(low, NORMATIVE) and not _any(low, STYLE) and not _any(low, r"^you are\b")


_reported: set[str] = set()


def report_unrecognised(system_text: str, where: str = "prompt") -> list[str]:
    """Log, once per prompt, the policy lines the offline model does not understand."""
    policy = parse_policy(system_text or "")
    lines = list(policy.unrecognised)
    # --workers children load the version again; the parent has already said it once.
    if (lines or policy.unapplied) and system_text not in _reported and multiprocessing.parent_process() is None:
        _reported.add(system_text)
        if lines:
            shown = "; ".join(repr(x[:80]) for x in lines)
            logger.warning(f"{where}: the offline model does not understand {len(lines)} policy "
                           f"line{'s' if len(lines) > 1 else ''} and will not follow them: {shown}")
        for line, why in policy.unapplied:
            logger.warning(f"{where}: the offline model does not fully apply the policy line {line[:80]!r}: {why}")
    return lines + [line for line, _ in policy.unapplied if line not in lines]
