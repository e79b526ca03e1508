"""What every command that reads a results file does with it (regrade, compare, report, show,
--resume, --json). load_record (turngate/record/results.py) has already refused a record whose runs do not
match its plan or whose digest does not match; here its summary, comparison and verdict are
recomputed from the runs, as the gate decided them (turngate.gate.run.summarise_record and
turngate.verdict.decide.decide, as turngate.gate.conclude.conclude does). A stored summary or verdict is never
what a reader shows, and an agent named in the file (meta.agent) is shown, never imported."""
from __future__ import annotations

from typing import Any

from turngate.record.results import Meta, Record


def fail_on_regression(meta: Meta) -> bool:
    """Whether the verdict counted baseline regressions: the flag of the last command that decided it."""
    if meta.compared_files:
        return meta.compared_files.get("fail_on_regression") == "true"
    return "--fail-on-regression" in (meta.resumed[-1] if meta.resumed else meta.argv)


def registry_of(meta: Meta) -> dict | None:
    """The run's own bars as a scorer registry (None: the record has no bars, e.g. a calibration run)."""
    if not meta.thresholds:
        return None
    from turngate.scoring.scorers import registry
    from turngate.verdict.thresholds import Bar, Thresholds

    return registry(Thresholds(provenance={"scorers": list(meta.thresholds)},
                               scorers={n: Bar(bar=b) for n, b in meta.thresholds.items()}))


def reference_of(record: Record) -> Any:
    """The accepted run the gate judged against, narrowed to the record's rows and judge as the gate did."""
    m = record.meta
    if not m.reference:
        return None
    from turngate.scoring.scorers import judge_scorers
    from turngate.verdict.reference import check_judge, check_rows, load_reference

    reference = load_reference(m.reference)
    reference, _ = check_rows(reference, record.rows, m.reference, explicit=False)
    if reference is not None:
        reference, _ = check_judge(reference, m.judge, judge_scorers())
    return reference


def check_reruns(record: Record, path: Any = None, reference: Any = False) -> None:
    """Refuse (RecordError, one line) a record whose confirmation reruns are not the ones its
    planned runs call for: a failing rerun deleted would turn a regressed row flaky."""
    from turngate.record.results import RecordError

    if record.incomplete():
        return
    if reference is False:
        reference = reference_of(record)
    if problem := confirm_problem(record, reference):
        raise RecordError(f"{path or 'results file'}: {problem}")


def confirm_problem(record: Record, reference: Any, *, runs: list | None = None, summary: Any = None) -> str | None:
    """Why the record's confirmation reruns are not the ones its planned runs call for, or None.
    The plan is recomputed from the planned runs (as the gate made it), so deleting a failing
    rerun, adding one, or editing meta.confirm's seeds cannot turn a regressed row flaky. runs: the
    record's runs when it holds none (RunViews); summary: its candidate's planned runs summarised
    with its bars, when the caller has it."""
    from collections import Counter

    from turngate.verdict.decide import plan_reruns
    from turngate.verdict.summary import summarise

    conf, m = record.meta.confirm, record.meta
    runs = record.runs if runs is None else runs
    have = Counter((r.row_id, r.trial) for r in runs if r.stage == "confirm" and r.version == m.version)
    if not conf or not conf.get("enabled") or record.meta.regraded_from:
        # no reruns planned (or regraded: today's scorers may flag other rows; those are judged in one stage)
        extra = [k for k in have if not conf or k[1] not in set((conf.get("rows") or {}).get(k[0], []))]
        return f"{len(extra)} confirmation rerun(s) the record did not plan, e.g. {extra[0]}" if extra else None
    bars = record.meta.thresholds
    if (cand := summary) is None:
        cand = summarise([r for r in runs if r.version == m.version and r.stage == "gate"], record.row_by_id(),
                         bars, m.trials)
    plan = plan_reruns(cand, reference, record.meta.seeds, fixed=conf.get("k"), below_bar=cand.below(bars))
    want = Counter((rid, s) for rid, seeds in plan.items() for s in seeds)
    if {k: sorted(v) for k, v in (conf.get("rows") or {}).items()} != {k: sorted(v) for k, v in plan.items()}:
        return "meta.confirm.rows is not the plan its planned runs call for"
    if missing := sorted(want - have):
        return f"{len(missing)} of {sum(want.values())} confirmation reruns missing, e.g. {missing[0][0]} seed {missing[0][1]}"
    if extra := sorted(have - want):
        return f"{len(extra)} confirmation rerun(s) not in the plan (or duplicated), e.g. {extra[0][0]} seed {extra[0][1]}"
    return None


def recompute(record: Record, path: Any = None):
    """Replace record.summary (and .comparison) with what the runs say, and return the verdict
    (an turngate.verdict.decide.Verdict). An incomplete record gets no verdict: exit code 2 and the line
    `incomplete: N of M runs`, and record.verdict None, as an interrupted gate stores none."""
    from turngate.verdict.decide import EXIT_UNJUDGED, Verdict, decide, stored

    if record.meta.compared_files:
        return _comparison(record)
    from turngate.gate.conclude import add_judge_correction
    from turngate.gate.run import summarise_record
    from turngate.verdict.comparison import compare
    from turngate.verdict.decide import apply

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
    if registry is not None:  # a gate's verdict: what it could see, as the gate stated it (turngate/gate/sight.py)
        from turngate.gate.sight import of_record

        verdict.sensitivity = of_record(record, reference)
    if m.baseline:
        base = record.summary[m.baseline]
        apply(base, decide(base, reference, registry))
    record.verdict = stored(verdict)
    return verdict


def _comparison(record: Record):
    """A compare.py --out record: both sides' summaries and the comparison from the runs, decided
    as compare.py decides (no bars: only the comparison)."""
    from turngate.verdict.comparison import compare
    from turngate.verdict.decide import decide, stored
    from turngate.verdict.summary import scorer_names, summarise

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
