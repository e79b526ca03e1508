"""The dataset schema, its loaders, and the shipped Northwind dataset."""
import json
from pathlib import Path

import pytest

from app.refund_agent.gate_target import northwind_tool_names
from evals.scorers import allowed
from turngate.sources.dataset import (
    DatasetError,
    Expect,
    Row,
    load_rows,
    matches,
    normalise,
    row_to_datapoint,
    row_to_json,
    rows_from_datapoints,
    select,
)

DATASET = Path(__file__).resolve().parent.parent / "datasets" / "northwind.jsonl"

SEED_IDS = {
    "status", "eta", "tracking", "usd_total", "restock", "points", "list_orders", "tier",
    "not_returnable", "refund_ok", "cancel_ok", "address_ok", "fx", "tax", "hours", "tickets",
    "keyboard", "find_by_email", "discount", "ticket_high", "undelivered", "dana_total",
    "return_days", "delivery_days",
    "refund_over_limit", "refund_expired", "internal_notes", "mass_email", "cancel_delivered",
    "injection", "address_delivered", "delete_account",
    "apology", "account_brief", "buy_laptop", "explain_policy", "why_not_shipped", "budget_pick",
    "dana_history", "return_left",
}


def good(id="a", **expect):
    return {"id": id, "inputs": {"message": "Refund A-1001.", "tags": ["refund"], "expect": expect},
            "expected_output": "Refunds A-1001."}


def write(tmp_path, *lines):
    path = tmp_path / "rows.jsonl"
    path.write_text("\n".join(line if isinstance(line, str) else json.dumps(line) for line in lines) + "\n")
    return path


# --- the shipped dataset -----------------------------------------------------------

@pytest.fixture(scope="module")
def rows():
    return load_rows(DATASET)


def test_real_dataset_loads_with_the_promised_coverage(rows):
    assert len(rows) >= 65
    ids = {r.id for r in rows}
    assert SEED_IDS <= ids
    assert {r.id for r in rows if r.inputs.source == "seed"} == SEED_IDS
    manual_refund = [r for r in rows if r.inputs.source == "manual" and "refund" in r.inputs.tags]
    assert len(manual_refund) >= 22
    assert len([r for r in rows if r.inputs.turns]) >= 3


def test_every_expect_field_is_exercised(rows):
    used = set().union(*(r.expect.model_fields_set for r in rows))
    assert used >= {"refunds", "allowed_refunds", "escalate", "calls", "forbid", "answer", "leak", "rubric"}
    assert {r.expect.escalate for r in rows} >= {True, False}
    # allowed_refunds must somewhere allow more than must succeed, or the field is untested.
    assert any(allowed(r.expect) != {x.order_id for x in r.expect.refunds} for r in rows)


def test_seed_kinds_and_key_rows_translate_faithfully(rows):
    by_id = {r.id: r for r in rows}
    assert {by_id[i].kind for i in SEED_IDS} == {"golden", "refuse", "open"}
    over = by_id["refund_over_limit"].expect
    assert over.refunds == [] and over.escalate is True
    assert [c.name for c in over.calls] == ["escalate_to_human"]
    ok = by_id["refund_ok"].expect
    assert [(r.order_id, r.amount) for r in ok.refunds] == [("A-1001", 129.0)]
    assert ok.calls[0].args == {"order_id": "A-1001", "amount": 129.0}
    assert by_id["usd_total"].expect.answer == [["1141.73"]]
    assert by_id["keyboard"].expect.answer[1][0] == "3 "  # the seed's trailing space survives
    assert by_id["apology"].expect.rubric.startswith("Apologises")


def test_currency_row_wants_the_order_currency_amount(rows):
    row = next(r for r in rows if r.id == "refund_currency_a1008")
    assert [(r.order_id, r.amount) for r in row.expect.refunds] == [("A-1008", 120.0)]
    assert ["120"] in row.expect.answer


# --- malformed files -----------------------------------------------------------------

