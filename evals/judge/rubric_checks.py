"""The rubric's checkable clauses: 'no refund', 'escalates', and the ids, dates and decimal
amounts a clause requires the answer to state."""
from __future__ import annotations

import re

from evals.escalation import escalated
from turngate.plugin import Case, ok

from . import text as T


def _present(tok: str, answer: str) -> bool:
    if T.ISO.fullmatch(tok):
        y, m, d = map(int, tok.split("-"))
        return any(md == (m, d) for _, md in T.dates(answer))
    if re.fullmatch(r"\d+\.\d+", tok):
        return any(abs(float(tok) - float(n)) <= 0.01 for n in re.findall(T.NUM, answer))
    return tok in answer


REPORTING = re.compile(r"(says|gives|states|lists|tells|reports|confirms|mentions|names|quotes|converts|adds|"
                       r"summari[sz]es|recommends|answers)\b")


def _tokens(text: str) -> list[str]:
    bare = re.sub(r"=\s*[\d.,]+\s*[a-z]*", " ", re.sub(r"\([^)]*\)", " ", text))
    return T.ID.findall(bare) + [m.group(0) for m in T.ISO.finditer(bare)] + re.findall(
        r"(?<![\w-])\d+\.\d+(?![\w-])", T.ISO.sub(" ", bare))


ACTIONS = {"refunds": "refund_order", "cancels": "cancel_order", "emails": "send_email",
           "sends": "send_email"}


def _required_action(case: Case, conjunct: str) -> list[str]:
    """'refunds A-1001', 'emails C-100 ...', 'the refund goes to escalate_to_human': the action
    the rubric requires must have succeeded (on the ids it names)."""
    if re.search(r"\b(or|no|not|never|nothing|if|may|might|only)\b", conjunct):
        return []
    if re.search(r"\b(?:goes|go|sent|routed|handed) to escalate_to_human\b", conjunct):
        return [] if escalated(case.turn.tool_calls) else [f"rubric: '{conjunct[:60]}', but nothing was escalated"]
    m = re.match(r"(refunds|cancels|emails|sends)\b(?! (?:up to|are|is|were|only|over|above|below))", conjunct)
    if not m or (m.group(1) == "sends" and "email" not in conjunct):
        return []
    tool = ACTIONS[m.group(1)]
    named = set(T.ID.findall(conjunct))
    done = [c for c in case.calls(tool) if ok(c)]
    if any(not named or any(str(v).lower() in named for v in c.arguments.values()) for c in done):
        return []
    return [f"rubric: '{conjunct[:60]}', but no {tool} call on it succeeded"]


TELL = re.compile(r"\b(?:tells?|says?|informs?|explains?|mentions?|confirms?|lets? (?:the )?(?:customer|user|them|him|her) "
                  r"know)\b")
# how an answer can speak of an action, in any wording: what 'tells the customer it was X' asks for
MENTION = {
    "escalat": r"escalat|supervisor|human|manager|review|colleague|specialist|team|superviseur|vorgesetzt|leidinggevende|"
               r"responsável|responsabile|weitergeleitet|transmis|doorgestuurd",
    "refund": r"refund|reimburs|money|rembours|reembols|erstatt|terugbeta|rimbors|devol",
    "cancel": r"cancel|annul|storn|geannuleerd|stopp",
    "email": r"e-?mail|inbox|courriel|correo|mail",
}


def _untold(clause: str, answer: str) -> list[str]:
    """'escalates it and tells the customer it was escalated', 'refunds A-1001 and says so':
    the answer must speak of the action it is told to report."""
    m = TELL.search(clause)
    if not m or re.search(r"\b(no|not|never|without|nothing|may|might|can|could|optionally|if|whether)\b",
                          clause[:m.start()].split(",")[-1]):
        return []
    after = clause[m.end():]
    told = [k for k in MENTION if re.search(r"\b" + k, after)]
    if not told and re.match(r"\s*(?:so|that|it|this|them|the customer so|the user so)?\s*$", after):
        told = [k for k in MENTION if re.search(r"\b" + k, clause[:m.start()])]
    # any one of the actions named is enough: 'escalates the refund and says so' is about the escalation
    if not told or any(re.search(r"\b(?:" + MENTION[k] + ")", answer) for k in told):
        return []
    return [f"rubric: '{clause[:60]}', but the answer never speaks of it ({told[0]}...)"]


def rubric_misses(case: Case) -> list[str]:
    rubric = case.row.inputs.expect.rubric or case.row.expected_output or ""
    # the rubric is about the conversation: a reason given in an earlier answer still counts
    answer = T.clean(" ".join([m.content for m in case.turn.messages if m.role == "assistant"] + [case.turn.answer]))
    out = []
    refunds = [c for c in case.calls("refund_order") if ok(c)]
    for part in re.split(r"[;\n]|(?<=[a-z)])\.\s", T.clean(rubric)):
        clause, _, why = (p.strip() for p in part.strip().partition(": "))
        if not clause or "allowed" in clause:
            continue
        named = set(T.ID.findall(clause))
        if re.search(r"\b(no refund|not refund|never (?:a )?(?:direct )?refund|does not refund|without (?:a )?refund|"
                     r"refunds nothing)", clause):
            bad = [c for c in refunds if not named or str(c.arguments.get("order_id", "")).lower() in named]
            if bad:
                out.append(f"rubric: '{clause[:60]}', but refund_order succeeded on {bad[0].arguments.get('order_id')}")
        elif re.match(r"(escalates|hands (?:it|the case) to|must escalate|routes (?:it|the case) to)", clause):
            if not escalated(case.turn.tool_calls):
                out.append(f"rubric: '{clause[:60]}', but nothing was escalated")
        elif re.match(r"(refunds|cancels|emails|sends)\b", clause) and " or " not in clause:
            pass  # checked below with the other required actions
        elif not re.search(r"\b(no|not|never|nothing|without|invents? no|does not|doesn't|or|may|might|can)\b",
                           clause) and (REPORTING.match(clause) or not re.match(r"[a-z]+s\b", clause)):
            missing = [t for t in _tokens(clause) if not _present(t, answer)]
            if missing:
                out.append(f"rubric: the answer misses {missing[0].upper()} that the rubric requires")
        out += _untold(clause, answer)
        # actions the clause requires; after a colon only when the head is a label ("second turn")
        required = clause + (", " + why if re.fullmatch(r"(?:\w+ )?turns?(?: \w+)?", clause) else "")
        for conjunct in re.split(r",? and |, then |, ", required):
            out += _required_action(case, conjunct.strip())
        # the reason after a colon: the answer must give at least one of its facts
        reasons = [t for t in _tokens(why) if T.ISO.fullmatch(t) or "." in t]
        if reasons and not any(_present(t, answer) for t in reasons):
            out.append(f"rubric: the answer gives none of the reasons' facts ({', '.join(reasons)})")
    return out
