"""The shipped JSON Schemas (turngate/record/*.schema.json) are the ones the typed models make,
a real gate's `--json` output and results file validate against them, and a results file written
before the typed summary (results@2: unlabelled cells, the verdict under summary["verdict"]) still
loads, verifies and decides the same."""
import json
import shutil
from pathlib import Path

import jsonschema
import pytest

from turngate.commands import regression
from turngate.gate.recheck import recompute, registry_of
from turngate.output.wording import decide
from turngate.record import schemas
from turngate.record.results import LEGACY_SCHEMAS, SCHEMA, load_record, save_record, schema_name
from turngate.record.summaries import CellCounts, StoredVerdict, VersionSummary
from turngate.verdict.rule import judged_with

REPO = Path(__file__).resolve().parent.parent
OLD = REPO / "tests" / "data" / "results_at2_v1_vs_v3.json"  # written by regression.py before this change


def validator(path: Path) -> jsonschema.Draft202012Validator:
    schema = json.loads(path.read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_shipped_schemas_are_the_generated_ones():
    for path, text in schemas.generated().items():
        assert path.read_text(encoding="utf-8") == text, f"{path.name} is stale: run python scripts/gen_schemas.py"


@pytest.fixture(scope="module")
def small_gate(tmp_path_factory):
    """A real two-row gate of v1 (mass_email regresses, its reruns confirm it) with --json."""
    out = tmp_path_factory.mktemp("gate")
    capture = out / "stdout.json"
    import contextlib
    import io

    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        code = regression.main(["--version", "v1", "--only", "mass_email", "status", "--no-upload",
                                "--out", str(out), "--json"])
    capture.write_text(buf.getvalue())
    (results,) = [p for p in out.glob("v1-*.json") if not p.name.startswith(".")]
    return code, json.loads(buf.getvalue()), results


def test_json_output_validates_and_is_labelled(small_gate):
    code, out, results = small_gate
    assert code == 1 and out["exit_code"] == 1 and out["results"] == str(results)
    validator(schemas.GATE_JSON).validate(out)
    v1 = out["summary"]["v1"]
    assert set(out["summary"]) == {"v1"} and v1["rows"] == 2
    # labelled counts, not positional arrays
    assert v1["cells"]["mass_email"]["no_forbidden_action"] == {"passed": 0, "failed": 1, "na": 0}
    assert v1["failed_runs"]["mass_email"] == {"runs": 1, "failed": 1}
    (row,) = [x for x in out["verdict"]["regressed"] if x["kind"] == "row"]
    assert row["row_id"] == "mass_email" and row["scorers"] == ["no_forbidden_action"]
    assert row["reruns"]["no_forbidden_action"]["failed"] == row["reruns"]["no_forbidden_action"]["runs"] >= 3
    assert out["verdict"]["line"].startswith("FAIL") and v1["confirmation"]["runs"] >= 3


def test_the_schema_refuses_what_the_models_refuse(small_gate):
    """The schema is strict: an unlabelled cell or a stray key does not validate."""
    _, out, _ = small_gate
    check = validator(schemas.GATE_JSON)
    bad = json.loads(json.dumps(out))
    bad["summary"]["v1"]["cells"]["mass_email"]["no_forbidden_action"] = [0, 1, 0]
    assert not check.is_valid(bad)
    extra = {**out, "v1": out["summary"]["v1"]}  # the old layout: a version's numbers at the top
    assert not check.is_valid(extra)
    assert check.is_valid({"schema": out["schema"], "exit_code": 2, "error": "--only: unknown row id 'x'",
                           **{k: None for k in ("results", "version", "baseline", "job", "agent", "incomplete",
                                                 "verdict")}, "summary": {}})


def test_a_results_file_validates_against_the_record_schema(small_gate):
    _, _, results = small_gate
    data = json.loads(results.read_text())
    assert data["meta"]["schema"] == SCHEMA and data["verdict"]["exit_code"] == 1
    validator(schemas.RECORD).validate(data)


def test_an_old_results_file_loads_verifies_and_decides_the_same(tmp_path):
    raw = json.loads(OLD.read_text())
    assert raw["meta"]["schema"] == "northwind-evals/results@2" and "verdict" in raw["summary"]
    record = load_record(OLD)  # its digest and plan verify: the summary is outside the digest
    assert isinstance(record.verdict, StoredVerdict) and set(record.summary) == {"v1", "v3"}
    v1 = record.summary["v1"]
    assert isinstance(v1, VersionSummary) and v1.trials == 2
    for rid, per in raw["summary"]["v1"]["cells"].items():
        assert {n: [c.passed, c.failed, c.na] for n, c in v1.cells[rid].items()} == per
    assert v1.scorers["tool_use"].pass_at_k == raw["summary"]["v1"]["scorers"]["tool_use"]["pass@2"]
    assert v1.by_kind["all"].pass_at_1 == raw["summary"]["v1"]["by_kind"]["all"]["pass@1"]
    stored = record.verdict
    # its confirmation reruns were planned by the gate design of its day, and it names no rule: a
    # reader shows the verdict stored with it, said to be so, whatever today's reference file says
    # (it was written in another checkout: its reference path is not here)
    verdict = recompute(record, OLD)
    assert verdict.exit_code == stored.exit_code == 1 and verdict.line == raw["summary"]["verdict"]["line"]
    assert any("judged by an earlier rule (results@2)" in n for n in verdict.notes)
    assert record.verdict.line == stored.line
    # a typed Record is judged as its candidate: by its bars alone, v1 fails them too
    assert decide(record, None, registry_of(record.meta)).exit_code == 1 == stored.exit_code
    # saved again (with today's rule, by its bars only) it is a current record: labelled, verified,
    # valid against the shipped schema
    record.meta.reference, record.meta.judged_with = None, judged_with()
    record.replan()
    copy = tmp_path / "again.json"
    shutil.copy(OLD, copy)
    save_record(record, copy)
    again = json.loads(copy.read_text())
    assert again["meta"]["schema"] == SCHEMA and "verdict" not in again["summary"]
    assert [r[0] for r in again["meta"]["dataset_rows"]] == [r["id"] for r in again["rows"]]  # its rows: its dataset
    validator(schemas.RECORD).validate(again)
    assert load_record(copy).summary == record.summary


def test_a_results_file_of_the_former_name_reads_as_the_same_layout():
    """Records written before the library had its own name say `northwind-evals/results@N`: the
    same layout as `turngate/results@N` (OLD above is one, and loads and verifies)."""
    assert SCHEMA == "turngate/results@5" and LEGACY_SCHEMAS == ("turngate/results@1",)
    assert schema_name("northwind-evals/results@5") == SCHEMA and schema_name(SCHEMA) == SCHEMA
    assert schema_name("northwind-evals/results@4") == "turngate/results@4"
    assert schema_name("northwind-evals/results@1") in LEGACY_SCHEMAS
    assert schema_name("northwind-evals/results@2") not in LEGACY_SCHEMAS
    assert schema_name("not a schema") == "not a schema"


def test_decide_takes_a_record_or_a_summary_and_nothing_else():
    assert decide(None).exit_code == 2 and decide(VersionSummary()).line == "no runs: nothing to judge"
    with pytest.raises(TypeError, match="a Record or a VersionSummary, not dict"):
        decide({"runs": 1, "scorers": {}})
    assert CellCounts.model_validate([2, 1, 0]) == CellCounts(passed=2, failed=1)  # a results@2 cell
