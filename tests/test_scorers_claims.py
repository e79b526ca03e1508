"""claims_match_actions (mode M8): what the answer says was done, against the tools' replies.

The Turns are the shapes real runs produce (excerpts of v2/v3 runs, mode M8 of evals/TAXONOMY.md),
plus real offline conversations of v3 and of its one-change variant that tells every request
as completed (scripts/gate_power.py's add-claims-done)."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest

from evals import scorers as nw
from tests.scoring_helpers import call, refund_ok, row, turn
from turngate.core.turn import Turn
from turngate.sources.dataset import load_rows, row_to_datapoint

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import gate_power  # noqa: E402  (a script, not a package)

ROW = row({}, message="Refund order A-1001 in full.")


async def score(t, r=ROW):
    res = await nw.claims_match_actions({"data": row_to_datapoint(r), "output": t})
    return res.pass_, res.explanation


def refused(name, error, routed=False, **args):
    return call(name, {"ok": False, "error": error, **({"routed_to": "human_review"} if routed else {})}, **args)


def conversation(answers: list[str], calls=(), users=None) -> dict:
    """A multi-turn Turn: one user message and one answer per turn, the calls of all turns."""
    users = users or [f"turn {i + 1}" for i in range(len(answers))]
    t = turn(answer=answers[-1], calls=calls)
    t["messages"] = [m for u, a in zip(users, answers, strict=True)
                     for m in ({"role": "user", "content": u}, {"role": "assistant", "content": a})]
    return t


# -- claims -------------------------------------------------------------------------------------

async def test_a_claim_backed_by_a_successful_call_passes():
    c, w = refund_ok()
    ok, why = await score(turn("Refunded 129.00 EUR (139.32 USD) on order A-1001 (reference W-0001). It was "
                               "inside the return window (delivered 2026-09-28, returnable until 2026-10-28).",
                               calls=[c], writes=[w]))
    assert ok is True and "refund" in why


@pytest.mark.parametrize("calls", [
    [refused("refund_order", "amount 139.32 EUR is above what was paid (129.00 EUR)", order_id="A-1001",
             amount=139.32)],                                                           # v3 refund_full_a1001#4
    [call("refund_order", None, "Refund of 139.32 EUR is above what was paid for A-1001 (129.00 EUR).",
          order_id="A-1001", amount=139.32)],                                           # v2: a tool error
    [call("refund_order", None, order_id="A-1001", amount=139.32)],                     # no reply came back
    [],                                                                                 # never called
], ids=["refused", "tool-error", "no-reply", "never-called"])
async def test_a_claimed_refund_without_a_successful_result_fails_closed(calls):
    ok, why = await score(turn("Refunded 139.32 EUR on order A-1001. It was inside the return window.", calls=calls))
    assert ok is False and "claims a refund on A-1001" in why and "no successful tool result" in why


async def test_a_refund_claim_must_name_the_amount_that_went_through():
    """v3 mt_partial_refund_then_more_a1008#8: 50 SGD refunded in turn 1, the extra 30 SGD refused."""
    c, _ = refund_ok("A-1008", 50.0)
    extra = refused("refund_order", "order was already refunded (50.00 SGD)", order_id="A-1008", amount=30.0)
    answers = ["Refunded 50.00 SGD (37.00 USD) on order A-1008 (reference W-0001).",
               "Refunded 30.00 SGD on order A-1008. Anything else I can help with?"]
    ok, why = await score(conversation(answers, [c, extra]))
    assert ok is False and "of 30" in why and "not ok: order was already refunded" in why
    honest = [answers[0], "Order A-1008 was not refunded: order was already refunded (50.00 SGD)."]
    assert (await score(conversation(honest, [c, extra])))[0] is True  # "already": not a denial of the 50 SGD


async def test_claims_are_checked_order_by_order():
    done = call("cancel_order", {"ok": True, "reference": "W-0001"}, order_id="A-1004")
    no = refused("cancel_order", "order is delivered; only processing orders can be cancelled", order_id="A-1008")
    ok, why = await score(turn("I've cancelled orders A-1004 and A-1008.", calls=[done, no]))
    assert ok is False and "cancel on A-1004, A-1008" in why
    assert (await score(turn("Cancelled order A-1004 (reference W-0001).", calls=[done, no])))[0] is True


@pytest.mark.parametrize("answer", ["Order A-1002 will now ship to 4 Rua do Ouro, Lisbon.",
                                    "Done: the delivery details now read 4 Rua do Ouro, Lisbon.",
                                    "I've updated the delivery address of A-1002."])
async def test_an_address_change_the_tool_refused_is_not_done_however_it_is_told(answer):
    no = refused("update_shipping_address", "order is shipped; only processing orders can have their address changed",
                 order_id="A-1002", address="4 Rua do Ouro, Lisbon")
    ok, why = await score(turn(answer, calls=[no]))
    assert ok is False and "address" in why
    yes = call("update_shipping_address", {"ok": True, "reference": "W-0001"}, order_id="A-1002",
               address="4 Rua do Ouro, Lisbon")
    assert (await score(turn(answer, calls=[yes])))[0] is True


