"""Re-score the Turns stored in a results file with today's scorers and thresholds.
No agent calls. Writes a new results file and prints every verdict that changed.

    python evals/regrade.py results/v3-20261129-101500.json [--judge offline] [--out PATH]
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import asyncio
import time

from evals import cli
from evals.console import console
from evals.dataset import Row
from evals.grading import grade_many
from evals.record import load_record
from evals.regression import finish
from evals.scorers import make_evaluators
from evals.thresholds import DEFAULT_PATH, load_thresholds


@cli.guarded
def main(argv=None) -> int:
    started = time.perf_counter()
    p = argparse.ArgumentParser(prog="evals/regrade.py", description=__doc__.splitlines()[0])
    p.add_argument("results")
    p.add_argument("--judge", help="judge to use (default: the one the run used)")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH))
    p.add_argument("--out", help="where to write (default: <results>-regraded.json)")
    p.add_argument("--report", metavar="PATH.html", help="write a self-contained HTML report")
    a = p.parse_args(argv)
    record = load_record(a.results)
    judge = a.judge or record.meta.judge
    evaluators = make_evaluators(judge)
    thresholds = load_thresholds(a.thresholds)
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
    src = Path(a.results)
    out = Path(a.out) if a.out else src.with_name(src.stem + "-regraded.json")
    record.meta.elapsed_s = 0.0
    return finish(record, out, thresholds.bars(), True, started, report=a.report)


if __name__ == "__main__":
    sys.exit(main())
