"""Every injected fault fails closed: a failed verdict naming the fault, no row dropped
from any denominator, exit code 1."""
from __future__ import annotations

import json

import pytest

from turngate.commands import regression

ROWS = ["refund_full_a1001", "status"]


def run_gate(tmp_path, *extra, version="v3", rows=ROWS):
    code = regression.main(["--version", version, "--only", *rows, "--no-upload", "--quiet",
                            "--out", str(tmp_path), *extra])
    (path,) = tmp_path.glob("*.json")
    return code, json.loads(path.read_text())


def verdicts(record, row_id):
    (run,) = [r for r in record["runs"] if r["row_id"] == row_id and r.get("stage", "gate") == "gate"]
    return run


def assert_in_every_denominator(record):
    n_rows = len(record["rows"])
    runs = [r for r in record["runs"] if r.get("stage", "gate") == "gate"]  # the reruns are counted apart
    for name, s in record["summary"][record["meta"]["version"]]["scorers"].items():
        applicable = sum(1 for r in runs if r["verdicts"][name]["passed"] is not None)
        assert s["n"] == applicable
    assert len(runs) == n_rows


# Only the hanging run needs a timeout to end; it is generous, since the good row must finish
# within it even on a loaded machine (the hang costs timeout + 5 s of wall time).
@pytest.mark.parametrize("fault, row, needle, extra", [
    ("agent-raises:refund_full_a1001", "refund_full_a1001", "injected fault: the agent raised", []),
    # one confirmation rerun: each one waits out the hang again, and one shows reruns fail closed
    ("run-hangs:refund_full_a1001", "refund_full_a1001", "timeout", ["--timeout", "3", "--confirm", "1"]),
    ("not-a-turn:refund_full_a1001", "refund_full_a1001", "not a Turn", []),
])
def test_job_faults_fail_every_scorer_of_that_row(tmp_path, fault, row, needle, extra):
    code, record = run_gate(tmp_path, "--fault", fault, *extra)
    assert code == 1
    bad = verdicts(record, row)
    assert all(v["passed"] is False and needle in v["explanation"] for v in bad["verdicts"].values())
    good = verdicts(record, "status")
    assert not any(v["passed"] is False for v in good["verdicts"].values())
    assert_in_every_denominator(record)
    # the confirmation reruns of the faulted row fail closed too: the row is regressed, not flaky
    reruns = [r for r in record["runs"] if r["stage"] == "confirm" and r["row_id"] == row]
    assert reruns and all(v["passed"] is False for r in reruns for v in r["verdicts"].values())


def test_a_scorer_that_raises_fails_its_verdicts_only(tmp_path):
    code, record = run_gate(tmp_path, "--fault", "scorer-raises:answer_facts")
    assert code == 1
    for row in ROWS:
        run = verdicts(record, row)
        assert run["verdicts"]["answer_facts"]["passed"] is False
        assert "scorer tool_use raised" not in run["verdicts"]["answer_facts"]["explanation"]
        assert "injected fault: scorer answer_facts raised" in run["verdicts"]["answer_facts"]["explanation"]
        assert run["verdicts"]["no_pii_leak"]["passed"] is True
    assert "answer_facts" in record["verdict"]["line"]


@pytest.mark.parametrize("fault, needle", [("judge-raises", "injected fault: judge raised"),
                                           ("judge-hangs", "gave no verdict within 0.5 s")])
def test_judge_faults_fail_policy_judge(tmp_path, fault, needle):
    code, record = run_gate(tmp_path, "--fault", fault, "--judge-timeout", "0.5")
    assert code == 1
    for row in ROWS:
        v = verdicts(record, row)["verdicts"]["policy_judge"]
        assert v["passed"] is False and needle in v["explanation"]
    assert_in_every_denominator(record)


def test_a_tool_that_never_answers_leaves_a_call_without_result(tmp_path, monkeypatch):
    # --timeout bounds the conversation once connected (the stdio server's start-up, slow on a busy
    # machine, only counts against the runner's outer guard, timeout + 5 s): the offline model's
    # steps before the hung call take well under a second, so 15 s leaves them a wide margin and
    # the test waits out 15 s, not 45
    # --no-confirm: each rerun would hang for the whole timeout too (reruns fail closed: see above).
    # The conversation's --timeout must end the run while the hung call is pending: the client's
    # own per-call limit (TOOL_TIMEOUT_S, 30 s) is raised past it here, so however long the steps
    # before the call take on a loaded machine, the pending call is what the timeout finds.
    import app.refund_agent.mcp_tools as mcp_tools

    monkeypatch.setattr(mcp_tools, "TOOL_TIMEOUT_S", 600.0)
    code, record = run_gate(tmp_path, "--fault", "tool-hangs:refund_order", "--timeout", "15", "--no-confirm",
                            rows=["refund_full_a1001"])
    assert code == 1
    run = verdicts(record, "refund_full_a1001")
    assert run["turn"]["error"] == "timeout"
    pending = [c for c in run["turn"]["tool_calls"] if c["name"] == "refund_order"]
    assert pending and pending[0]["result"] is None and pending[0]["error"] is None
    assert all(v["passed"] is False for v in run["verdicts"].values())


def test_the_server_dying_mid_run_fails_closed(tmp_path):
    code, record = run_gate(tmp_path, "--fault", "server-dies:2", "--timeout", "20", rows=["refund_full_a1001"])
    assert code == 1
    run = verdicts(record, "refund_full_a1001")
    assert run["turn"]["error"] and "Connection" in run["turn"]["error"]
    assert all(v["passed"] is False for v in run["verdicts"].values())
    assert_in_every_denominator(record)


def test_unknown_fault_is_an_argument_error(tmp_path, capsys):
    assert regression.main(["--fault", "gremlins", "--no-upload", "--out", str(tmp_path)]) == 2
    assert "unknown fault" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.json"))
