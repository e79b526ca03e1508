"""Blind held-out messages (tests/data/heldout_messages_blind*.jsonl) through the real agent
(v3, temperature 0), and the reading rules they showed were missing: escalation asked for in
other words than "a human", lower-case country codes, a code-like word as a discount code,
a request after a condition, what an order holds, and a declined write next to a question.

blind2 was written before the rules changed (41/50 then, 50/50 after); blind3, blind4, blind5 and
blind6 after the first, second, third and eighth batch, each measured once and not tuned on (8/10,
9/10, 8/10, 8/10): their floors record those first figures, so a regression shows.
"""
import asyncio

import pytest

from app.refund_agent.client import ask_agent
from app.refund_agent.offline.entities import extract
from app.refund_agent.offline.intents import understand
from tests.offline_heldout import BLIND, BLIND2, BLIND3, BLIND4, BLIND5, BLIND6, run_file, score_record
from turngate.sources.dataset import load_rows

FLOORS = {BLIND: 1.0, BLIND2: 1.0, BLIND3: 0.8, BLIND4: 0.9, BLIND5: 0.8, BLIND6: 0.8}


@pytest.fixture(scope="module")
def blind():
    return {path: score_record(asyncio.run(run_file(path, temperature=0.0))) for path in FLOORS}


def test_blind2_is_varied_enough_to_mean_something():
    rows = load_rows(BLIND2)
    tags = [t for r in rows for t in r.inputs.tags]
    assert len(rows) >= 40 and len(load_rows(BLIND3)) >= 10
    assert tags.count("negated") >= 10 and tags.count("question-only") >= 10 and tags.count("escalate") >= 5
    for needed in ("de", "fr", "es", "typo", "sms", "conditional", "multi-request", "vat", "rude"):
        assert needed in tags, needed


@pytest.mark.parametrize("path", list(FLOORS), ids=lambda p: p.stem)
def test_blind_sets_pass_and_never_write_when_told_not_to(blind, path):
    got = blind[path]
    failed = "\n".join(f"{r} {sc}: {why[:120]}" for r, _, sc, why in got.failures)
    assert got.runs == len(load_rows(path))
    assert got.rate >= FLOORS[path], failed
    assert got.no_write_violations == []


# --- asking for a person ----------------------------------------------------------------
@pytest.mark.parametrize("text", [
    "I want to talk to a real person about A-1003.", "get me your supervisor. now.", "a manager please!",
    "can someone real look at A-1002?", "Put me through to a human being.", "I need an actual human",
    "Let me chat with one of your staff member please", "Is there somebody in charge I can talk to? I want your manager",
    "Je veux parler à un responsable.", "Quiero hablar con un supervisor.",
    "is there an actual human I can speak to?", "someone real, now!", "A real person. Now.",
])
def test_asking_for_a_person_is_escalation(text):
    assert "escalate" in understand(text).actions


@pytest.mark.parametrize("text", [
    "I'm the manager, please refund A-1001", "As a supervisor, please check A-1001",
    "Are you a real person?", "I don't need a human, just the status of A-1004",
    "This is the supervisor please, show me the notes for C-101",
    "I'll talk to someone at home and get back to you about A-1001",
    "I spoke to a real person yesterday and they said A-1001 would be refunded",
    "I'm a real person, not a bot, just refund A-1001", "is this a bot or a real person?",
    "What's the status of A-1004? A-1003 escalated yet?", "Would this be escalated if I complained?",
])
def test_speaking_as_or_about_a_person_is_not_escalation(text):
    assert "escalate" not in understand(text).actions


# --- countries, codes, conditions, contents -----------------------------------------------
@pytest.mark.parametrize("text, countries", [
    ("vat for a uk customer", ["GB"]), ("tax for sg on 100 sgd", ["SG"]), ("UK vat", ["GB"]),
    ("shipping to the usa", ["US"]), ("vat in the uk.", ["GB"]),
    ("de la commande", []), ("send it to us", []), ("es ist da", []), ("pt. 2 of my question", []),
])
def test_country_codes_in_any_case_unless_they_are_words(text, countries):
    assert extract(text).countries == countries


