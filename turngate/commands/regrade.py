"""Re-score the Turns stored in a results file with today's scorers, against the bars and the
reference the record was judged with. No agent calls. Writes a new results file and prints
every verdict that changed.

    python evals/regrade.py results/v3-20261129-101500.json [--judge offline] [--out PATH] [--force]
    python evals/regrade.py RESULTS --thresholds evals/thresholds.toml [--reference evals/reference.json]

The bars are the record's own (meta.thresholds), so a regrade needs no bars file and runs from
any folder; --thresholds regrades with a file's bars instead. The reference is the copy the
record carries (meta.judged_with: the part of the accepted run it was judged against, whatever
became of the file since); --reference FILE names another (`current`: the project's configured
one). A record of an earlier rule (results@4 and older: no copy) is re-judged by today's rule in
one stage, its confirmation reruns left out, against the file it names (meta.reference, looked
for as written, then beside the results file and in the folders above it) or --reference. The
output says which bars and which reference were used. The scorers the bars name must be registered where it runs (the project's
[tool.turngate] plugins, or TURNGATE_PLUGINS).

An interrupted (incomplete) record stays incomplete: its runs are re-scored and stored, but
no verdict is given over part of the runs, and the exit code is 2. A record whose runs do not
match its plan (or whose digest does not match) is refused before anything is scored.
"""
from __future__ import annotations

import argparse
import asyncio
import time
from pathlib import Path

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.gate.conclude import finish
from turngate.gate.recheck import (
    check_reruns,
    earlier_rule,
    fail_on_regression,
    narrow,
    one_stage,
    other_reference,
)
from turngate.gate.run import keep_reference
from turngate.output.console import console
from turngate.record.results import Record, load_record
from turngate.scoring.grading import grade_many
from turngate.scoring.scorers import evaluators_for, judge_scorers, scorer_names
from turngate.scoring.scorers import registry as scorer_registry
from turngate.sources.dataset import Row
from turngate.verdict.reference import DEFAULT_PATH as DEFAULT_REFERENCE
from turngate.verdict.reference import Reference, check_judge, check_rows, load_reference
from turngate.verdict.thresholds import Bar, Thresholds, load_thresholds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("regrade"), description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("results")
    p.add_argument("--judge", help="judge to use (default: the one the run used)")
    p.add_argument("--thresholds", metavar="PATH",
                   help="regrade with this bars file (default: the bars the record was judged with)")
    p.add_argument("--reference", metavar="PATH",
                   help="judge against this accepted run (`current`: the project's configured one; default: the "
                        "copy of the reference the record was judged with, if any)")
    p.add_argument("--out", help="where to write (default: a new <results>-regraded-<stamp>.json beside it)")
    p.add_argument("--report", metavar="PATH.html", help="write a self-contained HTML report")
    p.add_argument("--force", action="store_true", help="let --out/--report replace an existing file")
    return p


def record_bars(record: Record, results: str) -> Thresholds:
    """The bars the record was judged with (meta.thresholds), as a Thresholds that declares
    exactly those scorers; a record with none (a calibration run) needs --thresholds."""
    bars = record.meta.thresholds
    if not bars:
        raise ConfigError(f"{results}: the record holds no bars (a calibration run is judged by none); "
                          f"give a bars file: {cli.command('regrade')} {results} --thresholds PATH")
    try:
        t = Thresholds(provenance={"scorers": list(bars)}, scorers={n: Bar(bar=b) for n, b in bars.items()})
    except ValueError as exc:
        raise ConfigError(f"{results}: meta.thresholds is not a bar per scorer ({exc.errors()[0]['msg']})") from None
    t._path = f"{results}: meta.thresholds"
    return t


def check_registered(bars: dict, where: str) -> None:
    """Every scorer the bars name is registered here: one line naming what to load, never a
    scorer silently missing from the regrade."""
    known = set(scorer_names())
    if unknown := [n for n in bars if n not in known]:
        raise ConfigError(f"{where}: scorer(s) {', '.join(unknown)} are not registered here (run from the project "
                          "whose [tool.turngate] plugins register them, or name their module in TURNGATE_PLUGINS)")


def find_reference(stored: str, results: Path) -> Path | None:
    """The record's reference file: as written (absolute, or relative to this folder), else
    relative to the results file's folder or one above it (a gate run from the project root
    writes results/...; its reference path is relative to that root)."""
    path = Path(stored)
    if path.is_file():
        return path
    if path.is_absolute():
        return None
    for folder in (results.resolve().parent, *results.resolve().parent.parents):
        if (folder / path).is_file():
            return folder / path
    return None


def narrowed(path: Path | str, record: Record, judge: str | None, *, explicit: bool) -> tuple[Reference | None, list[str]]:
    """A reference as it applies to the record's rows and this judge (as the gate narrows it)."""
    reference, notes = check_rows(load_reference(path), record.rows, path, explicit=explicit)
    if reference is None:
        return None, notes
    reference, judge_notes = check_judge(reference, judge, judge_scorers())
    return reference, notes + judge_notes


