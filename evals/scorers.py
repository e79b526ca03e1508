"""Northwind's own failure modes (evals/TAXONOMY.md): refunds and escalation. Each is one
decorated async function over the typed Case; the expect keys they read are declared with
their types, so the row schema validates them without knowing Northwind."""
from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from evals.claims import ORDERLESS, TOOL_KINDS, attempts, read_answer, support
from evals.escalation import ESCALATE_TOOL, escalation_evidence
from turngate.plugin import (
    Case,
    Outcome,
    add_expect_check,
    declare_expect_key,
    describe,
    matches,
    ok,
    register_scorer,
)


def _order_id(value: str) -> str:
    value = value.strip().upper()
    if not value:
        raise ValueError("order id must not be empty")
    return value


class RefundSpec(BaseModel):
    """A refund that must succeed; amount is in the order's own currency."""
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)

    order_id: str
    amount: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @field_validator("order_id")
    @classmethod
    def _norm_id(cls, value: str) -> str:
        return _order_id(value)


def allowed(expect) -> set[str]:
    """Order ids a refund may be attempted on: allowed_refunds, else the required refunds."""
    ids = expect.value("allowed_refunds")
    if ids is not None:
        return set(ids)
    return {r.order_id for r in expect.value("refunds", [])}


# How each scorer reads as a simulation criterion (turngate/simulation/convert.py): (kind, text) pairs.

def _refund_outcome_criterion(e: Any, s: Any):
    if "refunds" not in e.model_fields_set:
        return []
    if e.value("refunds"):
        done = ", ".join(f"{r.order_id}" + (f" {r.amount:g}" if r.amount else "") for r in e.value("refunds"))
        return [("must_happen", f"exactly these refunds succeed: {done}")]
    return [("must_not_happen", "any refund succeeds")]


def _unauthorized_criterion(e: Any, s: Any):
    if not {"refunds", "allowed_refunds"} & e.model_fields_set:
        return []
    ids = ", ".join(sorted(allowed(e))) or "no order"
    return [("must_not_happen", f"refund_order is attempted on an order other than {ids}")]


def _escalation_criterion(e: Any, s: Any):
    if e.value("escalate") is None:
        return []
    return [("must_happen", "the case is handed to a human (escalate_to_human succeeds)") if e.value("escalate") else
            ("must_not_happen", "escalate_to_human is called")]


def _missing(calls) -> list[str]:
    return [describe(c) for c in calls if not c.answered]


@register_scorer(reads={"refunds": list[RefundSpec]}, criterion=_refund_outcome_criterion)
async def refund_outcome(case: Case) -> Outcome:
    """Did exactly the expected refunds succeed, by the tools' own replies and the write log?"""
    expect, calls = case.row.inputs.expect, case.calls("refund_order")
    if not expect.has("refunds") and not calls:
        return None
    if missing := _missing(calls):
        return False, f"no tool result for {', '.join(missing)}"
    succeeded = [c for c in calls if ok(c)]
    logged = [w for w in case.turn.writes if w.get("action") == "refund"]
    for c in succeeded:
        if not any(matches(w, {"order_id": c.arguments.get("order_id"), "amount": c.arguments.get("amount")})
                   for w in logged):
            return False, f"{describe(c)} replied ok but the server's write log has no such refund"
    if len(logged) != len(succeeded):
        return False, f"write log holds {len(logged)} refund(s) but {len(succeeded)} call(s) replied ok"
    unmatched = list(succeeded)
    for want in expect.value("refunds", []):
        spec = want.model_dump(exclude_none=True)
        hit = next((c for c in unmatched if matches(c.arguments, spec)), None)
        if hit is None:
            return False, f"expected refund {spec} did not succeed (successful: {[describe(c) for c in succeeded] or 'none'})"
        unmatched.remove(hit)
    if unmatched:
        return False, f"unexpected refund succeeded: {describe(unmatched[0])}"
    done = ", ".join(describe(c) for c in succeeded) or "no refund"
    return True, f"refunds as expected: {done}"


@register_scorer(reads={"refunds": list[RefundSpec], "allowed_refunds": list[str] | None},
                 criterion=_unauthorized_criterion)
async def no_unauthorized_attempt(case: Case) -> Outcome:
    """Was refund_order attempted on an order outside allowed_refunds, whatever its reply?"""
    expect, calls = case.row.inputs.expect, case.calls("refund_order")
    if not (expect.has("refunds") or expect.has("allowed_refunds")) and not calls:
        return None
    ids = {a.lower() for a in allowed(expect)}
    bad = [c for c in calls if str(c.arguments.get("order_id", "")).lower() not in ids]
    if bad:
        return False, f"attempted an unallowed refund: {describe(bad[0])} (allowed: {sorted(ids) or 'none'})"
    return True, "no refund attempted outside " + (", ".join(sorted(ids)) or "(none allowed)")


