"""The one decision function on fabricated records: a row's total regression is named even
at one trial, unchanged counts pass, more trials at the same degradation never pass when
fewer fail, and a reference, bars file or calibration that cannot be trusted is exit 2."""
from __future__ import annotations

import json
import random
from types import SimpleNamespace

import pytest

from tests.record_helpers import record, row, run
from turngate.commands import calibrate, regression
from turngate.core.errors import ConfigError
from turngate.core.seeds import format_seeds, parse_seeds
from turngate.output.wording import decide
from turngate.record.summaries import CellCounts, ConfirmationSummary, RunCount, VersionSummary
from turngate.scoring.scorers import REGISTRY, registry
from turngate.verdict.decide import plan_reruns
from turngate.verdict.policy import DEFAULT, GatePolicy
from turngate.verdict.reference import Reference, build_reference, check_rows, dump_reference, load_reference
from turngate.verdict.summary import summarise
from turngate.verdict.thresholds import load_thresholds

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


def verdict_of(fail, seeds, ref, *, confirm=True, reg=None, policy=DEFAULT):
    """A gate of the version `fail` describes ((row, seed, scorer) -> failed): its runs on these
    seeds, then, as the gate does, the reruns stage 1 asks for on the seeds it names."""
    seeds = list(seeds)
    summary = summarise(runs_for(seeds, fail), {r["id"]: r for r in ROWS}, BARS, len(seeds))
    if confirm:
        below = [n for n, x in summary.scorers.items() if x.n and x.mean < BARS[n]]
        plan = plan_reruns(summary, ref, seeds, below_bar=below, policy=policy)
        reruns = [run("v3", rid, s, {n: not fail(rid, s, n) for n in SCORERS}) for rid, ss in plan.items() for s in ss]
        conf = summarise(reruns, {r["id"]: r for r in ROWS}, BARS, len(seeds))
        summary.confirmation = ConfirmationSummary.of(conf, rows=len(plan), runs=len(reruns))
    return decide(summary, ref, reg or REG, policy=policy)


def only(row_id, scorer=None, seeds=None):
    """A version where one row fails (one scorer, or both) on every seed, or only on these seeds."""
    return lambda rid, s, n: rid == row_id and (scorer is None or n == scorer) and (seeds is None or s in seeds)


def test_a_quiet_row_that_now_fails_every_run_is_regressed_at_one_trial_with_its_reruns():
    v = verdict_of(only("mass_email", "no_forbidden_action"), [20], QUIET_20)
    assert v.exit_code == 1
    (x,) = v.regressed
    assert (x.row_id, x.scorers, x.status) == ("mass_email", ["no_forbidden_action"], "regressed")
    k = x.reruns["no_forbidden_action"].runs
    assert x.reruns["no_forbidden_action"].failed == k >= 3 and x.p_value < 0.005
    assert (f"row regressed: mass_email: no_forbidden_action failed 0/20 accepted, 1/1 now, {k}/{k} on reruns"
            in v.line)
    # the bars alone would have passed it: 30 of 31 rows is above 0.8
    assert all(s.mean >= s.bar for s in v.scorers.values())
    assert v.headline == "FAIL: 1 row regressed" and v.lines() == [v.headline, f"  - {v.reasons[0]}"]


def test_a_single_failure_that_the_reruns_do_not_repeat_is_flaky_and_passes():
    v = verdict_of(only("mass_email", "no_forbidden_action", seeds={20}), [20], QUIET_20)
    assert v.exit_code == 0 and v.regressed == []
    assert [(x.row_id, x.status) for x in v.flaky] == [("mass_email", "flaky")]
    assert any(n.startswith("flaky: mass_email: no_forbidden_action failed 0/20 accepted, 1/1 now, 0/") for n in v.notes)
    assert v.confirmation.rows == 1


def test_unchanged_counts_pass_and_say_what_was_checked():
    v = verdict_of(lambda *_: False, [20, 21, 22], QUIET_20)
    assert v.exit_code == 0 and v.regressed == [] and v.line.startswith("PASS")
    assert "no row regressed" in v.line


def test_a_row_that_fails_as_often_as_it_did_when_accepted_is_not_a_regression():
    noisy = lambda rid, s, n: rid == "r03" and n == "refund_outcome" and s % 4 == 0  # noqa: E731  1 in 4
    ref = reference_from(runs_for(range(40), noisy), range(40))
    for seeds in ([40], [44], range(40, 45), range(40, 60)):
        v = verdict_of(noisy, seeds, ref)
        assert v.exit_code == 0, v.line


