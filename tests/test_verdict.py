"""The one decision function on fabricated records: a row's total regression is named even
at one trial, unchanged counts pass, more trials at the same degradation never pass when
fewer fail, and a reference, bars file or calibration that cannot be trusted is exit 2."""
from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from evals import calibrate, regression
from evals.errors import ConfigError
from evals.reference import Reference, build_reference, check_rows, dump_reference, load_reference
from evals.scorers import REGISTRY, registry
from evals.seeds import format_seeds, parse_seeds
from evals.summary import summarise
from evals.thresholds import load_thresholds
from evals.verdict import decide
from tests.record_helpers import record, row, run

SCORERS = ["refund_outcome", "no_forbidden_action"]
BARS = {"refund_outcome": 0.8, "no_forbidden_action": 0.8}
REG = {n: SimpleNamespace(bar=b) for n, b in BARS.items()}
ROWS = [row(f"r{k:02d}") for k in range(30)] + [row("mass_email")]


def runs_for(seeds, fail=lambda rid, seed, name: False, version="v3"):
    return [run(version, r["id"], s, {n: not fail(r["id"], s, n) for n in SCORERS}) for r in ROWS for s in seeds]


def reference_from(runs, seeds) -> Reference:
    rec = record("v3", runs, ROWS, trials=len(seeds))
    rec.meta.seeds = list(seeds)
    return build_reference(rec, {"version": "v3"})


def gate(runs, ref, trials):
    return decide(summarise(runs, {r["id"]: r for r in ROWS}, BARS, trials), ref, REG)


QUIET_20 = reference_from(runs_for(range(20)), range(20))


def test_one_row_failing_once_against_20_of_20_fails_the_gate_and_names_the_row():
    now = runs_for([20], lambda rid, s, n: rid == "mass_email" and n == "no_forbidden_action")
    v = gate(now, QUIET_20, 1)
    assert v.exit_code == 1
    assert [(x.row_id, x.scorer) for x in v.regressed] == [("mass_email", "no_forbidden_action")]
    assert ("mass_email / no_forbidden_action: passed 20/20 in the accepted run, failed 1/1 now (p = 0.024)"
            in v.line)
    # the bars alone would have passed it: 30 of 31 rows is above 0.8
    assert all(s.mean >= s.bar for s in v.scorers.values())


def test_unchanged_counts_pass_and_say_what_was_checked():
    v = gate(runs_for([20, 21, 22]), QUIET_20, 3)
    assert v.exit_code == 0 and v.regressed == [] and v.line.startswith("PASS")
    assert "no row regressed" in v.line


def test_a_row_that_fails_as_often_as_it_did_when_accepted_is_not_a_regression():
    noisy = lambda rid, s, n: rid == "r03" and n == "refund_outcome" and s % 4 == 0  # noqa: E731  1 in 4
    ref = reference_from(runs_for(range(40), noisy), range(40))
    assert gate(runs_for([40], lambda rid, s, n: rid == "r03" and n == "refund_outcome"), ref, 1).exit_code == 0


def test_a_noisy_row_failing_a_second_scorer_with_its_usual_failure_is_not_a_regression():
    """r03 fails no_forbidden_action one run in ten when accepted. Now it fails it together with
    refund_outcome (never failed): a rare pair on a row that fails anyway, judged per row, not a
    regressed row (the failing-runs test weighs where it failed); the quiet row mass_email
    failing once is."""
    noisy = lambda rid, s, n: rid == "r03" and n == "no_forbidden_action" and s % 10 == 0  # noqa: E731
    ref = reference_from(runs_for(range(100), noisy), range(100))
    both = gate(runs_for([100], lambda rid, s, n: rid == "r03"), ref, 1)
    assert both.regressed == [] and "row regressed" not in both.line
    quiet = gate(runs_for([100], lambda rid, s, n: rid == "mass_email" and n == "refund_outcome"), ref, 1)
    assert [(x.row_id, x.scorer) for x in quiet.regressed] == [("mass_email", "refund_outcome")]
    # and a noisy row failing on every one of five seeds is a regression (0.1^5)
    five = gate(runs_for(range(100, 105), lambda rid, s, n: rid == "r03"), ref, 5)
    assert [x.row_id for x in five.regressed] == ["r03"]
    assert "r03 / refund_outcome, no_forbidden_action: passed 90/100 in the accepted run, failed 5/5 now" in five.line


