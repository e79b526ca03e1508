"""The one place a gate verdict is decided. Every command that prints or stores a verdict
(regression, regrade, compare, report) calls `decide`; nothing else compares a mean with a bar.

A gate run fails (exit 1) when
  (a) a scorer's mean is below its bar (the bars file, e.g. bars.toml): the contract, one stage;
  (b) a row regressed: stage 1 (this gate's runs) flagged it and its confirmation reruns on
      fresh seeds show it failing more often than its accepted rate makes plausible;
  (c) a scorer's failures (or the runs failing some scorer), summed over rows, are more than
      the accepted rates make plausible, and the reruns of the rows that failed confirm it
      (diffuse degradation: a hotter model, a safety switch off);
  (d) with --fail-on-regression, a scorer is significantly worse than the baseline (McNemar p, Holm over the scorers).
(b) and (c) are the two-stage gate of turngate/verdict/confirm.py: every p-value is an exact Beta-binomial
tail against the accepted run (its uncertainty included), and stage 2 is one Holm family at
the policy's alpha (turngate/verdict/policy.py), so an unchanged version fails at most that often, at any number of trials.
Flagged but not confirmed: "flaky" (reported, does not fail). Flagged with no reruns to judge:
judged on stage 1 with a Bonferroni over every candidate test, else "insufficient data".
Exit 2: nothing to judge (no runs, interrupted, a scorer with no bar).

decide() gives the findings and flags as numbers and kinds only: their wording (each reason,
each flag's line, the FAIL headline) is the output layer's, turngate/output/wording.py `word`,
which every caller applies before printing or storing a failing verdict (stored() refuses one
that was not worded).
"""
from __future__ import annotations

from collections.abc import Iterable
from typing import TypeVar

from pydantic import BaseModel, Field, PrivateAttr

from turngate.record.results import Record
from turngate.record.summaries import (
    CellCounts,
    Finding,
    FindingKind,
    FlaggedRow,
    FlagKind,
    FlagStatus,
    RunCount,
    StoredVerdict,
    Tally,
    UnitCounts,
    VersionSummary,
)
from turngate.verdict.confirm import (
    ANY,
    Counts,
    Judged,
    RowEvidence,
    RowStop,
    accepted_units,
    aggregate_p,
    confirm_seeds,
    expected_failures,
    judge,
    screen,
)
from turngate.verdict.policy import DEFAULT, GatePolicy
from turngate.verdict.reference import PRIOR, Reference
from turngate.verdict.stats import beta_binomial_pmf, sum_upper_tails

EXIT_PASS, EXIT_FAIL, EXIT_UNJUDGED = 0, 1, 2
_T = TypeVar("_T", bound=Tally)


class ScorerResult(BaseModel):
    name: str
    mean: float | None
    n: int
    bar: float | None  # the calibrated bar (thresholds file)
    gate_bar: float | None = None  # what the mean on the reference rows must reach at this many runs
    accepted: float | None = None  # the accepted run's mean on the rows and runs judged now
    p_value: float | None = None  # one-sided: this many failures or more under the accepted rates
    ok: bool | None = None  # None: nothing to check (n/a) or not judged
    below_bar: bool = False  # its mean is below its bar and that stands (a finding of kind BAR)
    reason: str | None = None  # that finding's text (worded by turngate/output/wording.py)


class Verdict(StoredVerdict):
    """decide()'s verdict: the stored verdict (turngate/record/summaries.py) and each scorer's result.
    Its findings and flags carry numbers and kinds; turngate/output/wording.py words them."""
    scorers: dict[str, ScorerResult] = Field(default_factory=dict)
    # for the wording: where the unconfirmed flags' notes go among the notes, in the order judged,
    # and the comparison a baseline finding is about
    _unconfirmed_at: int = PrivateAttr(0)
    _unconfirmed: list[FlaggedRow] = PrivateAttr(default_factory=list)
    _comparison: dict | None = PrivateAttr(None)


