"""Rule 3's stage 2 (docs/validation-gate.md 7.2: each device measured switched off, on fresh
draws and fresh seeds; the ones that bought no detection were removed): a flagged total is
Fisher's combination of stage 1's p and its reruns' p with no lean asked of the reruns, and a
total stage 1 did not flag is not tested. Hand-made screens, each built so that rule 2 would
have judged it otherwise: no agent, no draws."""
from __future__ import annotations

import pytest

from turngate.record.summaries import CellCounts, FlagKind, FlagStatus, RunCount
from turngate.verdict.confirm import AggregateFlag, Counts, Screen, fisher, judge
from turngate.verdict.policy import DEFAULT, RETIRED, RULE, GatePolicy
from turngate.verdict.reference import Cell, Reference, RowRef

ROW, SCORER = "r1", "refund_outcome"


def reference(failed: int, runs: int = 300) -> Reference:
    cell = Cell(passed=runs - failed, failed=failed, failed_seeds=list(range(failed)))
    return Reference(provenance={"version": "test"}, seeds=list(range(runs)),
                     rows={ROW: RowRef(sha="0", cells={SCORER: cell})})


def reruns(failed: int, runs: int) -> tuple[dict, dict]:
    return ({ROW: {SCORER: CellCounts(passed=runs - failed, failed=failed, na=0)}},
            {ROW: RunCount(runs=runs, failed=failed)})


def status(items, kind):
    (x,) = [x for x in items if x.kind == kind]
    return x.status


def total_screen(flagged: bool, p1: float = 0.001) -> Screen:
    """One unit's total, stage 1's p = p1, over one row rerun 2 times for it (fixed)."""
    total = AggregateFlag(SCORER, p1, [ROW], 1, 0.01)
    return Screen(aggregates=[total] if flagged else [], reruns={ROW: 2}, fixed={ROW: 2}, candidates=2,
                  totals={SCORER: total}, gate={ROW: {SCORER: Counts(1, 1)}})


def test_a_total_is_fishers_combination_of_both_stages():
    """Its reruns alone (p ~ 0.0099) do not reach alpha; combined with stage 1's 0.001 they do."""
    ref, (cells, failed) = reference(0), reruns(1, 2)
    (x,) = judge(total_screen(True), ref, cells, failed)
    assert x.status == FlagStatus.REGRESSED and x.evidence.p_reruns > DEFAULT.alpha
    assert x.p2 == pytest.approx(fisher(0.001, x.evidence.p_reruns)) and x.p2 <= DEFAULT.alpha


def test_no_lean_is_asked_of_a_totals_reruns():
    """Rule 2 confirmed a total only when its reruns alone had p <= 0.5; rule 3 does not ask
    (it cost detection and bought none: docs/validation-gate.md 7.2). Reruns that pass carry a
    stage 1 so unlikely that Fisher's combination with p = 1 still reaches alpha."""
    ref, (cells, failed) = reference(0), reruns(0, 2)
    (x,) = judge(total_screen(True, p1=1e-6), ref, cells, failed)
    assert x.evidence.p_reruns == 1.0 and x.status == FlagStatus.REGRESSED
    (y,) = judge(total_screen(True, p1=0.01), ref, cells, failed)
    assert y.status == FlagStatus.FLAKY


def test_a_total_stage_1_did_not_flag_is_not_tested():
    ref, (cells, failed) = reference(0), reruns(2, 2)
    assert judge(total_screen(False), ref, cells, failed) == []
    assert status(judge(total_screen(True), ref, cells, failed), FlagKind.AGGREGATE) == FlagStatus.REGRESSED


def test_a_stored_policy_naming_a_retired_knob_reads():
    """A rule-2 record's policy names reruns_lean: it still reads (the knob is dropped); the
    record itself keeps its stored verdict (tests/test_records_last.py)."""
    assert RULE == 3 and RETIRED == {"reruns_lean"}
    old = DEFAULT.as_dict() | {"reruns_lean": 0.5}
    assert GatePolicy.from_dict(old) == DEFAULT
    assert not RETIRED & set(DEFAULT.as_dict())
    with pytest.raises(ValueError, match="unknown gate policy knob"):
        GatePolicy.from_dict(old | {"no_such_knob": 1})
