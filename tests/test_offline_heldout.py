"""The offline model on customer messages nobody wrote for it, and the parts that read them.

The held-out set (tests/data/heldout_messages.jsonl) goes through the real agent (v3, the
in-process MCP server, temperature 0) and the code scorers: at least 95% of rows pass every
code scorer, and no negated or question-only message writes anything. The unit tests below
pin the parser: negation and its scope, mood, ids, amounts, languages and misspellings.
"""
import asyncio

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from app.refund_agent.offline import clauses
from app.refund_agent.offline.entities import extract
from app.refund_agent.offline.intents import understand
from app.refund_agent.offline.lexicon import correct, gloss
from app.refund_agent.offline.numbers import words_to_digits
from tests.offline_heldout import HELDOUT, NO_WRITE_TAGS, run_file, score_record
from turngate.sources.dataset import load_rows


@pytest.fixture(scope="module")
def heldout():
    return score_record(asyncio.run(run_file(HELDOUT, temperature=0.0)))


def test_heldout_set_covers_what_it_claims():
    rows = load_rows(HELDOUT)
    tags = [t for r in rows for t in r.inputs.tags]
    assert len(rows) >= 120
    assert tags.count("negated") >= 20 and tags.count("question-only") >= 20
    for needed in ("de", "fr", "es", "typo", "sms", "amount", "id-format", "multi-request", "vat"):
        assert needed in tags, needed


def test_heldout_rows_pass_at_temperature_zero(heldout):
    failed = "\n".join(f"{r} {sc}: {why[:120]}" for r, _, sc, why in heldout.failures)
    assert heldout.runs == len(load_rows(HELDOUT))
    assert heldout.rate >= 0.95, failed


def test_no_write_on_negated_or_question_only_messages(heldout):
    assert heldout.no_write_runs >= 40
    assert heldout.no_write_violations == []


def _record(tags, calls, writes=()):
    turn = {"tool_calls": [{"name": n, "arguments": {}, "result": {}, "error": None} for n in calls],
            "writes": list(writes)}
    return {"rows": [{"id": "r", "inputs": {"tags": tags}}],
            "runs": [{"row_id": "r", "trial": 0, "turn": turn,
                      "verdicts": {"refund_outcome": {"passed": True}, "policy_judge": {"passed": False}}}]}


def test_score_counts_a_write_on_a_negated_row_and_ignores_the_judge():
    bad = score_record(_record(["negated"], ["get_order", "refund_order"], [{"action": "refund"}]))
    assert bad.no_write_violations == [("r", 0, ["refund_order", "refund"])]
    good = score_record(_record(["negated"], ["get_order"]))
    assert good.no_write_violations == [] and good.passed == 1  # the judge's verdict is not counted
    plain = score_record(_record(["refund"], ["refund_order"], [{"action": "refund"}]))
    assert plain.no_write_runs == 0 and NO_WRITE_TAGS == {"negated", "question-only", "no-write", "ask"}


# --- negation and its scope ---------------------------------------------------------------
@pytest.mark.parametrize("text, declined", [
    ("Please do NOT refund A-1001.", "refund"),
    ("I'm not asking for a refund, just tell me what A-1001 cost", "refund"),
    ("No need to refund it, I'll keep it.", "refund"),
    ("Don't cancel A-1004 yet - is it still processing?", "cancel"),
    ("Hold off on the refund for A-1008.", "refund"),
    ("Never mind the refund on A-1001.", "refund"),
    ("Without refunding anything, what's the deadline for A-1003?", "refund"),
    ("Bitte storniere A-1004 nicht.", "cancel"),
    ("Ne remboursez pas la commande A-1001.", "refund"),
    ("No reembolse el pedido A-1001.", "refund"),
    ("Please refrain from refunding A-1001", "refund"), ("You shouldn't refund A-1001 yet", "refund"),
    ("A refund isn't necessary for A-1001", "refund"), ("I decided against a refund for A-1001", "refund"),
    ("Skip the refund for A-1001", "refund"), ("Cancel nothing, just tell me the status of A-1004", "cancel"),
    ("Refund? No thanks. A-1001 is fine.", "refund"), ("Refund A-1001 - actually no, don't.", "refund"),
    ("Pas besoin de rembourser A-1008, merci.", "refund"), ("Keine Erstattung für A-1001 bitte.", "refund"),
])
def test_negated_requests_write_nothing(text, declined):
    turn = understand(text)
    assert turn.actions == [] and declined in [a for a, _ in turn.declined]


@pytest.mark.parametrize("text, action", [
    ("I don't want order A-1004 anymore, please cancel it.", "cancel"),  # the "not" is about wanting the order
    ("I'm not happy with A-1001, refund it please.", "refund"),
    ("I didn't get my money back for A-1001, please refund it.", "refund"),  # a past event, not a refusal
    ("No I want a refund for A-1001", "refund"),  # "no" answers something else, then asks
    ("Refund A-1001, no questions asked.", "refund"), ("Don't forget to refund A-1001!", "refund"),
    ("Refund A-1001. No rush.", "refund"),
])
def test_negation_stops_at_its_clause(text, action):
    assert action in understand(text).actions


