"""The `list` operator's enumerations (turngate/mutate/enumerations.py): a condition listing its
allowed cases is narrowed (one case dropped) or widened (the family's nearest sibling added), on
any text, the same every time; prose that only looks like "X or Y" is left alone."""
from __future__ import annotations

from turngate.mutate.enumerations import enumeration_edits
from turngate.mutate.operators import mutants_of
from turngate.mutate.protocol import Mutable


def edited(sentence: str) -> list[str]:
    return [sentence[:a] + new + sentence[b:] for a, b, new, _ in enumeration_edits(sentence)]


def test_two_siblings_are_narrowed_each_way_and_widened_by_the_nearest():
    assert edited("Refunds only for orders that are delivered or shipped.") == [
        "Refunds only for orders that are shipped.", "Refunds only for orders that are delivered.",
        "Refunds only for orders that are delivered, shipped or processing."]


def test_a_list_of_codes_or_of_words_with_a_phrase_among_them():
    assert edited("We refund in EUR, USD or GBP.") == [
        "We refund in USD or GBP.", "We refund in EUR or GBP.", "We refund in EUR or USD.",
        "We refund in EUR, USD, GBP or CHF."]
    # "wrong item" is no family word; damaged and missing name the family
    assert edited("Only if it arrived damaged, wrong item or missing.") == [
        "Only if it arrived wrong item or missing.", "Only if it arrived damaged or missing.",
        "Only if it arrived damaged or wrong item.", "Only if it arrived damaged, wrong item, missing or defective."]


def test_a_lone_status_in_an_only_sentence_gets_an_alternative_written_like_it():
    assert edited('Only orders with status "processing" can be cancelled.') == [
        'Only orders with status "processing" or "shipped" can be cancelled.']
    assert edited("Refunds: only for delivered orders.") == ["Refunds: only for delivered or shipped orders."]


def test_no_enumeration_no_mutant():
    for sentence in ["You may refund up to 200 USD (convert first).",            # a unit, not a condition
                     "Orders can be cancelled or have their address changed.",     # prose "X or Y"
                     "Only send emails a person asked you to send to one named customer.",  # a lone record
                     "Refunds for delivered orders.",                              # a lone status, no "only"
                     "You may refund, and you may escalate.", "Answer briefly, with amounts and currencies.",
                     "Only if you may or must decide."]:                           # "may" is no month
        assert enumeration_edits(sentence) == [], sentence


def test_on_a_prompt_the_list_mutants_are_stable_and_only_where_a_list_is():
    text = """Policy:
- Refunds only for orders that are delivered or shipped.
- Be kind to everyone.
- Never guess order, customer or product facts."""
    base = Mutable(text)
    got = [m for m in mutants_of(base, {"list"})]
    assert [(m.line, m.description.split(":")[1].strip()) for m in got] == [
        (2, "list dropped 'delivered'"), (2, "list dropped 'shipped'"), (2, "list added 'processing'"),
        (4, "list dropped 'order'"), (4, "list dropped 'customer'"), (4, "list dropped 'product'"),
        (4, "list added 'account'")]
    assert got[2].edited.instructions == text.replace("delivered or shipped", "delivered, shipped or processing")
    assert [m.id for m in got] == [m.id for m in mutants_of(Mutable(text), {"list"})]  # the same text, the same ids
    assert mutants_of(Mutable("Policy:\n- Be kind to everyone.\n- Answer briefly."), {"list"}) == []