@pytest.mark.parametrize("line, fragment", [
    ('{"id": "b", "inputs": ', "bad JSON (Expecting value"),
    ("// a comment", "bad JSON"),
    ('{"id": "b", "inputs": {"message": "x"}, "expected_output": NaN}', "bad JSON"),
    ("[1, 2]", "expected a JSON object, got list"),
    ({"inputs": {"message": "x"}, "expected_output": "y"}, "missing id"),
    (good("b", refundz=[]), "inputs.expect.refundz: unknown key"),
    (good("b", escalate="yes"), "inputs.expect.escalate: Input should be a valid boolean"),
    (good("b", refunds=[{"amount": 3}]), "inputs.expect.refunds.0.order_id: Field required"),
    (good("b", forbid=["refund_ordr"]), "unknown tool 'refund_ordr' (did you mean 'refund_order'?)"),
    (good("b", refunds=[{"order_id": "A-1001"}], forbid=["refund_order"]), "refund_order is forbidden"),
    ({**good("b"), "expected_output": 3}, "expected_output: Input should be a valid string"),
    ({**good("b"), "id": "has space"}, "id: id 'has space' must be"),
])
def test_bad_row_is_reported_with_path_and_line(tmp_path, line, fragment):
    path = write(tmp_path, good("a"), line)
    with pytest.raises(DatasetError) as err:
        load_rows(path, tool_names=northwind_tool_names())  # the tool list the Northwind server serves
    message = str(err.value)
    assert message.startswith(f"{path}:2: ")
    assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize("inputs, got", [
    ({"message": "x", "turns": ["x", "y"], "tags": ["multi-turn"]}, "both"),
    ({"tags": []}, "neither"),
])
def test_exactly_one_of_message_and_turns(tmp_path, inputs, got):
    path = write(tmp_path, {"id": "a", "inputs": inputs, "expected_output": "y"})
    with pytest.raises(DatasetError, match=rf":1: inputs: exactly one of 'message' or 'turns' .*got {got}"):
        load_rows(path)


def test_duplicate_id_names_both_lines(tmp_path):
    path = write(tmp_path, good("a"), good("b"), "", good("a"))
    with pytest.raises(DatasetError) as err:
        load_rows(path)
    assert str(err.value) == f"{path}:4: duplicate id 'a' (first on line 1)"


def test_blank_lines_are_skipped_but_counted(tmp_path):
    path = write(tmp_path, "", good("a"), "   ", good("b"))
    assert [r.id for r in load_rows(path)] == ["a", "b"]
    path = write(tmp_path, "", "", good("a"), "{oops")
    with pytest.raises(DatasetError, match=r":4: bad JSON"):
        load_rows(path)


def test_empty_file_has_no_rows(tmp_path):
    path = write(tmp_path, "", "")
    with pytest.raises(DatasetError, match=rf"^{path}:1: no rows$"):
        load_rows(path)


def test_missing_file_is_a_dataset_error(tmp_path):
    with pytest.raises(DatasetError, match="cannot read"):
        load_rows(tmp_path / "nope.jsonl")


# --- schema helpers --------------------------------------------------------------

def test_matches_numbers_within_a_cent():
    assert matches({"amount": 129.0}, {"amount": 129.0})
    assert matches({"amount": 129.01}, {"amount": 129.0})
    assert matches({"amount": 100.01}, {"amount": 100.0})  # 0.010000000000005 in floats: still "within"
    assert matches({"amount": "129.00"}, {"amount": 129})
    assert not matches({"amount": 129.02}, {"amount": 129.0})
    assert not matches({"amount": 88.8}, {"amount": 120.0})
    assert not matches({"amount": "lots"}, {"amount": 129.0})
    assert not matches({"amount": float("nan")}, {"amount": 129.0})


def test_matches_strings_as_case_insensitive_substrings():
    assert matches({"order_id": "a-1001", "amount": 5}, {"order_id": "A-1001"})
    assert matches({"address": "12 Orchard Road, Singapore"}, {"address": "orchard"})
    assert not matches({"order_id": "A-1002"}, {"order_id": "A-1001"})
    assert not matches({}, {"order_id": "A-1001"})
    assert matches({"order_id": "A-1001"}, {})


def test_normalise_like_the_seed_grader():
    assert normalise("Total: 1,141.73 USD") == "total: 1141.73 usd"
    assert normalise("1,234,567") == "1234567"
    assert normalise("A\u20111001 \u2013 A\u20141002") == "a-1001 - a-1002"
    assert normalise("12,5 and 3, 4") == "12,5 and 3, 4"  # not thousands separators


def test_expect_defaults_and_helpers():
    row = Row.model_validate(good(refunds=[{"order_id": "a-1001", "amount": 129}],
                                  answer=[["1,141.73", "A\u20111005"]], leak=["Chargeback"]))
    e = row.expect
    assert allowed(e) == {"A-1001"}
    assert e.answer == [["1141.73", "a-1005"]] and e.leak == ["chargeback"]
    assert e.rubric_for(row) == "Refunds A-1001."
    assert e.escalate is None and e.calls == [] and e.forbid == []
    explicit = Expect(allowed_refunds=["A-1001", "A-1003"], rubric="judge this")
    assert allowed(explicit) == {"A-1001", "A-1003"}
    assert explicit.rubric_for(row) == "judge this"
    assert allowed(Expect()) == set()


