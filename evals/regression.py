"""The regression gate: a fixed dataset through a pinned agent version, binary scorers,
calibrated bars, an exit code.

    python evals/regression.py --version v3 [--trials 5] [--baseline v2] [--only ID ...]

Exit 0: every scorer's mean is at or above its bar (and, with --fail-on-regression, no
scorer is significantly worse than the baseline). Exit 1: some scorer is below. Exit 2:
the run cannot be judged (bad arguments, bad dataset, no rows, interrupted).
"""
from __future__ import annotations

import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: import the evals package, not sibling modules
    sys.path[0] = str(Path(__file__).resolve().parents[1])

import argparse
import asyncio
import contextlib
import hashlib
import os
import time
from datetime import UTC, datetime

from app.refund_agent.models import parse_spec
from app.refund_agent.versions import load_version
from evals import cli
from evals.console import append_step_summary, console, markdown, print_summary
from evals.dataset import Row, load_rows, rows_from_datapoints, select
from evals.errors import ConfigError
from evals.faults import parse_faults, server_fault
from evals.record import Meta, Record, RunResult, load_record, save_record
from evals.runner import Plan, Settings, duration_hints, run_plan
from evals.scorers import SCORER_NAMES, make_evaluators
from evals.summary import summarise
from evals.thresholds import DEFAULT_PATH, load_thresholds

DEFAULT_DATASET = cli.REPO / "datasets" / "northwind.jsonl"
CHECKPOINT_EVERY_S = 5.0


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="evals/regression.py", description=__doc__.splitlines()[0])
    p.add_argument("--version", default="v3", help="agent version to gate (default v3)")
    p.add_argument("--baseline", help="also run this version on the same rows/seeds and compare")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", default=str(DEFAULT_DATASET), help="local JSONL dataset")
    src.add_argument("--dataset-id", help="orq.ai dataset id (needs ORQ_API_KEY)")
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these row ids")
    p.add_argument("--tags", nargs="+", metavar="TAG", help="run only rows with any of these tags")
    p.add_argument("--limit", type=int, help="run only the first N selected rows")
    p.add_argument("--trials", type=int, default=1, help="runs per row, seeds 0..N-1 (default 1)")
    p.add_argument("--parallelism", type=int, default=8, help="rows in flight at once (default 8)")
    p.add_argument("--model", help="override the version's model: offline[:...] | openai:<m> | orq:<m>")
    p.add_argument("--judge", default="offline", help="policy judge: offline | openai:<m> | orq:<m>")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per run before it fails as 'timeout'")
    p.add_argument("--max-retries", type=int, default=2, help="model-provider retries on 429/5xx")
    p.add_argument("--transport", choices=["memory", "stdio"], default="memory", help="how to reach the MCP server")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH), help="bars file (default evals/thresholds.toml)")
    p.add_argument("--out", default=str(cli.REPO / "results"), help="results directory")
    p.add_argument("--no-upload", action="store_true", help="do not upload to orq.ai even if ORQ_API_KEY is set")
    p.add_argument("--quiet", action="store_true", help="skip evaluatorq's own progress and table")
    p.add_argument("--cache", nargs="?", const=str(cli.REPO / ".cache" / "model-calls.sqlite"), metavar="PATH",
                   help="store model calls on disk (LangChain cache); reruns of unchanged calls cost nothing")
    p.add_argument("--resume", metavar="RESULTS", help="finish an interrupted run: only the missing (row, trial) pairs")
    p.add_argument("--redact-results", action="store_true", help="mask emails and phone numbers in the results file")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="with --baseline: also exit 1 when a scorer is significantly worse (McNemar p<0.05)")
    p.add_argument("--report", metavar="PATH.html", help="write a self-contained HTML report")
    p.add_argument("--judge-timeout", type=float, default=60.0, help="seconds before a judge verdict fails")
    p.add_argument("--workers", type=int, default=1,
                   help="run conversations in N worker processes (CPU-bound fast models; default 1)")
    p.add_argument("--fault", action="append", metavar="KIND[:ARG]",
                   help="inject a fault to test the harness (see evals/faults.py); repeatable")
    return p


def check_args(a: argparse.Namespace) -> None:
    for name, low in (("trials", 1), ("parallelism", 1), ("max_retries", 0), ("workers", 1)):
        if getattr(a, name) < low:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least {low}")
    if a.timeout <= 0:
        raise ConfigError("--timeout must be positive")
    if a.fail_on_regression and not a.baseline and not a.resume:
        raise ConfigError("--fail-on-regression needs --baseline VERSION")
    if a.model:
        parse_spec(a.model)


def read_rows(a: argparse.Namespace) -> tuple[list[Row], str, str]:
    """Rows, where they came from, and a sha256 of what was read."""
    if a.dataset_id:
        rows = fetch_orq_rows(a.dataset_id)
        digest = hashlib.sha256("\n".join(r.model_dump_json() for r in rows).encode()).hexdigest()
        return rows, f"orq:{a.dataset_id}", digest
    rows = load_rows(a.dataset)
    return rows, a.dataset, cli.sha256_file(a.dataset)


