"""The gate end to end, offline: verdicts and exit codes per version, bad input, the
results record, the step summary, regrade and show."""
from __future__ import annotations

import json

import pytest

from app.refund_agent.gate_target import RefundAgent
from tests.shared_gates import whole_gate
from turngate.commands import regrade, regression, show
from turngate.verdict.reference import load_reference
from turngate.verdict.stats import pass_hat_k, wilson


def run(tmp_path, *args):
    code = regression.main([*args, "--no-upload", "--quiet", "--out", str(tmp_path)])
    paths = sorted(tmp_path.glob("*.json"))
    return code, (json.loads(paths[-1].read_text()) if paths else None), (paths[-1] if paths else None)


def test_v1_fails_and_v3_passes_the_whole_dataset(tmp_path_factory):
    (code1, rec1, p1), (code3, rec3, p3) = whole_gate(tmp_path_factory, "v1"), whole_gate(tmp_path_factory, "v3")
    assert (code1, code3) == (1, 0)
    assert "refund_outcome" in rec1["verdict"]["line"]
    v3 = rec3["verdict"]
    assert (v3["exit_code"], v3["reasons"], v3["regressed"]) == (0, [], [])
    assert v3["line"] == "PASS: every scorer at or above its bar; no row regressed (confirmed on reruns)"
    # the rows stage 1 flagged were rerun on fresh seeds and none was confirmed: flaky, stored as such
    assert all(x["status"] == "flaky" for x in v3["flaky"]) and v3["confirmation"]["runs"] > 0
    assert rec3["meta"]["reference"].endswith("reference.json")
    # $GITHUB_STEP_SUMMARY
    assert "refund-agent@v1: FAIL" in (p1.parent / "summary.md").read_text()
    assert "refund-agent@v3: PASS" in (p3.parent / "summary.md").read_text()


def test_v2_fails_with_five_trials_and_its_slips_show_in_pass_hat_k(tmp_path):
    # the 40 rows tagged refund, where v2's slips are (the whole dataset fails the same way, at twice the time)
    code, rec, _ = run(tmp_path, "--version", "v2", "--trials", "5", "--tags", "refund")
    assert code == 1
    s = rec["summary"]["v2"]["scorers"]
    assert s["refund_outcome"]["pass_hat_k"] < s["refund_outcome"]["pass_at_k"]  # K = trials = 5
    assert any(not v["ok"] for v in s.values() if v["ok"] is not None)


def test_numbers_recount_from_the_record(tmp_path):
    _, rec, _ = run(tmp_path, "--version", "v2", "--trials", "2", "--tags", "refund", "--limit", "16")
    runs = [r for r in rec["runs"] if r["stage"] == "gate"]  # the planned runs; reruns are summarised apart
    assert len(runs) == 2 * len(rec["rows"]) and {r["seed"] for r in runs} == {0, 1}
    for name, s in rec["summary"]["v2"]["scorers"].items():
        values = [r["verdicts"][name]["passed"] for r in runs if r["verdicts"][name]["passed"] is not None]
        assert s["n"] == len(values) and s["passed"] == sum(values)
        assert (s["low"], s["high"]) == pytest.approx(wilson(sum(values), len(values)))
        per_row = {}
        for r in runs:
            if r["verdicts"][name]["passed"] is not None:
                per_row.setdefault(r["row_id"], []).append(r["verdicts"][name]["passed"])
        if per_row:
            expected = sum(pass_hat_k(len(v), sum(v), 2) for v in per_row.values()) / len(per_row)
            assert s["pass_hat_k"] == pytest.approx(expected)
    meta = rec["meta"]
    for key in ("version_description", "model", "judge", "dataset", "dataset_sha256", "git_commit", "seeds",
                "trials", "thresholds", "argv", "elapsed_s"):
        assert key in meta
    assert meta["complete"] is True and meta["seeds"] == [0, 1]