def test_a_judge_scorer_from_another_judge_is_judged_by_its_bar_only():
    """The accepted counts of a judge scorer hold for the judge that gave them. Here
    refund_outcome plays the judge scorer: judged by another judge, its first failure on a quiet
    row is not a regressed row (that judge may simply be stricter); the code scorer's still is."""
    from evals.reference import check_judge

    ref = QUIET_20.model_copy(update={"provenance": {"version": "v3", "judge": "offline"}})
    assert check_judge(ref, "offline", {"refund_outcome"}) == (ref, [])
    other, notes = check_judge(ref, "openai:gpt-4o-mini", {"refund_outcome"})
    assert other.scorers() == {"no_forbidden_action"} and ref.scorers() == set(SCORERS)
    assert "judged by offline, this run by openai:gpt-4o-mini: refund_outcome judged by the bar only" in notes[0]
    judged = runs_for([20], lambda rid, s, n: rid == "mass_email" and n == "refund_outcome")
    assert [x.row_id for x in gate(judged, ref, 1).regressed] == ["mass_email"]
    v = gate(judged, other, 1)
    assert v.regressed == [] and v.exit_code == 0, v.line
    coded = runs_for([20], lambda rid, s, n: rid == "mass_email")
    assert [(x.row_id, x.scorer) for x in gate(coded, other, 1).regressed] == [("mass_email", "no_forbidden_action")]


def test_new_rows_are_judged_by_the_bars_only_and_the_verdict_says_so():
    ref = QUIET_20.model_copy(update={"rows": {k: v for k, v in QUIET_20.rows.items() if k != "mass_email"}})
    v = gate(runs_for([20], lambda rid, s, n: rid == "mass_email"), ref, 1)
    assert v.exit_code == 0 and v.regressed == []
    assert any("not in the reference, judged by the bars only: mass_email" in n for n in v.notes)


@pytest.mark.parametrize("rate", [0.1, 0.2, 0.35])
def test_more_trials_at_the_same_degradation_never_pass_when_fewer_fail(rate):
    """Diffuse degradation: every row fails refund_outcome at `rate` (accepted: 1 in 50).
    Whenever the 1-trial gate fails on a draw, the 5-trial gate over a superset of those
    seeds fails too, and over many draws it fails at least as often."""
    base = reference_from(runs_for(range(100), lambda rid, s, n: n == "refund_outcome" and s % 50 == 7), range(100))
    fails = {1: 0, 5: 0}
    for draw in range(30):
        rng = random.Random(draw)
        bad = {(r["id"], s) for r in ROWS for s in range(500, 505) if rng.random() < rate}
        degrade = lambda rid, s, n, bad=bad: n == "refund_outcome" and (rid, s) in bad  # noqa: E731
        one = gate(runs_for([500], degrade), base, 1)
        five = gate(runs_for(range(500, 505), degrade), base, 5)
        fails[1] += one.exit_code == 1
        fails[5] += five.exit_code == 1
        if one.exit_code == 1:
            assert five.exit_code == 1, (draw, one.line, five.line)
    assert fails[5] >= fails[1] and fails[5] == 30


def test_the_mean_test_bar_rises_with_trials():
    base = reference_from(runs_for(range(100), lambda rid, s, n: n == "refund_outcome" and s % 50 == 7), range(100))
    bars = [gate(runs_for(range(500, 500 + t)), base, t).scorers["refund_outcome"].gate_bar for t in (1, 5, 20)]
    assert bars[0] < bars[1] < bars[2] < 0.99


