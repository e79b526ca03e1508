"""The totals' statistics of turngate/verdict/confirm.py: summed surprise (evidence_p) is an exact p-value,
it sees a few quiet rows failing a little where summed failures do not, and a rerun's null
includes the gate's own runs (a row chosen for its failures is not held to a rate it never had)."""
from __future__ import annotations

import itertools

from turngate.verdict.confirm import Counts, aggregate_p, either_p, evidence_p, unit_p, with_gate
from turngate.verdict.reference import PRIOR
from turngate.verdict.stats import beta_binomial_pmf


def _null_rate(parts, test, level):
    """P(test(parts) <= level) under the accepted rates, by enumerating every outcome."""
    pmfs = [beta_binomial_pmf(n.applicable, a.failed + PRIOR, a.applicable - a.failed + PRIOR) for n, a in parts]
    total = 0.0
    for xs in itertools.product(*[range(n.applicable + 1) for n, _ in parts]):
        now = [(Counts(x, n.applicable), a) for x, (n, a) in zip(xs, parts, strict=True)]
        if test(now) <= level:
            prob = 1.0
            for pmf, x in zip(pmfs, xs, strict=True):
                prob *= pmf[x]
            total += prob
    return total


SHAPE = [(Counts(0, 5), Counts(0, 100)), (Counts(0, 4), Counts(10, 100)), (Counts(0, 5), Counts(3, 100)),
         (Counts(0, 3), Counts(0, 20))]


def test_summed_surprise_and_either_are_exact_p_values():
    for test in (evidence_p, either_p, aggregate_p):
        for level in (0.001, 0.01, 0.05, 0.2):
            assert _null_rate(SHAPE, test, level) <= level + 1e-12, (test.__name__, level)
    # and not trivially conservative: at 0.05 the summed surprise uses most of its level
    assert _null_rate(SHAPE, evidence_p, 0.05) > 0.03


def test_quiet_rows_failing_a_little_show_in_the_summed_surprise_not_in_the_summed_failures():
    # 20 noisy rows failing as usual (15 of 100 runs accepted, 15 of their 100 runs now), 30
    # quiet rows (never failed): six of the quiet ones now fail once in five runs
    noisy = [(Counts(1, 5), Counts(15, 100))] * 15 + [(Counts(0, 5), Counts(15, 100))] * 5
    quiet = [(Counts(1, 5), Counts(0, 100))] * 6 + [(Counts(0, 5), Counts(0, 100))] * 24
    assert evidence_p(noisy + quiet) < 0.005 < 0.1 < aggregate_p(noisy + quiet)
    usual = noisy + [(Counts(0, 5), Counts(0, 100))] * 30
    assert evidence_p(usual) > 0.3 and aggregate_p(usual) > 0.3
    nothing = [(Counts(0, 5), Counts(15, 100))] * 5
    assert evidence_p(nothing) == aggregate_p(nothing) == 1.0


def test_a_reruns_null_includes_the_gates_runs():
    accepted, gate = Counts(0, 100), Counts(1, 5)
    assert with_gate(accepted, gate) == Counts(1, 105) and with_gate(accepted, None) == accepted
    # two failures in ten reruns of a row that failed once in the gate: less surprising than
    # against the accepted run alone (which stage 1 did not choose the row by)
    assert unit_p(Counts(2, 10), with_gate(accepted, gate)) > 2 * unit_p(Counts(2, 10), accepted)


def test_a_row_failing_where_the_accepted_run_never_did_is_rerun_many_times():
    from turngate.record.summaries import CellCounts, RunCount
    from turngate.verdict.confirm import aggregate_reruns, quiet_reruns, screen
    from turngate.verdict.policy import GatePolicy
    from turngate.verdict.reference import Cell, Reference, RowRef

    def row(failed, runs):
        return RowRef(sha="0", cells={"refund_outcome": Cell(passed=runs - failed, failed=failed,
                                                             failed_seeds=list(range(failed)))})

    # quiet: 0 of 100 accepted; noisy: 10 of 100; unsure: 0 of only 20 (a 2.4% Jeffreys rate)
    ref = Reference(provenance={"version": "t"}, seeds=list(range(100)),
                    rows={"quiet": row(0, 100), "noisy": row(10, 100), "unsure": row(0, 20), "idle": row(0, 100)})
    cells = {rid: {"refund_outcome": CellCounts(passed=4, failed=1)} for rid in ("quiet", "noisy", "unsure")}
    cells["idle"] = {"refund_outcome": CellCounts(passed=5, failed=0)}
    runs = {rid: RunCount(runs=5, failed=c["refund_outcome"].failed) for rid, c in cells.items()}
    found = screen(cells, runs, ref, trials=5, policy=GatePolicy(rerun_budget=float("inf")))
    assert quiet_reruns(5) == 60 > aggregate_reruns(5) and quiet_reruns(1) == 12
    assert found.reruns["quiet"] == 60
    assert found.reruns["noisy"] < 60 and found.reruns["unsure"] < 60 and "idle" not in found.reruns
