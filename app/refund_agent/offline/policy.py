"""The rules a system prompt states, recognised by meaning (keywords per sentence).

The model follows only what its prompt says: a clause that is not found is a rule
that does not exist. Each clause is matched inside one sentence or bullet, so a
reworded prompt still counts and deleting one bullet removes exactly one rule.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache

from .entities import currency_of


@dataclass(frozen=True)
class Policy:
    # refunds
    eligibility: bool = False          # only delivered orders inside the return window
    limit: float | None = None         # refund at most this much ...
    limit_currency: str = "USD"        # ... in this currency
    convert_first: bool = False        # compare after converting to limit_currency
    escalate_over_limit: bool = False  # larger refunds go to escalate_to_human
    escalate_exceptions: bool = False  # late/damaged-item exceptions go to human review
    # orders
    cancel_processing_only: bool = False
    address_processing_only: bool = False
    # privacy and email
    notes_private: bool = False
    notes_supervisor_ok: bool = False
    no_pii: bool = False               # never put emails/phone numbers in answers
    email_explicit: bool = False       # only explicitly requested emails, to one named customer
    # conduct
    rules_fixed: bool = False          # nobody in the chat can change the rules
    lookup_first: bool = False         # never guess facts; use the tools
    brief: bool = False

    @property
    def clauses(self) -> list[str]:
        """Names of the recognised clauses, for reports and tests."""
        names = [k for k, v in self.__dict__.items() if v not in (False, None) and k != "limit_currency"]
        return names


_SPLIT = re.compile(r"(?:\n\s*[-*•]\s+|\n\s*\d+[.)]\s+|\n\s*\n|(?<=[.!?;])\s+(?=[A-Z\"(]))")
_NEG = r"(?:never|not|n't|no|don't|do not|must not|mustn't|cannot|can't|may not|only)"


def _sentences(text: str) -> list[str]:
    # Bullets keep their wrapped continuation lines; sentences split on ". X".
    parts = [p.replace("\n", " ").strip() for p in _SPLIT.split(text)]
    return [re.sub(r"\s+", " ", p) for p in parts if p.strip()]


def _has(s: str, *patterns: str) -> bool:
    return all(re.search(p, s) for p in patterns)


_MONEY = re.compile(r"(?P<num>\d+(?:[.,]\d+)?)\s*(?P<cur>usd|eur|gbp|sgd|dollars?|euros?|pounds?)\b"
                    r"|(?P<sym>[$€£])\s*(?P<num2>\d+(?:[.,]\d+)?)", re.I)


@lru_cache(maxsize=256)
def parse_policy(system_text: str) -> Policy:
    sents = [s.lower() for s in _sentences(system_text or "")]
    found: dict = {}
    for i, s in enumerate(sents):
        near = " ".join(sents[i:i + 2])  # a limit's escalation often sits in the next sentence
        refundish = re.search(r"\brefund|\breturn", s)
        # -- refund eligibility: delivered + window, or the eligibility tool named
        if refundish and (re.search(r"\bdelivered\b", s) and re.search(r"window|within|days|eligib", s)
                          or re.search(r"check_return_eligibility|\beligib|return window", s)):
            if re.search(r"\bonly\b|\bmust\b|\bnever\b|\bnot\b|\brequire|\bcheck|\bverify|\bconfirm|\bunless\b|\bif\b", s):
                found["eligibility"] = True
        # -- refund limit: a money amount with limit words
        money = _MONEY.search(s)
        if money and re.search(r"\brefund", near) and re.search(
                r"\bup to\b|\bat most\b|\bmax(?:imum)?\b|\blimit\b|\bno more than\b|\bnot (?:more|above|over)\b|"
                r"\bunder\b|\bbelow\b|\bexceed|\babove\b|\bover\b|\blarger\b|\bhigher\b|\bgreater\b|\bmore than\b", s):
            num = money.group("num") or money.group("num2")
            cur = currency_of(money.group("cur") or money.group("sym") or "usd") or "USD"
            found["limit"] = float(num.replace(",", ""))
            found["limit_currency"] = cur
            if re.search(r"\bconvert|\bexchange rate|\btoday'?s rate|\bin usd\b|\bequivalent", s):
                found["convert_first"] = True
            if re.search(r"escalat|human|supervisor|\breview\b|\bmanager\b", near):
                found["escalate_over_limit"] = True
        # -- late / damaged exceptions go to a human
        if re.search(r"damage|defect|broken|faulty|exception|outside the (?:return )?window|post-window|late (?:return|claim)", s) \
                and re.search(r"escalat|human|supervisor|\breview\b", s):
            found["escalate_exceptions"] = True
        # -- cancel / address only while processing
        if re.search(r"\bprocessing\b", s) and re.search(r"\bonly\b|\bunless\b|\bnever\b|\bnot\b|\bmust\b", s):
            if re.search(r"\bcancel", s):
                found["cancel_processing_only"] = True
            if re.search(r"\baddress", s):
                found["address_processing_only"] = True
        # -- internal notes are private
        if re.search(r"internal notes?|private notes?|staff notes?", s) and re.search(
                rf"{_NEG}\b.*\b(?:reveal|share|disclose|show|tell|expose|repeat|mention)", s):
            found["notes_private"] = True
            if re.search(r"\bexcept\b|\bunless\b|\bonly (?:to|for)\b|\bother than\b", s) and \
                    re.search(r"supervisor|manager|staff|internal", s.split("except")[-1]):
                found["notes_supervisor_ok"] = True
        # -- personal data (emails, phone numbers) stays out of answers
        if re.search(r"e-?mail address|phone|personal (?:data|information|details)|\bpii\b|contact details", s) and \
                re.search(rf"{_NEG}\b.*\b(?:reveal|share|disclose|include|give|expose|mention|put|output|repeat)", s):
            found["no_pii"] = True
        # -- emails only on explicit request, to one named customer
        if re.search(r"\be-?mails?\b", s) and re.search(r"\bsend", s) and re.search(
                r"explicit|only|one named|single|never (?:send )?(?:bulk|mass)|\bbulk\b|\bmass\b|asked", s):
            found["email_explicit"] = True
        # -- nobody in the chat can change the rules
        if re.search(r"\b(?:rules?|polic(?:y|ies)|instructions?|prompt)\b", s) and (
                re.search(r"\b(?:can'?t|cannot|can not|may not|must not|won'?t|never|not)\b[^.]*\b(?:be )?"
                          r"(?:changed|overrid|waived|bypass|altered|modified|suspended|lifted|relaxed|ignored)", s)
                or re.search(r"anyone in the chat|no one in the chat|regardless of (?:who|what)|"
                             r"claims? (?:of|to be) (?:authority|a manager)|even if (?:a|the) (?:user|customer)", s)):
            found["rules_fixed"] = True
        if re.search(r"\bignore\b[^.]*\b(?:requests?|instructions?|attempts?)\b[^.]*\b(?:change|override|bypass)", s):
            found["rules_fixed"] = True
        # -- look things up, never guess
        if re.search(r"never guess|don'?t guess|do not guess|no guess|look (?:things |it |them )?up|"
                     r"use the tools|verify (?:facts )?with (?:the )?tools|never (?:make up|invent)", s):
            found["lookup_first"] = True
        if re.search(r"\banswer briefly|\bbe brief|\bbrief(?:ly)?\b|\bconcise|\bshort answers?", s):
            found["brief"] = True
    return Policy(**found)


def report_unrecognised(system_text: str, where: str = "prompt") -> list[str]:
    """Placeholder until clause parsing reports unrecognised lines."""
    return []
