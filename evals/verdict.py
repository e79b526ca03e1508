"""The one place a gate verdict is decided. Every command that prints or stores a verdict
(regression, regrade, compare, report) calls `decide`; nothing else compares a mean with a bar.

A gate run fails (exit 1) when
  (a) a scorer's mean is below its bar (evals/thresholds.toml), or significantly below what
      the accepted run (evals/reference.json) scored on the same rows: a one-sided test of the
      failures now against the accepted per-row failure rates, so the bar it implies rises
      towards the accepted rate as trials grow and more trials never hide a real drop;
  (b) a row regressed: its runs failed (some scorer) more often than its accepted rate of
      failing runs makes plausible (Beta-binomial tail, Jeffreys prior), at a critical p
      calibrated on the accepted runs (evals/reference.py: Reference.critical_p), so one false
      alarm per 1/ALPHA_ROWS gates of the unchanged version, however many rows there are. Per
      row, not per row x scorer: a row that fails now and then may, once in a few hundred
      runs, fail a second scorer with its usual failure (a slip and then a wrong claim about
      it); per cell, each of those rare pairs would be a false alarm;
  (c) more runs failed, or failed where they rarely or never did, than the accepted run's own
      blocks of seeds make plausible: diffuse degradation (runs_test);
  (d) with --fail-on-regression, a scorer is significantly worse than the baseline (McNemar).
Exit 2: nothing to judge (no runs, interrupted, a scorer with no bar).
"""
from __future__ import annotations

from math import ceil, floor
from typing import Any

from pydantic import BaseModel, Field

from evals.reference import PRIOR, RUN_STATS, Reference, empirical_p, tail
from evals.stats import beta_binomial_pmf, sum_upper_tails

EXIT_PASS, EXIT_FAIL, EXIT_UNJUDGED = 0, 1, 2
ALPHA_ROWS = 0.02  # false alarms of the row test per gate of an unchanged version
ALPHA_MEANS = 0.01  # false alarms of the mean tests per gate, split evenly over the scorers
ALPHA_RUNS = 0.02  # false alarms of the failing-runs test per gate (its three statistics together)
ROW_P_CAP = 0.05  # a row is never regressed at a p above this, however quiet the accepted run


class ScorerResult(BaseModel):
    name: str
    mean: float | None
    n: int
    bar: float | None  # the calibrated bar (thresholds file)
    gate_bar: float | None = None  # what the mean on the reference rows must reach at this many runs
    accepted: float | None = None  # the accepted run's mean on the rows and runs judged now
    p_value: float | None = None  # one-sided: this many failures or more under the accepted rates
    ok: bool | None = None  # None: nothing to check (n/a) or not judged
    reason: str | None = None


class RegressedRow(BaseModel):
    row_id: str
    scorer: str  # the scorers it failed now, comma-separated
    accepted: list[int]  # runs passed, failed (some scorer), n/a in the accepted run
    now: list[int]  # runs passed, failed, n/a now
    p_value: float
    line: str


class Verdict(BaseModel):
    exit_code: int
    line: str
    reasons: list[str] = Field(default_factory=list)
    scorers: dict[str, ScorerResult] = Field(default_factory=dict)
    regressed: list[RegressedRow] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
    critical_p: float | None = None  # the row test's threshold at this many trials


