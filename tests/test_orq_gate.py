"""The gate on an orq.ai dataset id, against the local stand-in (app/orq_standin.py): rows
fetched page by page and judged as the same rows from a JSONL file; the experiment it uploads
holds every run with the results file's values, n/a never as a fail; the key reaches no file."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.orq_helpers import KEY, as_datapoint, dataset_rows, orq
from turngate.commands import regression

IDS = ["status", "refund_ok", "refund_over_limit", "not_returnable", "internal_notes"]
# a failing row (every scorer fails on it), two seeds and bounded reruns: passes, fails and
# n/a cells, gate and confirm stages, in a few seconds of offline model
ARGS = ["--version", "v3", "--seeds", "0,1", "--fault", "agent-raises:status", "--confirm", "2", "--quiet"]


def results(out: Path) -> dict:
    (path,) = out.glob("*.json")
    return json.loads(path.read_text())


@pytest.fixture(scope="module")
def gates(tmp_path_factory):
    """The same rows and flags, once from an orq dataset id (stand-in pages of 2) and once from
    a JSONL file; what each printed, and what the stand-in received."""
    mp = pytest.MonkeyPatch()
    tmp = tmp_path_factory.mktemp("orq")
    rows = dataset_rows(IDS)
    jsonl = tmp / "rows.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    try:
        with orq(mp, page_size=2, datasets={"ds_few": [as_datapoint(r) for r in rows]}) as standin:
            by_id = regression.main([*ARGS, "--dataset-id", "ds_few", "--out", str(tmp / "orq")])
        mp.delenv("ORQ_API_KEY")
        from_file = regression.main([*ARGS, "--dataset", str(jsonl), "--out", str(tmp / "file")])
    finally:
        mp.undo()
    return {"codes": (by_id, from_file), "orq": results(tmp / "orq"), "file": results(tmp / "file"),
            "standin": standin, "tmp": tmp}


def verdicts(record: dict) -> dict:
    return {(r["version"], r["row_id"], r["trial"], r["stage"]): {n: v["passed"] for n, v in r["verdicts"].items()}
            for r in record["runs"]}


def test_a_dataset_id_gate_judges_as_the_same_rows_from_a_file(gates):
    assert gates["codes"] == (1, 1)  # the failing row fails the gate both ways
    a, b = gates["orq"], gates["file"]
    assert [r["id"] for r in a["rows"]] == IDS and a["rows"] == b["rows"]
    assert a["meta"]["dataset"] == "orq:ds_few"
    assert verdicts(a) == verdicts(b)
    means = {n: (s["mean"], s["n"]) for n, s in a["summary"]["v3"]["scorers"].items()}
    assert means == {n: (s["mean"], s["n"]) for n, s in b["summary"]["v3"]["scorers"].items()}
    assert a["verdict"]["line"] == b["verdict"]["line"]


def test_the_rows_were_fetched_page_by_page(gates):
    pages = [r for r in gates["standin"].received if r["path"] == "/v2/datasets/ds_few/datapoints"]
    ids = [p["_id"] for p in gates["standin"].datasets["ds_few"].points]
    assert [p["query"] for p in pages] == [{"limit": "50"}, {"limit": "50", "starting_after": ids[1]},
                                           {"limit": "50", "starting_after": ids[3]}]
    assert not [r for r in gates["standin"].received if r.get("refused")]


def test_the_experiment_holds_every_run_with_the_results_file_values(gates):
    record, (body,) = gates["orq"], gates["standin"].experiments
    uploaded = {}
    for entry in body["results"]:
        inputs = entry["dataPoint"]["inputs"]
        for job in entry["jobResults"]:
            assert json.loads(job["output"])["seed"] == inputs["seed"]
            uploaded[("v3", inputs["id"], inputs["seed"], inputs["stage"])] = {
                s["evaluatorName"]: s["score"] for s in job["evaluatorScores"]}
    stored = verdicts(record)
    assert set(uploaded) == set(stored)  # one entry per (row, seed, stage): every run, nothing else
    assert len(body["results"]) == len(record["runs"])
    assert {k[3] for k in stored} == {"gate", "confirm"}
    seen = set()
    for key, scores in uploaded.items():
        assert set(scores) == set(stored[key])
        for name, score in scores.items():
            passed = stored[key][name]
            seen.add(passed)
            if passed is None:  # n/a: evaluatorq's "no basis", never a fail
                assert score["value"] is None and "pass" not in score and score["explanation"].startswith("n/a")
            else:
                assert score["value"] is passed and score["pass"] is passed
    assert seen == {True, False, None}


def test_the_uploaded_pass_rates_are_the_gates_means(gates):
    """What orq (or evaluatorq's table) computes from the upload, n/a left out, is the file's mean."""
    from evaluatorq.table_display import _format_evaluator_scores

    record, (body,) = gates["orq"], gates["standin"].experiments
    values: dict[str, list] = {}
    for entry in body["results"]:
        if entry["dataPoint"]["inputs"]["stage"] == "gate":
            for s in entry["jobResults"][0]["evaluatorScores"]:
                values.setdefault(s["evaluatorName"], []).append(s["score"]["value"])
    for name, s in record["summary"]["v3"]["scorers"].items():
        assert len(values[name]) == record["summary"]["v3"]["runs"]
        shown, _ = _format_evaluator_scores(values[name])
        assert shown == ("[no basis]" if s["mean"] is None else f"{100 * s['mean']:.1f}%"), name


def test_the_verdict_and_bars_are_in_the_experiment_description(gates):
    record, (body,) = gates["orq"], gates["standin"].experiments
    text = body["_description"]
    assert text.startswith(record["verdict"]["line"].splitlines()[0])
    for name, bar in record["meta"]["thresholds"].items():
        assert f"{name} " in text and f"bar {bar:.2f}" in text
    assert body["_name"] == "refund-agent@v3" and body["datasetId"] == "ds_few"


def test_the_key_reaches_no_file_and_no_request_record(gates):
    for path in gates["tmp"].rglob("*"):
        if path.is_file():
            assert KEY not in path.read_text(errors="replace"), path
    assert KEY not in json.dumps(gates["standin"].received)


def test_a_bad_datapoint_is_one_line_naming_it_and_exit_2_before_any_agent_call(monkeypatch, tmp_path, capsys):
    rows = [as_datapoint(r) for r in dataset_rows(IDS[:3])]
    rows[2]["inputs"]["expect"]["refundz"] = []  # a typo the schema refuses
    calls = []
    monkeypatch.setattr(regression, "execute_and_confirm", lambda *a, **k: calls.append(a))
    with orq(monkeypatch, page_size=2, datasets={"ds_bad": rows}) as standin:
        code = regression.main(["--version", "v3", "--dataset-id", "ds_bad", "--out", str(tmp_path), "--quiet"])
    err = capsys.readouterr().err.strip()
    bad_id = standin.datasets["ds_bad"].points[2]["_id"]
    assert code == 2 and calls == [] and list(tmp_path.iterdir()) == []
    assert err.startswith(f"error: dataset ds_bad row 3 (datapoint {bad_id}): ") and "refundz" in err
    assert "\n" not in err and KEY not in err
    assert standin.experiments == []


def test_an_unknown_dataset_id_is_one_line_and_exit_2(monkeypatch, tmp_path, capsys):
    with orq(monkeypatch):
        code = regression.main(["--version", "v3", "--dataset-id", "ds_missing", "--out", str(tmp_path)])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err.startswith("error: orq.ai dataset ds_missing: ") and "not found" in err
    assert "\n" not in err and KEY not in err and list(tmp_path.iterdir()) == []


def test_json_output_stays_json_and_only_the_selected_rows_are_uploaded(monkeypatch, tmp_path, capsys):
    with orq(monkeypatch, datasets={"ds_few": [as_datapoint(r) for r in dataset_rows(IDS)]}) as standin:
        code = regression.main(["--version", "v3", "--dataset-id", "ds_few", "--only", "refund_ok", "--json",
                                "--out", str(tmp_path)])
    printed = capsys.readouterr()
    summary = json.loads(printed.out)  # stdout is the JSON summary alone
    assert code == summary["exit_code"] == 0
    assert "orq.ai experiment: refund-agent@v3, 1 entry" in printed.err
    (body,) = standin.experiments
    assert [e["dataPoint"]["inputs"]["id"] for e in body["results"]] == ["refund_ok"]


def test_run_gate_uploads_when_asked_and_only_then(monkeypatch, tmp_path):
    import examples.faq_bot as faq_bot
    import turngate

    example = Path(faq_bot.__file__).parent
    rows, bars = str(example / "dataset.jsonl"), str(example / "thresholds.toml")
    with orq(monkeypatch) as standin:
        quiet = turngate.run_gate(faq_bot.target, rows=rows, thresholds=bars, out=tmp_path / "a", quiet=True)
        assert standin.experiments == []  # upload=False is the Python API's default
        result = turngate.run_gate(faq_bot.target, rows=rows, thresholds=bars, out=tmp_path / "b", quiet=True,
                                upload=True)
    (body,) = standin.experiments
    assert quiet.exit_code == result.exit_code
    assert len(body["results"]) == len(result.record.runs) and "datasetId" not in body  # a file, not an orq dataset
    assert body["_description"].startswith(result.verdict.headline)


def test_a_resumed_run_uploads_the_whole_record_once_finished(monkeypatch, tmp_path):
    import examples.faq_bot as faq_bot
    from turngate.record.results import load_record, save_record

    example = Path(faq_bot.__file__).parent
    args = ["--agent", "examples.faq_bot:target", "--dataset", str(example / "dataset.jsonl"),
            "--thresholds", str(example / "thresholds.toml"), "--quiet"]
    with orq(monkeypatch) as standin:
        assert regression.main([*args, "--out", str(tmp_path), "--no-upload"]) == 0
        (path,) = tmp_path.glob("*.json")
        record = load_record(path)
        whole = len(record.runs)
        record.runs = record.runs[:4]  # as if interrupted after 4 runs
        record.meta.complete, record.meta.interrupted = False, True
        save_record(record, path)
        assert standin.experiments == []
        assert regression.main(["--resume", str(path), "--agent", "examples.faq_bot:target", "--quiet"]) == 0
    (body,) = standin.experiments
    assert len(body["results"]) == whole == len(load_record(path).runs)
