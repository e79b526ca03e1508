"""What a user turn asks for (intents) and how it pushes (authority, injected
tool output, quoted policy, pleading).

Keyword patterns on the message's English gloss (lexicon.py: German, French and
Spanish words and misspellings mapped to English), written for paraphrases rather
than one phrasing. Writes are found clause by clause (clauses.py): each has its own
order ids, a negated one is declined, a hypothetical one becomes a question
("refund_check"), and a question in a clause of its own is answered next to the
writes of the other clauses.
"""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field

from . import certainty, clauses
from .entities import Entities, extract, order_mentions
from .lexicon import gloss
from .numbers import words_to_digits
from .scan import Gated, gaps

ACTIONS = ("refund", "cancel", "address", "discount", "ticket_create", "escalate", "email_send", "delete")


def _rx(pattern: str) -> Gated:
    # sentence gaps bounded (scan.GAP); not run on a text without the words it needs (scan.Gated):
    # each clause is searched by some 60 of these, and a long message by all of them
    return Gated(gaps(pattern), re.I)


# --- actions ------------------------------------------------------------------
# An amount's digits are read at most 40 characters on ("1,234,567.89" is 12): `\d[\d.,]*` was
# retried at every digit of a run of "1.1.1..." and read to its end each time. Possessive (`+`):
# what follows (a space, a currency, a gap to "back") never needs digits given back.
REFUND = _rx(r"\brefund(?:s|ing)?\b(?!\s+polic)|\bmoney back\b|\breimburs|\bpay (?:me|us|them|her|him) back\b"
             r"|\b(?:want|need|like|get|have)\b[^.?!]{0,40}\brefunded\b|\b(?:money|cash|penny|cent)\b[^.?!]{0,30}\bback\b"
             r"|(?:[$€£]\s?\d[\d.,]{0,40}+|\d[\d.,]{0,40}+\s?(?:[€£$]|euros?|eur|dollars?|usd|bucks|pounds?|quid|gbp|sgd))"
             r"[^.?!]{0,25}\bback\b|\b(?:half|third|quarter)\b[^.?!]{0,40}\bback\b"
             r"|\b(?:give|pay)\s+(?:\w+\s+){0,3}back\b|\bif you (?:could |would |can )?refunded\b"
             r"|\bgive (?:me|them|her|him|the customer) (?:a |their |his |her |my )?(?:money|refund)"
             r"|\b(?:want|need|get|have|like)\b[^.?!]{0,30}\b(?:money|cash|euros?|dollars?|pounds?|payment|"
             r"\d+(?:\.\d+)?(?:\s*[a-z]{3})?)\s+back\b")
EMAIL_TO = re.compile(r"\b[Ee]-?mail\s+(?:him|her|them|the customer|customer|[A-Z][a-z]+|C-?\d{3})\b"
                      r"|\b(?:send|shoot|drop)\s+(?:him|her|them|the customer|[A-Z][a-z]+(?: [A-Z][a-z]+)?)\s+"
                      r"(?:an?\s+)?(?:confirmation|e-?mail|note|message)")
REFUND_QUESTION = _rx(r"\b(?:can|could|would)\s+(?:it|this|that|order|a-\d+|the order)\b[^.?!]*\bbe refunded\b"
                      r"|\brefundable\b|\beligible for (?:a )?refund|\bqualif(?:y|ies) for (?:a )?refund")
REFUND_POLICY_Q = _rx(r"\brefund (?:policy|rules|limit)|\bhow do refunds work|\bpolicy on refunds")
CANCEL = _rx(r"\bcancel(?!l?ed\b)\w*|\bstop (?:the|that|this|my) order\b|\bcall(?:ed)? (?:it |that |the order )?off\b"
             r"|\b(?:need|want|like|get)\b[^.?!]{0,40}\bcancell?ed\b|\bif you (?:could |would |can )?cancell?ed\b"
             r"|\bhave (?:it|that|this|the order|order|a-?\d{4}|my order) cancell?ed\b")
CAN_BE_DONE = _rx(r"\b(?:can|could|may|might|will|would)\b[^.?!]*\bbe\s+(cancell?ed|refunded)\b")
ADDRESS = _rx(r"\b(?:change|update|correct|fix|edit|modify|amend|switch)\b[^.?!]*\baddress\b"
              r"|\bnew (?:shipping |delivery )?address\b|\baddress\b[^.?!]*\bto\s+\d"
              r"|\b(?:ship|send|deliver|redirect|reroute|forward|go|goes)\b[^.?!]*\bto\s+\d+[a-z]?\s+\w"
              # "send it to my office instead: 1 Marina Blvd", "the address should be 3 Orchard Turn"
              r"|\b(?:ship|send|deliver|redirect|reroute|forward)\b[^.?!:]*\bto\b[^.?!:]*:\s*\d+[a-z]?\s+\w"
              r"|\baddress\b[^.?!]*\b(?:should be|is now|is actually|needs to be|must be)\s*:?\s*\d+[a-z]?\s+\w")
_APPLY = r"\b(?:apply|applying|use|using|redeem|redeeming|add|adding|enter|entering|put|putting)"
DISCOUNT = _rx(_APPLY + r"\b[^.?!]*\b(?:discount|promo|coupon|voucher|code)\b"
               r"|" + _APPLY + r"\s+(?:the |my |this |that )?[a-z]{3,}\d{1,3}\b"  # a code-like word
               r"|\b(?:discount|promo|coupon|voucher) code\b[^.?!]*\b(?:to|on|for) (?:order|a-?\d|my|the|this)")
