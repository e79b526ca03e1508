"""Act only when sure (issue 22): the offline model writes only on a request it is sure of, asks
otherwise, and a following yes makes the write; policy lines it cannot apply are warned about.

sure_dev.jsonl was written before the change (26/33, 5 writes on no-write rows then) and tuned
on; sure_fresh.jsonl after it, measured once (19/22, no writes on no-write rows): the floors
keep those figures from regressing (docs/offline-model.md, scripts/offline_figures.py).
"""
import asyncio

import pytest

from app.refund_agent.client import ask_agent
from app.refund_agent.offline import certainty
from app.refund_agent.offline.intents import understand
from app.refund_agent.offline.policy import ChangeForbidden, parse_policy, report_unrecognised
from app.refund_agent.versions import Version, load_version
from tests.offline_heldout import BLIND, run_file, score_record
from turngate.sources.dataset import load_rows

DEV, FRESH = BLIND.with_name("sure_dev.jsonl"), BLIND.with_name("sure_fresh.jsonl")
FLOORS = {DEV: 33 / 33, FRESH: 19 / 22}
T0 = "offline:temperature=0"
WRITE_TOOLS = {"refund_order", "cancel_order", "update_shipping_address", "apply_discount_code", "create_ticket",
               "escalate_to_human", "send_email"}


@pytest.fixture(scope="module")
def scored():
    return {p: score_record(asyncio.run(run_file(p, temperature=0.0))) for p in FLOORS}


@pytest.mark.parametrize("path", list(FLOORS), ids=lambda p: p.stem)
def test_sure_sets_pass_and_never_write_when_none_is_asked(scored, path):
    got = scored[path]
    assert got.runs == len(load_rows(path)) and got.no_write_runs >= 10
    assert got.rate >= FLOORS[path] - 1e-9, [f[:3] for f in got.failures]
    assert got.no_write_violations == []


def writes(turn):
    return [c.name for c in turn.tool_calls if c.name in WRITE_TOOLS]


# --- the principle: cues lower the score, unknown words too; plain requests stay sure -------------
@pytest.mark.parametrize("text", [
    "Refund A-1008 please.", "Could you cancel A-1004?", "I want a refund for A-1008, it broke.",
    "cancel a1004 pls thx", "A-1004 cancel", "If A-1004 hasn't shipped yet, cancel it.",
    "I'd accept 25 euros back on A-1001.", "My manager approved a full refund for A-1003 - please process it.",
])
def test_plain_requests_are_sure(text):
    assert understand(text).actions and not understand(text).unsure


@pytest.mark.parametrize("text", [
    "The last thing I want is a refund for A-1001.", "Please refund A-1008, said no one ever.",
    "My cousin reckons I should get A-1008 refunded.", "Maybe cancel A-1004?", "Refund A-1008?",
    "Please cancel A-1004 if my wife agrees.", "Refund A-1008. Not!",
    # words the reader has no rule for, between the frame and the act: not a default to acting
    "Could you hypothetically speculatively refund A-1008?",
])
def test_cues_and_unknown_constructions_lower_the_score_below_acting(text):
    turn = understand(text)
    # asked about instead ("Maybe cancel A-1004?" is read as whether it can be) is no write either
    asked = turn.unsure or any(q.endswith("_check") for q in turn.questions)
    assert not turn.actions and asked, (turn.actions, turn.unsure, turn.questions)


def test_each_cue_lowers_the_score_and_none_raises_it():
    plain = certainty.judge("please refund a-1008", (7, 13), request=True, message_gloss="please refund a-1008",
                            action="refund")
    assert plain.sure and plain.score == 1.0
    for gloss, start in [("please maybe refund a-1008", 13), ("please refund a-1008, lol", 7),
                         ("please whatchamacallit thingamajig refund a-1008", 34)]:
        how = certainty.judge(gloss, (start, start + 6), request=True, message_gloss=gloss, action="refund")
        assert how.score < plain.score and how.why


def test_an_unsure_write_asks_writes_nothing_and_answers_the_side_question():
    turn = ask_agent(["The last thing I want is a refund for A-1001. When was it delivered?"], "v3", model=T0)
    assert writes(turn) == [] and "do you want me to refund A-1001?" in turn.answer
    assert "2026-09-28" in turn.answer