def fetch_orq_rows(dataset_id: str) -> list[Row]:
    """An orq.ai dataset through evaluatorq's DatasetIdInput, validated before any agent runs."""
    if not os.environ.get("ORQ_API_KEY"):
        raise ConfigError("--dataset-id needs ORQ_API_KEY (or use --dataset PATH)")
    from evaluatorq import DatasetIdInput
    from evaluatorq.fetch_data import fetch_dataset_batches, setup_orq_client

    source = DatasetIdInput(dataset_id=dataset_id)

    async def fetch():
        client = setup_orq_client(os.environ["ORQ_API_KEY"])
        points = []
        async for batch in fetch_dataset_batches(client, source.dataset_id, include_messages=source.include_messages):
            points += batch.datapoints
        return points

    try:
        points = asyncio.run(fetch())
    except Exception as exc:
        raise ConfigError(f"orq.ai dataset {dataset_id}: {type(exc).__name__}: {exc}") from exc
    return rows_from_datapoints(points, dataset_id)


def new_record(a, versions, rows, source, digest, thresholds, argv) -> Record:
    spec = load_version(a.version)
    meta = Meta(version=a.version, version_description=spec.description, baseline=a.baseline,
                model=a.model or spec.model, judge=a.judge, dataset=source, dataset_sha256=digest,
                git_commit=cli.git_commit(), trials=a.trials, seeds=list(range(a.trials)),
                parallelism=a.parallelism, timeout=a.timeout, thresholds=thresholds.bars(),
                argv=argv, started=datetime.now(UTC).isoformat(timespec="seconds"),
                selection={"only": a.only, "tags": a.tags, "limit": a.limit})
    return Record(meta=meta, rows=[r.model_dump(mode="json", exclude_unset=True) for r in rows])


def summarise_record(record: Record, bars: dict[str, float]) -> dict:
    rows = record.row_by_id()
    versions = record.meta.versions
    return {v: summarise(record.runs_for(v), rows, bars, record.meta.trials) for v in versions}


def execute(record: Record, pairs: list[tuple[Row, int]], settings: Settings, path: Path) -> bool:
    """Run the pairs into the record, checkpointing to path as runs finish."""
    versions = record.meta.versions
    last_save = [time.monotonic()]

    def on_runs(runs: list[RunResult]) -> None:
        record.runs.extend(runs)
        if time.monotonic() - last_save[0] > CHECKPOINT_EVERY_S:
            save_record(record, path)
            last_save[0] = time.monotonic()

    evaluators = make_evaluators(settings.judge, judge_timeout=settings.judge_timeout, faults=settings.faults)
    plan = Plan(pairs, hints=duration_hints(path.parent, record.meta.version))
    return asyncio.run(run_plan(f"northwind-{record.meta.version}", versions, plan, evaluators, settings, on_runs))


def add_judge_correction(record: Record) -> str | None:
    """policy_judge reported twice: raw, and bias-corrected with the stored calibration."""
    from evals.judge_correction import corrected, judge_warning, load_calibration

    cal = load_calibration()
    warning = judge_warning(record.meta.judge, cal)
    if cal is not None and cal.get("judge") == record.meta.judge:
        for summary in record.summary.values():
            s = summary.get("scorers", {}).get("policy_judge")
            if s and s["n"]:
                s["corrected"] = corrected(s["passed"], s["n"], cal)
    return warning


def finish(record: Record, path: Path, bars: dict[str, float], completed: bool, started: float, *,
           fail_on_regression: bool = False, report: str | None = None) -> int:
    from evals.compare import compare, print_comparison, regressions

    record.meta.elapsed_s = round(record.meta.elapsed_s + time.perf_counter() - started, 3)
    record.meta.complete = completed
    record.meta.interrupted = not completed
    record.runs.sort(key=lambda r: (r.version != record.meta.version, r.row_id, r.trial))
    record.summary = summarise_record(record, bars)
    save_record(record, path)
    cand = record.summary[record.meta.version]
    if not completed:
        console.print(f"[yellow]interrupted[/]: {len(record.runs)} runs kept in {path} "
                      f"(complete it with --resume {path})")
        return cli.EXIT_UNJUDGED
    warning = add_judge_correction(record)
    print_summary(cand, record.meta.version)
    if warning:
        console.print(f"[yellow]warning:[/] {warning}")
    reasons = list(cand["verdict"]["reasons"])
    if record.meta.baseline:
        print_summary(record.summary[record.meta.baseline], record.meta.baseline)
        record.comparison = compare(record.runs_for(record.meta.baseline), record.runs_for(record.meta.version),
                                    SCORER_NAMES, baseline=record.meta.baseline, candidate=record.meta.version)
        print_comparison(record.comparison)
        if fail_on_regression:
            reasons += regressions(record.comparison)
    if cand["runs"] == 0:
        code, line = cli.EXIT_UNJUDGED, "no runs: nothing to judge"
    elif not reasons:
        code, line = cli.EXIT_PASS, "PASS: every scorer at or above its bar" + (
            ", and none significantly worse than " + record.meta.baseline if fail_on_regression and
            record.meta.baseline else "")
    else:
        code, line = cli.EXIT_FAIL, "FAIL: " + "; ".join(reasons)
    record.summary["verdict"] = {"exit_code": code, "line": line, "reasons": reasons}
    save_record(record, path)
    append_step_summary(markdown(cand, record.meta.version, line))
    console.print(f"[bold]{'[green]' if code == 0 else '[red]'}{line}[/][/]", markup=True)
    if report:
        from evals.report import write_report

        console.print(f"report: {write_report(record, report)}")
    console.print(f"results: {path}   elapsed: {record.meta.elapsed_s:.2f} s")
    return code