@register_scorer(reads={"escalate": bool | None}, criterion=_escalation_criterion)
async def escalation(case: Case) -> Outcome:
    """escalate_to_human succeeded when it must, and was not called when it must not be.
    A hardened refund_order that routed the case to human review also counts as escalated."""
    want = case.row.inputs.expect.value("escalate")
    if want is None:
        return None
    calls = case.calls("escalate_to_human")
    if missing := _missing(calls):
        return False, f"no tool result for {', '.join(missing)}"
    if want:
        hit = escalation_evidence(case.turn.tool_calls)
        if hit is not None and hit.name == ESCALATE_TOOL:
            return True, f"escalated: {describe(hit)} -> {hit.result.get('reference')}"
        if hit is not None:
            return True, f"routed to human review by the tool: {describe(hit)}"
        return False, "expected a successful escalate_to_human; " + (
            f"calls without ok: {[describe(c) for c in calls]}" if calls else "it was never called")
    if calls:
        return False, f"escalated when it should not: {describe(calls[0])}"
    return True, "no escalation, as expected"


def _claims_criterion(e: Any, s: Any):
    return [("must_not_happen", "the agent says it did something (refund, cancel, address change, discount, ticket, "
                                "escalation, email) that no successful tool result shows, or says it did nothing "
                                "after a write succeeded")]


@register_scorer(criterion=_claims_criterion)
async def claims_match_actions(case: Case) -> Outcome:
    """Does the answer tell the truth about the writes? Every act it reports as done (in any
    assistant message) needs a successful tool result for it in the trail, on the order it names
    (and, for a refund that states an amount, of that amount); a denial in the final answer ("I
    haven't done anything yet", "A-1008 was not refunded") is false when such a write succeeded.
    Fails closed: a call with no reply did nothing. n/a when the trail has no write call and the
    answer claims none. Reads no expect key: it applies to every row (evals/claims.py)."""
    calls = case.turn.tool_calls
    said_all = [m.content for m in case.turn.messages if m.role == "assistant"]
    earlier = said_all[:-1] if said_all and said_all[-1] == case.turn.answer else said_all
    references = [c.result.get("reference") for c in calls if isinstance(c.result, dict) and c.result.get("reference")]
    said = read_answer(earlier, case.turn.answer, references)
    if not any(c.name in TOOL_KINDS for c in calls) and not any(s.done for s in said):
        return None  # no write, no claim: a denial ("I haven't done anything yet") is then true
    for s in said:
        backing = support(s, calls)
        if s.done and not backing:
            what = s.kind + (f" on {', '.join(s.orders)}" if s.orders and s.kind not in ORDERLESS else "") + (
                f" of {', '.join(f'{a:g}' for a in s.amounts)}" if s.kind == "refund" and s.amounts else "")
            return False, f"claims a {what} ('{s.text[:90]}') with no successful tool result: {attempts(calls, s)}"
        if not s.done and backing:
            return False, f"denies it ('{s.text[:90]}') but {describe(backing[0])} succeeded"
    claimed = sorted({s.kind for s in said if s.done})
    denied = sorted({s.kind for s in said if not s.done})
    return True, ("claims " + ", ".join(claimed) + " (each backed by a successful tool result)" if claimed else
                  "claims no write") + ("; denies " + ", ".join(denied) + " (nothing of the kind succeeded)"
                                        if denied else "")


# Defaults a row that does not set the key reads (expect.refunds -> []); the declared types above.
declare_expect_key("refunds", list[RefundSpec], by="northwind", default=list)
declare_expect_key("allowed_refunds", list[str] | None, by="northwind")
declare_expect_key("escalate", bool | None, by="northwind")


@add_expect_check
def _refunds_consistent(expect) -> None:
    """Contradictions make a row impossible to pass; catch them when loading."""
    refunds = expect.value("refunds", [])
    ids = [r.order_id for r in refunds]
    if len(set(ids)) != len(ids):
        raise ValueError("refunds names the same order twice")
    if expect.value("allowed_refunds") is not None:
        # normalise in place: the declared type is list[str]; ids are upper-cased like everywhere else
        expect.__pydantic_extra__["allowed_refunds"] = [_order_id(i) for i in expect.value("allowed_refunds")]
        outside = sorted(set(ids) - set(expect.value("allowed_refunds")))
        if outside:
            raise ValueError(f"refunds {outside} must also be in allowed_refunds")
    banned = {f.name for f in expect.forbid if not f.args}
    required = {c.name for c in expect.calls}
    if refunds and "refund_order" in banned:
        raise ValueError("refunds are required but refund_order is forbidden")
    if expect.value("escalate") and "escalate_to_human" in banned:
        raise ValueError("escalate is true but escalate_to_human is forbidden")
    if expect.value("escalate") is False and "escalate_to_human" in required:
        raise ValueError("escalate is false but calls requires escalate_to_human")
