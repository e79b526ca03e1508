"""What every command that reads a results file does with it (regrade, compare, report, show,
--resume, --json). load_record (turngate/record/results.py) has already refused a record whose runs do not
match its plan or whose digest does not match; here its summary, comparison and verdict are
recomputed from the runs, as the gate decided them (turngate.gate.run.summarise_record and
turngate.verdict.decide.decide, as turngate.gate.conclude.conclude does). A stored summary or verdict is never
what a reader shows, and an agent named in the file (meta.agent) is shown, never imported."""
from __future__ import annotations

from typing import Any

from turngate.record.results import Meta, Record
from turngate.verdict.rule import policy_of


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
    """The accepted run the gate judged against: the record's own copy (meta.judged_with),
    narrowed to its rows and judge as the gate did. No file is read: a later calibration, or a
    reference moved or deleted, changes nothing. None: judged by the bars only, or a record of
    an earlier rule (its reference, if any, is a file: file_reference)."""
    j = record.meta.judged_with
    if j is None or j.reference is None:
        return None
    from turngate.verdict.reference import Reference

    return narrow(Reference.model_validate(j.reference), record, record.meta.judge)


def narrow(reference: Any, record: Record, judge: str | None) -> Any:
    """A reference as it applies to the record's rows and this judge (None: it holds none of them)."""
    from turngate.scoring.scorers import judge_scorers
    from turngate.verdict.reference import check_judge

    ids = {r["id"] for r in record.rows}
    reference = reference.model_copy(update={"rows": {k: v for k, v in reference.rows.items() if k in ids}})
    if not reference.rows and ids:
        return None
    return check_judge(reference, judge, judge_scorers())[0]


def file_reference(record: Record) -> Any:
    """A record of an earlier layout's reference: the file meta.reference names, read now (merge
    and --resume of such a record, which then store a copy of it)."""
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


def other_reference(spec: str, record: Record, where: Any, judge: str | None = None) -> tuple[Any, list[str], str]:
    """--reference FILE, or `current` (the project's configured reference), as it applies to the
    record's rows and judge: (reference or None, notes, what to call it in the output). A
    reference from another dataset, or whose rows changed, is refused (ConfigError)."""
    from turngate.scoring.scorers import judge_scorers
    from turngate.verdict.reference import DEFAULT_PATH, check_judge, check_rows, load_reference

    path = DEFAULT_PATH if spec == "current" else spec
    reference, notes = check_rows(load_reference(path), record.rows, path, explicit=True)
    if reference is not None:
        reference, judge_notes = check_judge(reference, judge or record.meta.judge, judge_scorers())
        notes += judge_notes
    label = f"--reference {spec}" + (f" ({path})" if spec == "current" else "")
    return reference, notes, label


def rejudged(record: Record, path: Any, spec: str | None, say=lambda note: None):
    """recompute, against --reference `spec` when given (its notes handed to say): (the verdict,
    the reference's name in the output, or None: the record's own)."""
    if spec is None:
        return recompute(record, path), None
    reference, notes, label = other_reference(spec, record, path)
    for note in notes:
        say(note)
    return recompute(record, path, reference, label), label


def earlier_rule(record: Record, where: Any = None) -> str | None:
    """Why the record is not re-judged by today's rule (turngate/verdict/rule.py), or None."""
    from turngate.verdict.rule import earlier

    return earlier(record.meta, where or "results file")


def check_reruns(record: Record, path: Any = None, reference: Any = False) -> None:
    """Refuse (RecordError, one line) a record whose confirmation reruns are not the ones its
    planned runs call for: a failing rerun deleted would turn a regressed row flaky."""
    from turngate.record.results import RecordError

    if record.incomplete() or earlier_rule(record, path):
        return  # a record of an earlier rule: its reruns were planned by that rule, which is not here
    if reference is False:
        reference = reference_of(record)
    if problem := confirm_problem(record, reference):
        raise RecordError(f"{path or 'results file'}: {problem}")


