"""Measure a policy judge against human labels: TPR, TNR and Cohen's kappa, with intervals.

    evals calibrate-judge --judge offline [--split test|dev] [--labels PATH]

Positive = the human passed the answer. TPR = judge passes what humans pass; TNR = judge
fails what humans fail. TPR and TNR get Wilson 95% intervals; kappa gets a percentile
bootstrap over the labelled examples (2000 resamples, fixed seed). The judge runs exactly
as in the gate (the policy_judge scorer, which fails closed when the judge errors).
Disagreements go to results/judge_disagreements-<split>.json; on the test split the result
is stored in the judge calibration file ([tool.turngate] judge_calibration), which the gate
uses to correct the judge's rate.
Iterate on the judge with --split dev; measure once on --split test.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from datetime import date
from pathlib import Path
from typing import Any

import numpy as np
from rich.table import Table

from turngate.core import cli_support as cli
from turngate.core.atomic_write import write_atomic
from turngate.core.errors import ConfigError
from turngate.core.project import project
from turngate.output.console import console
from turngate.scoring.grading import grade_many
from turngate.scoring.judge_correction import DEFAULT_PATH as CALIBRATION_PATH
from turngate.scoring.judge_correction import judge_fingerprint
from turngate.scoring.judge_labels import LabelledExample, load_labels  # noqa: F401  (this command's API)
from turngate.scoring.scorers import policy_judge_scorer
from turngate.verdict.stats import cohen_kappa, wilson

DEFAULT_LABELS = project().path("judge_labels", "judge_labels.jsonl")
BOOTSTRAP_DRAWS = 2000
BOOTSTRAP_SEED = 20261015
KAPPA_METHOD = f"percentile bootstrap over examples, {BOOTSTRAP_DRAWS} resamples, seed {BOOTSTRAP_SEED}"


def kappa_interval(tp: int, fn: int, fp: int, tn: int) -> tuple[float, float]:
    """Percentile bootstrap: resample the examples (a multinomial draw of the four cells)."""
    n = tp + fn + fp + tn
    rng = np.random.default_rng(BOOTSTRAP_SEED)
    cells = rng.multinomial(n, np.array([tp, fn, fp, tn]) / n, BOOTSTRAP_DRAWS)
    kappas = [cohen_kappa(*map(int, c)) for c in cells]
    low, high = np.percentile(kappas, [2.5, 97.5])
    return float(low), float(high)


def measure(examples: list[LabelledExample], judge: str) -> tuple[dict, list[dict]]:
    """Run the judge (as the gate's policy_judge scorer) on the examples; counts, rates and
    the disagreements."""
    evaluators = [{"name": "policy_judge", "scorer": policy_judge_scorer(judge)}]
    graded = asyncio.run(grade_many([(ex.row, ex.turn.model_dump(mode="json")) for ex in examples],
                                    evaluators, parallelism=8))
    tp = fn = fp = tn = 0
    errors = 0
    disagreements = []
    for ex, verdicts in zip(examples, graded, strict=True):
        v = verdicts["policy_judge"]
        said = v.passed is True  # n/a cannot happen for the judge; treat anything but pass as fail
        errors += v.explanation.startswith("scorer policy_judge raised")
        human = ex.human == "pass"
        tp += human and said
        fn += human and not said
        fp += (not human) and said
        tn += (not human) and not said
        if human != said:
            disagreements.append({
                "id": ex.id, "human": ex.human, "judge": "pass" if said else "fail",
                "human_reason": ex.reason, "judge_reason": v.explanation, "origin": ex.origin,
                "row_id": ex.row.id, "rubric": ex.row.expect.rubric_for(ex.row),
                "user": ex.row.user_turns(), "answer": ex.turn.answer,
                "tool_calls": [c.model_dump(mode="json") for c in ex.turn.tool_calls]})
    pos, neg = tp + fn, fp + tn
    tpr_i, tnr_i = wilson(tp, pos), wilson(tn, neg)
    result: dict[str, Any] = {
        "n": len(examples), "tp": tp, "fn": fn, "fp": fp, "tn": tn,
        "tpr": tp / pos if pos else None, "tnr": tn / neg if neg else None,
        "kappa": cohen_kappa(tp, fn, fp, tn),
        "intervals": {"tpr": list(tpr_i), "tnr": list(tnr_i), "kappa": list(kappa_interval(tp, fn, fp, tn))},
        "methods": {"tpr": "Wilson 95%", "tnr": "Wilson 95%", "kappa": KAPPA_METHOD},
        "judge_errors": errors,
    }
    return result, disagreements


def print_result(result: dict, judge: str, split: str) -> None:
    t = Table(title=f"judge {judge} vs human labels, {split} split: {result['n']} examples "
                    f"({result['tp'] + result['fn']} human pass, {result['fp'] + result['tn']} human fail)")
    for col in ("measure", "value", "95% interval", "what it means"):
        t.add_column(col)
    rows = (("TPR", "tpr", "judge passes what humans pass"), ("TNR", "tnr", "judge fails what humans fail"),
            ("Cohen's kappa", "kappa", "agreement beyond chance (bootstrap interval)"))
    for label, key, meaning in rows:
        v, (low, high) = result[key], result["intervals"][key]
        t.add_row(label, "-" if v is None else f"{v:.3f}", f"{low:.3f}-{high:.3f}", meaning)
    console.print(t)
    console.print(f"confusion (human x judge): tp={result['tp']} fn={result['fn']} fp={result['fp']} tn={result['tn']}"
                  + (f"; {result['judge_errors']} judge error(s) counted as fail" if result["judge_errors"] else ""))


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("calibrate-judge"), description=__doc__.splitlines()[0])
    p.add_argument("--judge", default=project().value("judge"), required=project().value("judge") is None,
                   help="judge to measure: a registered judge | openai:<m> | orq:<m> (default: [tool.turngate] judge)")
    p.add_argument("--split", choices=["test", "dev"], default="test", help="which labels (default test)")
    p.add_argument("--labels", default=str(DEFAULT_LABELS), help="labelled examples (JSONL)")
    p.add_argument("--out", default="results", help="where the disagreements file goes")
    p.add_argument("--calibration", default=str(CALIBRATION_PATH),
                   help="where the test-split result is stored (default: [tool.turngate] judge_calibration)")
    p.add_argument("--no-store", action="store_true", help="do not store the calibration, even on the test split")
    return p


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(sys.argv[1:] if argv is None else argv)
    started = time.perf_counter()
    policy_judge_scorer(a.judge)  # a bad judge spec is an argument error before anything runs
    labels_path = Path(a.labels)
    examples = [ex for ex in load_labels(labels_path) if ex.split == a.split]
    if not examples:
        raise ConfigError(f"{labels_path}: no examples in the {a.split} split")
    result, disagreements = measure(examples, a.judge)
    print_result(result, a.judge, a.split)
    out = Path(a.out) / f"judge_disagreements-{a.split}.json"
    write_atomic(out, json.dumps({"judge": a.judge, "split": a.split, "labels": str(labels_path),
                                  "count": len(disagreements), "disagreements": disagreements}, indent=1),
                 what="the disagreements file")
    console.print(f"{len(disagreements)} disagreement(s): {out}")
    if a.split == "test" and not a.no_store:
        stored = {"judge": a.judge, "judge_fingerprint": judge_fingerprint(a.judge),
                  "date": date.today().isoformat(), "split": a.split, **result,
                  "labels": labels_path.name, "labels_sha256": cli.sha256_file(labels_path)}
        write_atomic(a.calibration, json.dumps(stored, indent=1) + "\n", what="the judge calibration")
        console.print(f"stored: {a.calibration}")
    elif a.split == "dev":
        console.print("dev split: not stored (the gate's correction uses the test split)")
    console.print(f"elapsed: {time.perf_counter() - started:.2f} s")
    return cli.EXIT_PASS

