"""Re-score the Turns stored in a results file with today's scorers and thresholds.
No agent calls. Writes a new results file and prints every verdict that changed.

    python evals/regrade.py results/v3-20261129-101500.json [--judge offline] [--out PATH] [--force]

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
from turngate.gate.conclude import finish
from turngate.gate.recheck import check_reruns, fail_on_regression
from turngate.output.console import console
from turngate.record.results import load_record
from turngate.scoring.grading import grade_many
from turngate.scoring.scorers import evaluators_for, judge_scorers
from turngate.scoring.scorers import registry as scorer_registry
from turngate.sources.dataset import Row
from turngate.verdict.reference import check_judge, check_rows, load_reference
from turngate.verdict.thresholds import DEFAULT_PATH, load_thresholds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("regrade"), description=__doc__.splitlines()[0])
    p.add_argument("results")
    p.add_argument("--judge", help="judge to use (default: the one the run used)")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH))
    p.add_argument("--out", help="where to write (default: a new <results>-regraded-<stamp>.json beside it)")
    p.add_argument("--report", metavar="PATH.html", help="write a self-contained HTML report")
    p.add_argument("--force", action="store_true", help="let --out/--report replace an existing file")
    return p


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
    check_reruns(record, a.results)  # and its confirmation reruns the plan its runs call for
    if line := record.incomplete():
        console.print(f"{a.results}: {line}", markup=False)
    judge = a.judge or record.meta.judge
    cli.check_keys(judge, "--judge")
    thresholds = load_thresholds(a.thresholds)
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
    record.meta.regraded_from = str(a.results)
    record.replan()  # a new record: its plan names the judge and bars it was scored with
    out = cli.claim_file(a.out, "--out", force=a.force) if a.out else cli.new_results_path(src.parent,
                                                                                            f"{src.stem}-regraded")
    record.meta.elapsed_s = 0.0
    reference = load_reference(record.meta.reference) if record.meta.reference else None
    if reference is not None:  # the rows as they were run, the judge as regraded now
        reference, notes = check_rows(reference, record.rows, record.meta.reference, explicit=False)
        reference, judge_notes = check_judge(reference, judge, judge_scorers())
        for note in notes + judge_notes:
            console.print(f"[yellow]note:[/] {note}")
    # an interrupted record stays interrupted: no verdict over part of the runs (exit 2)
    return finish(record, out, scorer_registry(thresholds), reference, record.meta.complete, started,
                  fail_on_regression=fail_on_regression(record.meta), report=a.report)

