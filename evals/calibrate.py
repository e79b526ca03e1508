"""Propose gate bars from an accepted version's observed pass rates and their spread.

    python evals/calibrate.py --version v3 --trials 10 [--write]
    python evals/calibrate.py --from results/v3-....json [--write]     # from a stored run

A bar asks "no worse than what we accepted, allowing for sampling noise"; it never asks
for certainty the data can't give. For each scorer, with p the observed rate over n
verdicts from `trials` trials:
  - the noise allowance is the larger of two: the Wilson 95% lower bound of p, and the
    one-sided 95% low end a one-trial gate would see (p - 1.645 * sqrt(p(1-p) / (n/trials)));
    a one-trial gate has far fewer verdicts than the calibration run, so it is noisier;
  - minus a margin (code scorers 0.02, the judge 0.05: it is noisier), rounded down to 0.01;
  - a scorer the accepted version never failed keeps a bar of 1.00: zero tolerance, as for
    PII leaks, because any failure there is new behaviour, not noise.
"""
from __future__ import annotations

import argparse
import math
import sys
import time
from datetime import date
from pathlib import Path

from rich.table import Table

from evals import cli
from evals.console import console
from evals.gate import (
    DEFAULT_AGENT,
    DEFAULT_DATASET,
    agents_for,
    execute,
    load_rows_for,
    new_record,
    summarise_record,
)
from evals.record import load_record, save_record
from evals.runner import Settings
from evals.scorers import JUDGE_SCORERS, make_evaluators
from evals.sources import source_for
from evals.target import TargetOptions
from evals.thresholds import DEFAULT_PATH, Bar, Thresholds, dump_toml

MARGIN = {"code": 0.02, "judge": 0.05}


def propose(summary: dict, trials: int) -> dict[str, Bar]:
    bars = {}
    for name, s in summary["scorers"].items():
        if s["n"] == 0:
            continue
        p, n = s["mean"], s["n"]
        stats = dict(observed=round(p, 4), low=round(s["low"], 4), high=round(s["high"], 4), n=n)
        if s["passed"] == n:
            bars[name] = Bar(bar=1.0, why=f"never failed in {n} runs: zero tolerance", **stats)
            continue
        margin = MARGIN["judge" if name in JUDGE_SCORERS else "code"]
        one_trial = p - 1.645 * math.sqrt(p * (1 - p) / max(1, n // max(1, trials)))
        floor = min(s["low"], one_trial)
        bar = max(0.0, math.floor((floor - margin) * 100 + 1e-9) / 100)
        bars[name] = Bar(bar=bar, why=f"min(Wilson low {s['low']:.3f}, one-trial low {one_trial:.3f}) "
                                      f"- margin {margin:.2f}", **stats)
    return bars


@cli.guarded
def main(argv=None) -> int:
    started = time.perf_counter()
    p = argparse.ArgumentParser(prog="evals/calibrate.py", description=__doc__.splitlines()[0])
    p.add_argument("--agent", default=DEFAULT_AGENT, metavar="MODULE:CALLABLE", help="the target (see regression.py)")
    p.add_argument("--version", help="agent version, for a factory target (Northwind: default v3)")
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--model")
    p.add_argument("--judge", default="offline")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", default=str(DEFAULT_DATASET), help="local JSONL dataset")
    src.add_argument("--dataset-id", help="orq.ai dataset id (needs ORQ_API_KEY)")
    p.add_argument("--parallelism", type=int, default=8)
    p.add_argument("--from", dest="source", help="propose from a stored results file instead of running")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH))
    p.add_argument("--write", action="store_true", help="write the proposal to the thresholds file")
    a = p.parse_args(argv)
    if a.source:
        record = load_record(a.source)
    else:
        agents = agents_for(a.agent, TargetOptions(version=a.version, model=a.model, timeout=120.0))
        evaluators = make_evaluators(a.judge)
        loaded = load_rows_for(source_for(a.dataset, a.dataset_id), agents[0])
        rows = loaded.rows
        settings = Settings(model=a.model, judge=a.judge, trials=a.trials, parallelism=a.parallelism,
                            upload=False, print_table=False)
        record = new_record(agents, loaded, rows, settings, {}, ["calibrate"] + (argv or sys.argv[1:]))
        path = cli.REPO / "results" / f"calibrate-{record.meta.version}-{time.strftime('%Y%m%d-%H%M%S')}.json"
        if not execute(record, [(r, t) for r in rows for t in range(a.trials)], settings, path, agents, evaluators):
            return cli.EXIT_UNJUDGED
        record.meta.complete = True
        record.meta.elapsed_s = round(time.perf_counter() - started, 3)
        record.summary = summarise_record(record, {})
        save_record(record, path)
        console.print(f"calibration run: {path}")
    summary = summarise_record(record, {})[record.meta.version]
    bars = propose(summary, record.meta.trials)
    t = Table(title=f"proposed bars from {record.meta.version} ({summary['runs']} runs, {record.meta.trials} trials)")
    for col in ("scorer", "observed", "95% CI", "n", "proposed bar", "why"):
        t.add_column(col)
    for name, b in bars.items():
        t.add_row(name, f"{b.observed:.3f}", f"{b.low:.3f}-{b.high:.3f}", str(b.n), f"{b.bar:.2f}", b.why)
    console.print(t)
    provenance = {"version": record.meta.version, "model": record.meta.model, "judge": record.meta.judge,
                  "trials": record.meta.trials, "date": date.today().isoformat(),
                  "dataset_sha256": record.meta.dataset_sha256, "method": "min(wilson_low, one-trial low) - margin (code 0.02, judge 0.05); 1.0 if never failed"}
    text = dump_toml(Thresholds(provenance=provenance, scorers=bars))
    if a.write:
        Path(a.thresholds).write_text(text)
        console.print(f"wrote {a.thresholds}")
    else:
        console.print("not written (pass --write to save these bars)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
