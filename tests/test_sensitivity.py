"""Every verdict states what it could see. A gate's statement (turngate/verdict/sensitivity.py:
simulated gates of its rows, trials, reruns and policy, a break put in, judged by plan_reruns +
decide) is printed, stored, in --json, JUnit and the PR comment, and given by --dry-run before
any call; a comparison's (turngate/verdict/pair_power.py) turns pass->fail flips McNemar could not
judge into "cannot judge" instead of a bare PASS. Seeded: the same figures every run, no timing."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from tests.record_helpers import record, row, runs_from_pairs
from tests.shared_gates import whole_gate
from turngate.commands import compare, regression
from turngate.record.results import load_record, save_record
from turngate.record.sensitivity import BreakKind
from turngate.verdict.comparison import compare as compare_runs
from turngate.verdict.pair_power import needed_flips, pair_power
from turngate.verdict.policy import GatePolicy
from turngate.verdict.reference import load_reference
from turngate.verdict.sensitivity import Break, draw, draw_truth, sensitivity
from turngate.verdict.stats import mcnemar_exact

REPO = Path(__file__).resolve().parents[1]
BARS = {n: s["bar"] for n, s in tomllib.loads((REPO / "evals" / "thresholds.toml").read_text())["scorers"].items()}


@pytest.fixture(scope="module")
def reference():
    return load_reference()


def rates(s) -> dict[BreakKind, float]:
    return {b.kind: b.rate for b in s.breaks}


# -- the gate's statement --------------------------------------------------------------------

@pytest.fixture(scope="module")
def one_trial(reference):
    return sensitivity(reference, 1, BARS, gates=30)


def test_a_one_trial_gate_sees_an_always_failing_row_and_less_of_a_5_point_drop(one_trial):
    r = rates(one_trial)
    assert [b.gates for b in one_trial.breaks] == [30, 30, 30]
    assert r[BreakKind.ROW_ALWAYS] >= 0.9
    assert r[BreakKind.SCORER_DROP] < r[BreakKind.ROW_ALWAYS]
    assert r[BreakKind.ROW_HALF] < r[BreakKind.ROW_ALWAYS]
    assert one_trial.breaks[2].scorer == "no_pii_leak"  # the scorer with the most applicable runs
    assert one_trial.line.startswith("this gate would catch a row that now always fails: ")
    assert "30 simulated gates each: 79 rows x 1 trial(s)" in one_trial.line


def test_the_statement_is_the_same_for_the_same_inputs(reference, one_trial):
    assert sensitivity(reference, 1, BARS, gates=30) == one_trial


def test_more_trials_see_at_least_as_much_on_the_same_truths_and_breaks(reference, one_trial):
    three = sensitivity(reference, 3, BARS, gates=30)
    for low, high in zip(one_trial.breaks, three.breaks, strict=True):
        assert high.caught >= low.caught, (low, high)
    assert sum(b.caught for b in three.breaks) > sum(b.caught for b in one_trial.breaks)


def test_the_statement_can_fail_a_rule_that_confirms_nothing_sees_nothing(reference):
    """The simulation judges by the policy it is given: with every level at (almost) zero no
    flag is confirmed, so only a bar could fail a gate and the figures collapse."""
    blind = GatePolicy(alpha=1e-300, alpha_stage1_rows=1e-300)
    s = sensitivity(reference, 1, BARS, gates=10, policy=blind)
    assert rates(s)[BreakKind.ROW_ALWAYS] <= 0.3, s.line


def test_no_reference_says_it_simulated_nothing():
    s = sensitivity(None, 1, BARS)
    assert s.breaks == [] and "no reference" in s.line


def test_the_breaks_are_what_the_docs_say(reference):
    import numpy as np

    rng = np.random.default_rng(0)
    truth = draw_truth(reference, rng)
    rid = next(r for r, (a, *_) in truth.items() if "tool_use" in a)
    always = draw(truth, [rid], 200, rng, Break.row(rid, frozenset(["tool_use"])))[rid]
    assert all(p == {"tool_use"} for p in always)
    half = draw(truth, [rid], 2000, rng, Break.row(rid, frozenset(["tool_use"]), rate=0.5))[rid]
    assert 0.45 < sum("tool_use" in p for p in half) / 2000 < 0.75  # half broken, the rest as accepted
    quiet = [r for r, (a, _, pats, probs) in truth.items() if "no_pii_leak" in a]
    drop = draw(truth, quiet, 200, rng, Break(fails=frozenset(["no_pii_leak"]), rate=0.05, replace=False))
    share = sum("no_pii_leak" in p for runs in drop.values() for p in runs) / (200 * len(quiet))
    assert 0.04 < share < 0.07


# -- where a gate says it --------------------------------------------------------------------

@pytest.fixture(scope="module")
def v3_gate(tmp_path_factory):
    code, _, path = whole_gate(tmp_path_factory, "v3")  # with --json --junit junit.xml --markdown comment.md
    return code, path.parent


def test_a_gate_prints_stores_and_writes_its_statement(v3_gate, capsys):
    code, out = v3_gate
    assert code == 0
    stored = load_record(next(out.glob("v3*.json"))).verdict.sensitivity
    assert stored is not None and stored.rows == 79 and stored.trials == 1 and len(stored.breaks) == 3
    assert (out / "comment.md").read_text().count(f"**What this verdict could see**: {stored.line}") == 1
    import xml.etree.ElementTree as ET

    props = {p.get("name"): p.get("value") for p in ET.parse(out / "junit.xml").iter("property")}
    assert props["sensitivity"] == stored.line
    assert props["sensitivity.row_fails_every_run"] == f"{stored.breaks[0].caught}/{stored.breaks[0].gates}"
    from turngate.commands import show

    capsys.readouterr()
    assert show.main([str(next(out.glob("v3*.json"))), "--verdict"]) == 0  # a reader recomputes it
    assert f"  sensitivity: {stored.line}" in capsys.readouterr().out.splitlines()
    from html import escape

    from turngate.commands import report

    assert report.main([str(next(out.glob("v3*.json"))), "--out", str(out / "r.html")]) == 0  # and the HTML report
    assert f"What this verdict could see:</strong> {escape(stored.line)}</div>" in (out / "r.html").read_text()


def test_a_gates_terminal_and_json_carry_the_statement(tmp_path, capsys):
    code = regression.main(["--version", "v3", "--no-upload", "--out", str(tmp_path), "--json", "--limit", "12"])
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    sight = data["verdict"]["sensitivity"]
    assert code == data["exit_code"] == 0
    assert sight["rows"] == 12 and [b["kind"] for b in sight["breaks"]] == [k.value for k in BreakKind]
    assert f"sensitivity: {sight['line']}" in captured.err  # the terminal (stderr under --json)


def test_a_dry_run_gives_the_same_statement_before_any_call(tmp_path, capsys, monkeypatch):
    def no_agent(*a, **k):
        raise AssertionError("the dry run called the agent")

    monkeypatch.setattr(regression, "execute_and_confirm", no_agent)
    assert regression.main(["--version", "v3", "--dry-run", "--limit", "12", "--out", str(tmp_path)]) == 0
    dry = [x for x in capsys.readouterr().out.splitlines() if x.startswith("sensitivity: ")]
    assert list(tmp_path.iterdir()) == []
    monkeypatch.undo()
    regression.main(["--version", "v3", "--no-upload", "--quiet", "--limit", "12", "--out", str(tmp_path)])
    ran = [x for x in capsys.readouterr().out.splitlines() if x.startswith("sensitivity: ")]
    assert len(dry) == 1 and dry == ran


# -- compare: what McNemar could reach ---------------------------------------------------------

def pair(tmp_path: Path, pairs: list[tuple[bool, bool]]) -> tuple[Path, Path]:
    rows = [row(f"r{k:03d}") for k in range(len(pairs))]
    base, cand = runs_from_pairs("v2", "v3", pairs)
    return (save_record(record("v2", base, rows), tmp_path / "A.json"),
            save_record(record("v3", cand, rows), tmp_path / "B.json"))


def test_a_six_row_good_broken_pair_is_not_a_bare_pass(tmp_path, capsys):
    a, b = pair(tmp_path, [(True, False)] * 4 + [(True, True)] * 2)  # 4 pass->fail of 6
    assert compare.main([str(a), str(b), "--out", str(tmp_path / "cmp.json")]) == 2
    out = capsys.readouterr().out
    assert "PASS:" not in out and "no scorer significantly worse" not in out
    assert "cannot judge: 1 scorer(s) with pass->fail flips too few for McNemar" in out
    assert "refund_outcome: 4 pass->fail, 0 fail->pass over 6 pairs" in out
    assert "not enough pairs to detect a difference smaller than 100%" in out
    stored = load_record(tmp_path / "cmp.json").verdict
    assert stored.exit_code == 2 and stored.sensitivity.pairs[0].needed == 6
    assert compare.main([str(a), str(b), "--fail-on-regression"]) == 2  # nothing found: still cannot judge


def test_enough_pairs_keep_an_honest_pass_and_a_real_regression(tmp_path, capsys):
    a, b = pair(tmp_path, [(True, True)] * 40)
    assert compare.main([str(a), str(b)]) == 0
    assert "this comparison could detect a pass-rate drop of 15% or more (6 of 40 pairs" in capsys.readouterr().out
    (tmp_path / "x").mkdir()
    a, b = pair(tmp_path / "x", [(True, False)] * 8 + [(True, True)] * 32)
    assert compare.main([str(a), str(b), "--fail-on-regression"]) == 1


def test_the_fewest_flips_needed_follow_from_the_exact_test_and_holm():
    assert mcnemar_exact(5, 0) > 0.05 > mcnemar_exact(6, 0)
    assert needed_flips(100, [], 0.05) == 6
    assert needed_flips(5, [], 0.05) is None  # no difference can be detected with 5 pairs
    assert needed_flips(100, [0.5], 0.05) == 7  # two scorers in the family: 2 x 2/2^b < 0.05
    base, cand = runs_from_pairs("v2", "v3", [(True, False)] * 3 + [(True, True)] * 20)
    (x,) = [p for p in pair_power(compare_runs(base, cand, ["refund_outcome", "policy_judge"], baseline="v2",
                                                candidate="v3")) if p.scorer == "refund_outcome"]
    assert (x.pass_to_fail, x.judged, x.needed) == (3, False, 6)


def test_the_dataset_order_of_the_rows_does_not_change_the_statement(reference):
    rows = list(reference.rows)
    assert sensitivity(reference, 1, BARS, rows=rows[::-1], gates=5) == sensitivity(reference, 1, BARS, rows=rows,
                                                                                      gates=5)


def test_the_docs_table_is_what_the_statement_says(reference):
    """docs/gate.md "What this gate could see": its one-trial row, at the default number of gates."""
    line = next(x for x in (REPO / "docs" / "gate.md").read_text().splitlines() if x.startswith("| 1 | as planned |"))
    s = sensitivity(reference, 1, BARS)
    assert line.split(" | ")[2:5] == [f"{b.caught}/{b.gates}" for b in s.breaks]
    assert f"a row that now fails half its runs: {s.breaks[1].rate:.0%}" in (REPO / "docs" / "gate.md").read_text()


def test_merged_shards_state_what_the_whole_gate_could_see(tmp_path, capsys, monkeypatch):
    from turngate.commands import merge

    summary = tmp_path / "step.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    base = ["--version", "v3", "--only", "status", "eta", "refund_ok", "refund_expired", "--no-upload", "--quiet"]
    assert regression.main([*base, "--out", str(tmp_path / "full")]) == 0
    whole = load_record(next((tmp_path / "full").glob("v3*.json"))).verdict.sensitivity
    assert whole.rows == 4 and f"**What this verdict could see**: {whole.line}" in summary.read_text()
    for k in (1, 2):
        regression.main([*base, "--shard", f"{k}/2", "--out", str(tmp_path / "shards")])
    capsys.readouterr()
    assert merge.main([*map(str, sorted((tmp_path / "shards").glob("v3*.json"))), "--out",
                       str(tmp_path / "merged.json")]) == 0
    assert f"sensitivity: {whole.line}" in capsys.readouterr().out.splitlines()
    assert load_record(tmp_path / "merged.json").verdict.sensitivity == whole


def test_a_gate_against_a_baseline_notes_the_flips_mcnemar_could_not_judge():
    from turngate.output.wording import decide
    from turngate.verdict.summary import summarise

    base, cand = runs_from_pairs("v2", "v3", [(True, False)] * 2 + [(True, True)] * 10)
    comparison = compare_runs(base, cand, ["refund_outcome", "policy_judge"], baseline="v2", candidate="v3")
    rows = {f"r{k:03d}": row(f"r{k:03d}") for k in range(12)}
    registry = {"refund_outcome": type("S", (), {"bar": 0.5})(), "policy_judge": type("S", (), {"bar": 0.5})()}
    v = decide(summarise(cand, rows, {}, 1), None, registry, comparison=comparison, fail_on_regression=True)
    assert v.exit_code == 0  # the gate is judged by its bars: the baseline's blind spot is said, not failed
    assert any(n.startswith("baseline comparison: refund_outcome: 2 pass->fail") for n in v.notes), v.notes


def test_a_dry_run_of_a_resume_states_what_the_whole_gate_could_see(v3_gate, tmp_path, capsys, monkeypatch):
    _, out = v3_gate
    full = load_record(next(out.glob("v3*.json")))
    record = full.model_copy(deep=True)
    record.runs = [r for r in record.runs if r.row_id not in {x["id"] for x in record.rows[:2]}]
    record.meta.complete, record.meta.interrupted = False, True
    path = save_record(record, tmp_path / "v3-interrupted.json")
    monkeypatch.setattr(regression, "execute_and_confirm", lambda *a, **k: pytest.fail("ran"))
    capsys.readouterr()
    assert regression.main(["--resume", str(path), "--no-upload", "--dry-run"]) == 0
    assert f"sensitivity: {full.verdict.sensitivity.line}" in capsys.readouterr().out.splitlines()