@contextlib.contextmanager
def server_fault_env(value: str | None):
    """NORTHWIND_FAULT for the stdio server child, for this run only."""
    old = os.environ.get("NORTHWIND_FAULT")
    if value:
        os.environ["NORTHWIND_FAULT"] = value
    try:
        yield
    finally:
        if old is None:
            os.environ.pop("NORTHWIND_FAULT", None)
        else:
            os.environ["NORTHWIND_FAULT"] = old


def enable_cache(path: str | None) -> object | None:
    if not path:
        return None
    from app.refund_agent.cache import enable_cache as enable

    return enable(path)


def cache_line(st: dict) -> str:
    return f"model calls: {st['model_calls_made']} made, {st['served_from_cache']} served from cache"


def resume(a: argparse.Namespace, argv: list[str], started: float) -> int:
    """Run only the (row, trial) pairs an interrupted results file lacks, with its settings."""
    path = Path(a.resume)
    record = load_record(path)
    m = record.meta
    if m.complete:
        console.print(f"{path} is already complete; nothing to resume")
    versions = m.versions
    rows = [Row.model_validate(r) for r in record.rows]
    have = {}
    for r in record.runs:
        have.setdefault((r.row_id, r.trial), set()).add(r.version)
    pairs = [(row, t) for row in rows for t in range(m.trials) if have.get((row.id, t), set()) < set(versions)]
    redo = {(row.id, t) for row, t in pairs}
    record.runs = [r for r in record.runs if (r.row_id, r.trial) not in redo]  # drop half-done pairs
    settings = Settings(model=None if m.model == load_version(m.version).model else m.model, judge=m.judge,
                        trials=m.trials, parallelism=m.parallelism, timeout=m.timeout or 120.0,
                        transport=getattr(m, "transport", "memory"), upload=not a.no_upload, print_table=not a.quiet)
    console.print(f"resuming {path}: {len(pairs)} of {len(rows) * m.trials} (row, trial) pairs to run")
    cache = enable_cache(a.cache)
    completed = execute(record, pairs, settings, path) if pairs else True
    if cache is not None:
        record.meta.cache = cache.stats()
        console.print(cache_line(cache.stats()))
    record.meta.resumed = [*getattr(m, "resumed", []), argv]
    return finish(record, path, m.thresholds or load_thresholds(a.thresholds).bars(), completed, started,
                  fail_on_regression=a.fail_on_regression, report=a.report)


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    started = time.perf_counter()
    argv = sys.argv[1:] if argv is None else argv
    a = parser().parse_args(argv)
    check_args(a)
    if a.resume:
        return resume(a, argv, started)
    versions = [a.version] + ([a.baseline] if a.baseline else [])
    for v in versions:
        load_version(v)
    thresholds = load_thresholds(a.thresholds)
    rows, source, digest = read_rows(a)
    rows = select(rows, a.only, a.tags, a.limit)
    faults = parse_faults(a.fault)
    if server_fault(faults):
        a.transport = "stdio"  # server faults need a real server process
    settings = Settings(model=a.model, judge=a.judge, trials=a.trials, parallelism=a.parallelism,
                        timeout=a.timeout, transport=a.transport, max_retries=a.max_retries,
                        upload=not a.no_upload, print_table=not a.quiet, judge_timeout=a.judge_timeout,
                        faults=faults, workers=a.workers, cache_path=a.cache if a.workers > 1 else None)
    make_evaluators(a.judge, faults=faults)  # bad judge or fault specs are argument errors, before any agent runs
    record = new_record(a, versions, rows, source, digest, thresholds, argv)
    record.meta.redacted = a.redact_results
    record.meta.transport = a.transport
    record.meta.faults = a.fault or []
    record.meta.workers = a.workers
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    name = f"{a.version}-vs-{a.baseline}" if a.baseline else a.version
    path = Path(a.out) / f"{name}-{stamp}.json"
    pairs = [(row, trial) for row in rows for trial in range(a.trials)]
    cache = enable_cache(a.cache) if a.workers == 1 else None
    with server_fault_env(server_fault(faults)):
        completed = execute(record, pairs, settings, path)
    stats = cache.stats() if cache is not None else settings.cache_stats
    if a.cache and stats is not None:
        record.meta.cache = stats
        console.print(cache_line(stats))
    return finish(record, path, thresholds.bars(), completed, started,
                  fail_on_regression=a.fail_on_regression, report=a.report)


if __name__ == "__main__":
    sys.exit(main())