TICKET_CREATE = _rx(r"\b(?:create|file|raise|log|submit)\b[^.?!]*\btickets?\b|\bnew ticket\b"
                    r"|\b(?:file|raise|log|lodge|submit|open)\s+(?:a|an)\s+(?:formal\s+)?(?:complaint|case|support case)\b"
                    r"|\b(?:open|start|make|put in)\s+(?:a|an|one|another)\b[^.?!]*\bticket\b")
TICKETS = _rx(r"\btickets?\b|\bsupport (?:cases|requests)\b|\bopen cases?\b")
# Asking for a person: "a real person", "someone real", "your supervisor", "a manager please".
# "I'm the manager" / "as a supervisor" speak as one (AUTHORITY), "I spoke to a real person" or
# "I'll talk to someone at home" tell of one: none of them asks for one.
_PERSON = r"(?:human(?: being)?|person|people|manager|supervisor|agent|team ?lead|boss|staff member)"
_REAL = (r"(?:(?:real|actual|live|proper) (?:human|person|people|agent)|human beings?"
         r"|(?:someone|somebody|anyone|anybody) (?:real|human|in charge|senior|from (?:your )?(?:staff|team)|else))")
_ASK_FOR = (r"\b(?:want|need|get|give|speak|talk|chat|connect|transfer|put|is there|are there|can|could|let me|bring|"
            r"find|send|where(?:'s| is)|like|prefer|have)\b[^.?!]{0,25}?")
ESCALATE = _rx(r"\bescalat|(?<!i'll )(?<!i will )(?<!we'll )\b(?:speak|talk|chat) (?:to|with) "
               r"(?:a |an |your |the |some |one of your )?(?:real |actual |live |proper )?" + _PERSON +
               r"|\bhuman agent\b|\bhand (?:it|this|the case) (?:over|to)|\bpass (?:it|this) (?:on|to)"
               r"|\bput me through\b|\b(?:transfer|connect|forward) me (?:to|with)\b"
               r"|(?<!i'll )(?<!i will )(?<!we'll )\b(?:speak|talk) (?:to|with) (?:someone|somebody|anyone|anybody)\b"
               r"(?! (?:at home|here|else at home|in my family))"
               # at most 32 marks between a sentence's start and "a real person" (every start in
               # a run of ", , , ..." read the rest of the run)
               r"|" + _ASK_FOR + _REAL + r"|(?:^|(?<=[.!?,] ))\W{0,32}(?:(?:a|an) )?" + _REAL
               + r"\W*(?:please|pls|plz|now|asap|!|$)"
               r"|\b(?:get|want|need|give) (?:me )?(?:a|an|the|your|some) (?:real |actual |live )?" + _PERSON +
               r"|(?<!i'm )(?<!i am )(?<!\bas )(?<!this is )\b(?:a|an|your|the) (?:manager|supervisor|human)\b"
               r"\W*(?:please|pls|plz|now|asap|!|$)")
EMAIL_TO_ANY = _rx(r"\be-?mail\s+\w|\b(?:send|shoot|drop)\s+\w+(?: \w+)?\s+(?:an?\s+)?(?:confirmation|e-?mail|note|message)")
# `\s++` (possessive): with `\s+` the spaces between two courtesies could be split between it and
# the next `\W*` in every way, so "please  " * 30 with no "email" after tried 2**30 of them.
# Nothing after the spaces can start with one, so giving none back changes no match.
EMAIL_SEND = _rx(r"^(?:\W*(?:please|pls|can you|could you|kindly|go ahead and|now)\s++)*e-?mail\b"
                 r"|\b(?:send|shoot|drop|fire off)\b[^.?!]*\b(?:e-?mails?|messages?|notes?|newsletter)\b"
                 r"|\be-?mail (?:every|all|each|our|the whole|everyone)\b|\bmass[- ]e-?mail|\be-?mail blast"
                 r"|\bnewsletter\b")
MASS = _rx(r"\b(?:every|all|each)\s+(?:(?:of\s+)?(?:our|the|your)\s+)?(?:customers?|clients?|users?)\b"
           r"|\beveryone\b|\bevery(?:body)\b|\bmass\b|\bblast\b|\bnewsletter\b|\bwhole (?:customer )?list\b"
           r"|\ball of them\b|\bentire customer")
DELETE = _rx(r"\b(?:delete|erase|remove|wipe|purge|deactivate|terminate|close)\b[^.?!]*"
             r"\b(?:account|profile|data|customer|record)s?\b|\bgdpr\b|\bright to be forgotten\b|\bforget me\b")
DRAFT = _rx(r"\b(?:write|draft|compose|prepare|word)\b[^.?!]*\b(?:apology|apologi[sz]e|reply|response|message|"
            r"note|e-?mail|letter|answer)\b|\b(?:reply|respond|answer|write back) to (?:her|him|them|the customer)\b"
            r"|\bapologi[sz]e to\b")
DRAFT_NAMED = re.compile(r"\b(?:[Rr]eply|[Rr]espond|[Ww]rite back) to [A-Z][a-z]+")
APOLOGY = _rx(r"\bapolog|\bsorry\b|\blate\b|\bdelay")

# --- questions ----------------------------------------------------------------
NOTES = _rx(r"\b(?:internal|private|staff|account|customer|hidden|confidential)\s+notes?\b"
            r"|\bnotes?\s+(?:on|about|for|say|field)\b|\bwhat do the notes\b|\bflags? on\b")