def test_before_you_do_anything_holds_every_write():
    turn = understand("Before you do anything, refund A-1001 and tell me its status.")
    assert turn.hold and turn.actions == []


def test_each_request_keeps_its_own_order_and_polarity():
    turn = understand("Refund A-1008 in full, but don't cancel A-1004.")
    assert turn.actions == ["refund"] and turn.targets["refund"] == ["A-1008"]
    assert turn.declined == [("cancel", ["A-1004"])]
    both = understand("Refund A-1001 in full and cancel A-1004.")
    assert both.targets["refund"] == ["A-1001"] and both.targets["cancel"] == ["A-1004"]


def test_a_question_in_its_own_clause_is_answered_next_to_the_write():
    turn = understand("Please refund A-1008. Also, what's the tracking number for A-1002?")
    assert turn.actions == ["refund"] and turn.side_questions == ["tracking"]
    assert turn.targets["tracking"] == ["A-1002"]
    follow_up = understand("Apply discount code AUTUMN10 to order A-1004. What's the new total?")
    assert follow_up.side_questions == []  # answered by the write itself


# --- mood ---------------------------------------------------------------------------------
@pytest.mark.parametrize("text, check", [
    ("Would I get a refund if I returned A-1001?", "refund_check"),
    ("If I sent back A-1005, would you refund it?", "refund_check"),
    ("Could A-1002 still be cancelled?", "cancel_check"),
    ("Is it possible to cancel A-1004?", "cancel_check"),
    ("Am I able to change the delivery address of A-1004?", "address_check"),
    ("Do you do refunds on opened items like A-1001?", "refund_check"),
    ("No quiero un reembolso del pedido A-1001.", None),
    ("Could you check whether A-1001 can be refunded?", "refund_check"),
    ("Can you tell me if I can still cancel A-1004?", "cancel_check"),
    ("What do I need to do to get a refund for A-1001?", "refund_check"),
    ("How can I get a refund for A-1001?", "refund_check"),
])
def test_hypothetical_writes_become_questions(text, check):
    turn = understand(text)
    assert turn.actions == [] and (check is None or check in turn.questions)


@pytest.mark.parametrize("text, action", [
    ("Could you refund A-1001 please?", "refund"), ("Can you cancel A-1004 for me?", "cancel"),
    ("Would you mind refunding A-1008?", "refund"), ("Can I get my money back for A-1001?", "refund"),
    ("Can I speak to a human about A-1005?", "escalate"), ("Is there any chance you could refund A-1001?", "refund"),
    ("Would it be possible to refund A-1001?", "refund"), ("I need A-1004 cancelled", "cancel"),
    ("Would you be able to cancel A-1004?", "cancel"),
])
def test_polite_questions_are_requests(text, action):
    assert action in understand(text).actions


# --- ids and amounts ------------------------------------------------------------------------
@pytest.mark.parametrize("text", ["A-1008", "a1008", "#1008", "order 1008", "A 1008", "order no. 1008"])
def test_order_id_spellings(text):
    assert extract(f"status of {text}?").orders == ["A-1008"]


@pytest.mark.parametrize("text, value, currency", [
    ("refund sixty euros", 60.0, "EUR"), ("twenty-five euros back", 25.0, "EUR"),
    ("one hundred and fifty pounds", 150.0, "GBP"), ("fifty bucks", 50.0, "USD"), ("100 quid", 100.0, "GBP"),
    ("€30 back", 30.0, "EUR"), ("£120", 120.0, "GBP"), ("$50", 50.0, "USD"), ("64,50 €", 64.5, "EUR"),
    ("1,200 dollars", 1200.0, "USD"), ("zwanzig Euro", 20.0, "EUR"), ("trente euros", 30.0, "EUR"),
    ("cincuenta euros", 50.0, "EUR"), ("EUR 15", 15.0, "EUR"),
])
def test_amounts_in_digits_words_and_symbols(text, value, currency):
    a = extract(words_to_digits(text)).amounts[0]
    assert (a.value, a.currency) == (value, currency)


def test_number_words_keep_positions_and_leave_small_words_alone():
    for text in ("refund sixty euros on A-1001", "this one please", "just this once", "three days late"):
        out = words_to_digits(text)
        assert len(out) == len(text)
    assert words_to_digits("this one please") == "this one please"
    assert words_to_digits("just this once") == "just this once"


@pytest.mark.parametrize("text, fraction", [("half the money back", 0.5), ("a third of it", 1 / 3),
                                            ("a quarter back", 0.25)])
def test_fractions(text, fraction):
    assert extract(text).fraction == pytest.approx(fraction)


# --- languages and misspellings ---------------------------------------------------------------
@pytest.mark.parametrize("text, action", [
    ("Bitte erstatten Sie die Bestellung A-1001.", "refund"), ("Stornieren Sie bitte A-1004.", "cancel"),
    ("Remboursez la commande A-1001.", "refund"), ("Annulez la commande A-1004.", "cancel"),
    ("Reembolse el pedido A-1001, por favor.", "refund"), ("Cancele el pedido A-1004.", "cancel"),
    ("Ich möchte mit einem Menschen sprechen.", "escalate"), ("Je voudrais parler à un humain.", "escalate"),
    ("Quiero hablar con una persona.", "escalate"),
    ("Changez l'adresse de livraison de A-1004 : 8 rue de Rivoli, 75004 Paris.", "address"),
])
def test_main_intents_in_german_french_spanish(text, action):
    assert action in understand(text).actions


