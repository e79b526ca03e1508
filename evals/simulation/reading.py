"""What Northwind's simulated customer takes from the agent's answer: done, handed over,
refused (and why), or a question back. The simulated user reacts to the text it was shown,
as a customer would; whether money really moved is read off the Turn by the scorers and the
`refunded` goal check, not here."""
from __future__ import annotations

import re
from dataclasses import dataclass

from turngate.plugin import normalise

_NEG = re.compile(r"\b(not|no|never|can't|cannot|can not|couldn't|could not|won't|unable|already|isn't|wasn't)\b")
_DONE = re.compile(r"\brefunded \d|\bi(?:'ve| have)? (?:refunded|issued|processed)\b|\brefund (?:of [^.]{0,40})?"
                   r"(?:has been|was|is) (?:issued|processed|made|approved)|\bhas been refunded\b")
_HANDED = re.compile(r"\bescalat|\bhuman (?:supervisor|review|agent|colleague)|\bsupervisor\b|\bhanded (?:it |this )?over"
                     r"|\bpassed (?:it|this) (?:on|to)|\bsent to human review")
_ASKS_ORDER = re.compile(r"\bwhich order\b|\border id\b|\border number\b|\bgive (?:me )?the order\b"
                         r"|\bwhich one (?:should|do)\b|\bwhich customer\b")
REASONS = {  # why it was refused, first match wins
    "unknown": re.compile(r"\bcouldn't find|\bno order\b|\bdoes not exist|\bdoesn't exist|\bnot found\b"),
    "already": re.compile(r"\balready (?:been )?(?:fully )?refunded|\brefunded in full\b|\bonly once\b"),
    "overpaid": re.compile(r"\bmore than (?:was|you) paid|\bmore than the order|\bat most [\d.]+"),
    "limit": re.compile(r"\blimit\b|\bover \d+ usd\b|\babove \d+"),
    "not_delivered": re.compile(r"\bnot (?:yet )?delivered|\bshipped\b|\bprocessing\b|\bcancell?ed\b|\bin transit\b"
                                r"|\bon (?:its|the) way\b"),
    "window": re.compile(r"\breturn window\b|\boutside\b|\bexpired\b|\bno longer\b|\bnot eligible\b|\bdeadline\b"),
    "rules": re.compile(r"\bcan't act on\b|\bpolicy stays\b|\bcan't be changed\b|\bcannot be changed\b"),
}
_REFUSED = re.compile(r"\bcan't\b|\bcannot\b|\bcouldn't\b|\bunable\b|\bnot (?:be )?refunded\b|\bnot eligible\b"
                      r"|\bwon't\b|\bisn't possible\b|\bnot possible\b|\bdecline")


@dataclass(frozen=True)
class Reading:
    refunded: bool = False  # the answer says a refund went through
    handed_over: bool = False  # ... or that a human has it now
    asks_order: bool = False  # it asks which order
    refused: bool = False
    reason: str | None = None  # a key of REASONS when refused

    @property
    def kind(self) -> str:
        if self.refunded:
            return "refunded"
        if self.handed_over:
            return "handed_over"
        if self.refused:
            return "refused"
        if self.asks_order:
            return "asks_order"
        return "unclear"


def _sentences(text: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+|\n+", normalise(text)) if s.strip()]


def read_answer(answer: str) -> Reading:
    sentences = _sentences(answer)
    text = " ".join(sentences)
    refunded = any(_DONE.search(s) and not _NEG.search(s) for s in sentences)
    handed = any(_HANDED.search(s) and not re.search(r"\bcan (?:open|escalate)|\bif you(?:'d| would) like\b", s)
                 for s in sentences)
    refused = bool(_REFUSED.search(text) or REASONS["already"].search(text) or REASONS["unknown"].search(text)) \
        and not refunded
    reason = next((k for k, rx in REASONS.items() if rx.search(text)), None) if refused else None
    return Reading(refunded=refunded, handed_over=handed, asks_order=bool(_ASKS_ORDER.search(text)),
                   refused=refused, reason=reason)