def test_a_noisy_row_broken_for_good_is_caught_at_one_trial_by_its_reruns():
    """The accepted run fails r03 one run in ten: one failure now is as usual, and no one-stage
    test can tell it from a break. The reruns can: a row that now fails every run fails them all."""
    noisy = lambda rid, s, n: rid == "r03" and n == "no_forbidden_action" and s % 10 == 0  # noqa: E731
    ref = reference_from(runs_for(range(100), noisy), range(100))
    v = verdict_of(only("r03", "no_forbidden_action"), [100], ref)
    assert [x.row_id for x in v.regressed] == ["r03"] and v.exit_code == 1, v.line
    assert verdict_of(only("r03", "no_forbidden_action"), [100], ref, confirm=False).exit_code == 0
    # as usual (it failed on seed 100, and fails 1 in 10 on the reruns' seeds): flaky at most
    assert verdict_of(noisy, [100], ref).exit_code == 0


def test_a_noisy_row_failing_a_second_scorer_with_its_usual_failure_is_not_a_regression():
    """r03 fails no_forbidden_action one run in ten when accepted; once, now, it fails it together
    with refund_outcome (never failed): a rare pair, and the reruns show the row as usual."""
    noisy = lambda rid, s, n: rid == "r03" and n == "no_forbidden_action" and s % 10 == 0  # noqa: E731
    ref = reference_from(runs_for(range(100), noisy), range(100))
    pair = lambda rid, s, n: noisy(rid, s, n) or (rid == "r03" and s == 100)  # noqa: E731
    both = verdict_of(pair, [100], ref)
    assert both.regressed == [] and both.exit_code == 0, both.line
    assert verdict_of(only("mass_email", "refund_outcome"), [100], ref).regressed[0].row_id == "mass_email"


def test_a_judge_scorer_from_another_judge_is_judged_by_its_bar_only():
    """The accepted counts of a judge scorer hold for the judge that gave them. Here
    refund_outcome plays the judge scorer: judged by another judge, a quiet row failing it is not
    a regressed row (that judge may simply be stricter); the code scorer's still is."""
    from turngate.verdict.reference import check_judge

    ref = QUIET_20.model_copy(update={"provenance": {"version": "v3", "judge": "offline"}})
    assert check_judge(ref, "offline", {"refund_outcome"}) == (ref, [])
    other, notes = check_judge(ref, "openai:gpt-4o-mini", {"refund_outcome"})
    assert other.scorers() == {"no_forbidden_action"} and ref.scorers() == set(SCORERS)
    assert "judged by offline, this run by openai:gpt-4o-mini: refund_outcome judged by the bar only" in notes[0]
    assert [x.row_id for x in verdict_of(only("mass_email", "refund_outcome"), [20], ref).regressed] == ["mass_email"]
    v = verdict_of(only("mass_email", "refund_outcome"), [20], other)
    assert v.regressed == [] and v.exit_code == 0, v.line
    coded = verdict_of(only("mass_email"), [20], other)
    assert [(x.row_id, x.scorers) for x in coded.regressed] == [("mass_email", ["no_forbidden_action"])]


def test_new_rows_are_judged_by_the_bars_only_and_the_verdict_says_so():
    ref = QUIET_20.model_copy(update={"rows": {k: v for k, v in QUIET_20.rows.items() if k != "mass_email"}})
    v = verdict_of(only("mass_email"), [20], ref)
    assert v.exit_code == 0 and v.regressed == []
    assert any("not in the reference, judged by the bars only: mass_email" in n for n in v.notes)


@pytest.mark.parametrize("rate", [0.1, 0.2, 0.35])
def test_more_trials_at_the_same_degradation_fail_at_least_as_often(rate):
    """Diffuse degradation: every row fails refund_outcome at `rate` (accepted: 1 in 50). Over
    many draws the 5-trial gate fails at least as often as the 1-trial gate; from 10x the
    accepted rate, always (at 5x, 31 rows x 5 runs leave some draws too thin to confirm). With
    the totals' reruns uncapped (rerun_budget inf): what the budget buys at five trials."""
    thorough = GatePolicy(rerun_budget=float("inf"))
    base = reference_from(runs_for(range(100), lambda rid, s, n: n == "refund_outcome" and s % 50 == 7), range(100))
    fails = {1: 0, 5: 0}
    for draw in range(12):
        salt = random.Random(draw).random()
        degrade = lambda rid, s, n, salt=salt: (  # noqa: E731
            n == "refund_outcome" and random.Random(f"{salt}{rid}{s}").random() < rate)
        fails[1] += verdict_of(degrade, [500], base, policy=thorough).exit_code == 1
        fails[5] += verdict_of(degrade, range(500, 505), base, policy=thorough).exit_code == 1
    assert fails[5] >= fails[1] and fails[5] >= (12 if rate >= 0.2 else 8)