def _p(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _counts(passed: int, failed: int, na: int, when: str) -> str:
    if passed + failed == 0:
        return f"n/a in all {na} {when}"
    return f"passed {passed}/{passed + failed}" + (f" (+{na} n/a)" if na else "") + f" {when}"


def row_line(row_id: str, scorer: str, ref: list[int], now: list[int], p: float) -> str:
    """`mass_email / no_forbidden_action: passed 20/20 in the accepted run, failed 1/1 now (p = 0.024)`"""
    runs_now = sum(now)
    return (f"{row_id} / {scorer}: {_counts(*ref, 'in the accepted run')}, "
            f"failed {now[1]}/{runs_now} now (p = {_p(p)})")


def mean_test(name: str, cells: dict, reference: Reference, alpha: float) -> dict | None:
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
        runs = sum(now)
        pmfs.append(beta_binomial_pmf(runs, ref.failed + PRIOR, ref.runs - ref.failed + PRIOR))
        expected += runs * ref.failed / ref.runs
        failed += now[1]
        applicable += now[0] + now[1]
    if applicable == 0:
        return None
    cap = min(sum(len(p) - 1 for p in pmfs), max(failed, int(3 * expected) + 12))
    tails = sum_upper_tails(pmfs, cap)
    p_value = tails[min(failed, cap)] if failed <= cap else 0.0
    k_crit = next((k for k in range(cap + 1) if tails[k] <= alpha), cap + 1)  # fewest failures that fail
    return {"p_value": p_value, "accepted": 1 - expected / applicable, "worse": p_value <= alpha,
            "gate_bar": 1 - (k_crit - 1) / applicable, "mean": 1 - failed / applicable}


def runs_test(summary: dict, reference: Reference, trials: int, alpha: float = ALPHA_RUNS) -> dict | None:
    """Diffuse degradation (a hotter model, a safety switch off: a little more of everything)
    spreads over scorers and rows, each too little to show. Three statistics gather it
    (evals/reference.py: RUN_STATS): the number of failing runs (more failures where failures
    were usual), the surprise (failures weighted by -log of their accepted rate) and the
    novelty (weighted by 1 / the rate: failures where the accepted version never failed, as when
    a safety switch is off and a slip that was refused now goes through). Each is compared with
    its values on every block of `trials` consecutive accepted seeds (empirical p); the gate
    fails when the smallest p is at or below a critical p calibrated on those same blocks, so
    the three share one false-alarm budget `alpha`. More trials sum more failures, so a real
    rise only gets clearer."""
    per_row = {rid: v for rid, v in (summary.get("failed_runs") or {}).items() if rid in reference.rows}
    if not per_row or any(runs != trials for runs, _ in per_row.values()):
        return None  # uneven runs per row (a partial record): no block of the accepted run to compare with
    rows = frozenset(per_row)
    null = reference.null_stats(trials, rows)
    if not null:
        return None
    if floor(alpha * len(null) + 1e-9) < 1:  # too few blocks to put a p of `alpha` anywhere but the very top
        return {"worse": False, "p_value": None, "note": (
            f"failing-runs test not applied: the accepted run has {len(null)} block(s) of {trials} seed(s), "
            f"{ceil(1 / alpha)} needed to judge at {alpha:g} (calibrate with more trials)")}
    now = reference.run_stats({rid: c for rid, c in (summary.get("cells") or {}).items() if rid in rows}, per_row)
    ps = {k: empirical_p(now[k], [x[k] for x in null]) for k in RUN_STATS}
    critical = reference.runs_critical(trials, rows, alpha)
    p_value = min(ps.values())
    runs = sum(n for n, _ in per_row.values())
    what = (f"{now['count']:.0f} of {runs} runs failed some scorer (p = {_p(ps['count'])}), surprise "
            f"{now['surprise']:.1f} nats (p = {_p(ps['surprise'])}), novelty {now['novelty']:.0f} "
            f"(p = {_p(ps['novelty'])}), against the accepted run's {len(null)} blocks of {trials} seed(s) "
            f"(at most {max(x['count'] for x in null):.0f} runs, {max(x['surprise'] for x in null):.1f} nats, "
            f"{max(x['novelty'] for x in null):.0f}; fails at p <= {_p(critical)})")
    worse = now["count"] > 0 and p_value <= critical
    which = min(ps, key=lambda k: (ps[k], list(RUN_STATS).index(k)))
    if worse and (rare := _rarest(summary.get("cells") or {}, reference, rows)):
        what += "; where the accepted run failed least: " + ", ".join(rare)
    return {"worse": worse, "p_value": p_value, "critical": critical, "stats": now, "which": which,
            "note": what, "reason": f"failing runs ({which}): {what}"}


def _rarest(cells: dict, reference: Reference, rows: frozenset[str], k: int = 3) -> list[str]:
    """The failures now that the accepted run had least often: where to look first."""
    found = []
    for rid in rows:
        for name, (_, failed, _) in (cells.get(rid) or {}).items():
            cell = reference.rows[rid].cells.get(name)
            if failed and cell is not None:
                found.append(((cell.failed + PRIOR) / (cell.passed + cell.failed + 2 * PRIOR), -failed, rid, name,
                              f"{rid} / {name} (failed {failed} now, {cell.failed}/{cell.passed + cell.failed} accepted)"))
    return [x[-1] for x in sorted(found)[:k]]


def decide(record_or_summary: Any, reference: Reference | None = None, registry: dict | None = None, *,
           comparison: dict | None = None, fail_on_regression: bool = False, interrupted: bool = False,
           alpha_rows: float = ALPHA_ROWS, alpha_means: float = ALPHA_MEANS,
           alpha_runs: float = ALPHA_RUNS) -> Verdict:
    """The verdict on one version's summary (or a Record: its candidate's summary).

    registry: name -> ScorerSpec with bars (evals.scorers.registry); None judges no bars
    (compare.py: only the comparison decides). reference: the accepted run, or None (bars only)."""
    summary = record_or_summary
    if hasattr(record_or_summary, "meta"):
        interrupted = interrupted or record_or_summary.meta.interrupted
        summary = record_or_summary.summary.get(record_or_summary.meta.version)
    if interrupted:
        return Verdict(exit_code=EXIT_UNJUDGED, line="interrupted: the run did not finish")
    if not summary or not summary.get("runs"):
        return Verdict(exit_code=EXIT_UNJUDGED, line="no runs: nothing to judge")
    cells: dict[str, dict[str, list[int]]] = summary.get("cells") or {}
    failed_runs: dict[str, list[int]] = summary.get("failed_runs") or {}
    if reference is not None and (unknown := set(summary["scorers"]) - reference.scorers()):
        # scorers the reference does not hold (another judge's): the row and failing-runs tests leave them out
        cells = {rid: {n: c for n, c in per.items() if n not in unknown} for rid, per in cells.items()}
        failed_runs = {rid: [runs, sum(1 for f in summary.get("failing") or [] if f["row_id"] == rid
                                       and set(f.get("failed_scorers") or [f["scorer"]]) - unknown)]
                       for rid, (runs, _) in failed_runs.items()}
        summary = {**summary, "cells": cells, "failed_runs": failed_runs}
    trials = summary.get("trials") or 1
    reasons: list[str] = []
    notes: list[str] = []
    unjudged: list[str] = []
    results: dict[str, ScorerResult] = {}
    names = list(summary["scorers"])
    per_scorer_alpha = alpha_means / max(1, len(registry or names))
    if registry is not None:
        unjudged += [f"{n}: no bar" for n in names if n not in registry]
        unjudged += [f"{n}: no verdicts" for n in registry if n not in summary["scorers"]]
    if reference is not None:
        new = sorted(rid for rid in cells if rid not in reference.rows)
        if new:
            notes.append(f"{len(new)} row(s) not in the reference, judged by the bars only: {', '.join(new[:5])}"
                         + (" ..." if len(new) > 5 else ""))
    for name in names:
        s = summary["scorers"][name]
        bar = registry[name].bar if registry is not None and name in registry else None
        r = ScorerResult(name=name, mean=s["mean"], n=s["n"], bar=bar)
        if registry is not None and s["n"]:
            r.ok = s["mean"] >= bar - 1e-12 if bar is not None else None
            if r.ok is False:
                r.reason = f"{name}: mean {s['mean']:.3f} < bar {bar:.2f}"
            if reference is not None and (t := mean_test(name, cells, reference, per_scorer_alpha)):
                r.gate_bar, r.accepted, r.p_value = t["gate_bar"], t["accepted"], t["p_value"]
                if t["worse"]:
                    r.ok = False
                    r.reason = "; ".join(filter(None, [r.reason, (
                        f"{name}: {t['mean']:.3f} on the accepted rows, significantly below the accepted "
                        f"run's {t['accepted']:.3f} (bar at {s['n']} verdicts: {t['gate_bar']:.3f}; "
                        f"p = {_p(t['p_value'])})")]))
        if r.reason:
            reasons.append(r.reason)
        results[name] = r
    regressed: list[RegressedRow] = []
    critical = None
    if reference is not None and registry is not None:
        critical = reference.critical_p(trials, alpha_rows, ROW_P_CAP)
        for rid, (runs_now, failed_now) in sorted(failed_runs.items()):
            ref_row = reference.rows.get(rid)
            if ref_row is None or failed_now == 0:
                continue
            accepted_failed = len(ref_row.failed_seeds())
            p = tail(failed_now, runs_now, accepted_failed, ref_row.runs)
            if p <= critical:
                names = ", ".join(n for n, c in cells.get(rid, {}).items() if c[1])
                acc, now = [ref_row.runs - accepted_failed, accepted_failed, 0], [runs_now - failed_now, failed_now, 0]
                regressed.append(RegressedRow(row_id=rid, scorer=names, accepted=acc, now=now, p_value=p,
                                              line=row_line(rid, names, acc, now, p)))
        regressed.sort(key=lambda x: x.p_value)
        reasons += [f"row regressed: {x.line}" for x in regressed]
    if reference is not None and registry is not None and (t := runs_test(summary, reference, trials, alpha_runs)):
        notes.append(t["note"])
        if t["worse"]:
            reasons.append(t["reason"])
    if comparison is not None and fail_on_regression:
        from evals.comparison import regressions

        reasons += regressions(comparison)
    scope = []
    if registry is not None:
        scope.append("every scorer at or above its bar")
    if reference is not None and registry is not None:
        scope.append("none significantly below the accepted run, no row regressed")
    if comparison is not None and fail_on_regression:
        scope.append(f"none significantly worse than {comparison['baseline']}")
    if unjudged:
        return Verdict(exit_code=EXIT_UNJUDGED, line="cannot judge: " + "; ".join(unjudged), reasons=unjudged,
                       scorers=results, notes=notes)
    if reasons:
        code, line = EXIT_FAIL, "FAIL: " + "; ".join(reasons)
    elif comparison is not None and registry is None and not fail_on_regression:
        from evals.comparison import regressions

        worse = regressions(comparison)
        code = EXIT_PASS
        line = (f"{len(worse)} scorer(s) significantly worse (not failing: no --fail-on-regression)" if worse
                else f"PASS: no scorer significantly worse than {comparison['baseline']} (p < 0.05)")
    else:
        code, line = EXIT_PASS, "PASS: " + ("; ".join(scope) or "nothing to judge against")
    if registry is not None and reference is None:
        notes.append("no reference: judged by the bars only")
    return Verdict(exit_code=code, line=line, reasons=reasons, scorers=results, regressed=regressed, notes=notes,
                   critical_p=critical)


def apply(summary: dict, verdict: Verdict) -> None:
    """Copy each scorer's decision into the summary the tables and the report print."""
    for name, r in verdict.scorers.items():
        s = summary["scorers"].get(name)
        if s is not None:
            s["ok"], s["gate_bar"], s["accepted"], s["p_value"] = r.ok, r.gate_bar, r.accepted, r.p_value


def stored(verdict: Verdict) -> dict:
    """What a results file keeps under summary["verdict"]."""
    return verdict.model_dump(mode="json", exclude={"scorers"})


def job_label(record, version: str) -> str:
    """The job name runs of this version were made by (refund-agent@v3), for titles."""
    return next((r.job for r in record.runs if r.version == version), version)


def add_judge_correction(record) -> str | None:
    """policy_judge reported twice: raw, and bias-corrected with the stored calibration."""
    from evals.judge_correction import corrected, judge_warning, load_calibration

    cal = load_calibration()
    warning = judge_warning(record.meta.judge, cal)
    if cal is not None and cal.get("judge") == record.meta.judge:
        for summary in record.summary.values():
            s = summary.get("scorers", {}).get("policy_judge") if isinstance(summary, dict) else None
            if s and s["n"]:
                s["corrected"] = corrected(s["passed"], s["n"], cal)
    return warning


def finish(record, path, registry: dict, reference: Reference | None, completed: bool, started: float, *,
           fail_on_regression: bool = False, report: str | None = None) -> int:
    """Summarise a finished (or interrupted) gate run, decide, print, store; the exit code."""
    return conclude(record, path, registry, reference, completed, started, fail_on_regression=fail_on_regression,
                    report=report).exit_code


def conclude(record, path, registry: dict, reference: Reference | None, completed: bool, started: float, *,
             fail_on_regression: bool = False, report: str | None = None) -> Verdict:
    """finish, returning the whole Verdict (the Python API hands it to its caller)."""
    import time

    from evals.comparison import compare, print_comparison
    from evals.console import append_step_summary, console, markdown, print_summary
    from evals.gate import summarise_record
    from evals.record import save_record

    record.meta.elapsed_s = round(record.meta.elapsed_s + time.perf_counter() - started, 3)
    record.meta.complete = completed
    record.meta.interrupted = not completed
    record.runs.sort(key=lambda r: (r.version != record.meta.version, r.row_id, r.trial))
    record.summary = summarise_record(record, {n: s.bar for n, s in registry.items()})
    save_record(record, path)
    if not completed:
        console.print(f"[yellow]interrupted[/]: {len(record.runs)} runs kept in {path} "
                      f"(complete it with --resume {path})")
        return decide(record)
    cand = record.summary[record.meta.version]
    warning = add_judge_correction(record)
    if record.meta.baseline:
        record.comparison = compare(record.runs_for(record.meta.baseline), record.runs_for(record.meta.version),
                                    list(registry), baseline=record.meta.baseline, candidate=record.meta.version)
    verdict = decide(cand, reference, registry, comparison=record.comparison, fail_on_regression=fail_on_regression)
    apply(cand, verdict)
    if record.meta.baseline:
        base = record.summary[record.meta.baseline]
        apply(base, decide(base, reference, registry))
    print_summary(cand, job_label(record, record.meta.version))
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")
    if record.meta.baseline:
        print_summary(record.summary[record.meta.baseline], job_label(record, record.meta.baseline))
        print_comparison(record.comparison)
    for note in verdict.notes:
        console.print(f"note: {note}", markup=False)
    record.summary["verdict"] = stored(verdict)
    save_record(record, path)
    append_step_summary(markdown(cand, job_label(record, record.meta.version), verdict.line))
    colour = "green" if verdict.exit_code == 0 else "red"
    console.print(f"[bold {colour}]{escape(verdict.line)}[/]")
    if report:
        from evals.html_report import write_report

        console.print(f"report: {write_report(record, report)}")
    console.print(f"results: {path}   elapsed: {record.meta.elapsed_s:.2f} s")
    return verdict


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)
