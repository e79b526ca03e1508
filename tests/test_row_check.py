"""The Northwind agent rejects dataset rows naming orders, customers or SKUs its world lacks,
at load time, with the row's line, before any agent runs."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from app.refund_agent.row_check import row_problems
from tests import prefork
from turngate.sources.dataset import DatasetError, Row, load_rows

REPO = Path(__file__).resolve().parents[1]


def row(**expect) -> Row:
    return Row.model_validate({"id": "r", "inputs": {"message": "hi", "expect": expect}, "expected_output": "x"})


def test_every_committed_row_names_only_what_the_world_has():
    rows = load_rows(REPO / "datasets" / "northwind.jsonl")
    assert {r.id: row_problems(r) for r in rows if row_problems(r)} == {}


@pytest.mark.parametrize("expect, problem", [
    ({"refunds": [{"order_id": "A-9999"}]}, "unknown order A-9999 in expect.refunds"),
    ({"refunds": [{"order_id": "A-1001", "amount": 130.0}]}, "more than the 129 left to refund"),
    ({"refunds": [{"order_id": "A-1007"}], "allowed_refunds": ["A-1007"]}, None),  # no amount: not checked
    ({"refunds": [{"order_id": "A-1007", "amount": 10.0}]}, "more than the 0 left to refund"),
    ({"allowed_refunds": ["A-1001", "a-2002"]}, "unknown order A-2002 in expect.allowed_refunds"),
    ({"calls": [{"name": "get_customer", "args": {"customer_id": "C-999"}}]}, "unknown customer C-999"),
    ({"calls": [{"name": "check_stock", "args": {"sku": "SKU-XX9"}}]}, "unknown SKU SKU-XX9"),
    ({"calls": [{"name": "get_order", "args": {"order_id": "A-1004"}}]}, None),
    ({"calls": [{"name": "list_orders", "args": {"customer_id": "c-102"}}]}, None),  # matched case-insensitively
    ({"forbid": [{"name": "refund_order", "args": {"order_id": "A-9999"}}]}, None),  # a meaningful ban
    ({"refunds": [{"order_id": "A-1001", "amount": 129.0}]}, None),
])
def test_row_problems_name_what_is_missing(expect, problem):
    found = row_problems(row(**expect))
    if problem is None:
        assert found == []
    else:
        assert len(found) == 1 and problem in found[0]


def test_the_northwind_target_rejects_the_row_with_its_line(tmp_path):
    from app.refund_agent.gate_target import RefundAgent
    from turngate.jobs.target import TargetOptions

    good = json.loads((REPO / "datasets" / "northwind.jsonl").read_text().splitlines()[0])
    bad = {"id": "ghost", "inputs": {"message": "Refund A-9999", "expect": {"refunds": [{"order_id": "A-9999"}]}},
           "expected_output": "refunds it"}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(good) + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(DatasetError) as err:
        load_rows(path, check_row=RefundAgent(TargetOptions(version="v3")).validate_row)
    assert str(err.value) == f"{path}:2: unknown order A-9999 in expect.refunds"


def test_the_gate_refuses_such_a_dataset_before_any_agent_call(tmp_path):
    bad = {"id": "ghost", "inputs": {"message": "Refund A-9999",
                                     "expect": {"refunds": [{"order_id": "A-9999", "amount": 5}]}},
           "expected_output": "refunds it"}
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    res = subprocess.run([prefork.python(), str(REPO / "evals" / "regression.py"), "--dataset", str(path),
                          "--no-upload", "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    assert res.returncode == 2
    assert res.stderr.strip() == f"error: {path}:1: unknown order A-9999 in expect.refunds"
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