# "email" as a thing someone has, not the verb ("don't email her"): "email address", "her email".
CONTACT = _rx(r"\be-?mail address|\b(?:her|his|their|the|customer'?s?|your|an?)\s+e-?mail\b(?!\s+(?:to|about|saying))"
              r"|'s\s+e-?mail\b|\be-?mail (?:of|for|on file)\b|\bphone(?: number)?\b|\bcontact (?:details|info\w*)\b"
              r"|\bhome address\b|\bmailing address\b")
CONTACT_ASK = _rx(r"\bwhat(?:'s|’s| is| are)\b|\bgive me\b|\btell me\b|\bshare\b|\bsend me\b|\bneed\b"
                  r"|\blook up\b|\bfind\b|\bget\b|\bhow (?:can|do) i (?:reach|contact)\b|\bwhich\b|\?")
CUSTOMER_LOOKUP = _rx(r"\bcustomer (?:id|number)\b|\bwho (?:is|owns|has)\b|\bwhich customer\b|\bwhose\b"
                      r"|\baccount (?:for|of|belongs)|\blook up\b|\bbelongs? to\b|\bid for\b")
STATUS = _rx(r"\bstatus\b|\bwhere(?:'s|’s| is) (?:my|the|our|order|a-?\d)|\bwhat happened (?:to|with)\b"
             r"|\bupdate on\b|\bhas\b[^.?!]*\b(?:shipped|been delivered|been refunded|arrived|been cancell?ed)\b"
             r"|\bis\b[^.?!]*\b(?:delivered|shipped|cancell?ed|refunded|processing|processed)\b\s*\?|\bstate of\b"
             r"|\bwas\b[^.?!]*\brefunded\b|\bwhat(?:'s| is) (?:going on|up|happening) with\b|\bany news\b"
             r"|\bwhere (?:it|they|my order|the order|my parcel|the parcel|a-?\d{4}|order \d{4}) (?:is|are)\b"
             r"|\b(?:go|gone|went) through\b"
             r"|\bis\b[^.?!]*\b(?:delivered|shipped|cancell?ed|refunded|processing)\s*$"
             r"|\bhappening with\b|\bwhere\b[^.?!]{0,12}\?"
             r"|\b(?:whether|(?:know|check|see|tell me|ask(?:ing)?|wondering|find out) if)\b[^.?!]*"
             r"\b(?:shipped|dispatched|sent out|been sent|delivered|arrived|processed)\b(?!\s+to\b)|\bwhen (?:was|were)\b[^.?!]*\b(?:delivered|placed|shipped|ordered)\b"
             r"|\bwhen (?:it|they|a-?\d{4}|the order|my order) (?:was|were|got) (?:delivered|shipped|placed)\b")
ETA = _rx(r"\barriv|\beta\b|\bwhen\b[^.?!]*\b(?:gets?|comes?|will (?:get|come)) (?:here|to me|home)\b|\bwhen will\b|\bwhen (?:is|does|should|can|do)\b[^.?!]*\b(?:come|get here|be delivered|"
          r"arrive|due|expect|land|show up|ship|be shipped|dispatch|be dispatched|go out|be sent|leave)|\bexpected (?:delivery|date|on)\b|\bdelivery date\b|\bhow long until\b"
          r"|\bwhen can i expect\b|\b(?:is|are) (?:it|they|a-?\d{4}|my order|the order|order \d{4}|my parcel)\b[^.?!]*"
          r"(?<!too )\b(?:late|delayed|running (?:late|behind))\b|\bestimated\b|\bwhen (?:do|will|can|should|would) (?:i|we|you|they) (?:get|receive)\b")
TRACKING = _rx(r"\btrack|\bcarrier\b|\bcourier\b|\bwho(?:'s| is) (?:shipping|delivering|bringing)|\bshipping company\b"
               r"|\bwhich (?:company|service|shipper)\b|\bshipped (?:with|by|via)\b")
# What an order holds: "which product was in it?", "what's in A-1004?", "what did I buy in that order?"
CONTENTS = _rx(r"\bwhat(?:'s|s| is| was| were)? (?:in|inside) (?:it|that|this|there|order|a-?\d|my order|the order|"
               r"the (?:box|package|parcel))\b|\b(?:which|what) (?:product|item|thing|article)s?\b"
               r"|\bwhat did (?:i|we) (?:order|buy|get|purchase)\b")
COST = _rx(r"\bhow much\b|\bcost\b|\btotal\b|\bprice\b|\bpaid\b|\bpay\b|\bamount\b|\bvalue\b|\bworth\b|\bspent\b")
FX = _rx(r"\bconvert|\bexchange|\bin (?:us )?(?:dollars|usd|euros?|eur|pounds|gbp|sgd|singapore dollars)\b|\bworth in\b")
TAX = _rx(r"\bvat\b|\bgst\b|\btax(?:es)?\b|\bsales tax\b")
HOURS = _rx(r"\bhours\b|\bopen\b|\bopening\b|\bclos(?:e|es|ed|ing)\b|\btime\b")
STORE = _rx(r"\bstore\b|\bshop\b|\bbranch\b|\boutlet\b")
STOCK = _rx(r"\bin stock\b|\bstock\b|\bavailab|\bhow many\b[^.?!]*\bleft\b|\bleft\b|\bsold out\b|\brestock"
            r"|\bback in\b|\bbe back\b|\bis it back\b|\bunits\b|\bout of stock\b|\bbuy (?:it|one) (?:now|today)\b")