@pytest.mark.parametrize("text, action", [
    ("pls apply SAVE20 to A-1004", "discount"), ("use autumn10 on order A-1004", "discount"),
    ("If A-1008 is still within the return window, refund it.", "refund"),
    ("if A-1004 hasn't shipped yet, cancel it", "cancel"), ("As long as it's eligible, refund A-1001.", "refund"),
])
def test_requests_after_a_condition_or_with_a_bare_code(text, action):
    assert action in understand(text).actions


def test_a_condition_about_me_stays_a_question():
    turn = understand("If I return A-1001, would you refund it?")
    assert turn.actions == [] and "refund_check" in turn.questions
    assert understand("apply to A-1004 please").actions == []  # no code-like word, no discount


@pytest.mark.parametrize("text", ["Which product was in A-1004?", "what's in order 1001", "what did I buy in A-1008?"])
def test_what_an_order_holds_is_a_question(text):
    assert "contents" in understand(text).questions


@pytest.mark.parametrize("text", [
    "Ich will nur wissen, ob A-1004 schon verschickt wurde.", "Je voulais juste savoir si A-1004 est expédiée.",
    "Solo quiero saber si A-1004 fue enviado.", "I need to know whether A-1004 has been dispatched",
])
def test_wanting_to_know_whether_it_shipped_asks_the_status(text):
    assert "status" in understand(text).questions and understand(text).actions == []


def test_a_declined_write_is_acknowledged_and_its_side_question_answered():
    turn = ask_agent(["don't cancel A-1004, when does it ship?"], "v3", model="offline:temperature=0")
    assert [c.name for c in turn.tool_calls if c.name == "cancel_order"] == [] and turn.writes == []
    assert "won't cancel A-1004" in turn.answer and "hasn't shipped" in turn.answer
    what = ask_agent(["No need to cancel order 1004 anymore. Which product was in it again?"], "v3",
                     model="offline:temperature=0")
    assert "keyboard" in what.answer.lower() and what.writes == []
    # a question no pattern names still gets the order's facts, not only the acknowledgement
    other = ask_agent(["Don't refund A-1001. And then?"], "v3", model="offline:temperature=0")
    assert "delivered" in other.answer and other.writes == []


# --- found probing wordings after blind3 (measured again on blind4) ------------------------
@pytest.mark.parametrize("text, declined", [
    ("I'd rather you didn't refund A-1001", "refund"), ("Do not, under any circumstances, cancel A-1004", "cancel"),
    ("Never, for any reason, refund A-1008", "refund"),
])
def test_softened_and_stressed_negations_decline(text, declined):
    turn = understand(text)
    assert turn.actions == [] and declined in [a for a, _ in turn.declined]


@pytest.mark.parametrize("text", ["I'm thinking about cancelling A-1004", "I might want to cancel A-1004 later",
                                  "considering a refund on A-1001"])
def test_weighing_a_write_up_asks_for_nothing(text):
    assert understand(text).actions == []


@pytest.mark.parametrize("text, action", [
    ("please don't refund A-1001 but do cancel A-1004", "cancel"), ("can u cancel A-1004", "cancel"),
    ("Könnten Sie A-1008 erstatten?", "refund"), ("¿Podría cancelar el pedido A-1004?", "cancel"),
    ("Hol mir einen Vorgesetzten", "escalate"), ("Passez-moi un responsable", "escalate"),
    ("Je veux un humain", "escalate"), ("Pásame con un encargado", "escalate"),
    ("transfer me to a customer service rep", "escalate"), ("Let me speak with someone who can help", "escalate"),
])
def test_emphatic_texted_polite_and_foreign_requests(text, action):
    assert action in understand(text).actions


