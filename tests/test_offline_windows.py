"""Issue 37, item 4: a return window's length is read as a reader would write it ("30 days",
"14-day", "fourteen days", "2 weeks", "a fortnight"); a length it cannot read as days (months)
is warned about, never silently dropped. The number words of a policy line read whole
("fourteen" is 14, not "4teen"; "sixty" is 60, not "6ty")."""
from __future__ import annotations

import pytest

from app.refund_agent import versions
from app.refund_agent.offline.policy import ReturnWindow, _digits, parse_policy, report_unrecognised


def window(line: str) -> tuple[ReturnWindow | None, tuple]:
    policy = parse_policy("Policy:\n- " + line)
    rules = [r for r in policy.rules if isinstance(r, ReturnWindow)]
    return (rules[0] if rules else None), policy.unapplied


@pytest.mark.parametrize("line, days", [
    ("Refunds: only for delivered orders inside the 30-day return window.", 30),
    ("Refunds: only for delivered orders inside the 14-day return window.", 14),
    ("Refunds only within 14 days of delivery.", 14),
    ("Refunds only within fourteen days of delivery.", 14),
    ("Refunds only within 2 weeks of delivery.", 14),
    ("Refunds only within two weeks of delivery.", 14),
    ("Refunds only within a fortnight of delivery.", 14),
    ("Refunds only within a week of delivery.", 7),
    ("Only refund orders that arrived at most ninety days ago, inside the return window.", 90),
])
def test_a_window_length_in_any_usual_form_is_read_and_said_to_be_partly_applied(line, days):
    rule, unapplied = window(line)
    assert rule is not None and rule.required and rule.days == days, (line, rule)
    # the prompt gives no today's date: the length is applied only through the eligibility tool, and said
    assert any(f"the {days}-day window length is applied only where" in why for _, why in unapplied), unapplied


def test_a_window_in_months_is_warned_about_not_read_as_days():
    rule, unapplied = window("Refunds only within one month of delivery.")
    assert rule is not None and rule.required and rule.days is None
    assert [why for _, why in unapplied] == [
        "a window of '1 month' is not read as a number of days (months differ in length): write it in days"]


def test_two_lengths_in_one_line_say_only_the_first_is_read():
    rule, unapplied = window("Refunds only within 30 days of delivery, or 14-day for sale items.")
    assert rule.days == 30 and "several window lengths: only the first is read" in [w for _, w in unapplied]


def test_a_window_without_a_length_has_no_warning():
    rule, unapplied = window("Refunds: only for delivered orders inside the return window (check_return_eligibility).")
    assert rule is not None and rule.days is None and unapplied == ()


@pytest.mark.parametrize("words, digits", [("fourteen days", "14 days"), ("sixty dollars", "60 dollars"),
                                           ("seventy-five euros", "75 euros"), ("ninety days", "90 days"),
                                           ("two hundred US dollars", "200 US dollars"), ("eight", "8")])
def test_number_words_read_whole(words, digits):
    assert _digits(words) == digits


def test_a_version_prompt_with_a_14_day_window_is_warned_about():
    v3 = versions.load_version("v3").instructions
    edited = v3.replace("inside the return window", "inside the 14-day return window")
    assert edited != v3
    said = report_unrecognised(edited, where="v3-14-day")
    assert any("14-day return window" in line for line in said)  # a line it does not fully apply, named
    weeks = v3.replace("inside the return window", "within 2 weeks of delivery")
    assert any("within 2 weeks of delivery" in line for line in report_unrecognised(weeks, where="v3-2-weeks"))


@pytest.mark.parametrize("name", ["v1", "v2", "v3"])
def test_the_shipped_versions_read_no_length_and_no_new_warning(name):
    policy = parse_policy(versions.load_version(name).instructions)
    assert all(r.days is None for r in policy.rules if isinstance(r, ReturnWindow))
    assert not any("window" in why for _, why in policy.unapplied)