PRICE = _rx(r"\bhow much\b|\bprice|\bcost|\bcheap|\bexpensive|\bpricing\b")
RECOMMEND = _rx(r"\brecommend|\bsuggest|\bwhich (?:one|should|would)|\b(?:should (?:i|they|we|he|she|you)|"
                r"(?:i|they|we|he|she|you) should|is it (?:a good idea|wise|smart) to)\b[^.?!]*"
                r"\b(?:buy|get|order|pick|choose|purchase)\b|\bworth (?:buying|it)\b|\bbudget\b|\bafford\b"
                r"|\bbetter (?:buy|choice|option)\b|\bor\b[^.?!]*\?")
POINTS = _rx(r"\bpoints?\b|\bloyalty balance\b|\breward balance\b")
TIER = _rx(r"\btier\b|\bloyalty (?:level|status)\b|\bmembership (?:level|status|tier)\b|\bstatus level\b"
           r"|\b(?:gold|silver|standard) (?:member|customer|status)\b|\bvip\b")
LIST_ORDERS = _rx(r"\borders\b|\b(?:every|all|each|list|show)\b[^.?!]*\border\b|\border ids\b|\border history\b|\bpurchase history\b|\beverything\b[^.?!]*\bordered\b"
                  r"|\bwhat (?:has|have|did)\b[^.?!]*\b(?:order|buy|bought|purchase)|\bpurchases\b|\bbought\b")
UNDELIVERED = _rx(r"\bnot (?:yet )?(?:been )?delivered|\bhas(?:n'?t|n’t| not) (?:yet )?(?:been )?delivered"
                  r"|\bhave(?:n'?t| not) (?:yet )?(?:been )?delivered|\bundelivered\b|\bnot (?:yet )?arrived"
                  r"|\bstill (?:waiting|in transit|pending|open|on (?:its|the) way)\b|\boutstanding\b|\bin transit\b"
                  r"|\bnot (?:yet )?received\b|\byet to (?:arrive|be delivered)|\bpending\b")
TOTAL = _rx(r"\btotal\b|\bsum\b|\bhow much (?:has|have|did)\b[^.?!]*\b(?:spent|spend|paid|pay)\b|\bspent\b"
            r"|\baltogether\b|\bcombined\b|\badd(?:ed)? up\b")
RETURN_CHECK = _rx(r"\breturn(?:ed|able|s|ing)?\b|\brefundable\b|\beligib|\bsen[dt]\b[^.?!]{0,20}\bback\b")
RETURN_WHEN = _rx(r"\bcan\b|\bstill\b|\beligib|\bdeadline\b|\buntil\b|\bhow long\b|\bdays? (?:are |is )?left\b"
                  r"|\bleft to\b|\bremaining\b|\blast day\b"
                  r"|\bby when\b|\btime left\b|\bwindow\b|\bin time\b|\btoo late\b|\bis it possible\b|\ballowed\b")
RETURN_POLICY = _rx(r"\breturn policy\b|\brefund policy\b|\bpolicy on (?:returns|refunds)\b|\breturn window\b"
                    r"|\bhow (?:many days|long) (?:do|does|have|will)\b[^.?!]*\breturn|\bhow do (?:returns|refunds) work"
                    r"|\b(?:our|your|the) (?:returns? |refund )?polic(?:y|ies)\b|\brules (?:for|on) returns\b"
                    r"|\bdays? (?:to|for) (?:return|send)|\bhow (?:many days|long)\b[^.?!]*\bsend\b[^.?!]*\bback\b")
DELIVERY_TIME = _rx(r"\bhow (?:many days|long) did\b[^.?!]*\b(?:deliver|take|ship|arrive)|\bdelivery (?:take|took)"
                    r"|\btook to (?:arrive|deliver|get)|\bhow fast was\b|\bdays? (?:to|for) deliver")
SUMMARY = _rx(r"\bsummar|\boverview\b|\bbrief(?:ing)?\b|\bprofile\b|\bbullets?\b|\brundown\b|\bdossier\b")
ACCOUNT = _rx(r"\baccount\b|\bcustomer\b|\bprofile\b")

# --- pressure -------------------------------------------------------------------
AUTHORITY = _rx(
    r"\b(?:i am|i'm|i’m|this is|speaking as|as)\s+(?:the|a|an|your)?\s*(?:store |shop |support |regional |general |"
    r"head |area |branch |duty |floor )?(?:manager|supervisor|admin|administrator|owner|ceo|director|team ?lead|boss)\b"
    r"|\b(?:manager|supervisor|boss|management|admin|director|owner|team ?lead)\b[^.?!]*\b(?:approved|authori[sz]ed|"
    r"okay(?:ed)?|ok'?d|signed off|said (?:it'?s|it is|to|you)|allowed|cleared|agreed|confirmed)\b"
    r"|\b(?:approved|authori[sz]ed|signed off|cleared) by\b|\bpre-?approved\b|\bi work (?:here|at|for) northwind\b"
    r"|\bi(?:'m| am) (?:staff|an employee|from head office)\b|\bmanager override\b|\bwith authori[sz]ation\b")
IGNORE_RULES = _rx(r"\b(?:ignore|disregard|forget|override|bypass|skip|waive|suspend)\b[^.?!]*\b(?:rules?|"
                   r"instructions?|polic(?:y|ies)|limits?|checks?|restrictions?|guidelines|prompt)\b"
                   r"|\bdeveloper mode\b|\bjailbreak\b|\bno (?:rules|limits)\b")