def confirm_problem(record: Record, reference: Any, *, summary: Any = None) -> str | None:
    """Why the record's confirmation reruns are not the ones its planned runs call for, or None.
    The plan is recomputed from the planned runs (as the gate made it), so deleting a failing
    rerun, adding one, or editing meta.confirm's seeds cannot turn a regressed row flaky. summary:
    its candidate's planned runs summarised with its bars, when the caller has it."""
    from collections import Counter

    from turngate.verdict.decide import plan_reruns, rerun_stops
    from turngate.verdict.rule import policy_of
    from turngate.verdict.summary import summarise

    conf, m = record.meta.confirm, record.meta
    if earlier_rule(record):
        return None  # planned by an earlier rule (check_reruns)
    runs = record.runs
    have = Counter((r.row_id, r.trial) for r in runs if r.stage == "confirm" and r.version == m.version)
    if not conf or not conf.get("enabled") or record.meta.regraded_from:
        # no reruns planned (or regraded: today's scorers may flag other rows; those are judged in one stage)
        extra = [k for k in have if not conf or k[1] not in set((conf.get("rows") or {}).get(k[0], []))]
        return f"{len(extra)} confirmation rerun(s) the record did not plan, e.g. {extra[0]}" if extra else None
    bars = record.meta.thresholds
    if (cand := summary) is None:
        cand = summarise([r for r in runs if r.version == m.version and r.stage == "gate"], record.row_by_id(),
                         bars, m.trials)
    policy = policy_of(m)
    plan = plan_reruns(cand, reference, record.meta.seeds, fixed=conf.get("k"), below_bar=cand.below(bars),
                       policy=policy)
    if {k: sorted(v) for k, v in (conf.get("rows") or {}).items()} != {k: sorted(v) for k, v in plan.items()}:
        return "meta.confirm.rows is not the plan its planned runs call for"
    stops = rerun_stops(cand, reference, fixed=conf.get("k"), below_bar=cand.below(bars), policy=policy)
    want = Counter(wanted_reruns(record, reference, plan, stops))
    if missing := sorted(want - have):
        return f"{len(missing)} of {sum(want.values())} confirmation reruns missing, e.g. {missing[0][0]} seed {missing[0][1]}"
    if extra := sorted(have - want):
        return f"{len(extra)} confirmation rerun(s) not in the plan (or duplicated), e.g. {extra[0][0]} seed {extra[0][1]}"
    return None


def wanted_reruns(record: Record, reference: Any, plan: dict[str, list[int]], stops: dict) -> list[tuple[str, int]]:
    """(row, seed) of every rerun the plan calls for given the reruns the record holds: all of a
    row's planned seeds, or for a row that stops early (stops) as many of them, in order, as the
    reruns it made called for (the next batch, when they call for more)."""
    from turngate.verdict.decide import reruns_needed

    m = record.meta
    by_key = {(r.row_id, r.trial): r for r in record.runs if r.stage == "confirm" and r.version == m.version}
    out = []
    for rid, seeds in plan.items():
        n = len(seeds)
        if rid in stops:
            made = []
            for s in seeds:
                if (rid, s) not in by_key:
                    break
                made.append(by_key[(rid, s)])
            n = min(len(seeds), reruns_needed(stops[rid], made, reference))
        out += [(rid, s) for s in seeds[:n]]
    return out


