"""scripts/gate_study.py, small: on simulated fresh worlds (a truth drawn from the committed
reference's posterior, a new 20- or 100-run reference drawn from it, bars proposed from that,
fresh gates and their reruns drawn from the truth), an unchanged version fails the gate within
the documented budget at every number of trials, and a row broken for good is caught at one
trial. Seeded: the same figures every run, no timing."""
from __future__ import annotations

import sys
from math import sqrt
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import gate_study  # noqa: E402  (a script, not a package)

from turngate.verdict.reference import load_reference  # noqa: E402


def allowed(gates: int, budget: float = gate_study.BUDGET) -> float:
    """The budget plus two Monte Carlo standard errors."""
    return budget * gates + 2 * sqrt(gates * budget * (1 - budget))


def test_false_alarms_stay_within_budget_at_every_trial_count_for_20_and_100_run_references():
    res = gate_study.study(load_reference(), worlds=50, trials=[1, 5, 20], refs=[20, 100], seed=11, breaks=False)
    assert len(res) == 6
    for cell in res.values():
        assert cell["false_alarms"] <= allowed(cell["gates"]), cell
    total = sum(c["false_alarms"] for c in res.values())
    assert total <= allowed(sum(c["gates"] for c in res.values())), res


def test_a_row_broken_for_good_is_caught_at_one_trial_noisy_or_quiet():
    res = gate_study.study(load_reference(), worlds=25, trials=[1], refs=[100], seed=12, breaks=True)
    (cell,) = res.values()
    for key in ("break_noisy_caught", "break_quiet_caught"):
        caught, n = map(int, cell[key].split("/"))
        assert n == 25 and caught >= 23, cell


def test_a_gate_that_confirmed_every_flag_would_be_caught_by_the_study():
    """The study can fail: with a family-wise level of 1 instead of 0.005 (every flag that has
    reruns is confirmed), it sees the excess. 60 worlds: at 30 the excess (about one gate in ten)
    is within a world or two of the bound, so which seed it draws decides."""
    from turngate.verdict.policy import GatePolicy

    res = gate_study.study(load_reference(), worlds=60, trials=[1], refs=[20], seed=13, breaks=False,
                           policy=GatePolicy(alpha=1.0))
    (cell,) = res.values()
    assert cell["false_alarms"] > allowed(cell["gates"]), cell


def test_policies_compared_are_judged_on_the_same_gates():
    """--compare: every policy judges the gate drawn from the same stream, so a switch that does
    not change the rerun plan (the stage-1-alone rule) makes the same reruns on every gate; a
    retired knob is refused, not silently dropped."""
    import numpy as np
    import pytest

    from turngate.verdict.policy import DEFAULT, GatePolicy

    res = gate_study.compare_devices(load_reference(), worlds=2, trials=[1], refs=[20], seed=14,
                                     policies={"default": DEFAULT, "s1off": GatePolicy(alpha_stage1_rows=0.0)})
    a, b = res["ref20-t1/default"], res["ref20-t1/s1off"]
    for kind in ("unchanged", "noisy", "quiet", "hot", "spread"):
        assert a[kind]["gates"] == b[kind]["gates"] <= 2 and a[kind]["mean_reruns"] == b[kind]["mean_reruns"]
    truth = {"r": (["s"], [], [frozenset(), frozenset(["s"])], np.array([0.9, 0.1]))}
    assert list(gate_study.hotter(truth)["r"][3]) == pytest.approx([0.8, 0.2])
    with pytest.raises(SystemExit):
        gate_study.policy_of("reruns_lean=1")