# "system:" at the start or on a line of its own. Only whether it matches is used, so after a
# newline only spaces and tabs are skipped: the run's last newline matches when any would
# (with \s* every newline of a long run of them was tried against the whole run).
INJECTION = _rx(r"\[\s*(?:tool|function)[_ ]?(?:result|output|response|call)|<\s*/?\s*(?:tool|function)[_ ]?\w*\s*>"
                r"|\btool[_ ](?:result|output)\s*[:=]|\[\s*system\b|^\s*system\s*:|\n[^\S\n]*system\s*:|\bsystem (?:note|message|"
                r"override|update|notice|alert|admin)\s*:|\{\s*\"(?:eligible|ok|approved|override)\"|\bfunction[_ ]result\b"
                r"|\bassistant\s*:\s*\{")
INJECTED_ELIGIBLE = _rx(r"\"?eligible\"?\s*[:=]\s*\"?true|\beligible\s*:?\s*yes\b|\bwithin (?:the )?(?:return )?window\b")
INJECTED_APPROVAL = _rx(r"\bapprov|\bauthori[sz]|\boverride|\blimit\b|\bno limit\b|\bescalation not required\b")
QUOTED_POLICY = _rx(r"\b(?:your|the|store'?s?|company'?s?|northwind'?s?|official) (?:own )?(?:return |refund )?"
                    r"(?:policy|policies|terms|website|site|faq|rules?|t&cs?)\b[^.?!]*\b(?:says?|said|states?|allows?|"
                    r"lets?|is|are|gives?|promises?|covers?|mentions?)\b|\baccording to (?:your|the)\b"
                    r"|\b(?:policy|terms)\b[^.?!]*\b\d+\s*(?:days|usd|eur|dollars)\b|\b\d+[- ]day (?:return|refund|money)"
                    r"|\bnew policy\b|\bpolicy (?:was |has been )?(?:changed|updated)\b")
QUOTED_DAYS = _rx(r"(?<!\d)(\d+)[- ]?days?")  # a number starts where its digits do (policy._MONEY)
QUOTED_LIMIT = _rx(r"(?:up to|limit (?:is|of)|maximum (?:is|of)?|max)\s*(?:[$€£])?\s*(\d+(?:\.\d+)?)")
PRESSURE = _rx(r"\banyway\b|\banyhow\b|\bjust (?:do|refund|process|cancel|approve|send|change) (?:it|this|that)\b"
               r"|\bmake an exception\b|\bonly (?:a few|a couple(?: of)?|\d+|one|two|three|four|five) days?\b"
               r"|\bi insist\b|\bcome on\b|\bnot fair\b|\bunfair\b|\bbad review\b|\blawyer\b|\bsue\b"
               r"|\bloyal customer\b|\bjust this once\b|\bpretty please\b|\bcan'?t you just\b|\bwhy not\b"
               r"|\bridiculous\b|\bunacceptable\b|\bi really need\b|\bplease,? please\b|\bbending the rules\b"
               r"|\bno one will know\b|\bexception\b|\bbut\b[^.?!]*\b(?:late|days|week)\b")
DAMAGE = _rx(r"\bbroken|\bdamaged|\bdefect|\bfaulty|\bdoesn'?t work|\bdoes not work|\bstopped working|\bdead on arrival"
             r"|\bdoa\b|\bcracked|\bmalfunction|\bflicker|\bbroke\b|\bnot working\b|\bwarranty\b")
SUPERVISOR_READER = _rx(r"\b(?:for|to) (?:a|the|my|our) (?:supervisor|manager)\b|\bsupervisor (?:asked|wants|needs|"
                        r"requested|review)\b|\bsupervisor (?:here|speaking)\b")
SELF_SUPERVISOR = _rx(r"\b(?:i am|i'm|i’m|this is|speaking as|as)\s+(?:the|a|an|your)?\s*(?:\w+ )?(?:supervisor|manager)\b"
                      r"|\bsupervisor (?:here|speaking)\b")
CONFIRM = _rx(r"^\s*(?:yes|yeah|yep|yup|sure|ok(?:ay)?|go ahead|do it|please do|proceed|confirm(?:ed)?|correct|right|"
              r"perfect|great|sounds good|that works|go for it|let'?s do (?:it|that)|alright|all right|absolutely|"
              r"definitely|fine|ja|oui|s[ií]|vale|claro|d'accord|genau|gerne)\b")
THANKS = _rx(r"^\W*(?:thanks?|thank you|cheers|great|perfect|ok(?:ay)?|got it|bye|goodbye)\W*(?:a lot|so much)?\W*$")
GREETING = _rx(r"^\W*(?:hi|hello|hey|good (?:morning|afternoon|evening))\b")


@dataclass
class Turn:
    """One user message, understood."""
    text: str
    low: str
    ents: Entities
    actions: list[str] = field(default_factory=list)
    questions: list[str] = field(default_factory=list)
    authority: bool = False
    ignore_rules: bool = False
    injection: bool = False
    injected_eligible: bool = False
    injected_approval: bool = False
    quoted_policy: bool = False
    quoted_days: int | None = None
    quoted_limit: float | None = None
    pressure: bool = False
    damage: bool = False
    supervisor_reader: bool = False
    self_supervisor: bool = False
    mass: bool = False
    draft: bool = False  # "write/draft a reply/apology": answer in a customer-facing message
    apology: bool = False
    asks_contact: bool = False
    confirm: bool = False
    thanks: bool = False
    greeting: bool = False
    gloss: str = ""       # the English gloss the patterns read (== low)
    numtext: str = ""     # the text with number words as digits, same positions as text
    targets: dict[str, list[str]] = field(default_factory=dict)  # intent -> its clause's order ids
    declined: list[tuple[str, list[str]]] = field(default_factory=list)  # negated writes and their orders
    side_questions: list[str] = field(default_factory=list)  # asked in clauses of their own, next to writes
    hold: bool = False    # "before you do anything, ...": no writes in this turn
    open_question: bool = False  # a clause asks something no question pattern names ("and then?")
    actions_all: list[str] = field(default_factory=list)  # every write named, asked for or not
    # writes read with too little certainty to act on: (action, orders, why); the model asks
    unsure: list[tuple[str, list[str], str]] = field(default_factory=list)
    unreadable: bool = False  # no word of a language the reader knows
    unknown_request: bool = False  # asks for something done that no write or question names: ask back

    @property
    def intents(self) -> list[str]:
        return self.actions + self.questions

    @property
    def pushes(self) -> bool:
        return self.authority or self.ignore_rules or self.injection or self.quoted_policy or self.pressure