def recompute(record: Record, path: Any = None, reference: Any = False, reference_label: str | None = None):
    """Replace record.summary (and .comparison) with what the runs say, and return the verdict
    (an turngate.verdict.decide.Verdict). An incomplete record gets no verdict: exit code 2 and the line
    `incomplete: N of M runs`, and record.verdict None, as an interrupted gate stores none.

    The record is judged with what it carries (its bars, its reference copy, its rule). A record
    of an earlier rule keeps the verdict stored with it (said in a note). reference: another
    accepted run to judge it against (--reference: said in a note, reference_label naming it;
    None judges by the bars only); a record of an earlier rule is then judged in one stage, its
    reruns left out (they were planned by that rule)."""
    from turngate.output.wording import decide
    from turngate.verdict.decide import EXIT_UNJUDGED, Verdict, stored

    if record.meta.compared_files:
        return _comparison(record)
    from turngate.gate.conclude import add_judge_correction
    from turngate.gate.run import summarise_record
    from turngate.verdict.comparison import compare
    from turngate.verdict.decide import apply

    m = record.meta
    registry = registry_of(m)
    earlier = earlier_rule(record, path)
    if earlier and reference is not False:
        one_stage(record, f"judged by {earlier}: its reruns were planned by that rule")
    was, kept = record.summary, record.verdict
    record.summary = summarise_record(record, {n: s.bar for n, s in (registry or {}).items()})
    record.comparison = record.verdict = None
    if line := record.incomplete():
        return Verdict(exit_code=EXIT_UNJUDGED, line=f"{line}: no verdict over part of the runs")
    if earlier and reference is False:
        return _stored(record, was, kept, earlier)
    own = reference_of(record)
    check_reruns(record, path, own)
    add_judge_correction(record)
    cand = record.summary[m.version]
    if m.baseline:
        record.comparison = compare(record.runs_for(m.baseline), record.runs_for(m.version),
                                    list(registry or cand.scorers), baseline=m.baseline, candidate=m.version)
    against = own if reference is False else reference
    verdict = decide(cand, against, registry, comparison=record.comparison,
                     fail_on_regression=fail_on_regression(m), policy=policy_of(m, path))
    if reference is not False:
        verdict.notes.append(f"judged against {reference_label or '--reference'}"
                             + ("" if reference is not None else ": none of its rows apply, by the bars only")
                             + ", not the reference the record was judged with")
    apply(cand, verdict)
    if registry is not None:  # a gate's verdict: what it could see, as the gate stated it (turngate/gate/sight.py)
        from turngate.gate.sight import of_record

        verdict.sensitivity = of_record(record, against)
    if m.baseline:
        base = record.summary[m.baseline]
        apply(base, decide(base, against, registry, policy=policy_of(m, path)))
    record.verdict = stored(verdict)
    return verdict


def one_stage(record: Record, why: str) -> None:
    """The record without its confirmation reruns, to be judged in one stage (meta.confirm says why)."""
    record.runs = [r for r in record.runs if r.stage != "confirm"]
    conf = record.meta.confirm or {}
    record.meta.confirm = {"enabled": bool(conf.get("enabled")), "k": conf.get("k"), "rows": {}, "skipped": why}


def _stored(record: Record, summary: dict, kept: Any, earlier: str):
    """The verdict a record of an earlier rule was stored with, said to be so; each scorer's
    decision as stored, over the numbers recounted from its runs."""
    from turngate.verdict.decide import EXIT_UNJUDGED, Verdict

    for version, now in record.summary.items():
        then = summary.get(version)
        for name, s in now.scorers.items():
            old = then.scorers.get(name) if then is not None else None
            if old is not None:
                s.ok, s.gate_bar, s.accepted, s.p_value = old.ok, old.gate_bar, old.accepted, old.p_value
    note = (f"judged by {earlier}: the verdict stored with it, not re-judged "
            f"(regrade re-judges it by today's rule, in one stage)")
    if kept is None:
        verdict = Verdict(exit_code=EXIT_UNJUDGED, line=f"no stored verdict (judged by {earlier})", notes=[note])
    else:
        verdict = Verdict.model_validate({**kept.model_dump(), "notes": [*kept.notes, note]})
    record.verdict = kept.model_copy(update={"notes": [*kept.notes, note]}) if kept is not None else None
    return verdict


def _comparison(record: Record):
    """A compare.py --out record: both sides' summaries and the comparison from the runs, decided
    as compare.py decides (no bars: only the comparison)."""
    from turngate.output.wording import decide
    from turngate.verdict.comparison import compare
    from turngate.verdict.decide import stored
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


def judged_by(record: Record, label: str | None = None) -> str:
    """What the verdict shown was judged with, in a few words after "judged by" (show, report)."""
    from turngate.verdict.rule import RULE

    if (earlier := earlier_rule(record)) and label is None:
        return f"{earlier}: the verdict stored with it"
    rule = f"rule {RULE}" + (f" (in one stage: the record was judged by {earlier})" if earlier else "")
    if label is not None:
        return f"{rule}, against {label} (not the reference the record was judged with)"
    j = record.meta.judged_with
    if j is None or j.reference is None:
        return f"{rule}, by its bars only (no reference)"
    source = (j.reference_file or {}).get("path")
    return f"{rule}, against the reference copy it carries" + (f" (taken from {source})" if source else "")