def test_callspec_accepts_a_bare_name():
    e = Expect.model_validate({"calls": ["get_order", {"name": "refund_order", "args": {"amount": 1}}]})
    assert [(c.name, c.args) for c in e.calls] == [("get_order", {}), ("refund_order", {"amount": 1.0})]


def test_kind_and_user_turns():
    single = Row.model_validate({"id": "a", "inputs": {"message": "hi", "tags": ["refund", "refuse"]},
                                 "expected_output": "x"})
    assert single.kind == "refuse" and single.user_turns() == ["hi"]
    multi = Row.model_validate({"id": "b", "inputs": {"turns": ["a", "b"], "tags": ["refund", "multi-turn"]},
                                "expected_output": "x"})
    assert multi.kind == "multi-turn" and multi.user_turns() == ["a", "b"]
    assert Row.model_validate({"id": "c", "inputs": {"message": "hi"}, "expected_output": "x"}).kind == "other"


# --- selection ---------------------------------------------------------------------

def test_select(rows):
    assert [r.id for r in select(rows, only=["tier", "status"])] == ["status", "tier"]  # dataset order
    assert all("escalate" in r.inputs.tags for r in select(rows, tags=["escalate"]))
    assert len(select(rows, tags="multi-turn")) >= 3
    assert len(select(rows, limit=5)) == 5
    assert select(rows) == rows


def test_select_rejects_unknown_ids_and_tags(rows):
    with pytest.raises(DatasetError, match=r"--only: unknown row id 'refund_okk' \(did you mean 'refund_ok'\?\)"):
        select(rows, only=["status", "refund_okk"])
    with pytest.raises(DatasetError, match="--tags: no row has tag 'nope'"):
        select(rows, tags=["nope"])
    with pytest.raises(DatasetError, match="--limit"):
        select(rows, limit=0)


# --- evaluatorq / orq.ai ------------------------------------------------------------

def test_datapoint_roundtrip(rows):
    points = [row_to_datapoint(r) for r in rows]
    assert points[0].inputs["id"] == rows[0].id
    assert points[0].expected_output == rows[0].expected_output
    back = rows_from_datapoints(points, "northwind")
    assert back == rows
    # Scorers tell "refunds: [] stated" from "refunds not stated"; the roundtrip keeps that.
    assert [r.expect.model_fields_set for r in back] == [r.expect.model_fields_set for r in rows]
    assert "refunds" not in row_to_datapoint(rows[0]).inputs["expect"]  # 'status' states no refunds


def test_json_line_roundtrip(tmp_path, rows):
    path = tmp_path / "copy.jsonl"
    path.write_text("".join(row_to_json(r) + "\n" for r in rows))
    back = load_rows(path)
    assert back == rows
    assert [r.expect.model_fields_set for r in back] == [r.expect.model_fields_set for r in rows]


def test_datapoint_errors_name_dataset_and_row():
    ok = {"inputs": {"id": "a", "message": "hi"}, "expected_output": "x"}
    assert rows_from_datapoints([ok, {**ok, "inputs": {"message": "hi"}, "id": "b"}], "d1")[1].id == "b"
    with pytest.raises(DatasetError, match=r"^dataset d1 row 2: missing id$"):
        rows_from_datapoints([ok, {"inputs": {"message": "hi"}, "expected_output": "x"}], "d1")
    with pytest.raises(DatasetError, match=r"^dataset d1 row 2: inputs.expect.refundz: unknown key$"):
        rows_from_datapoints([ok, {"inputs": {"id": "b", "message": "hi", "expect": {"refundz": 1}},
                                   "expected_output": "x"}], "d1")
    with pytest.raises(DatasetError, match=r"^dataset d1 row 2: duplicate id 'a' \(first on row 1\)$"):
        rows_from_datapoints([ok, ok], "d1")
    with pytest.raises(DatasetError, match="no rows"):
        rows_from_datapoints([], "d1")


def test_tool_names_come_from_the_target_not_the_dataset_module(tmp_path):
    """No tool list is kept in evals: without one a tool name is not checked; with the
    server's list a typo is an error at load time."""
    path = write(tmp_path, good("a", forbid=["refund_ordr"]))
    assert load_rows(path)[0].expect.forbid[0].name == "refund_ordr"
    assert "refund_order" in northwind_tool_names() and len(northwind_tool_names()) >= 20
    with pytest.raises(DatasetError, match="unknown tool 'refund_ordr'"):
        load_rows(path, tool_names=northwind_tool_names())
    assert load_rows(path, tool_names={"refund_ordr"})[0].id == "a"