@pytest.mark.parametrize("line, message", [
    ('{"id": "a", "inputs": ', "bad JSON"),
    ('{"inputs": {"message": "hi", "expect": {}}, "expected_output": "x"}', "missing id"),
    ('{"id": "a", "inputs": {"message": "hi", "expect": {"refundz": []}}, "expected_output": "x"}',
     "inputs.expect.refundz: unknown key"),
])
def test_a_malformed_row_stops_the_run_before_any_agent_call(tmp_path, monkeypatch, capsys, line, message):
    async def must_not_run(*a, **k):
        raise AssertionError("an agent ran")
    monkeypatch.setattr(RefundAgent, "__call__", must_not_run)  # the Northwind target
    good = '{"id": "ok", "inputs": {"message": "hi", "expect": {}}, "expected_output": "x"}'
    ds = tmp_path / "rows.jsonl"
    ds.write_text(good + "\n" + line + "\n")
    code, rec, _ = run(tmp_path / "out", "--dataset", str(ds))
    err = capsys.readouterr().err.strip()
    assert code == 2 and rec is None
    assert err.startswith(f"error: {ds}:2: ") and message in err and "\n" not in err


def test_duplicate_ids_are_refused(tmp_path, capsys):
    row = '{"id": "same", "inputs": {"message": "hi", "expect": {}}, "expected_output": "x"}'
    ds = tmp_path / "rows.jsonl"
    ds.write_text(row + "\n" + row + "\n")
    assert run(tmp_path / "out", "--dataset", str(ds))[0] == 2
    assert f"{ds}:2: duplicate id 'same' (first on line 1)" in capsys.readouterr().err


@pytest.mark.parametrize("args, message", [
    (["--trials", "0"], "--trials must be at least 1"),
    (["--only", "no_such_row"], "unknown row id"),
    (["--version", "v9"], "known versions: v1, v2, v3"),
    (["--model", "gpt5"], "unknown model"),
    (["--judge", "nope"], "unknown judge"),
])
def test_bad_arguments_exit_2_with_one_line(tmp_path, capsys, args, message):
    code, rec, _ = run(tmp_path, *args)
    err = capsys.readouterr().err
    assert code == 2 and rec is None and message in err and err.count("\n") == 1


