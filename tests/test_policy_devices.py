"""Each power device of stage 2 can be switched off by a GatePolicy knob (so that
docs/validation-gate.md 7.2 can measure what it buys), and the switch changes the verdict on a
case built for it: one Holm family instead of two, a total judged on its reruns alone instead of
Fisher's combination, a total stage 1 did not flag left untested. Hand-made screens: no agent,
no draws."""
from __future__ import annotations

import pytest

from turngate.record.summaries import CellCounts, FlagKind, FlagStatus, RunCount
from turngate.verdict.confirm import AggregateFlag, Counts, RowFlag, Screen, judge, unit_p, with_gate
from turngate.verdict.policy import DEFAULT, GatePolicy
from turngate.verdict.reference import Cell, Reference, RowRef

ROW, SCORER = "r1", "refund_outcome"


def reference(failed: int, runs: int = 300) -> Reference:
    cell = Cell(passed=runs - failed, failed=failed, failed_seeds=list(range(failed)))
    return Reference(provenance={"version": "test"}, seeds=list(range(runs)),
                     rows={ROW: RowRef(sha="0", cells={SCORER: cell})})


def reruns(failed: int, runs: int) -> tuple[dict, dict]:
    return ({ROW: {SCORER: CellCounts(passed=runs - failed, failed=failed, na=0)}},
            {ROW: RunCount(runs=runs, failed=failed)})


def row_screen(accepted: Counts, k: int) -> Screen:
    """One flagged row (its one unit failed its one gate run), rerun k times for itself."""
    flag = RowFlag(ROW, [SCORER], p=0.5, now={SCORER: Counts(1, 1)}, accepted={SCORER: accepted}, reruns=k)
    return Screen(rows=[flag], reruns={ROW: k}, candidates=2)


def status(items, kind):
    (x,) = [x for x in items if x.kind == kind]
    return x.status


def test_one_holm_family_gives_a_row_all_of_alpha_two_give_it_row_share():
    """A row whose reruns' p lies between alpha * row_share (0.0025) and alpha (0.005): regressed
    in one family (no totals to share it with), flaky in two."""
    accepted = Counts(4, 300)
    p2 = unit_p(Counts(2, 5), with_gate(accepted, Counts(1, 1)))
    assert DEFAULT.level(FlagKind.ROW) < p2 <= DEFAULT.alpha
    ref, (cells, failed) = reference(4), reruns(2, 5)
    assert status(judge(row_screen(accepted, 5), ref, cells, failed), FlagKind.ROW) == FlagStatus.FLAKY
    one = GatePolicy(holm_families=1)
    assert one.level(FlagKind.ROW) == one.level(FlagKind.AGGREGATE) == one.alpha
    assert status(judge(row_screen(accepted, 5), ref, cells, failed, one), FlagKind.ROW) == FlagStatus.REGRESSED


def test_one_holm_family_counts_every_total_in_it():
    """With a total in the family (padded: untested, p = 1) the one family's first step is
    alpha / 2: the same row is flaky again."""
    accepted = Counts(4, 300)
    found = row_screen(accepted, 5)
    found.totals = {"other": AggregateFlag("other", 1.0, [], 0, 0.0)}
    ref, (cells, failed) = reference(4), reruns(2, 5)
    got = judge(found, ref, cells, failed, GatePolicy(holm_families=1))
    assert status(got, FlagKind.ROW) == FlagStatus.FLAKY


def total_screen(flagged: bool, p1: float = 0.001) -> Screen:
    """One unit's total, stage 1's p = p1, over one row rerun 2 times for it (fixed)."""
    total = AggregateFlag(SCORER, p1, [ROW], 1, 0.01)
    return Screen(aggregates=[total] if flagged else [], reruns={ROW: 2}, fixed={ROW: 2}, candidates=2,
                  totals={SCORER: total}, gate={ROW: {SCORER: Counts(1, 1)}})


def test_fisher_combines_stage_1_with_the_reruns_and_the_reruns_alone_do_not_reach():
    ref, (cells, failed) = reference(0), reruns(1, 2)  # reruns' p ~ 0.0099: above 0.0025 alone
    got = judge(total_screen(True), ref, cells, failed)
    assert status(got, FlagKind.AGGREGATE) == FlagStatus.REGRESSED
    (x,) = got
    assert x.p2 < DEFAULT.level(FlagKind.AGGREGATE) < x.evidence.p_reruns
    alone = judge(total_screen(True), ref, cells, failed, GatePolicy(totals_fisher=0))
    assert status(alone, FlagKind.AGGREGATE) == FlagStatus.FLAKY
    assert alone[0].p2 == pytest.approx(alone[0].evidence.p_reruns)
    # the lean: reruns that look as accepted (p above reruns_lean) cannot carry stage 1
    passed_cells, passed_failed = reruns(0, 2)
    assert status(judge(total_screen(True), ref, passed_cells, passed_failed), FlagKind.AGGREGATE) == FlagStatus.FLAKY


def test_a_total_stage_1_did_not_flag_is_tested_pooled_unless_switched_off():
    ref, (cells, failed) = reference(0), reruns(1, 2)
    got = judge(total_screen(False), ref, cells, failed)
    assert status(got, FlagKind.AGGREGATE) == FlagStatus.REGRESSED and got[0].evidence.pooled
    assert judge(total_screen(False), ref, cells, failed, GatePolicy(pooled_totals=0)) == []
    # a flagged total is tested either way
    flagged = judge(total_screen(True), ref, cells, failed, GatePolicy(pooled_totals=0))
    assert status(flagged, FlagKind.AGGREGATE) == FlagStatus.REGRESSED
