"""The decision rule's knobs live in one frozen GatePolicy: the docs' table is generated from
it, decide() and the reruns' plan read it (a changed knob changes the verdict, the default is
what the gate uses), and a stored policy reads back as the same value."""
from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from tests.test_verdict import QUIET_20, only, verdict_of
from turngate.verdict import confirm, decide
from turngate.verdict.policy import DEFAULT, GatePolicy, policy_table

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import gen_policy_docs  # noqa: E402  (a script, not a package)


def test_the_docs_policy_table_is_the_policy():
    text = gen_policy_docs.DOC.read_text(encoding="utf-8")
    assert gen_policy_docs.render(text) == text, "docs/gate.md's policy table is stale: run scripts/gen_policy_docs.py"
    assert gen_policy_docs.main(["--check"]) == 0
    for f in dataclasses.fields(GatePolicy):
        assert f"| `{f.name}` | {getattr(DEFAULT, f.name):g} |" in text
        assert f.metadata["meaning"] and f.metadata["why"], f.name


def test_a_stale_table_is_caught(tmp_path, monkeypatch):
    doc = tmp_path / "gate.md"
    stale = gen_policy_docs.DOC.read_text(encoding="utf-8").replace("| `alpha` | 0.005 |", "| `alpha` | 0.05 |")
    doc.write_text(stale, encoding="utf-8")
    monkeypatch.setattr(gen_policy_docs, "DOC", doc)
    assert gen_policy_docs.main(["--check"]) == 1
    assert gen_policy_docs.main([]) == 0 and gen_policy_docs.main(["--check"]) == 0


def test_the_policy_is_frozen_and_round_trips():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT.alpha = 1.0  # type: ignore[misc]
    other = GatePolicy(alpha=0.01, k_quiet_max=40)
    assert GatePolicy.from_dict(other.as_dict()) == other != DEFAULT
    assert GatePolicy.from_dict({"alpha": 0.01}) == GatePolicy(alpha=0.01)  # a knob added later: its default
    with pytest.raises(ValueError, match="unknown gate policy knob"):
        GatePolicy.from_dict({"alpha": 0.01, "no_such_knob": 1})
    assert DEFAULT.false_alarm_bound == pytest.approx(DEFAULT.alpha + DEFAULT.alpha_stage1_rows)
    assert f"{DEFAULT.false_alarm_bound:.1%}" in policy_table()


def test_decide_reads_its_policy_not_module_constants():
    """A quiet row that now fails every run is regressed by default, and passes under a screen
    that flags nothing (screen_p below its p of 0.024): the knob, passed in, decides."""
    broken = only("mass_email", "no_forbidden_action")
    assert verdict_of(broken, [20], QUIET_20).exit_code == 1
    blind = GatePolicy(screen_p=0.001, screen_p_agg=0.0)
    v = verdict_of(broken, [20], QUIET_20, policy=blind)
    assert v.exit_code == 0 and v.regressed == [] and v.confirmation.rows == 0
    assert not any(name.isupper() and name.startswith(("ALPHA", "SCREEN", "K_", "QUIET", "ROW_SHARE", "RERUNS"))
                   for name in [*vars(confirm), *vars(decide)])


def test_the_rerun_plan_reads_its_policy():
    found = only("mass_email", "no_forbidden_action")
    assert confirm.quiet_reruns(1, GatePolicy(k_quiet_min=7, k_quiet_per_trial=1)) == 7
    assert confirm.aggregate_reruns(5, GatePolicy(k_agg_max=11)) == 11
    lo, hi = confirm.rerun_bounds(1, GatePolicy(k_min=2, k_max=9, k_quiet_max=9, k_agg_max=9))
    assert (lo, hi) == (2, 9)
    assert verdict_of(found, [20], QUIET_20).exit_code == 1