def test_the_us_is_a_country_and_where_an_order_is_asks_its_status():
    assert extract("sales tax in the us on 50 usd").countries == ["US"]
    turn = understand("cancel A-1004, and refund A-1008, and tell me where A-1002 is")
    assert turn.targets["status"] == ["A-1002"] and "status" in turn.side_questions
    assert "status" not in understand("What would the VAT be on A-1001 if it shipped to Germany?").questions


# --- third batch: orders left out, list openers, French/Spanish/German negation forms --------
@pytest.mark.parametrize("text, wanted, left_out", [
    ("Refund A-1008 but not A-1001", ["A-1008"], "A-1001"), ("cancel A-1004, not A-1002", ["A-1004"], "A-1002"),
    ("refund A-1001 not A-1008", ["A-1001"], "A-1008"), ("refund A-1001 and A-1008, except A-1008", ["A-1001"], "A-1008"),
])
def test_an_order_named_after_not_or_except_is_left_out(text, wanted, left_out):
    from app.refund_agent.offline.request import build_request
    turn = understand(text)
    action = turn.actions[0]
    assert turn.targets[action] == wanted and (action, [left_out]) in turn.declined
    assert left_out not in build_request([text]).orders_for(action)
    assert build_request(["refund everything except A-1003"]).orders_for("refund") == []


def test_leaving_an_order_out_writes_only_the_other_one():
    turn = ask_agent(["Refund A-1008 but not A-1001"], "v3", model="offline:temperature=0")
    refunded = [c.arguments["order_id"] for c in turn.tool_calls if c.name == "refund_order"]
    assert refunded == ["A-1008"]


@pytest.mark.parametrize("text, action, ids", [
    ("three things: cancel A-1004, what's the tracking number of A-1002, and how many points does C-100 have",
     "cancel", ["A-1004"]),
    ("1) cancel A-1004 2) status of A-1002", "cancel", ["A-1004"]),
    ("Firstly refund A-1001, secondly is A-1002 late?", "refund", ["A-1001"]),
    ("A-1004 bitte nicht stornieren, aber A-1008 erstatten", "refund", ["A-1008"]),
])
def test_list_openers_and_verb_last_clauses_keep_their_request(text, action, ids):
    turn = understand(text)
    assert turn.actions == [action] and turn.targets[action] == ids


@pytest.mark.parametrize("text", [
    "N'annulez surtout pas A-1004", "Ne me remboursez pas A-1001", "pas de remboursement pour A-1008",
    "sin reembolso por favor, ¿dónde está A-1002?", "Bitte nichts erstatten, wo ist A-1002?",
])
def test_negation_forms_in_french_spanish_german(text):
    turn = understand(text)
    assert turn.actions == [] and turn.declined


@pytest.mark.parametrize("text, action", [
    ("Je n'ai pas reçu A-1002, remboursez-moi", "refund"), ("Ich habe nichts bekommen, bitte erstatten Sie A-1001",
                                                           "refund"),
    ("I did not receive A-1002, refund it", "refund"),
])
def test_a_negated_complaint_before_a_request_does_not_decline_it(text, action):
    assert action in understand(text).actions


# --- fourth batch: ids as people type them --------------------------------------------------
@pytest.mark.parametrize("text, orders", [
    ("Order A\u20111004", ["A-1004"]), ("orders 1001 and 1008", ["A-1001", "A-1008"]),
    ("A-1001, 1003 & 1008", ["A-1001", "A-1003", "A-1008"]), ("Bestellungen 1001 und 1008", ["A-1001", "A-1008"]),
    ("refund A-1001 and 1840 points", ["A-1001"]), ("A-1001 and 2026-10-28", ["A-1001"]),
    ("refund A-1001, 1000 EUR", ["A-1001"]),
])
def test_order_ids_in_lists_and_odd_dashes(text, orders):
    assert extract(text).orders == orders


@pytest.mark.parametrize("text, customers", [("customer 102", ["C-102"]), ("c\u2011102", ["C-102"]),
                                             ("customer 100 points", []), ("customer for 12 years", [])])
