"""The offline stand-in answers what was asked and never misstates its own actions (issue 37).

standin_dev.jsonl was written before the change (15/24 then, 1 write on a no-write row, 1 answer
misstating the trail) and tuned on; standin_fresh.jsonl (40 messages) after it, committed before
it was run and measured once (37/40, no write on its 17 no-write rows, none misstating the trail):
the floors keep those figures from regressing (docs/offline-model.md, scripts/offline_figures.py). The trail check (tests/offline_trail.py) runs on every
offline Turn of the tests through tests/conftest.py; here it is tested itself.
"""
import asyncio

import pytest

from app.refund_agent import client
from app.refund_agent.client import ask_agent
from app.refund_agent.offline.conditions import amount_condition
from app.refund_agent.offline.intents import understand
from tests.offline_heldout import BLIND, run_file, score_record
from tests.offline_trail import misstatements, offer_kinds, trail_figures
from turngate.core.turn import Message, ToolCall, Turn

DEV, FRESH = BLIND.with_name("standin_dev.jsonl"), BLIND.with_name("standin_fresh.jsonl")
# the fresh set's floor is its first figure, measured once before any change it could drive (37/40)
FLOORS = {DEV: 24 / 24, FRESH: 37 / 40}
T0 = "offline:temperature=0"


def writes(turn):
    return [(c.name, c.arguments.get("order_id"), c.arguments.get("amount")) for c in turn.tool_calls
            if c.name in {"refund_order", "cancel_order", "apply_discount_code", "send_email", "escalate_to_human"}]


@pytest.fixture(scope="module")
def records():
    return {p: asyncio.run(run_file(p, temperature=0.0)) for p in FLOORS}


@pytest.mark.parametrize("path", list(FLOORS), ids=lambda p: p.stem)
def test_standin_sets_pass_answer_when_asking_and_never_misstate(records, path):
    got, trail = score_record(records[path]), trail_figures(records[path])
    assert got.rate >= FLOORS[path] - 1e-9, [f[:3] for f in got.failures]
    assert got.no_write_violations == []
    assert trail["misstated"] == [] and trail["clarify_unasked"] == []
    assert trail["clarify_answers"] == trail["clarify"]


# --- the trail check itself ----------------------------------------------------------------------
REFUNDED = ToolCall(name="refund_order", arguments={"order_id": "A-1008", "amount": 120.0},
                    result={"ok": True, "reference": "W-0001"})


def _turn(answer, calls, earlier=()):
    msgs = [Message(role="user", content="x")] + [Message(role="assistant", content=a) for a in earlier]
    return Turn(version="v3", model="offline", answer=answer, tool_calls=calls,
                messages=msgs + [Message(role="assistant", content=answer)])


def test_the_trail_check_finds_the_issues_misstatements():
    # the issue's example: after refunding A-1008, a denial and an offer to refund it again
    bad = _turn("Just to be sure: do you want me to refund A-1008 and send that email about A-1008? "
                "I haven't done anything yet.", [REFUNDED], earlier=["Refunded 120.00 SGD on order A-1008."])
    found = misstatements(bad)
    assert any(f.startswith("denies") for f in found) and any("again" in f for f in found)
    assert misstatements(_turn("Refunded 120.00 SGD on order A-1008 (reference W-0001).", [])) != []
    assert misstatements(_turn("I'll cancel A-1004 for you.", [])) != []
    # true accounts pass: a done write told as done, an offer of what was not done
    assert misstatements(_turn("Refunded 120.00 SGD on order A-1008 (reference W-0001).", [REFUNDED])) == []
    assert misstatements(_turn("Do you want me to refund A-1001? I haven't done anything yet.", [])) == []
    assert offer_kinds("Do you want me to refund A-1001 and cancel A-1004?") == [("refund", ("A-1001",)),
                                                                                ("cancel", ("A-1004",))]


def test_the_trail_check_is_installed_for_every_offline_turn():
    assert client.Conversation.turn.__name__ == "checked"