def mean_test(name: str, cells: dict[str, dict[str, CellCounts]], reference: Reference, alpha: float) -> dict | None:
    """Failures now against the accepted per-row failure rates, over the rows both have.
    Under "nothing changed" each row's failures follow a Beta-binomial from its accepted
    counts (Jeffreys prior: the rate is uncertain, a never-failing row may still fail); the
    p-value is the exact upper tail of their sum. The bar this implies rises towards the
    accepted rate as runs are added, so more trials never hide a real drop."""
    pmfs, expected, failed, applicable = [], 0.0, 0, 0
    for rid, per in cells.items():
        ref_row = reference.rows.get(rid)
        now, ref = per.get(name), ref_row.cells.get(name) if ref_row else None
        if now is None or ref is None or ref.runs == 0:
            continue
        pmfs.append(beta_binomial_pmf(now.runs, ref.failed + PRIOR, ref.runs - ref.failed + PRIOR))
        expected += now.runs * ref.failed / ref.runs
        failed += now.failed
        applicable += now.applicable
    if applicable == 0:
        return None
    cap = min(sum(len(p) - 1 for p in pmfs), max(failed, int(3 * expected) + 12))
    tails = sum_upper_tails(pmfs, cap)
    p_value = tails[min(failed, cap)] if failed <= cap else 0.0
    k_crit = next((k for k in range(cap + 1) if tails[k] <= alpha), cap + 1)  # fewest failures that fail
    return {"p_value": p_value, "accepted": 1 - expected / applicable, "worse": p_value <= alpha,
            "gate_bar": 1 - (k_crit - 1) / applicable, "mean": 1 - failed / applicable}


def runs_test(summary: Tally, reference: Reference, trials: int, alpha: float = DEFAULT.alpha_one_stage) -> dict | None:
    """The failing-runs total on its own: the runs that failed some scorer, summed over the rows
    the reference holds, against the exact Beta-binomial sum of their accepted rates. 'worse'
    means p <= alpha (default: what would fail a gate judged in one stage); the gate itself
    flags the total at the policy's screen_p_agg, reruns its rows and decides on the reruns."""
    failed_runs = {rid: v for rid, v in summary.failed_runs.items() if rid in reference.rows}
    if not failed_runs:
        return None
    parts = [(Counts(c.failed, c.runs), accepted_units(reference, rid)[ANY]) for rid, c in failed_runs.items()
             if ANY in accepted_units(reference, rid)]
    p = aggregate_p(parts)
    return {"worse": p <= alpha, "p_value": p, "failed": sum(n.failed for n, _ in parts),
            "runs": sum(n.applicable for n, _ in parts), "expected": expected_failures(parts)}


def reads_failing(scorers: Iterable[str], reference: Reference | None) -> bool:
    """Whether decide() and plan_reruns() read a summary's failing runs one by one: only to leave
    out the scorers the reference does not hold (_without)."""
    return reference is not None and bool(set(scorers) - reference.scorers())


def _without(part: _T, unknown: set[str]) -> _T:
    """A summary's numbers without these scorers' verdicts."""
    cells = {rid: {n: c for n, c in per.items() if n not in unknown} for rid, per in part.cells.items()}
    failed_runs = {rid: RunCount(runs=c.runs, failed=sum(1 for f in part.failing if f.row_id == rid
                                                          and set(f.failed_scorers or [f.scorer]) - unknown))
                   for rid, c in part.failed_runs.items()}
    return part.model_copy(update={"cells": cells, "failed_runs": failed_runs})


def _units(counts: dict[str, Counts]) -> dict[str, UnitCounts]:
    return {u: UnitCounts(failed=c.failed, runs=c.applicable) for u, c in counts.items()}


def _flagged(x: Judged) -> FlaggedRow:
    """One flagged row or aggregate: what the accepted run, this gate and the reruns each
    showed, and the p that decided (turngate/output/wording.py words it as a line)."""
    e = x.evidence
    if isinstance(e, RowEvidence):
        return FlaggedRow(row_id=x.key, kind=FlagKind.ROW, status=x.status, scorers=list(x.units),
                          accepted=_units(e.accepted), first=_units(e.first), reruns=_units(e.reruns),
                          p_first=x.p1, p_value=x.p2, reachable=e.reachable)
    first = UnitCounts(failed=e.first_failed, expected=round(e.first_expected, 2))
    rr = UnitCounts(failed=e.reruns.failed, runs=e.reruns.applicable, expected=round(e.reruns_expected, 2))
    return FlaggedRow(row_id=x.key, kind=FlagKind.AGGREGATE, status=x.status, scorers=[x.key], accepted={},
                      first=first, reruns=rr, p_first=x.p1, p_value=x.p2, rows=e.rows, p_reruns=e.p_reruns,
                      rerun_rows=e.rerun_rows)