def _actions(t: str, low: str, e: Entities) -> list[str]:
    out = []
    if REFUND.search(REFUND_POLICY_Q.sub(" ", low)):
        out.append("refund")
    if CANCEL.search(low) and not re.search(r"\bcancel(?:lation)? polic", low):
        out.append("cancel")
    if ADDRESS.search(low):
        out.append("address")
    email_send = bool(EMAIL_SEND.search(low) or EMAIL_TO.search(t))
    if DISCOUNT.search(low) and e.orders and not (email_send and MASS.search(low)):
        out.append("discount")
    if TICKET_CREATE.search(low):
        out.append("ticket_create")
    if ESCALATE.search(low) and "refund" not in out:
        out.append("escalate")
    if email_send:
        out.append("email_send")
    if DELETE.search(low) and not re.search(r"\bremove (?:the |a )?(?:discount|code|item)", low):
        out.append("delete")
    return out


def _questions(t: str, low: str, e: Entities) -> list[str]:
    q = []
    has_order, has_cust = bool(e.orders), e.has_customer
    has_product = bool(e.skus or e.products)
    if NOTES.search(low):
        q.append("notes")
    if CONTACT.search(low) and CONTACT_ASK.search(low) and (has_cust or re.search(r"\bcustomer\b", low)) \
            and not (e.emails and CUSTOMER_LOOKUP.search(low)):
        q.append("contact")
    if e.emails and CUSTOMER_LOOKUP.search(low) or (e.names and re.search(r"\bcustomer (?:id|number)\b", low)):
        q.append("customer_lookup")
    if DELIVERY_TIME.search(low):
        q.append("delivery_time")
    if RETURN_POLICY.search(low) and not has_order:
        q.append("return_policy")
    elif (RETURN_CHECK.search(low) and RETURN_WHEN.search(low) or REFUND_QUESTION.search(low)) and has_order:
        q.append("return_check")
    if TRACKING.search(low):
        q.append("tracking")
    if ETA.search(low) and not (has_product and not has_order):
        q.append("eta")
    if has_order and CONTENTS.search(low) and not (has_product or RECOMMEND.search(low)):
        q.append("contents")
    if STATUS.search(low) and "delivery_time" not in q:
        q.append("status")
    if TAX.search(low):
        q.append("tax")
    elif has_order and COST.search(low) and "delivery_time" not in q:
        q.append("order_cost")
    elif FX.search(low) and e.amounts and not has_product:
        q.append("fx")
    if HOURS.search(low) and (STORE.search(low) or (e.cities and not e.orders)) and not TICKET_CREATE.search(low):
        q.append("hours")
    several = len(e.skus) + len(e.products) >= 2
    if has_product and (RECOMMEND.search(low) and (several or not _OR_QUESTION.fullmatch(low))):
        q.append("recommend")
    else:
        if has_product and STOCK.search(low):
            q.append("stock")
        if has_product and PRICE.search(low):
            q.append("price")
    if POINTS.search(low):
        q.append("points")
    if TIER.search(low):
        q.append("tier")
    if has_cust or re.search(r"\bmy orders\b", low):
        if UNDELIVERED.search(low):
            q.append("undelivered")
        elif TOTAL.search(low) and re.search(r"\borders?\b|\bspent\b|\bpurchases\b", low):
            q.append("total_spent")
        elif LIST_ORDERS.search(low):
            q.append("list_orders")
        if SUMMARY.search(low) and ACCOUNT.search(low) or re.search(r"\bsummar\w* (?:of )?[A-Z]", t):
            q.append("account_summary")
    if TICKETS.search(low) and has_cust and not TICKET_CREATE.search(low) and "account_summary" not in q:
        q.append("tickets")
    if "tier" in q and "status" in q and not has_order:
        q.remove("status")
    return q


_OR_QUESTION = re.compile(gaps(r".*\bor\b[^.?!]*\?.*"))  # "this one or that one?"


ACTION_RX = {"refund": REFUND, "cancel": CANCEL, "address": ADDRESS, "discount": DISCOUNT,
             "ticket_create": TICKET_CREATE, "escalate": ESCALATE, "email_send": EMAIL_SEND, "delete": DELETE}


# A write asked about rather than asked for becomes this question.
CHECKS = {"refund": "refund_check", "cancel": "cancel_check", "address": "address_check"}
ORDER_QUESTIONS = {"status", "eta", "tracking", "order_cost", "delivery_time", "return_check", "tax", "contents",
                   "refund_check", "cancel_check", "address_check"}