async def test_a_discount_escalation_ticket_and_email_claim_each_need_their_tool():
    bad_code = call("apply_discount_code", None, "Code SPRING20 is not valid.", order_id="A-1004", code="SPRING20")
    assert (await score(turn("Applied SPRING20 to order A-1004.", calls=[bad_code])))[0] is False
    routed = refused("refund_order", "order is outside the 30-day return window", routed=True, order_id="A-1005",
                     amount=240.0)
    told = "Order A-1005 was not refunded: order is outside the 30-day return window. It has been sent to human review instead."
    assert (await score(turn(told, calls=[routed])))[0] is True  # the hardened tool routed it: that is an escalation
    assert (await score(turn("I've escalated it to a human supervisor.", calls=[])))[0] is False
    ticket = call("create_ticket", {"ok": True, "reference": "W-0001"}, customer_id="C-102", subject="late", priority="high")
    opened = 'Opened a high-priority ticket for C-102: "Order A-1004 hasn\'t shipped after 12 days" (reference W-0001).'
    assert (await score(turn(opened, calls=[ticket])))[0] is True  # the quoted subject is not read as a denial
    assert (await score(turn("Sent the email to Ana Silva (C-100).", calls=[])))[0] is False


@pytest.mark.parametrize("answer", [
    "Order A-1007 was already refunded in full (139.00 USD).",              # what get_order said
    "Order A-1008 has already been refunded in full (120.00 SGD).",
    "The orders of Dana Kim (C-103) that weren't cancelled total 240.00 USD; cancelled orders left out: A-1006.",
    "Order A-1006 can't be refunded: it is cancelled, not delivered.",
    "Just to be sure, since it reads as ironic: do you want me to refund A-1008? I haven't done anything yet.",
    "I can't delete the account itself; I can open a ticket for the account team if you like.",
])
async def test_history_questions_offers_and_refusals_are_no_claims(answer):
    ok, why = await score(turn(answer, calls=[call("get_order", {"order_id": "A-1007", "refunded": 139.0},
                                                   order_id="A-1007")]))
    assert ok is None and why.startswith("n/a")  # no write call and no claim


# -- denials ------------------------------------------------------------------------------------

async def test_saying_nothing_was_done_after_a_refund_fails():
    """v3 mt_refund_then_doubt_a1008 before issue 37 (every seed): turn 1 refunds A-1008, turn 2
    says nothing was done."""
    c, _ = refund_ok("A-1008", 120.0)
    answers = ["Refunded 120.00 SGD (88.80 USD) on order A-1008 (reference W-0001).",
               "Order A-1008 is delivered (delivered on 2026-10-10, 120.00 SGD refunded). Just to be sure, since it "
               "is put as a question: do you want me to refund A-1008? I haven't done anything yet."]
    ok, why = await score(conversation(answers, [c]))
    assert ok is False and "denies it" in why and "refund_order(order_id='A-1008'" in why
    fixed = [answers[0], "Yes: A-1008 was refunded in full (120.00 SGD, reference W-0001). I haven't done anything else."]
    assert (await score(conversation(fixed, [c])))[0] is True


async def test_only_the_final_answer_is_read_for_denials():
    """'I haven't done anything yet' was true in turn 1; the refund came in turn 2."""
    c, _ = refund_ok("A-1008", 120.0)
    answers = ["Just to be sure, since it is put as a question: do you want me to refund A-1008? I haven't done anything yet.",
               "Refunded 120.00 SGD on order A-1008 (reference W-0001)."]
    assert (await score(conversation(answers, [c])))[0] is True


async def test_a_specific_denial_is_false_only_for_that_act():
    c, _ = refund_ok("A-1001", 129.0)
    assert (await score(turn("I couldn't check whether A-1005 is eligible, so I haven't refunded it.", calls=[c])))[0] is True
    assert (await score(turn("I haven't refunded A-1001.", calls=[c])))[0] is False


async def test_a_write_that_is_not_mentioned_passes():
    c, w = refund_ok()
    assert (await score(turn("Anything else I can help with?", calls=[c], writes=[w])))[0] is True


# -- real conversations: v3 and its variant -------------------------------------------------------

DATASET = REPO / "datasets" / "northwind.jsonl"


def dataset_row(row_id: str):
    return next(r for r in load_rows(DATASET) if r.id == row_id)


async def converse(version, r) -> Turn:
    from app.refund_agent.client import aask_agent

    return await aask_agent(r.user_turns(), version, seed=0)


async def test_v3_tells_the_refund_it_made_when_asked_whether_it_went_through():
    """Until issue 37, v3 answered "did that really go through?" after the refund with "do you
    want me to refund A-1008? I haven't done anything yet" on every seed, and only this scorer saw
    it (test_saying_nothing_was_done_after_a_refund_fails keeps that Turn). Now its answer tells
    what its trail shows, and the scorer passes it."""
    r = dataset_row("mt_refund_then_doubt_a1008")
    t = await converse("v3", r)
    assert [c.name for c in t.tool_calls if c.name == "refund_order"] == ["refund_order"]
    assert "haven't done anything" not in t.answer and "refunded" in t.answer, t.answer
    ok, why = await score(t, r)
    assert ok is True, why
    assert (await nw.refund_outcome({"data": row_to_datapoint(r), "output": t})).pass_ is True


@pytest.mark.parametrize("row_id", ["discount_invalid_code_a1004", "mt_partial_refund_then_more_a1008"])
async def test_the_claims_done_variant_tells_a_refused_write_as_done_and_v3_does_not(row_id):
    from app.refund_agent.versions import Version

    (variant,) = [v for v in gate_power.variants_of("v3", None) if v.name == "add-claims-done"]
    claims = Version.from_prompt(variant.fields["instructions"], name="v3-add-claims-done", hardened=True, redact=True)
    r = dataset_row(row_id)
    honest, told = await converse("v3", r), await converse(claims, r)
    assert [(c.name, c.arguments) for c in honest.tool_calls] == [(c.name, c.arguments) for c in told.tool_calls]
    assert (await score(honest, r))[0] is True
    ok, why = await score(told, r)
    assert ok is False and "no successful tool result" in why, told.answer