def test_yes_to_the_clarifying_question_makes_the_write_and_no_does_not():
    yes = ask_agent(["Maybe cancel A-1004?", "yes please"], "v3", model=T0)
    assert writes(yes) == ["cancel_order"]
    no = ask_agent(["Please refund A-1008, said no one ever.", "no"], "v3", model=T0)
    assert writes(no) == [] and "won't refund A-1008" in no.answer
    typo = ask_agent(["refund A-1O08 please", "yes"], "v3", model=T0)
    assert [c.arguments.get("order_id") for c in typo.tool_calls if c.name == "refund_order"] == ["A-1008"]


def test_an_unreadable_message_gets_an_honest_answer():
    turn = ask_agent(["Proszę anulować zamówienie A-1004."], "v3", model=T0)
    assert writes(turn) == [] and "did not understand" in turn.answer
    assert "did not understand" not in ask_agent(["Annulla l'ordine A-1004, per favore."], "v3", model=T0).answer


def test_a_correction_uses_the_corrected_value():
    turn = ask_agent(["Refund 50 SGD on A-1008, sorry I mean 30 SGD."], "v3", model=T0)
    assert [c.arguments["amount"] for c in turn.tool_calls if c.name == "refund_order"] == [30.0]
    turn = ask_agent(["Refund A-1001, sorry I mean A-1008."], "v3", model=T0)
    assert [c.arguments["order_id"] for c in turn.tool_calls if c.name == "refund_order"] == ["A-1008"]


def test_a_side_question_is_answered_next_to_an_escalated_write():
    turn = ask_agent(["Refund A-1003 in full, and when was it delivered?"], "v3", model=T0)
    assert "escalate_to_human" in writes(turn) and "2026-09-24" in turn.answer


# --- policy lines it cannot apply ------------------------------------------------------------
V2 = load_version("v2").instructions
W14 = V2.replace("still inside the return window\n  (check_return_eligibility)",
                 "delivered less than 14 days ago\n  (check_return_eligibility)")


def test_a_window_length_it_cannot_apply_is_warned_about_and_used_where_it_can(warnings_seen):
    assert W14 != V2 and parse_policy(W14).window_days == 14
    assert parse_policy(W14).unapplied and parse_policy(V2).unapplied == ()
    report_unrecognised(W14, where="w14")
    assert any("14-day window length" in w for w in warnings_seen)
    # without today's date the tool's 30-day "eligible" does not settle a 14-day window: no refund
    unsure = ask_agent(["Refund A-1008 in full."], Version.from_prompt(W14, name="w14"), model=T0)
    assert writes(unsure) == [] and "14-day" in unsure.answer
    dated = Version.from_prompt(W14 + "\nToday is 2026-10-15.", name="w14d")
    assert parse_policy(dated.instructions).unapplied == ()
    assert writes(ask_agent(["Refund A-1001 in full."], dated, model=T0)) == []  # ended 2026-10-12
    assert writes(ask_agent(["Refund A-1008 in full."], dated, model=T0)) == ["refund_order"]


@pytest.mark.parametrize("line", ["Orders are never cancelled in the chat.",
                                  "Never cancel an order, whatever its status."])
def test_a_flat_ban_is_read_as_a_ban_not_as_processing_only(line):
    policy = parse_policy(line)
    assert ChangeForbidden("cancel") in policy.rules and policy.cancel_forbidden
    assert not parse_policy('Only orders with status "processing" can be cancelled.').cancel_forbidden
    prompt = V2.replace('- Only orders with status "processing" can be cancelled or have their address changed.\n',
                        f"- {line}\n")
    turn = ask_agent(["Cancel A-1004 please."], Version.from_prompt(prompt, name="ban"), model=T0)
    assert writes(turn) == [] and "don't allow" in turn.answer


@pytest.fixture
def warnings_seen():
    from loguru import logger
    seen: list[str] = []
    sink = logger.add(lambda m: seen.append(str(m)), level="WARNING")
    yield seen
    logger.remove(sink)