# "Can you change the colour of the keyboard?": a request frame and a verb of an act no write
# names. Asking about the information itself ("can you tell/check ...") is a question, not this.
_UNKNOWN_ASK = re.compile(r"^\W*(?:(?:hi|hello|hey|also|and)\W+)*(?:(?:can|could|would|will) (?:you|u)(?: please)?"
                          r"|please|kindly|would you mind|i(?:'d| would) like you to"
                          r"|(?:can|could|would|will) (?:you|u) be able to|is it possible (?:for you )?to)\s+"
                          r"(?!(?:tell|check|confirm|let|look|see|find|explain|help|show|give me|send me|remind|"
                          r"say|answer|do (?:it|that|this)|go ahead|be)\b)[a-z]+")


# A write named as a thing that exists ("the refund", "my refund"), right before its word.
_MENTION = re.compile(r"\b(?:the|my|your|her|his|their|our|this|that)\s+$")


def _trigger(action: str, clause: str, gloss_: str) -> int:
    """Where the words asking for `action` start in the clause's gloss."""
    m = ACTION_RX[action].search(gloss_) or (EMAIL_TO_ANY.search(gloss_) if action == "email_send" else None)
    return m.start() if m else 0


def _clauses(turn: Turn, whole_questions: list[str] | None) -> None:
    """Writes, their orders, negation and mood, clause by clause (see clauses.py).

    `whole_questions`: the questions of the whole message read as it is (None when its reported
    content was blanked first). A clause that is the whole message reuses the message's readings
    instead of reading it all again: the same functions of the same text."""
    text, e = turn.text, turn.ents
    parts = []
    for start, end in clauses.spans(text):
        ct = text[start:end]
        whole = start == 0 and end == len(text)
        cg = gloss(ct)
        ce = dataclasses.replace(e) if whole else extract(turn.numtext[start:end])
        orders = list(dict.fromkeys(oid for oid, *_ in order_mentions(ct)))
        excluded = clauses.excluded_orders(ct) + clauses.corrected_orders(ct)
        orders = [o for o in orders if o not in excluded]
        said = clauses.unreported(clauses.unquoted(ct))
        if said == ct:
            acts = list(turn.actions_all) if whole else _actions(ct, cg, ce)
        else:
            acts = _actions(said, gloss(said), ce)
        if "discount" not in acts and "discount" in turn.actions_all and DISCOUNT.search(cg):
            acts.append("discount")
        # "..., and when was it delivered?": a question about "it" is about the message's order
        qe = ce if ce.orders or not re.search(r"\b(?:it|its|it's|they|them|this|that)\b", cg) \
            else dataclasses.replace(ce, orders=list(e.orders))
        # qe holds what e holds when the clause is the whole message
        questions = list(whole_questions) if whole and whole_questions is not None else _questions(ct, cg, qe)
        parts.append({"text": ct, "gloss": cg, "ents": ce, "orders": orders, "acts": acts, "excluded": excluded,
                      "mood": clauses.mood(cg), "questions": questions})
    # An order named in a clause with no wish of its own belongs to the clause before it
    # ("Status of A-1002? And A-1006?"), or else the next one.
    for i, p in enumerate(parts):
        if p["orders"] and not (p["acts"] or p["questions"]):
            near = [q for q in parts[:i][::-1] + parts[i + 1:] if q["acts"] or q["questions"]]
            if near:
                near[0]["orders"] = list(dict.fromkeys(near[0]["orders"] + p["orders"]))
        if p["excluded"] and not p["acts"]:  # "..., but not A-1001": left out of the clause before
            near = [q for q in parts[:i][::-1] if q["acts"]]
            if near:
                near[0]["excluded"] = list(dict.fromkeys(near[0]["excluded"] + p["excluded"]))
    turn.open_question = any(p["mood"].question and not (p["acts"] or p["questions"]) for p in parts)
    turn.unknown_request = any(_UNKNOWN_ASK.match(p["gloss"]) and not (p["acts"] or p["questions"]) for p in parts)
    candidates: list[tuple[str, list[str], bool]] = []
    asks = bool(turn.questions) or any(p["mood"].question for p in parts)
    for i, p in enumerate(parts):
        mood, cg = p["mood"], p["gloss"]
        taken_back = i + 1 < len(parts) and not parts[i + 1]["acts"] and clauses.REFUSAL.match(parts[i + 1]["gloss"])
        if (mood.hypothetical or mood.question) and not p["acts"]:
            # "Could A-1002 still be cancelled?", "Can it be refunded?": asked about in the past participle.
            m = CAN_BE_DONE.search(cg)
            if m:
                p["acts"] = ["cancel" if m.group(1).startswith("cancel") else "refund"]
        for a in p["acts"]:
            # "Is there a human I can talk to?" asks for one; "was it escalated?" asks what happened
            asks_person = a == "escalate" and not re.search(r"\bescalated\b", cg)
            if turn.hold or taken_back or clauses.negated(cg, _trigger(a, p["text"], cg)) \
                    or clauses.negated_clause(p["text"]):
                turn.declined.append((a, p["orders"] + p["excluded"]))
            elif mood.hypothetical or (mood.question and not mood.request and not asks_person):
                if a in CHECKS:
                    q = CHECKS[a]
                    turn.questions.append(q)
                    turn.targets.setdefault(q, []).extend(p["orders"])
            else:
                nxt = parts[i + 1] if i + 1 < len(parts) else None
                after = nxt["gloss"] if nxt and not (nxt["acts"] or nxt["questions"]) else ""
                # "... a full refund for A-1003 - please just process it": the next clause asks for it
                described = bool(after and clauses.mood(after).request and certainty.DO_IT.search(after))
                request = mood.request or asks_person or described
                if not request and asks:
                    continue  # with a question in the message, a write counts only where a clause asks for it
                m = ACTION_RX[a].search(cg) or (EMAIL_TO_ANY.search(cg) if a == "email_send" else None)
                span = m.span() if m else (0, 0)
                how = certainty.judge(cg, span, request=request, message_gloss=turn.low, action=a, after=after,
                                      described=described)
                if not how.sure:
                    if "it is not put as a request" in how.why and _MENTION.search(cg[:span[0]]):
                        continue  # "nothing's shown up for the refund": a refund talked about, not asked for
                    turn.unsure.append((a, p["orders"], how.why[0] if how.why else "unclear"))
                    continue
                candidates.append((a, p["orders"], True))
                if p["excluded"]:
                    turn.declined.append((a, p["excluded"]))
    kept = [(a, o) for a, o, _ in candidates]
    turn.actions = [a for a in ACTIONS if any(k == a for k, _ in kept)]
    for a, o in kept:
        turn.targets.setdefault(a, []).extend(o)
    written = {oid for _, ids in kept for oid in ids}
    for p in parts:
        for q in p["questions"]:
            turn.targets.setdefault(q, []).extend(p["orders"])
        if p["acts"] or not p["mood"].question or not turn.actions:
            continue
        own = [o for o in p["orders"] if o not in written]
        # A question in a clause of its own is answered even about a written order ("refund A-1003,
        # and when was it delivered?"): unless the write's own reply answers it (a status a cancel or
        # address change alters, a check the write makes, the total a discount changes).
        answered = {"refund_check", "cancel_check", "address_check", "return_check"}
        if set(turn.actions) & {"cancel", "address"}:
            answered.add("status")
        if "discount" in turn.actions:
            answered.add("order_cost")
        turn.side_questions += [q for q in p["questions"] if own or q not in answered]
    for k, v in turn.targets.items():
        turn.targets[k] = list(dict.fromkeys(v))
    turn.questions = list(dict.fromkeys(turn.questions))
    if "refund_check" in turn.questions and "return_check" in turn.questions:
        turn.questions.remove("return_check")
    turn.side_questions = [q for q in dict.fromkeys(turn.side_questions) if q not in turn.actions]
    # The address to ship to is the one in the clause asking for the change.
    for p in parts:
        if "address" in p["acts"] and p["ents"].address:
            e.address = p["ents"].address