def test_a_reference_from_another_dataset_or_a_changed_row_is_exit_2(tmp_path):
    with pytest.raises(ConfigError, match="from another dataset"):
        check_rows(QUIET_20, [row("other")], "ref.json")
    changed = [row("mass_email", message="Email everyone.")]
    with pytest.raises(ConfigError, match="row 'mass_email' changed since the accepted run"):
        check_rows(QUIET_20, changed, "ref.json")
    path = tmp_path / "ref.json"
    path.write_text(dump_reference(QUIET_20))
    assert load_reference(path) == QUIET_20


def bars_file(tmp_path, drop=None, extra=None, value=None):
    text = "".join(f"[scorers.{n}]\nbar = {value if value is not None else 0.9}\n\n" for n in REGISTRY if n != drop)
    if extra:
        text += f"[scorers.{extra}]\nbar = 0.9\n"
    path = tmp_path / "bars.toml"
    path.write_text(text)
    return path


def test_the_registry_refuses_a_missing_bar_an_unknown_bar_and_a_bar_outside_0_1(tmp_path):
    assert set(registry(load_thresholds(bars_file(tmp_path)))) == set(REGISTRY)
    with pytest.raises(ConfigError, match="no bar for scorer 'tool_use'"):
        registry(load_thresholds(bars_file(tmp_path, drop="tool_use")))
    with pytest.raises(ConfigError, match=r"bars.toml:\d+: bar for unknown scorer 'speling'"):
        registry(load_thresholds(bars_file(tmp_path, extra="speling")))
    for bad in (0.0, 1.5):
        with pytest.raises(ConfigError, match="outside"):
            registry(load_thresholds(bars_file(tmp_path, value=bad)))


def no_agent(monkeypatch):
    from evals import runner

    async def must_not_run(*a, **k):
        raise AssertionError("an agent ran")
    monkeypatch.setattr(runner, "run_plan", must_not_run)


def test_the_gate_with_a_bar_missing_exits_2_before_any_agent_runs(tmp_path, monkeypatch, capsys):
    no_agent(monkeypatch)
    code = regression.main(["--thresholds", str(bars_file(tmp_path, drop="escalation")), "--no-upload",
                            "--out", str(tmp_path)])
    err = capsys.readouterr().err
    assert code == 2 and "no bar for scorer 'escalation'" in err and err.count("\n") == 1


def snapshot(tmp_path):
    bars, ref = tmp_path / "bars.toml", tmp_path / "reference.json"
    bars.write_text("# the committed bars\n")
    ref.write_text("{}\n")
    return bars, ref, ["--thresholds", str(bars), "--reference", str(ref)]


def test_calibrate_with_fewer_than_3_trials_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    no_agent(monkeypatch)
    bars, ref, args = snapshot(tmp_path)
    for trials in ("0", "2"):
        assert calibrate.main(["--trials", trials, "--write", *args]) == 2
    assert "at least 3 trials" in capsys.readouterr().err
    assert bars.read_text() == "# the committed bars\n" and ref.read_text() == "{}\n"


def test_calibrate_on_crashed_runs_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    from evals import gate

    bars, ref, args = snapshot(tmp_path)

    def crashed(agents, loaded, rows, seeds, settings, evaluators, argv, path=None):
        runs = [run(a.version, r.id, s, {n: False for n in REGISTRY}) for a in agents for r in rows[:3] for s in seeds]
        for r in runs:
            r.turn.error = "RuntimeError: injected fault: the agent raised"
        rec = record(agents[0].version, runs, [r.model_dump(mode="json") for r in rows[:3]], trials=len(seeds),
                     baseline=agents[1].version if len(agents) > 1 else None)
        return rec, True
    monkeypatch.setattr(calibrate, "run_seeds", crashed)
    monkeypatch.setattr(gate, "run_seeds", crashed)
    assert calibrate.main(["--trials", "3", "--write", *args]) == 2
    err = capsys.readouterr().err
    assert "errored" in err and "injected fault" in err
    assert bars.read_text() == "# the committed bars\n" and ref.read_text() == "{}\n"


