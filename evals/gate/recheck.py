"""What every command that reads a results file does with it (regrade, compare, report, show,
--resume, --json). load_record (evals/record/results.py) has already refused a record whose runs do not
match its plan or whose digest does not match; here its summary, comparison and verdict are
recomputed from the runs, as the gate decided them (evals.gate.run.summarise_record and
evals.verdict.decide.decide, as evals.gate.conclude.conclude does). A stored summary or verdict is never
what a reader shows, and an agent named in the file (meta.agent) is shown, never imported."""
from __future__ import annotations

from typing import Any

from evals.record.results import Meta, Record


def fail_on_regression(meta: Meta) -> bool:
    """Whether the verdict counted baseline regressions: the flag of the last command that decided it."""
    if meta.compared_files:
        return meta.compared_files.get("fail_on_regression") == "true"
    return "--fail-on-regression" in (meta.resumed[-1] if meta.resumed else meta.argv)


def registry_of(meta: Meta) -> dict | None:
    """The run's own bars as a scorer registry (None: the record has no bars, e.g. a calibration run)."""
    if not meta.thresholds:
        return None
    from evals.scoring.scorers import registry
    from evals.verdict.thresholds import Bar, Thresholds

    return registry(Thresholds(provenance={"scorers": list(meta.thresholds)},
                               scorers={n: Bar(bar=b) for n, b in meta.thresholds.items()}))


def reference_of(record: Record) -> Any:
    """The accepted run the gate judged against, narrowed to the record's rows and judge as the gate did."""
    m = record.meta
    if not m.reference:
        return None
    from evals.scoring.scorers import JUDGE_SCORERS
    from evals.verdict.reference import check_judge, check_rows, load_reference

    reference = load_reference(m.reference)
    reference, _ = check_rows(reference, record.rows, m.reference, explicit=False)
    if reference is not None:
        reference, _ = check_judge(reference, m.judge, JUDGE_SCORERS)
    return reference


def check_reruns(record: Record, path: Any = None, reference: Any = False, *, runs: list | None = None,
                 summary: Any = None, complete: bool = False) -> None:
    """Refuse (RecordError, one line) a record whose confirmation reruns are not the ones its
    planned runs call for: a failing rerun deleted would turn a regressed row flaky. runs: the
    record's runs when it holds none (RunViews); summary: its candidate's planned runs summarised
    with its bars, when the caller has it; complete: the caller found every planned run there."""
    from evals.gate.run import confirm_problem
    from evals.record.results import RecordError

    if not complete and record.incomplete(runs):
        return
    if reference is False:
        reference = reference_of(record)
    if problem := confirm_problem(record, reference, runs=runs, summary=summary):
        raise RecordError(f"{path or 'results file'}: {problem}")


def recompute(record: Record, path: Any = None):
    """Replace record.summary (and .comparison) with what the runs say, and return the verdict
    (an evals.verdict.decide.Verdict). An incomplete record gets no verdict: exit code 2 and the line
    `incomplete: N of M runs`, and record.verdict None, as an interrupted gate stores none."""
    from evals.verdict.decide import EXIT_UNJUDGED, Verdict, decide, stored

    if record.meta.compared_files:
        return _comparison(record)
    from evals.gate.conclude import add_judge_correction
    from evals.gate.run import summarise_record
    from evals.verdict.comparison import compare
    from evals.verdict.decide import apply

    m = record.meta
    registry = registry_of(m)
    record.summary = summarise_record(record, {n: s.bar for n, s in (registry or {}).items()})
    record.comparison = record.verdict = None
    if line := record.incomplete():
        return Verdict(exit_code=EXIT_UNJUDGED, line=f"{line}: no verdict over part of the runs")
    reference = reference_of(record)
    check_reruns(record, path, reference)
    add_judge_correction(record)
    cand = record.summary[m.version]
    if m.baseline:
        record.comparison = compare(record.runs_for(m.baseline), record.runs_for(m.version),
                                    list(registry or cand.scorers), baseline=m.baseline, candidate=m.version)
    verdict = decide(cand, reference, registry, comparison=record.comparison,
                     fail_on_regression=fail_on_regression(m))
    apply(cand, verdict)
    if m.baseline:
        base = record.summary[m.baseline]
        apply(base, decide(base, reference, registry))
    record.verdict = stored(verdict)
    return verdict


def _comparison(record: Record):
    """A compare.py --out record: both sides' summaries and the comparison from the runs, decided
    as compare.py decides (no bars: only the comparison)."""
    from evals.verdict.comparison import compare
    from evals.verdict.decide import decide, stored
    from evals.verdict.summary import scorer_names, summarise

    m = record.meta
    cand, base = m.version, m.baseline
    rows, bars = record.row_by_id(), m.thresholds or {}
    seeds = record.plan.seeds if record.plan is not None else {}
    cand_runs, base_runs = record.runs_for(cand), record.runs_for(base)
    record.summary = {cand: summarise(cand_runs, rows, bars, len(seeds.get(cand, m.seeds))),
                      base: summarise(base_runs, rows, bars, len(seeds.get(base, m.seeds)))}
    names = list(dict.fromkeys(scorer_names(cand_runs) + scorer_names(base_runs)))
    record.comparison = compare(base_runs, cand_runs, names, baseline=base, candidate=cand)
    verdict = decide(record.summary[cand], comparison=record.comparison, fail_on_regression=fail_on_regression(m))
    record.verdict = stored(verdict)
    return verdict


def headline(verdict) -> str:
    return verdict.line.splitlines()[0] if verdict.line else ""
