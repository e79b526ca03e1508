"""The orq.ai Experiment a gate records, uploaded once the verdict is made (ORQ_API_KEY set,
no --no-upload). It is built from the results file as saved, so what orq shows is what the
file holds:

- one entry per (row, seed, stage) with one job result per version run on it: the datapoint
  is the row (inputs carry the row id, plus `seed` and `stage`: "gate", or "confirm" for a
  confirmation rerun), the output is the stored Turn, and every scorer's verdict is a score;
- a pass is value true/pass true, a fail value false/pass false, and n/a is value null with
  no pass: evaluatorq's "no basis" (its upload keeps a null value explicit, its table leaves
  it out of the pass rate), never a fail;
- the experiment's description holds the verdict headline and each scorer's mean, n and bar;
  its datasetId is the orq dataset when the rows came from one (--dataset-id).

The payload is evaluatorq's own (evaluatorq.send_results: SendResultsPayload of its
DataPointResult/JobResult/EvaluatorScore/EvaluationResult), sent by its send_results_to_orq.
evaluatorq's upload at the end of its run is off (turngate/jobs/runner.py): it would come before the
verdict and the confirmation reruns.
"""
from __future__ import annotations

import asyncio
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from turngate.record.results import Record, load_record
from turngate.record.results import ScorerVerdict as Verdict

DESCRIPTION_MAX = 2000  # a description, not a report: the results file has the rest


def score_of(verdict: Verdict):
    """One stored verdict as evaluatorq's EvaluationResult (n/a: value None, no pass)."""
    from evaluatorq import EvaluationResult

    if verdict.passed is None:
        return EvaluationResult(value=None, explanation=verdict.explanation)
    return EvaluationResult(value=verdict.passed, pass_=verdict.passed, explanation=verdict.explanation)


def experiment_results(record: Record) -> list:
    """The record's runs as evaluatorq DataPointResults: one per (row, seed, stage), in dataset
    order, gate runs first; each holds one JobResult per version that ran it."""
    from evaluatorq.types import DataPointResult, EvaluatorScore, JobResult

    from turngate.sources.dataset import Row, row_to_datapoint

    order = {r["id"]: i for i, r in enumerate(record.rows)}
    rows = {r["id"]: Row.model_validate(r) for r in record.rows}
    groups: dict[tuple[str, int, str], list] = {}
    for run in sorted(record.runs, key=lambda r: (r.stage != "gate", order.get(r.row_id, len(order)), r.trial)):
        groups.setdefault((run.row_id, run.trial, run.stage), []).append(run)
    out = []
    for (row_id, seed, stage), runs in groups.items():
        point = row_to_datapoint(rows[row_id])
        point.inputs.update(seed=seed, stage=stage)
        jobs = [JobResult(job_name=run.job, output=run.turn.model_dump(mode="json"), error=run.turn.error,
                          evaluator_scores=[EvaluatorScore(evaluator_name=name, score=score_of(v))
                                            for name, v in run.verdicts.items()])
                for run in sorted(runs, key=lambda r: r.version != record.meta.version)]
        out.append(DataPointResult(data_point=point, job_results=jobs))
    return out


def description(record: Record, path: Path) -> str:
    """The verdict and the bars, as orq shows an experiment's description."""
    from turngate.core.seeds import format_seeds

    m = record.meta
    verdict = (record.verdict.line if record.verdict is not None else "no verdict").splitlines()[0]
    parts = [verdict]
    for version in m.versions:
        summary = record.summary.get(version)
        cells = []
        for name, s in (summary.scorers if summary is not None else {}).items():
            mean = "n/a" if s.mean is None else f"{s.mean:.3f}"
            bar = s.bar if s.bar is not None else m.thresholds.get(name)
            cells.append(f"{name} {mean} (n={s.n}, bar {bar:.2f})" if bar is not None else f"{name} {mean} (n={s.n})")
        parts.append(f"{version}: " + "; ".join(cells))
    parts.append(f"seeds {format_seeds(list(m.seeds))}, dataset {m.dataset}, judge {m.judge}, "
                 f"results {path.name}" + (f", git {m.git_commit[:12]}" if m.git_commit else ""))
    text = " | ".join(parts)
    return text if len(text) <= DESCRIPTION_MAX else text[:DESCRIPTION_MAX - 3] + "..."


def experiment_name(record: Record) -> str:
    m = record.meta
    return f"{m.job or m.version}" + (f" vs {m.baseline}" if m.baseline else "")


async def upload_async(path: str | Path) -> Any:
    """Upload the finished results file as an orq Experiment; evaluatorq's OrqResponse, or None
    when there is no key or the run is incomplete. A failed upload prints one scrubbed warning
    line and returns None: the verdict stands either way."""
    from evaluatorq.send_results import send_results_to_orq

    from turngate.core.scrubbing import scrub
    from turngate.output.console import console

    key = os.environ.get("ORQ_API_KEY", "").strip()
    if not key:
        return None
    path = Path(path)
    record = load_record(path)
    if not record.meta.complete:  # an interrupted run is uploaded when --resume finishes it
        return None
    dataset = record.meta.dataset
    started = datetime.fromisoformat(record.meta.started) if record.meta.started else datetime.now(UTC)
    try:
        response = await send_results_to_orq(
            key, experiment_name(record), description(record, path),
            dataset.removeprefix("orq:") if dataset.startswith("orq:") else None,
            experiment_results(record), started, datetime.now(UTC), raise_on_error=True)
    except Exception as exc:
        first = str(exc).splitlines()[0] if str(exc) else ""
        # stderr, as every warning: stdout may be a --json reader's
        print(f"warning: orq.ai experiment not uploaded: {scrub(f'{type(exc).__name__}: {first}')}", file=sys.stderr)
        return None
    n = response.rows_created
    console.print(f"orq.ai experiment: {response.experiment_name}, {n} entr{'y' if n == 1 else 'ies'}"
                  + (f": {response.experiment_url}" if response.experiment_url else ""), markup=False, highlight=False)
    return response


def upload(path: str | Path) -> Any:
    return asyncio.run(upload_async(path))