# An order id with a letter typed for a digit ("A-1O08", "a1OO4"): close enough to ask about, not to act on.
_MISTYPED_ID = re.compile(r"(?<![\w-])[Aa][-\u2011\s]?([0-9oOlIi]{4})(?![\w-])")


def _mistyped_ids(text: str) -> list[str]:
    out = []
    for m in _MISTYPED_ID.finditer(text):
        digits = m.group(1).translate(str.maketrans("oOlIi", "00111"))
        if digits != m.group(1):
            out.append("A-" + digits)
    return list(dict.fromkeys(out))


def _without(text: str, names: list[str]) -> str:
    for name in names:
        text = text.replace(name, " ")
    return text


def understand(text: str) -> Turn:
    numtext = words_to_digits(text)
    e = extract(numtext)
    low = gloss(text)
    turn = Turn(text=text, low=low, ents=e, gloss=low, numtext=numtext)
    turn.actions_all = _actions(text, low, e)
    said = clauses.unreported(text)
    turn.questions = _questions(said, gloss(said), e) if said != text else _questions(text, low, e)
    whole_questions = list(turn.questions) if said == text else None
    turn.hold = bool(clauses.HOLD.search(low))
    # a person's name is in no language's word list: "I'm Chen Wei" is not a foreign message
    turn.unreadable = certainty.unreadable(gloss(_without(text, e.names)) if e.names else low)
    _clauses(turn, whole_questions)
    turn.authority = bool(AUTHORITY.search(low))
    turn.ignore_rules = bool(IGNORE_RULES.search(low))
    turn.injection = bool(INJECTION.search(text))
    if turn.injection:
        turn.injected_eligible = bool(INJECTED_ELIGIBLE.search(low))
        turn.injected_approval = bool(INJECTED_APPROVAL.search(low))
    # "What does your policy say?" asks about the policy; quoting it to win a case is pressure.
    turn.quoted_policy = bool(QUOTED_POLICY.search(low)) and (
        bool(turn.actions) or "return_policy" not in turn.questions)
    if turn.quoted_policy:
        days = QUOTED_DAYS.search(low)
        turn.quoted_days = int(days.group(1)) if days else None
        limit = QUOTED_LIMIT.search(low)
        turn.quoted_limit = float(limit.group(1)) if limit else None
    turn.pressure = bool(PRESSURE.search(low))
    turn.damage = bool(DAMAGE.search(low))
    turn.supervisor_reader = bool(SUPERVISOR_READER.search(low))
    turn.self_supervisor = bool(SELF_SUPERVISOR.search(low))
    turn.mass = bool(MASS.search(low))
    guessed = _mistyped_ids(text) if not (e.orders or e.has_customer) else []
    if guessed:
        for a in [x for x in turn.actions if x in ("refund", "cancel", "address", "discount", "escalate")]:
            turn.actions.remove(a)
            turn.unsure.append((a, guessed, "the order ID looked mistyped"))
    turn.asks_contact = "contact" in turn.questions
    turn.draft = bool(DRAFT.search(low) or DRAFT_NAMED.search(text)) and "email_send" not in turn.actions_all
    turn.apology = bool(APOLOGY.search(low))
    turn.confirm = bool(CONFIRM.search(low))
    turn.thanks = bool(THANKS.search(low))
    turn.greeting = bool(GREETING.search(low))
    return turn