@cli.guarded
def main(argv=None) -> int:
    started = time.perf_counter()
    a = parser().parse_args(argv)
    # where it writes, checked before any scoring: never over its input, never over a file unless --force
    if a.out:
        cli.check_new_file(a.out, "--out", force=a.force, inputs=[a.results])
    if a.report:
        cli.check_new_file(a.report, "--report", force=a.force, inputs=[a.results, a.out])
    src = Path(a.results)
    if not a.out:
        cli.check_out_dir(src.parent, "--out (default: beside the results)")
    record = load_record(a.results)  # its runs match its plan and digest, or a one-line error
    judge = a.judge or record.meta.judge
    cli.check_keys(judge, "--judge")
    # the bars: the record's own unless --thresholds names a file
    if a.thresholds:
        thresholds, bars_from = load_thresholds(a.thresholds), f"{a.thresholds} (--thresholds)"
        check_registered(thresholds.bars(), a.thresholds)
    else:
        thresholds = record_bars(record, a.results)
        bars_from = "the record's own (meta.thresholds" + (f"; the gate read them from {record.meta.thresholds_path})"
                                                            if record.meta.thresholds_path else ")")
        check_registered(thresholds.bars(), f"{a.results}: meta.thresholds")
    registry = scorer_registry(thresholds)  # a bar outside (0, 1], a declared scorer without one: exit 2 here
    # the reference: the copy the record carries (never a file), unless --reference names another;
    # a record of an earlier rule carries none: the file it names, judged in one stage (its reruns
    # were planned by that rule)
    earlier = earlier_rule(record, a.results)
    ref_path, source, notes = None, None, []
    if earlier:
        one_stage(record, f"regraded from a record judged by {earlier}: its reruns were planned by that rule")
        console.print(f"{a.results}: judged by {earlier}: re-judged by today's rule, in one stage", markup=False)
        if record.meta.reference and not a.reference:
            ref_path = find_reference(record.meta.reference, src)
            if ref_path is None:
                raise ConfigError(f"{a.results}: judged by {earlier}, it carries no copy of its reference, and the "
                                  f"file it names, {record.meta.reference}, is not there; name one: "
                                  f"{cli.command('regrade')} {a.results} --reference PATH (or --reference current)")
    elif not record.incomplete():
        check_reruns(record, a.results)  # its reruns are the ones its own copy of the reference calls for
    if line := record.incomplete():
        console.print(f"{a.results}: {line}", markup=False)
    if a.reference:
        reference, notes, label = other_reference(a.reference, record, a.results, judge)
        source = label
        ref_path = DEFAULT_REFERENCE if a.reference == "current" else a.reference
    elif ref_path is not None:
        reference, notes = narrowed(ref_path, record, judge, explicit=False)
        source = f"{ref_path} (the file the record names)"
    else:
        own = record.meta.judged_with.reference if record.meta.judged_with is not None else None
        reference = narrow(Reference.model_validate(own), record, judge) if own is not None else None
        taken = (record.meta.judged_with.reference_file or {}).get("path") if own is not None else None
        source = ("the copy the record carries" + (f" (taken from {taken})" if taken else "")) if own else None
    console.print(f"bars: {bars_from}", markup=False, highlight=False)
    if source is None:
        console.print("reference: none (the record was judged by the bars only)", markup=False, highlight=False)
    else:
        console.print(f"reference: {source}" + ("" if reference is not None else
                      ": none of its rows apply; judged by the bars only"), markup=False, highlight=False)
    for note in notes:  # the rows as they were run, the judge as regraded now
        console.print(f"[yellow]note:[/] {note}")
    evaluators = evaluators_for(thresholds.bars(), judge)  # the scorers the bars name, as the gate ran them
    rows = {rid: Row.model_validate(r) for rid, r in record.row_by_id().items()}
    graded = asyncio.run(grade_many([(rows[r.row_id], r.turn) for r in record.runs], evaluators))
    changed = 0
    for run, verdicts in zip(record.runs, graded, strict=True):
        for name, new in verdicts.items():
            old = run.verdicts.get(name)
            if old is None or old.passed != new.passed:
                changed += 1
                was = "absent" if old is None else {True: "pass", False: "fail", None: "n/a"}[old.passed]
                now = {True: "pass", False: "fail", None: "n/a"}[new.passed]
                console.print(f"  {run.version} {run.row_id}#{run.trial} {name}: {was} -> {now}  ({new.explanation})",
                              markup=False)
        run.verdicts = verdicts
    console.print(f"{changed} verdict(s) changed over {len(record.runs)} runs")
    record.meta.judge = judge
    record.meta.thresholds = thresholds.bars()
    if a.thresholds:
        record.meta.thresholds_path = a.thresholds
    if ref_path is not None:
        record.meta.reference = str(ref_path) if reference is not None else None
    elif reference is None:
        record.meta.reference = None
    taken = record.meta.judged_with.reference_file if record.meta.judged_with is not None and not ref_path else None
    keep_reference(record, reference, ref_path)  # today's rule, and the reference it was regraded against
    if taken and reference is not None:
        record.meta.judged_with.reference_file = taken  # the copy's own source, carried on
    record.meta.regraded_from = str(a.results)
    record.replan()  # a new record: its plan names the judge and bars it was scored with
    out = cli.claim_file(a.out, "--out", force=a.force) if a.out else cli.new_results_path(src.parent,
                                                                                            f"{src.stem}-regraded")
    record.meta.elapsed_s = 0.0
    # an interrupted record stays interrupted: no verdict over part of the runs (exit 2)
    return finish(record, out, registry, reference, record.meta.complete, started,
                  fail_on_regression=fail_on_regression(record.meta), report=a.report, force=a.force)