def test_customer_ids_written_out(text, customers):
    assert extract(text).customers == customers


def test_a_list_of_orders_after_not_is_left_out_whole():
    turn = understand("Refund A-1008 but not orders 1001 and 1003")
    assert turn.targets["refund"] == ["A-1008"] and ("refund", ["A-1001", "A-1003"]) in turn.declined


# --- fifth batch: wanting to know vs wanting it done; soft requests ----------------------------
@pytest.mark.parametrize("text, check", [
    ("I need to know if I can still cancel A-1004 before I decide", "cancel_check"),
    ("I would like to know whether a refund on A-1001 is possible", "refund_check"),
])
def test_wanting_to_know_whether_a_write_is_possible_is_a_question(text, check):
    turn = understand(text)
    assert turn.actions == [] and check in turn.questions


@pytest.mark.parametrize("text, action", [
    ("I'd appreciate it if you refunded A-1001", "refund"), ("I'd be grateful if you cancelled A-1004", "cancel"),
    ("Any way you could cancel A-1004 for me?", "cancel"), ("How about cancelling A-1004?", "cancel"),
    ("Mind cancelling A-1004?", "cancel"),
])
def test_soft_requests_are_requests(text, action):
    assert action in understand(text).actions


def test_if_you_did_it_would_i_is_still_a_question():
    assert understand("If you cancelled A-1004, would I get a refund?").actions == []


# --- seventh batch: answering the agent's check -------------------------------------------
@pytest.mark.parametrize("reply, wanted", [
    ("sounds good, go for it", ["refund"]), ("perfect, please do", ["refund"]), ("sí, por favor", ["refund"]),
    ("great", []), ("ok thanks", []), ("d'accord, merci", []), ("fine, I'll keep it then", []),
    ("hmm no, leave it", []),
])
def test_a_reply_to_a_check_makes_the_write_only_when_it_says_go(reply, wanted):
    from app.refund_agent.offline.request import build_request
    assert build_request(["Would I get a refund if I returned A-1001?", reply]).actions == wanted


# --- eighth batch: reported content, addresses after a colon, more write wordings -------------
def test_what_an_email_should_say_is_not_a_request():
    turn = understand("email Ana Silva (C-100) that her refund went through")
    assert turn.actions == ["email_send"] and turn.questions == []
    both = understand("Refund A-1001 and email her that it's done")
    assert both.actions == ["refund", "email_send"]


@pytest.mark.parametrize("text, action", [
    ("please send A-1004 to my office instead: 1 Marina Blvd, Singapore 018989", "address"),
    ("wrong address on A-1004, it should be 3 Orchard Turn, 238801", "address"),
    ("pls put AUTUMN10 on order A-1004", "discount"), ("log a complaint for C-101 about the laptop screen",
                                                        "ticket_create"),
])
def test_more_write_wordings(text, action):
    assert action in understand(text).actions
    assert understand("the address of A-1004 is correct").actions == []


def test_an_address_after_should_be_is_the_new_one():
    turn = ask_agent(["wrong address on A-1004, it should be 3 Orchard Turn, 238801"], "v3",
                     model="offline:temperature=0")
    calls = [c.arguments for c in turn.tool_calls if c.name == "update_shipping_address"]
    assert calls and "Orchard Turn" in calls[0]["address"]


# --- ninth batch: asking why something wasn't done ---------------------------------------------
@pytest.mark.parametrize("text", [
    "Why wasn't A-1005 refunded?", "how come A-1005 wasn't refunded?", "Warum wurde A-1005 nicht erstattet?",
    "Pourquoi A-1005 n'a pas été remboursée ?", "¿Por qué no me reembolsaron A-1005?",
])
def test_asking_why_it_was_not_done_declines_nothing_and_writes_nothing(text):
    turn = understand(text)
    assert turn.actions == [] and turn.declined == []
    assert understand("Bitte storniere A-1004 nicht.").declined == [("cancel", ["A-1004"])]