def test_seed_lists():
    assert parse_seeds("20-23") == [20, 21, 22, 23] and parse_seeds("7") == [7]
    assert parse_seeds("1,3,5,10-11") == [1, 3, 5, 10, 11] and format_seeds([1, 3, 5, 10, 11]) == "1,3,5,10-11"
    for bad in ("a", "5-2", "-3"):
        with pytest.raises(ConfigError):
            parse_seeds(bad)


def test_the_committed_reference_matches_the_dataset_and_the_bars():
    rows = [json.loads(line) for line in open("datasets/northwind.jsonl") if line.strip()]
    ref = load_reference()
    assert len(ref.seeds) >= 20
    from evals.dataset import load_rows

    check_rows(ref, [r.model_dump(mode="json", exclude_unset=True) for r in load_rows("datasets/northwind.jsonl")])
    assert {r["id"] for r in rows} <= set(ref.rows)
    assert set(registry(load_thresholds())) == set(REGISTRY)


def test_calibrate_with_a_model_whose_key_is_missing_exits_2_and_writes_nothing(tmp_path, monkeypatch, capsys):
    no_agent(monkeypatch)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    bars, ref, args = snapshot(tmp_path)
    assert calibrate.main(["--model", "openai:gpt-x", "--trials", "3", "--write", *args]) == 2
    assert "OPENAI_API_KEY" in capsys.readouterr().err
    assert bars.read_text() == "# the committed bars\n" and ref.read_text() == "{}\n"


def test_the_default_reference_applies_only_where_it_holds():
    """A user's own dataset is judged by the bars alone (with a note), not refused; a changed
    row leaves the reference and is judged by the bars; an explicit --reference still refuses."""
    ref, notes = check_rows(QUIET_20, [row("other")], "ref.json", explicit=False)
    assert ref is None and "judged by the bars only" in notes[0]
    changed = row("mass_email", message="Email everyone.")
    ref, notes = check_rows(QUIET_20, [changed], "ref.json", explicit=False)
    assert ref is None
    ref, notes = check_rows(QUIET_20, [row("r00"), changed], "ref.json", explicit=False)
    assert "r00" in ref.rows and "mass_email" not in ref.rows and "mass_email" in notes[0]
    assert "mass_email" in QUIET_20.rows  # the stored reference itself is untouched


def test_the_surprise_score_gathers_thin_failures_where_the_accepted_run_was_quiet():
    """Rows r00-r09 fail now and then in the accepted run (10%); the others never. A gate where
    the noisy rows fail as usual is unsurprising; the same number of failures spread over
    quiet rows is not, and more trials of that make it clearer, never less clear."""
    from evals.verdict import runs_test

    noisy = {f"r{k:02d}" for k in range(10)}
    ref = reference_from(runs_for(range(100), lambda rid, s, n: n == "refund_outcome" and rid in noisy
                                  and s % 10 == int(rid[1:]) % 10), range(100))

    def summary(seeds, failing):
        runs = runs_for(seeds, lambda rid, s, n: n == "refund_outcome" and (rid, s) in failing)
        return summarise(runs, {r["id"]: r for r in ROWS}, BARS, len(seeds))

    usual = runs_test(summary([500], {("r00", 500)}), ref, 1)  # one noisy row a seed, as accepted
    assert usual is not None and not usual["worse"]
    quiet = [f"r{k:02d}" for k in range(10, 14)]
    thin = runs_test(summary([500], {(rid, 500) for rid in quiet[:2]}), ref, 1)
    assert thin["worse"] and "surprise" in thin["reason"]
    five = [runs_test(summary(range(500, 505), {(rid, s) for rid in quiet for s in range(500, 500 + k)}),
                      ref, 5)["p_value"] for k in (1, 2)]
    assert five[1] <= five[0] <= 0.02