def _finding(x: FlaggedRow) -> Finding:
    """A confirmed flag as a reason of the verdict."""
    kind = (FindingKind.ROW if x.kind == FlagKind.ROW else
            FindingKind.FAILING_RUNS if x.row_id == ANY else FindingKind.SCORER)
    return Finding(kind=kind, subject=x.row_id, p_value=x.p_value)


def decide(subject: Record | VersionSummary | None, reference: Reference | None = None,
           registry: dict | None = None, *, comparison: dict | None = None, fail_on_regression: bool = False,
           interrupted: bool = False, policy: GatePolicy = DEFAULT) -> Verdict:
    """The verdict on one version's summary, or on a Record's candidate (an interrupted record
    is not judged). None: no summary (nothing ran).

    registry: name -> ScorerSpec with bars (turngate.scoring.scorers.registry); None judges no bars
    (compare.py: only the comparison decides). reference: the accepted run, or None (bars only).
    policy: the decision rule's knobs (turngate/verdict/policy.py)."""
    if isinstance(subject, Record):
        interrupted = interrupted or subject.meta.interrupted
        summary = subject.summary.get(subject.meta.version)
    elif isinstance(subject, VersionSummary) or subject is None:
        summary = subject
    else:
        raise TypeError(f"decide: a Record or a VersionSummary, not {type(subject).__name__}")
    if interrupted:
        return Verdict(exit_code=EXIT_UNJUDGED, line="interrupted: the run did not finish")
    if summary is None or not summary.runs:
        return Verdict(exit_code=EXIT_UNJUDGED, line="no runs: nothing to judge")
    if reference is not None and (unknown := set(summary.scorers) - reference.scorers()):
        # scorers the reference does not hold (another judge's): the row and failing-runs tests leave them out
        summary = _without(summary, unknown)
        if summary.confirmation is not None:
            summary.confirmation = _without(summary.confirmation, unknown)
    cells, failed_runs = summary.cells, summary.failed_runs
    trials = summary.trials or 1
    findings: list[Finding] = []
    bar_findings: dict[str, Finding] = {}  # scorer -> its bar breach, while the reruns may still overrule it
    notes: list[str] = []
    unjudged: list[str] = []
    results: dict[str, ScorerResult] = {}
    names = list(summary.scorers)
    if registry is not None:
        unjudged += [f"{n}: no bar" for n in names if n not in registry]
        unjudged += [f"{n}: no verdicts" for n in registry if n not in summary.scorers]
    if reference is not None:
        new = sorted(rid for rid in cells if rid not in reference.rows)
        if new:
            notes.append(f"{len(new)} row(s) not in the reference, judged by the bars only: {', '.join(new[:5])}"
                         + (" ..." if len(new) > 5 else ""))
    for name in names:
        s = summary.scorers[name]
        bar = registry[name].bar if registry is not None and name in registry else None
        r = ScorerResult(name=name, mean=s.mean, n=s.n, bar=bar)
        if registry is not None and s.n:
            r.ok = s.mean >= bar - 1e-12 if bar is not None else None
            if r.ok is False:
                r.below_bar = True
                bar_findings[name] = Finding(kind=FindingKind.BAR, subject=name, mean=s.mean, bar=bar)
                findings.append(bar_findings[name])
            if reference is not None and (t := mean_test(name, cells, reference, policy.alpha_means)):
                # shown, not decided here: a significant drop is a screen (stage 1) that the
                # reruns must confirm (the aggregate flags below)
                r.gate_bar, r.accepted, r.p_value = t["gate_bar"], t["accepted"], t["p_value"]
        results[name] = r
    flagged: list[FlaggedRow] = []
    confirmation = summary.confirmation
    if reference is not None and registry is not None:
        below = {n for n, r in results.items() if r.ok is False}
        found = screen(cells, failed_runs, reference, trials, below, policy)
        judged = judge(found, reference, confirmation.cells if confirmation else None,
                       confirmation.failed_runs if confirmation else None, policy)
        flagged = [_flagged(x) for x in judged]
        for x in flagged:
            bar = x.kind == FlagKind.AGGREGATE and x.row_id in below
            if bar:
                x.mean, x.bar = results[x.row_id].mean, results[x.row_id].bar
            if bar and confirmation is not None and x.p_value is not None and x.status != FlagStatus.REGRESSED:
                # a bar breached at stage 1 whose rows pass on reruns as accepted: a fluke, not a red light
                r = results[x.row_id]
                findings.remove(bar_findings.pop(x.row_id))
                r.ok, r.below_bar = None, False
            elif bar:
                if x.status == FlagStatus.REGRESSED:
                    bar_findings[x.row_id].p_value = x.p_value  # confirmed (on reruns, or in one stage)
                else:
                    x.bar_stands = True  # a breach with nothing to confirm it by stands (fail closed)
                x.status = FlagStatus.REGRESSED
            elif x.status == FlagStatus.REGRESSED:
                if x.kind == FlagKind.AGGREGATE and x.rows and set(x.rows) <= {
                        y.row_id for y in flagged if y.kind == FlagKind.ROW and y.status == FlagStatus.REGRESSED}:
                    continue  # pooled over rows that each regressed: said once, per row
                findings.append(_finding(x))
                if x.kind == FlagKind.AGGREGATE and x.row_id in results:
                    results[x.row_id].ok = False
        if found.family and confirmation is None:
            why = summary.confirm_skipped or "--no-confirm, or a regrade"
            notes.append(f"no confirmation reruns ({why}): flagged rows were judged on this gate's runs alone "
                         f"(Bonferroni over {found.candidates} tests at {policy.alpha_one_stage:g})")
        if confirmation is not None:
            notes.append(f"confirmation: {confirmation.rows} flagged row(s) rerun on fresh seeds, "
                         f"{confirmation.runs} runs"
                         + (f" (+{confirmation.share:.0%} of the gate's runs)" if confirmation.share else ""))
        unconfirmed_at, unconfirmed = len(notes), [x for x in flagged if x.status != FlagStatus.REGRESSED]
    else:
        unconfirmed_at, unconfirmed = len(notes), []
    if comparison is not None and fail_on_regression:
        from turngate.verdict.comparison import worse_scorers

        findings += [Finding(kind=FindingKind.BASELINE, subject=name, p_value=p)
                     for name, p in worse_scorers(comparison)]
    scope = []
    if registry is not None:
        scope.append("every scorer at or above its bar")
    if reference is not None and registry is not None:
        scope.append("no row regressed (confirmed on reruns)" if confirmation is not None
                     else "no row regressed")
    if comparison is not None and fail_on_regression:
        scope.append(f"none significantly worse than {comparison['baseline']}")
    if unjudged:
        return Verdict(exit_code=EXIT_UNJUDGED, line="cannot judge: " + "; ".join(unjudged), reasons=unjudged,
                       scorers=results, notes=notes)
    reasons: list[str] = []  # a failing verdict's: its findings worded (turngate/output/wording.py)
    sight, unseen = None, []
    if comparison is not None:
        # what McNemar could reach with these pairs (turngate/verdict/pair_power.py): flips it
        # could not have judged are said, and make a comparison's PASS a "cannot judge"
        from turngate.verdict.pair_power import blind, blind_line, comparison_sensitivity

        sight = comparison_sensitivity(comparison)
        unseen = [blind_line(x) for x in blind(sight.pairs)]
        if registry is not None or findings:
            notes += [f"baseline comparison: {x}" for x in unseen]
    if findings:
        code, line = EXIT_FAIL, ""  # the headline and the reasons: turngate/output/wording.py
    elif comparison is not None and registry is None and not fail_on_regression and regressions_of(comparison):
        code = EXIT_PASS
        line = (f"{len(regressions_of(comparison))} scorer(s) significantly worse "
                "(not failing: no --fail-on-regression)")
    elif comparison is not None and registry is None and unseen:
        code, reasons = EXIT_UNJUDGED, unseen
        line = "\n".join([f"cannot judge: {len(unseen)} scorer(s) with pass->fail flips too few for McNemar "
                          f"to judge against {comparison['baseline']} (not a PASS)"] + unseen)
    elif comparison is not None and registry is None and not fail_on_regression:
        code = EXIT_PASS
        line = f"PASS: no scorer significantly worse than {comparison['baseline']} (Holm, family-wise 0.05)"
    else:
        code, line = EXIT_PASS, "PASS: " + ("; ".join(scope) or "nothing to judge against")
    if registry is not None and reference is None:
        notes.append("no reference: judged by the bars only")
    verdict = Verdict(exit_code=code, line=line, reasons=reasons, findings=findings, scorers=results, notes=notes,
                      regressed=[x for x in flagged if x.status == FlagStatus.REGRESSED],
                      flaky=[x for x in flagged if x.status == FlagStatus.FLAKY],
                      insufficient=[x for x in flagged if x.status == FlagStatus.INSUFFICIENT],
                      confirmation=confirmation, sensitivity=sight if registry is None else None)
    verdict._unconfirmed_at, verdict._unconfirmed, verdict._comparison = unconfirmed_at, unconfirmed, comparison
    return verdict