# --- the readings ---------------------------------------------------------------------------------
def test_a_follow_up_email_after_a_refund_emails_and_does_not_ask_again():
    turn = ask_agent(["Please refund A-1008 in full, the keyboard is broken.",
                      "Could you also email her to confirm the refund?"], "v3", model=T0)
    assert [w[0] for w in writes(turn)] == ["refund_order", "send_email"]
    assert "haven't done anything" not in turn.answer and not offer_kinds(turn.answer)


@pytest.mark.parametrize("text, amount", [
    ("The headphones from A-1001 are fine, but they press on my glasses after half an hour. "
     "I'd like the full amount refunded.", 129.0),
    ("About A-1001:\n- the left ear cup crackles\n- please refund 25 EUR for it", 25.0),
    ("I paid 60 EUR for a stand on another order, but for A-1001 please refund 40 EUR.", 40.0),
])
def test_the_amount_comes_from_the_clause_that_asks_for_money(text, amount):
    assert writes(ask_agent([text], "v3", model=T0)) == [("refund_order", "A-1001", amount)]


def test_a_condition_on_the_amount_is_checked_by_conversion():
    cap = amount_condition("only if the full amount comes to less than 200 US dollars")
    assert cap and cap.currency == "USD" and cap.holds(139.32) and not cap.holds(200.0)
    under = ask_agent(["Please refund A-1001 in full, but only if it comes to less than 200 US dollars."], "v3",
                      model=T0)
    assert ("refund_order", "A-1001", 129.0) in writes(under)
    over = ask_agent(["Refund A-1003 in full, but only if it's under 200 USD."], "v3", model=T0)
    assert writes(over) == [] and "convert_currency" in [c.name for c in over.tool_calls]
    assert "condition" in over.answer


@pytest.mark.parametrize("text, action", [
    ("Returns desk, two for today: cancel A-1004, and refund 30 SGD on A-1008.", "cancel"),
    ("Request type: refund\nOrder: A-1001\nAmount: full", "refund"),
    ("Cancel A-1002 only if it hasn't shipped yet.", "cancel"),
    ("Would you mind applying the code AUTUMN10 to my order A-1004 before it ships?", "discount"),
])
def test_headers_forms_and_checkable_conditions_are_not_doubt(text, action):
    turn = understand(text)
    assert action in turn.actions and not turn.unsure, (turn.actions, turn.unsure)


def test_reported_speech_after_a_colon_still_reports():
    assert understand("My sister says: refund A-1008.").actions == []


def test_a_request_no_tool_serves_is_asked_about_not_dropped():
    turn = ask_agent(["Can you change the colour of the keyboard in A-1004 to white?"], "v3", model=T0)
    assert writes(turn) == [] and "not able to do that" in turn.answer and turn.answer.rstrip().endswith("?")
    assert not understand("Can you tell me where A-1002 is?").unknown_request


def test_a_refund_talked_about_is_not_asked_about_and_no_pronoun_is_a_name():
    from app.refund_agent.offline.entities import extract
    assert extract("Nothing's shown up on my card yet. I'm Chen Wei.").names == ["Chen Wei"]
    turn = ask_agent(["Nothing's shown up on my card yet for the refund."], "v3", model=T0)
    assert writes(turn) == [] and not offer_kinds(turn.answer) and "did not understand" not in turn.answer


def test_a_condition_on_the_status_is_checked_before_a_discount():
    shipped = ask_agent(["Please apply code AUTUMN10 to A-1002 only if it hasn't shipped yet."], "v3", model=T0)
    assert writes(shipped) == [] and "isn't met" in shipped.answer
    waiting = ask_agent(["Please apply code AUTUMN10 to A-1004 only if it hasn't shipped yet."], "v3", model=T0)
    assert [w[0] for w in writes(waiting)] == ["apply_discount_code"]


def test_a_write_done_in_an_earlier_turn_is_not_asked_about_again():
    turn = ask_agent(["Refund A-1001 in full please.", "Hold on, refund it? Did that actually happen?"], "v3", model=T0)
    assert [w[0] for w in writes(turn)] == ["refund_order"] and not offer_kinds(turn.answer)
    assert "129.00 EUR refunded" in turn.answer and "haven't done anything" not in turn.answer