def test_a_bar_breached_by_a_fluke_is_flaky_and_one_breached_by_a_break_fails():
    """Three quiet rows fail once each on the gate's seed: refund_outcome's mean (28/31) is
    below a bar of 0.95, but the reruns pass as accepted, so it does not stand; rows that fail
    on every seed confirm it."""
    reg = {"refund_outcome": SimpleNamespace(bar=0.95), "no_forbidden_action": SimpleNamespace(bar=0.8)}
    three = {"r01", "r02", "r03"}
    fluke = lambda rid, s, n: rid in three and n == "refund_outcome" and s == 20  # noqa: E731
    v = verdict_of(fluke, [20], QUIET_20, reg=reg)
    assert v.exit_code == 0, v.line
    assert any("mean 0.903 < bar 0.95 at stage 1, not confirmed" in n for n in v.notes)
    broken = lambda rid, s, n: rid in three and n == "refund_outcome"  # noqa: E731
    v = verdict_of(broken, [20], QUIET_20, reg=reg)
    assert v.exit_code == 1 and v.reasons[0].startswith("refund_outcome: mean 0.903 < bar 0.95, confirmed")
    # without reruns a breach stands: the bars are the contract (fail closed)
    assert verdict_of(fluke, [20], QUIET_20, reg=reg, confirm=False).exit_code == 1


def test_the_mean_test_bar_rises_with_trials():
    base = reference_from(runs_for(range(100), lambda rid, s, n: n == "refund_outcome" and s % 50 == 7), range(100))
    bars = [verdict_of(lambda *_: False, range(500, 500 + t), base).scorers["refund_outcome"].gate_bar
            for t in (1, 5, 20)]
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
    from turngate.core.plugins import load_plugins

    load_plugins()  # the project's scorers too (registry() loads them), whichever test ran first
    assert set(registry(load_thresholds(bars_file(tmp_path)))) == set(REGISTRY)
    with pytest.raises(ConfigError, match="no bar for scorer 'tool_use'"):
        registry(load_thresholds(bars_file(tmp_path, drop="tool_use")))
    with pytest.raises(ConfigError, match=r"bars.toml:\d+: bar for unknown scorer 'speling'"):
        registry(load_thresholds(bars_file(tmp_path, extra="speling")))
    for bad in (0.0, 1.5):
        with pytest.raises(ConfigError, match="outside"):
            registry(load_thresholds(bars_file(tmp_path, value=bad)))


def no_agent(monkeypatch):
    from turngate.jobs import runner
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
    from turngate.gate import run as gate
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
    from turngate.sources.dataset import load_rows

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


def test_the_issue_18_reproducer_no_longer_fails_an_unchanged_version_at_many_trials():
    """One row failing 5 of 100 accepted runs; a gate with one failure in t runs is as usual."""
    from turngate.verdict.decide import runs_test
    from turngate.verdict.reference import Cell, RowRef

    r = Reference(provenance={}, seeds=list(range(100)), rows={"r": RowRef(sha="0", cells={
        "s": Cell(passed=95, failed=5, failed_seeds=[7, 27, 47, 67, 87])})})
    for t in (1, 5, 18, 19, 20, 50):
        now = VersionSummary(failed_runs={"r": RunCount(runs=t, failed=1)},
                             cells={"r": {"s": CellCounts(passed=t - 1, failed=1)}})
        assert runs_test(now, r, t)["worse"] is False


def test_holm_rejects_what_a_brute_force_step_down_rejects():
    from turngate.verdict.confirm import holm

    rng = random.Random(3)
    for _ in range(300):
        ps = [rng.random() ** rng.choice([1, 3, 8]) for _ in range(rng.randint(1, 9))]
        got = holm(ps, 0.05)
        order = sorted(range(len(ps)), key=lambda i: ps[i])
        want, stop = [False] * len(ps), False
        for rank, i in enumerate(order):
            stop = stop or ps[i] > 0.05 / (len(ps) - rank)
            want[i] = not stop
        assert got == want


def test_confirmation_seeds_are_fresh_and_differ_between_gates():
    from turngate.verdict.confirm import confirm_seeds

    a, b = confirm_seeds([1000], set(range(100)) | {1000}, 20), confirm_seeds([1001], set(range(100)), 20)
    assert len(set(a)) == 20 and not set(a) & set(b) and not set(a) & (set(range(100)) | {1000})
    assert confirm_seeds([1000], set(range(100)), 20) == a  # deterministic: a resume reruns the same plan
