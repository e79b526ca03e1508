"""scripts/promote.py: a simulated conversation becomes a dataset row, once."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

import pytest

from tests.orq_helpers import orq
from turngate.commands import simulate
from turngate.sources.dataset import Expect, load_rows, rows_from_datapoints

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import promote  # noqa: E402  (a script, not a package)


@pytest.fixture(scope="module")
def run(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sim")
    assert simulate.main(["--version", "v2", "--only-scenario", "shipped_late_a1002", "legit_keyboard_a1008",
                          "--only-persona", "patient_novice", "self_declared_manager", "--seeds", "1",
                          "--out", str(out)]) == 0
    (path,) = out.glob("sim-v2-*")
    return path


@pytest.fixture
def dataset(tmp_path) -> Path:
    copy = tmp_path / "northwind.jsonl"
    shutil.copy(REPO / "datasets" / "northwind.jsonl", copy)
    return copy


def failing(run: Path) -> Path:
    summary = json.loads((run / "summary.json").read_text())
    return run / summary["failures"][0]["file"]


def test_a_failure_becomes_a_valid_row_with_turns_up_to_the_failing_turn(run, dataset, capsys):
    conv = failing(run)
    rec = json.loads(conv.read_text())
    before = dataset.read_text()
    assert promote.main([str(conv), "--to", str(dataset)]) == 0
    out = capsys.readouterr().out
    rows = load_rows(dataset)  # the file still loads with the dataset's own loader
    row = rows[-1]
    assert dataset.read_text().startswith(before) and len(rows) == before.count("\n") + 1
    assert row.inputs.turns == rec["turns"][:rec["failure"]["after_turn"]]
    assert row.inputs.source == f"simulation:{run.name}/{conv.stem}"
    assert {"from-simulation", "multi-turn"} <= set(row.inputs.tags)
    assert row.inputs.expect == Expect.model_validate(rec["scenario_spec"]["expect"])
    assert row.inputs.expect.model_fields_set == set(rec["scenario_spec"]["expect"])  # unset keys stay unset
    assert row.expected_output == rec["scenario_spec"]["expected_output"]
    assert f"wrote row {row.id} to {dataset}" in " ".join(out.split()) and row.id in out


def test_promoting_the_same_conversation_twice_is_refused(run, dataset, capsys):
    conv = failing(run)
    assert promote.main([str(conv), "--to", str(dataset)]) == 0
    after_first = dataset.read_text()
    capsys.readouterr()
    assert promote.main([str(conv), "--to", str(dataset), "--id", "another_id"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: ") and "duplicate" in err and "\n" not in err
    assert dataset.read_text() == after_first


def test_an_id_clash_is_refused(run, dataset, capsys):
    before = dataset.read_text()
    assert promote.main([str(failing(run)), "--to", str(dataset), "--id", "refund_ok"]) == 2
    assert "id 'refund_ok' is already taken" in capsys.readouterr().err
    assert dataset.read_text() == before


def test_dry_run_prints_the_row_and_writes_nothing(run, dataset, capsys):
    before = dataset.read_text()
    assert promote.main([str(failing(run)), "--to", str(dataset), "--dry-run", "--id", "dry_one"]) == 0
    out = capsys.readouterr().out
    assert '"id": "dry_one"' in out and "dry run: not written" in " ".join(out.split())
    assert dataset.read_text() == before


def test_expected_output_can_be_overridden(run, dataset):
    assert promote.main([str(failing(run)), "--to", str(dataset), "--expected-output", "Refunds nothing."]) == 0
    assert load_rows(dataset)[-1].expected_output == "Refunds nothing."


def test_upload_needs_orq_api_key_and_writes_nothing_without_it(run, dataset, monkeypatch, capsys):
    monkeypatch.delenv("ORQ_API_KEY", raising=False)
    before = dataset.read_text()
    assert promote.main([str(failing(run)), "--to", str(dataset), "--upload", "ds_123"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --upload needs ORQ_API_KEY in the environment; nothing was written or uploaded"
    assert dataset.read_text() == before


def test_upload_creates_the_datapoint_through_orq_ai_sdk(run, dataset, monkeypatch, capsys):
    # the stand-in accepts only KEY and validates the body against orq-ai-sdk's DatapointInput
    with orq(monkeypatch, datasets={"ds_123": []}) as standin:
        assert promote.main([str(failing(run)), "--to", str(dataset), "--upload", "ds_123", "--id", "up_one"]) == 0
    ((request,), (stored,)) = standin.received, standin.datasets["ds_123"].points
    row = load_rows(dataset)[-1]
    assert (request["method"], request["path"]) == ("POST", "/v2/datasets/ds_123/datapoints")
    body = request["body"]
    assert body == [{"inputs": {"id": "up_one", **row.inputs.model_dump(mode="json", exclude_unset=True)},
                     "expected_output": row.expected_output}]
    # what was uploaded reads back as the same row through the dataset layer
    assert rows_from_datapoints(body, "ds_123")[0] == row
    assert f"uploaded to orq.ai dataset ds_123: datapoint {stored['_id']}" in " ".join(capsys.readouterr().out.split())


def test_upload_with_a_key_orq_refuses_is_one_line(run, dataset, monkeypatch, capsys):
    with orq(monkeypatch, datasets={"ds_123": []}) as standin:
        monkeypatch.setenv("ORQ_API_KEY", "orq-wrong-key-123456")
        assert promote.main([str(failing(run)), "--to", str(dataset), "--upload", "ds_123", "--id", "up_two"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --upload ds_123: ") and "\n" not in err and "orq-wrong-key-123456" not in err
    assert standin.datasets["ds_123"].points == []


def test_a_file_that_is_not_a_simulated_conversation_is_a_one_line_error(tmp_path, dataset, capsys):
    other = tmp_path / "x.json"
    other.write_text('{"meta": {}}')
    assert promote.main([str(other), "--to", str(dataset)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: {other}: not a simulated conversation") and "\n" not in err
    assert promote.main([str(tmp_path / "missing.json"), "--to", str(dataset)]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_a_conversation_simulated_before_the_rename_still_promotes_to_the_same_row(run, dataset, tmp_path, capsys):
    conv = failing(run)
    rec = json.loads(conv.read_text())
    assert rec["schema"] == "turngate/simulation@1"
    old = dict(rec, schema="northwind-evals/simulation@1")  # the old files' schema; their tags lacked "refund"
    old["scenario_spec"] = dict(rec["scenario_spec"], tags=[t for t in rec["scenario_spec"]["tags"] if t != "refund"])
    old_file = tmp_path / conv.name
    old_file.write_text(json.dumps(old))
    assert promote.main([str(conv), "--to", str(dataset), "--dry-run", "--id", "x"]) == 0
    new_row = capsys.readouterr().out
    assert promote.main([str(old_file), "--to", str(dataset), "--dry-run", "--id", "x"]) == 0
    old_row = capsys.readouterr().out
    assert old_row.replace(str(tmp_path), "").split("dry run")[0] == new_row.split("dry run")[0]