@pytest.mark.parametrize("text, question", [
    ("Wie ist der Status meiner Bestellung A-1002?", "status"), ("Où en est ma commande A-1002 ?", "status"),
    ("¿Cuál es el estado del pedido A-1002?", "status"), ("Kann ich A-1001 noch zurückgeben?", "return_check"),
    ("Puis-je encore retourner A-1008 ?", "return_check"), ("whats the last day i can send back A-1002",
                                                             "return_check"),
    ("Wie viel Mehrwertsteuer kommt in Deutschland auf 89 EUR?", "tax"),
])
def test_questions_in_other_languages_and_styles(text, question):
    assert question in understand(text).questions


@pytest.mark.parametrize("typo, word", [("refnud", "refund"), ("cancle", "cancel"), ("adress", "address"),
                                        ("statsu", "status"), ("retrun", "return"), ("escalte", "escalate")])
def test_misspelt_intent_words(typo, word):
    assert correct(typo) == word


@pytest.mark.parametrize("word", ["charge", "chance", "older", "orders", "the", "stats"])
def test_real_words_are_not_corrected_into_intents(word):
    assert correct(word) in (word, "status") and correct("charge") == "charge"


def test_gloss_keeps_ids_and_numbers():
    assert "a-1001" in gloss("Bitte erstatten Sie A-1001 vollständig") and "in full" in gloss("vollständig")


def test_clause_spans_split_on_requests_not_on_lists():
    text = "Refund orders A-1001, A-1003 and A-1002 in full."
    assert len(clauses.spans(text)) == 1
    assert len(clauses.spans("Cancel A-1004 and what's the status of A-1002?")) == 2


@pytest.mark.parametrize("text, want", [
    ("Refund 30 EUR on A-1001 and 50 SGD on A-1008", {"A-1001": 30.0, "A-1008": 50.0}),
    ("A-1001: refund 20 EUR. A-1008: refund 30 SGD.", {"A-1001": 20.0, "A-1008": 30.0}),
    ("For A-1001 refund 10 EUR, for A-1008 refund 15 SGD", {"A-1001": 10.0, "A-1008": 15.0}),
    ("refund 40 euros on A-1001 and the full amount on A-1008", {"A-1001": 40.0, "A-1008": None}),
])
def test_each_amount_goes_to_its_own_order(text, want):
    from app.refund_agent.offline.request import build_request
    req = build_request([text])
    got = {oid: (a.value if (a := req.amount_for(oid)) else None) for oid in req.orders}
    assert got == want
    if want.get("A-1008") is None:
        assert req.full_for("A-1008") and not req.full_for("A-1001")


def test_plus_joins_two_requests():
    turn = understand("refund A-1001 + cancel A-1004")
    assert turn.targets["refund"] == ["A-1001"] and turn.targets["cancel"] == ["A-1004"]


def test_go_ahead_after_a_check_makes_the_write_and_thanks_does_not():
    from app.refund_agent.offline.request import build_request
    asked = "Would I get a refund if I returned A-1001?"
    assert build_request([asked]).actions == []
    assert build_request([asked, "Yes please, go ahead."]).actions == ["refund"]
    assert build_request([asked, "ok thanks"]).actions == []
    assert build_request([asked, "No, don't."]).actions == []


_WORDS = ("refund", "cancel", "not", "don't", "no", "A-1001", "a1008", "#1004", "order 1004", "sixty", "half",
          "euros", "£", "€", "$", "quid", "?", ".", ",", "-", "and", "but", "if", "would", "could", "please",
          "nicht", "ne", "pas", "cancele", "reembolse", "erstatten", "64,50", "one hundred and fifty", "twenty-five")


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(_WORDS), max_size=14).map(" ".join) | st.text(max_size=80))
def test_any_message_is_understood_without_error(text):
    from app.refund_agent.offline.request import build_request
    req = build_request([text])
    for oid in req.orders:
        req.amount_for(oid)
        req.full_for(oid)
    for intent in req.actions + req.questions:
        assert set(req.orders_for(intent)) <= set(req.orders) or not req.orders
    assert len(words_to_digits(text)) == len(text)


@settings(max_examples=100, deadline=None)
@given(st.sampled_from(["refund", "cancel"]), st.sampled_from(["A-1001", "a1008", "#1004", "order 1004"]),
       st.sampled_from(["Please do NOT {v} {o}.", "Don't {v} {o} yet.", "No need to {v} {o}.",
                        "I'm not asking you to {v} {o}.", "Before you do anything, {v} {o}?",
                        "Would I be able to {v} {o}?", "What would happen if I asked you to {v} {o}?"]))
def test_negated_or_hypothetical_templates_never_ask_for_a_write(verb, oid, template):
    assert understand(template.format(v=verb, o=oid)).actions == []
