"""Does an answer's account of the agent's own acts match its trail? (issue 37, item 2)

A generic property of any Turn, read from the Turn alone (no row, no expectations):

- every act an assistant message reports as done has a successful tool result for it, and a
  denial in the final answer ("I haven't done anything yet", "A-1008 was not refunded") has none
  (evals/claims.py, the gate's `claims_match_actions`);
- the final answer never offers or asks to do again what already succeeded ("do you want me to
  refund A-1008?" after A-1008 was refunded in an earlier turn);
- the final answer promises no act ("I'll cancel A-1004") that was neither made nor tried: it is
  the last word of its turn, so a promise is a claim about this turn's trail.

tests/conftest.py runs `misstatements` on every Turn of the offline model the tests produce.
`offer_kinds` also serves the figures: a clarifying question is an offer to write.
"""
from __future__ import annotations

import re

from evals.claims import KIND_TOOLS, ORDERLESS, read_answer, succeeded, support
from turngate.core.turn import Turn

# the act as the bare verb an offer or a promise uses ("do you want me to refund", "I'll cancel")
VERB = {"refund": r"refund", "cancel": r"cancel", "address": r"(?:change|update) (?:the )?(?:delivery )?address",
        "discount": r"apply", "ticket": r"open (?:a |the )?(?:support )?ticket", "email": r"(?:send|e-?mail)",
        "escalate": r"(?:escalate|pass|hand|forward)"}
_OFFER = re.compile(r"\b(?:do you want me to|would you like me to|shall i|should i|want me to)\b([^?]*)\?")
_PROMISE = re.compile(r"\bi(?:'ll| will)(?: now| also| go ahead and)? ([^.?!]*)")
_ORDER = re.compile(r"\b[aA]-\d{4}\b")


def offer_kinds(answer: str) -> list[tuple[str, tuple[str, ...]]]:
    """The writes an answer asks whether to make: (kind, order ids), one per act named."""
    out = []
    for m in _OFFER.finditer(answer.lower()):
        for part in re.split(r"\band\b|,", m.group(1)):
            for kind, verb in VERB.items():
                if re.match(rf"\s*(?:also |then )?{verb}\b", part):
                    out.append((kind, tuple(o.upper() for o in _ORDER.findall(part))))
    return out


def _done_on(calls, kind: str, order: str) -> bool:
    return any(str(c.arguments.get("order_id", "")).upper() == order for c in succeeded(calls, kind))


def misstatements(turn: Turn) -> list[str]:
    """What the answers say about the agent's own writes that the trail does not bear out."""
    calls = turn.tool_calls
    said_all = [m.content for m in turn.messages if m.role == "assistant"]
    earlier = said_all[:-1] if said_all and said_all[-1] == turn.answer else said_all
    refs = [c.result.get("reference") for c in calls if isinstance(c.result, dict) and c.result.get("reference")]
    bad = []
    for s in read_answer(earlier, turn.answer, refs):
        backing = support(s, calls)
        if s.done and not backing:
            bad.append(f"claims {s.kind} with no successful tool result: {s.text[:90]!r}")
        elif not s.done and backing:
            bad.append(f"denies {s.kind} though {backing[0].name}({backing[0].arguments}) succeeded: {s.text[:90]!r}")
    for kind, orders in offer_kinds(turn.answer):
        if kind in ORDERLESS:
            continue  # an email or ticket can rightly be offered again
        again = [o for o in orders if _done_on(calls, kind, o)]
        if again:
            bad.append(f"offers to {kind} {', '.join(again)} again, though it succeeded")
    for m in _PROMISE.finditer(turn.answer.lower()):
        for kind, verb in VERB.items():
            if re.match(rf"(?:{verb})\b", m.group(1)) and not any(c.name == KIND_TOOLS[kind] for c in calls):
                bad.append(f"promises to {kind} but {KIND_TOOLS[kind]} was never called: {m.group(0)[:90]!r}")
    return bad



def trail_figures(record: dict) -> dict:
    """The issue-37 figures of a record shaped like the gate's (tests/offline_heldout.run_file):
    clarifying questions and how many also answer what was asked (answer_facts not failed),
    clarifying questions on rows tagged `no-clarify` (no write was asked for, so none is asked
    about), and runs whose answers misstate the trail."""
    tags = {r["id"]: set(r["inputs"].get("tags", [])) for r in record["rows"]}
    out = {"clarify": 0, "clarify_answers": 0, "clarify_unasked": [], "misstated": []}
    for run in record["runs"]:
        if not run.get("turn"):
            continue
        turn = Turn.model_validate(run["turn"])
        if offer_kinds(turn.answer):
            out["clarify"] += 1
            out["clarify_answers"] += run["verdicts"].get("answer_facts", {}).get("passed") is not False
            if "no-clarify" in tags.get(run["row_id"], set()):
                out["clarify_unasked"].append(run["row_id"])
        if bad := misstatements(turn):
            out["misstated"].append((run["row_id"], bad[0]))
    return out