def regressions_of(comparison: dict) -> list[str]:
    from turngate.verdict.comparison import regressions

    return regressions(comparison)


def _screened(summary: VersionSummary | None, reference: Reference | None, below_bar: Iterable[str],
              policy: GatePolicy):
    if reference is None or summary is None or not summary.runs:
        return None
    if unknown := set(summary.scorers) - reference.scorers():
        summary = _without(summary, unknown)
    return screen(summary.cells, summary.failed_runs, reference, summary.trials or 1, set(below_bar), policy)


def plan_reruns(summary: VersionSummary | None, reference: Reference | None, seeds: list[int], *,
                fixed: int | None = None, below_bar: Iterable[str] = (), policy: GatePolicy = DEFAULT) -> dict[str, list[int]]:
    """Stage 2's plan: row id -> the fresh seeds to rerun it on (the most it may need: a row in
    rerun_stops() stops early), from stage 1's numbers, as decide() will judge them (the same
    scorers left out, the same screen). Empty: nothing flagged. fixed: K reruns of every flagged row."""
    found = _screened(summary, reference, below_bar, policy)
    if found is None or not found.reruns:
        return {}
    ks = {rid: fixed or k for rid, k in found.reruns.items()}
    fresh = confirm_seeds(seeds, set(seeds) | set(reference.seeds), max(ks.values()))
    return {rid: fresh[:k] for rid, k in sorted(ks.items())}