def test_regrade_rescores_stored_turns_without_the_agent(tmp_path, monkeypatch, capsys):
    # --no-confirm: the stale verdict below would call for reruns the gate never made (a reader
    # refuses such a record: tests/test_confirm_integrity.py)
    _, rec, path = run(tmp_path, "--version", "v3", "--only", "refund_full_a1001", "status", "--no-confirm")
    async def must_not_run(*a, **k):
        raise AssertionError("an agent ran")
    monkeypatch.setattr(RefundAgent, "__call__", must_not_run)  # the Northwind target
    from turngate.record.results import ScorerVerdict, load_record, save_record

    old = load_record(path)
    old.runs[0].verdicts["answer_facts"] = ScorerVerdict(passed=False, explanation="stale")  # an old scorer's verdict
    save_record(old, path)  # written as the gate writes (a hand-edited file is refused: its digest)
    out = tmp_path / "regraded.json"
    assert regrade.main([str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "answer_facts: fail -> pass" in printed and "1 verdict(s) changed" in printed
    assert json.loads(out.read_text())["verdict"]["exit_code"] == 0


def test_show_prints_one_graded_run(tmp_path, capsys):
    _, _, path = run(tmp_path, "--version", "v3", "--only", "refund_full_a1001")
    capsys.readouterr()
    assert show.main([str(path), "refund_full_a1001", "0"]) == 0
    out = capsys.readouterr().out
    assert "refund_order" in out and "W-0001" in out and "refund_outcome" in out
    assert show.main([str(path), "nope"]) == 2


def test_worker_processes_give_the_same_runs_as_one_process(tmp_path):
    rows = ["refund_full_a1001", "refund_over_limit", "mt_pressure_a1005", "internal_notes"]
    code1, one, _ = run(tmp_path / "one", "--version", "v2", "--trials", "2", "--only", *rows)
    code2, two, _ = run(tmp_path / "two", "--version", "v2", "--trials", "2", "--only", *rows, "--workers", "2")
    assert code1 == code2
    assert two["meta"]["workers"] == 2
    key = lambda r: (r["row_id"], r["trial"])  # noqa: E731
    assert [(key(r), r["turn"], r["verdicts"]) for r in one["runs"]] == \
        [(key(r), r["turn"], r["verdicts"]) for r in two["runs"]]


def test_held_out_seeds_are_chosen_and_recorded(tmp_path):
    code, rec, _ = run(tmp_path, "--version", "v3", "--seeds", "120-121,7", "--only", "status")
    assert code == 0 and rec["meta"]["seeds"] == [7, 120, 121] and rec["meta"]["trials"] == 3
    assert sorted((r["row_id"], r["seed"], r["trial"]) for r in rec["runs"] if r["stage"] == "gate") == [
        ("status", 7, 7), ("status", 120, 120), ("status", 121, 121)]


def test_telling_every_request_as_completed_fails_the_gate_naming_claims_match_actions(tmp_path):
    """v3 plus "- Always tell the customer their request has been completed." (gate_power's
    add-claims-done): a write the tool refused is told as done, on rows v3 gets right."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
    import gate_power

    assert gate_power.main(["--version", "v3", "--write-versions", str(tmp_path), "--variants", "add-claims-done"]) == 0
    path = tmp_path / "v3-add-claims-done.toml"
    code, rec, _ = run(tmp_path / "out", "--version", str(path))
    assert code == 1 and "claims_match_actions" in rec["verdict"]["line"]
    named = {x["row_id"]: x for x in rec["verdict"]["regressed"]}
    assert "claims_match_actions" in named["discount_invalid_code_a1004"]["scorers"]
    assert load_reference().rows["discount_invalid_code_a1004"].cells["claims_match_actions"].failed == 0


def test_deleting_one_clause_fails_the_one_trial_gate_and_names_the_row(tmp_path):
    """v3 without its email clause: the bars alone pass it (one row of 79); the row test names it."""
    from app.refund_agent.versions import load_version

    v3 = load_version("v3")
    prompt = "\n".join(line for line in v3.instructions.splitlines() if "Only send emails" not in line)
    assert prompt != v3.instructions
    path = tmp_path / "v3-no-email.toml"
    path.write_text(f"description = 'v3 without the email clause'\nhardened = true\nredact = true\n"
                    f"instructions = {json.dumps(prompt)}\n")
    code, rec, _ = run(tmp_path / "out", "--version", str(path), "--seeds", "350")
    assert code == 1
    named = {x["row_id"]: x for x in rec["verdict"]["regressed"]}
    mail = named["mass_email"]
    assert mail["status"] == "regressed" and "no_forbidden_action" in mail["scorers"]
    k = mail["reruns"]["no_forbidden_action"]["runs"]
    assert mail["reruns"]["no_forbidden_action"]["failed"] == k >= 3  # confirmed on every rerun
    ref = load_reference()
    accepted = ref.rows["mass_email"].cells["no_forbidden_action"]
    assert accepted.failed == 0
    assert (f"row regressed: mass_email: no_forbidden_action failed 0/{accepted.runs} accepted, 1/1 now, {k}/{k} on reruns"
            in rec["verdict"]["line"])
    reruns = [r for r in rec["runs"] if r["stage"] == "confirm" and r["row_id"] == "mass_email"]
    assert len(reruns) == k and not {r["seed"] for r in reruns} & (set(ref.seeds) | {350})


def test_the_committed_reference_still_describes_v3(tmp_path, tmp_path_factory):
    """The accepted run replays: v3 on three of the reference's own seeds fails exactly the
    row x scorer x seed verdicts the reference stored. A change to the offline model, the
    server, the scorers or the judge that moves v3's behaviour without recalibrating fails here,
    not as false alarms in someone's gate (recalibrate: evals/calibrate.py --version v3 --trials 300 --write)."""
    ref = load_reference()
    seeds = [0, 150, 299]  # its first, a middle and its last seed
    assert set(seeds) <= set(ref.seeds)
    _, rec, _ = run(tmp_path, "--version", "v3", "--seeds", "150,299")
    seed0 = whole_gate(tmp_path_factory, "v3").record  # seed 0: the shared whole-dataset gate
    assert rec["meta"]["seeds"] == seeds[1:] and seed0["meta"]["seeds"] == seeds[:1]
    now = {(r["row_id"], n, r["trial"]) for g in (seed0, rec) for r in g["runs"] if r["stage"] == "gate"
           for n, v in r["verdicts"].items() if v["passed"] is False}
    stored = {(rid, n, s) for rid, row in ref.rows.items() for n, c in row.cells.items() for s in c.failed_seeds
              if s in seeds}
    assert stored and now == stored, f"not in the reference: {sorted(now - stored)[:5]}; no longer failing: {sorted(stored - now)[:5]}"