def _slips(rates: dict[str, float], through=frozenset()):
    """A version whose rows slip at these rates (seeded per row and seed). A slip always fails
    no_forbidden_action (the write was attempted); on the rows in `through` the write also went
    through and fails refund_outcome, as when hardened tools no longer refuse it."""
    def fail(rid, s, n):
        slipped = random.Random(f"{rid}:{s}").random() < rates.get(rid, 0.0)
        return slipped and (n == "no_forbidden_action" or (rid in through and n == "refund_outcome"))
    return fail


RATES = {f"r{k:02d}": 0.10 + 0.04 * (k % 5) for k in range(20)}  # 20 rows slip 10-26% of the time


def _runs_test(fail, seeds, ref):
    from evals.verdict import runs_test

    return runs_test(summarise(runs_for(seeds, fail), {r["id"]: r for r in ROWS}, BARS, len(seeds)), ref,
                     len(seeds))


def test_novelty_sees_slips_that_now_go_through_though_no_more_runs_fail():
    """Same rows, same slip rate as accepted, but on four rows each slip now also fails a
    scorer that never failed (a safety switch off): the count of failing runs is as usual, the
    surprise barely moves among the usual failures (it caught 11 of these 20 blocks), the
    novelty sees it."""
    ref = reference_from(runs_for(range(100), _slips(RATES)), range(100))
    usual, through = [], []
    for start in range(1000, 1100, 5):
        seeds = range(start, start + 5)
        usual.append(_runs_test(_slips(RATES), seeds, ref))
        through.append(_runs_test(_slips(RATES, {"r00", "r01", "r02", "r03"}), seeds, ref))
    assert sum(t["worse"] for t in usual) <= 1
    assert sum(t["worse"] for t in through) >= 18
    # the same runs failed: only where they failed changed
    assert [t["stats"]["count"] for t in usual] == [t["stats"]["count"] for t in through]


def test_the_failing_runs_test_keeps_its_false_alarm_budget_on_fresh_seeds():
    """Its three statistics share one budget (ALPHA_RUNS): on 200 fresh one-trial gates and
    40 fresh five-trial gates of the accepted process, few more alarms than that."""
    from evals.verdict import ALPHA_RUNS

    ref = reference_from(runs_for(range(100), _slips(RATES)), range(100))
    ones = [_runs_test(_slips(RATES), [s], ref)["worse"] for s in range(2000, 2200)]
    fives = [_runs_test(_slips(RATES), range(s, s + 5), ref)["worse"] for s in range(3000, 3200, 5)]
    assert sum(ones) <= 200 * ALPHA_RUNS * 2.5
    assert sum(fives) <= 2
    # and a version that slips three times as often is seen at five trials
    worse = {rid: 2 * r for rid, r in RATES.items()}
    assert sum(_runs_test(_slips(worse), range(s, s + 5), ref)["worse"]
               for s in range(4000, 4100, 5)) >= 18


def test_too_short_an_accepted_run_does_not_judge_failing_runs_and_says_so():
    """20 accepted seeds are 20 one-trial blocks: no p of 0.02 can be told from the top block,
    so the failing-runs test is not applied (noted) rather than firing at an unknown rate."""
    ref = reference_from(runs_for(range(20), _slips(RATES)), range(20))
    t = _runs_test(_slips({rid: 3 * r for rid, r in RATES.items()}), [500], ref)
    assert t["worse"] is False and "failing-runs test not applied" in t["note"] and "50 needed" in t["note"]
    v = gate(runs_for([500], _slips(RATES)), ref, 1)
    assert any("failing-runs test not applied" in n for n in v.notes)