def rerun_stops(summary: VersionSummary | None, reference: Reference | None, *, fixed: int | None = None,
                below_bar: Iterable[str] = (), policy: GatePolicy = DEFAULT) -> dict[str, RowStop]:
    """The planned rows whose reruns stop once they cannot be confirmed (confirm.RowStop); none
    with a fixed K (--confirm K)."""
    found = _screened(summary, reference, below_bar, policy)
    return {} if found is None or fixed else dict(found.stops)


def rerun_outcomes(runs: list, reference: Reference) -> list[dict[str, Counts]]:
    """Each rerun's failures per unit (the scorers the reference holds, and ANY), in the order given."""
    known = reference.scorers()
    out = []
    for r in runs:
        units = {n: Counts(int(v.passed is False), int(v.passed is not None)) for n, v in r.verdicts.items()
                 if n in known}
        units[ANY] = Counts(int(any(c.failed for c in units.values())), 1)
        out.append(units)
    return out


def reruns_needed(stop: RowStop, runs: list, reference: Reference) -> int:
    """How many of its planned reruns a row in rerun_stops() needs, given the ones made (in plan order)."""
    return stop.needed(rerun_outcomes(runs, reference))


def apply(summary: VersionSummary, verdict: Verdict) -> None:
    """Copy each scorer's decision into the summary the tables and the report print."""
    for name, r in verdict.scorers.items():
        s = summary.scorers.get(name)
        if s is not None:
            s.ok, s.gate_bar, s.accepted, s.p_value = r.ok, r.gate_bar, r.accepted, r.p_value


def stored(verdict: Verdict) -> StoredVerdict:
    """What a results file keeps as its verdict: all but the per-scorer results (apply() put
    those in the summary). A verdict decide() made must have been worded first
    (turngate/output/wording.py): a record keeps what the gate printed."""
    if any(not f.text for f in verdict.findings) or any(
            not x.line for x in verdict.regressed + verdict.flaky + verdict.insufficient):
        raise ValueError("stored(): the verdict's findings were not worded (turngate.output.wording.word)")
    return StoredVerdict.model_validate(verdict.model_dump(exclude={"scorers"}))


def job_label(record, version: str) -> str:
    """The job name runs of this version were made by (e.g. mybot@v3), for titles: the
    version itself when no run names one."""
    return next((r.job for r in record.runs if r.version == version), version)
