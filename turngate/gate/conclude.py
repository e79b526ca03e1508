"""The end of a gate run: summarise, decide, print, store, and write the CI outputs.

The decision itself is turngate.verdict.decide.decide (pure); everything here is I/O around it."""
from __future__ import annotations

from turngate.output.wording import decide
from turngate.verdict.decide import Verdict, apply, job_label, stored
from turngate.verdict.reference import Reference
from turngate.verdict.rule import policy_of


def add_judge_correction(record) -> str | None:
    """Each judge scorer reported twice: raw, and bias-corrected with the stored calibration.
    A run with no judge (its bars name none) has nothing to correct and nothing to warn about."""
    from turngate.record.summaries import Correction
    from turngate.scoring.judge_correction import corrected, judge_warning, load_calibration
    from turngate.scoring.scorers import judge_scorers

    judged = {name for summary in record.summary.values() for name in summary.scorers} & judge_scorers()
    if not judged or not record.meta.judge:
        return None
    cal = load_calibration()
    warning = judge_warning(record.meta.judge, cal)
    if cal is not None and cal.get("judge") == record.meta.judge:
        for summary in record.summary.values():
            for name in sorted(judged):
                s = summary.scorers.get(name)
                if s is not None and s.n:
                    s.corrected = Correction.model_validate(corrected(s.passed, s.n, cal))
    return warning


def finish(record, path, registry: dict, reference: Reference | None, completed: bool, started: float, *,
           fail_on_regression: bool = False, report: str | None = None, junit: str | None = None,
           pr_comment: str | None = None, force: bool = True) -> int:
    """Summarise a finished (or interrupted) gate run, decide, print, store; the exit code.
    junit, pr_comment: where --junit and --markdown write (None: not written); force: they and
    report may replace a file (without it, one that appeared since the command checked is refused)."""
    return conclude(record, path, registry, reference, completed, started, fail_on_regression=fail_on_regression,
                    report=report, junit=junit, pr_comment=pr_comment, force=force).exit_code


def conclude(record, path, registry: dict, reference: Reference | None, completed: bool, started: float, *,
             fail_on_regression: bool = False, report: str | None = None, junit: str | None = None,
             pr_comment: str | None = None, force: bool = True) -> Verdict:
    """finish, returning the whole Verdict (the Python API hands it to its caller)."""
    import time

    from turngate.gate.run import summarise_record
    from turngate.output.comparison_table import print_comparison
    from turngate.output.console import append_step_summary, console, markdown, print_summary
    from turngate.record.results import save_record
    from turngate.verdict.comparison import compare

    record.meta.elapsed_s = round(record.meta.elapsed_s + time.perf_counter() - started, 3)
    record.meta.complete = completed
    record.meta.interrupted = not completed
    record.runs.sort(key=lambda r: (r.version != record.meta.version, r.row_id, r.trial))
    record.summary = summarise_record(record, {n: s.bar for n, s in registry.items()})
    record.verdict = None  # decided below, from these runs (a resumed record's old one is void)
    save_record(record, path)
    if not completed:
        import sys  # the one line of an interrupted run goes to stderr, as every exit 2's does

        print(f"interrupted: {len(record.runs)} run(s) kept in {path} (complete it with --resume {path})",
              file=sys.stderr)
        verdict = decide(record)
        write_ci_outputs(record, verdict, path, junit=junit, pr_comment=pr_comment, force=force)
        return verdict
    cand = record.summary[record.meta.version]
    warning = add_judge_correction(record)
    if record.meta.baseline:
        record.comparison = compare(record.runs_for(record.meta.baseline), record.runs_for(record.meta.version),
                                    list(registry), baseline=record.meta.baseline, candidate=record.meta.version)
    policy = policy_of(record.meta)
    verdict = decide(cand, reference, registry, comparison=record.comparison, fail_on_regression=fail_on_regression,
                     policy=policy)
    apply(cand, verdict)
    from turngate.gate.sight import of_record

    verdict.sensitivity = of_record(record, reference)  # what this gate could see (turngate/gate/sight.py)
    if record.meta.baseline:
        base = record.summary[record.meta.baseline]
        apply(base, decide(base, reference, registry, policy=policy))
    print_summary(cand, job_label(record, record.meta.version))
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")
    if record.meta.baseline:
        print_summary(record.summary[record.meta.baseline], job_label(record, record.meta.baseline))
        print_comparison(record.comparison)
    for note in verdict.notes:
        console.print(f"note: {note}", markup=False)
    record.verdict = stored(verdict)
    save_record(record, path)
    from turngate.gate.sight import markdown as sight_markdown

    append_step_summary(markdown(cand, job_label(record, record.meta.version), verdict.line)
                        + sight_markdown(verdict.sensitivity))
    colour = "green" if verdict.exit_code == 0 else "red"
    head, *rest = verdict.lines(results=str(path))
    console.print(f"[bold {colour}]{escape(head)}[/]")
    for line in rest:
        console.print(line, markup=False, highlight=False)
    from turngate.gate.sight import line as sight_line

    if said := sight_line(verdict.sensitivity):
        console.print(said, markup=False, highlight=False)
    if report:
        from turngate.output.html_report import write_report

        console.print(f"report: {write_report(record, report, force=force)}")
    write_ci_outputs(record, verdict, path, junit=junit, pr_comment=pr_comment, fail_on_regression=fail_on_regression,
                     force=force)
    console.print(f"results: {path}   elapsed: {record.meta.elapsed_s:.2f} s")
    return verdict


def write_ci_outputs(record, verdict: Verdict, path, *, junit: str | None = None, pr_comment: str | None = None,
                     fail_on_regression: bool = False, force: bool = True) -> None:
    """--junit (turngate/output/junit_report.py) and --markdown (turngate/output/pr_comment.py), from the verdict just made."""
    from turngate.output.console import console

    kw = {"results": str(path), "comparison": record.comparison, "fail_on_regression": fail_on_regression}
    if junit:
        from turngate.output.junit_report import write_junit

        console.print(f"junit: {write_junit(record, verdict, junit, force=force, **kw)}", markup=False,
                      highlight=False)
    if pr_comment:
        from turngate.output.pr_comment import write_pr_comment

        console.print(f"markdown: {write_pr_comment(record, verdict, pr_comment, force=force, **kw)}", markup=False,
                      highlight=False)


def escape(text: str) -> str:
    from rich.markup import escape as rich_escape

    return rich_escape(text)
