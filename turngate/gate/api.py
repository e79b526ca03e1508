"""Gate your own agent from Python (a script, a notebook, a pytest test): no argument
parsing, no sys.exit.

    import turngate
    result = turngate.run_gate(bot, rows="rows.jsonl", thresholds="bars.toml")
    assert result.passed, result.verdict.line
    result = await turngate.run_gate_async(bot, rows=[...], thresholds={"tool_use": 1.0})

The same gate as `evals gate`: the same checks before the first agent call
(turngate.gate.run.prepare), the same run loop, the same verdict (turngate.gate.conclude.finish) and the
same results file, which regrade, compare, show and --resume read. Bad input raises
turngate.ConfigError with a one-line message, before any agent call.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.gate.conclude import conclude
from turngate.gate.run import AgentSpec, Prepared, agents_for, confirm_async, execute_async, prepare
from turngate.jobs.runner import Settings
from turngate.jobs.target import (
    TargetOptions,
    _is_async_callable,
    note_built,
    note_code,
    version_file_of,
    version_of,
)
from turngate.record.results import Record, save_record
from turngate.record.summaries import VersionSummary
from turngate.sources.dataset import DatasetError
from turngate.sources.row_sources import JsonlSource, ListSource, RowSource
from turngate.verdict.decide import Verdict
from turngate.verdict.thresholds import Thresholds, load_thresholds

REFERENCE_NAME = "reference.json"  # beside the thresholds file, as `evals gate` looks for it


class GateResult(BaseModel):
    """What a gate run produced: its record (the results file's content), its verdict, and
    where the record is. `passed` is exit code 0; 1 failed, 2 could not be judged."""
    model_config = ConfigDict(frozen=True)

    record: Record
    verdict: Verdict
    path: Path

    @property
    def exit_code(self) -> int:
        return self.verdict.exit_code

    @property
    def passed(self) -> bool:
        return self.verdict.exit_code == 0

    @property
    def summary(self) -> VersionSummary | None:
        """The candidate's per-scorer and per-row numbers, as the tables print them (None: no runs)."""
        return self.record.summary.get(self.record.meta.version)

    def __repr_args__(self):  # a notebook shows the verdict, not every stored Turn
        yield "exit_code", self.exit_code
        yield "line", self.verdict.line
        yield "path", self.path


def run_gate(target: Any, *, rows: Any, thresholds: Any, reference: str | Path | bool | None = None,
             seeds: Iterable[int] | str = (0,), parallelism: int = 8, out: str | Path = "results",
             judge: str | None = None, timeout: float = 120.0, judge_timeout: float = 60.0,
             version: str | None = None, model: str | None = None, only: list[str] | None = None,
             tags: list[str] | None = None, limit: int | None = None, upload: bool = False,
             report: str | Path | None = None, quiet: bool = False, workers: int = 1, executor: str = "local",
             pool: Any = None) -> GateResult:
    """Gate `target` on `rows` against `thresholds`; see run_gate_async for the arguments.
    Inside a running event loop (a notebook cell) it runs on a thread of its own."""
    coro = run_gate_async(target, rows=rows, thresholds=thresholds, reference=reference, seeds=seeds,
                          parallelism=parallelism, out=out, judge=judge, timeout=timeout,
                          judge_timeout=judge_timeout, version=version, model=model, only=only, tags=tags,
                          limit=limit, upload=upload, report=report, quiet=quiet, workers=workers,
                          executor=executor, pool=pool)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:  # asyncio.run cannot nest in the caller's loop
        return pool.submit(asyncio.run, coro).result()


async def run_gate_async(target: Any, *, rows: Any, thresholds: Any, reference: str | Path | bool | None = None,
                         seeds: Iterable[int] | str = (0,), parallelism: int = 8, out: str | Path = "results",
                         judge: str | None = None, timeout: float = 120.0, judge_timeout: float = 60.0,
                         version: str | None = None, model: str | None = None, only: list[str] | None = None,
                         tags: list[str] | None = None, limit: int | None = None, upload: bool = False,
                         report: str | Path | None = None, quiet: bool = False, workers: int = 1,
                         executor: str = "local", pool: Any = None) -> GateResult:
    """Run the gate and decide it.

    target      an async `(inputs, seed) -> Turn`, a @target_factory (given version/model), or
                its import path "package.module:callable"
    rows        a JSONL path, a list of rows (dicts or turngate.Row), or any turngate.RowSource
    thresholds  a bars file (`evals calibrate --write`), or {scorer: bar} for the scorers to run
    reference   the accepted run's per-row counts: None = reference.json beside a thresholds
                file (as the CLI; none for a dict of bars), a path, or False = the bars only
    seeds       the seeds to run each row at (a trial per seed), or "0-4"
    out         the directory the results file goes to (a new file each run)
    quiet       print nothing (the tables and verdict are in the result either way)
    workers, executor   where the conversations run, as `evals gate --workers N --executor ray`
                (the target rebuilt from its import path: a string target or a turngate AgentSpec)
    pool        an executor already open (turngate.jobs.executors.opened), shared by several gates
    """
    started = time.perf_counter()
    try:
        gate, path = _setup(target, rows, thresholds, reference, seeds, parallelism, out, judge, timeout,
                            judge_timeout, version, model, only, tags, limit, upload, report, workers, executor, pool)
    except DatasetError as exc:  # bad rows: the same one line, as the API's one error type
        raise ConfigError(str(exc)) from exc
    from turngate.jobs.executors import opened

    with _quiet(quiet), opened(gate.settings, gate.agents) as settings:  # one executor for both stages
        completed = await execute_async(gate.record, gate.pairs, settings, path, gate.agents, gate.evaluators)
        completed = completed and await confirm_async(gate.record, gate.reference, settings, path, gate.agents,
                                                      gate.evaluators)
        verdict = conclude(gate.record, path, gate.registry, gate.reference, completed, started,
                           report=str(report) if report else None)
        if upload:  # with ORQ_API_KEY: the results as an orq Experiment (turngate/gate/orq_experiment.py)
            from turngate.gate.orq_experiment import upload_async

            await upload_async(path)
    return GateResult(record=gate.record, verdict=verdict, path=path)


def _setup(target, rows, thresholds, reference, seeds, parallelism, out, judge, timeout, judge_timeout, version,
           model, only, tags, limit, upload, report, workers=1, executor="local", pool=None) -> tuple[Prepared, Path]:
    """Every check before the first agent call, then the (empty, incomplete) results file."""
    from turngate.jobs.executors import check_executor

    for name, value in (("parallelism", parallelism), ("workers", workers)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ConfigError(f"{name} must be a whole number of at least 1, got {value!r}")
    check_executor(executor)
    cli.check_positive(timeout, "timeout")
    cli.check_positive(judge_timeout, "judge_timeout")
    cli.check_keys(model, "model")
    cli.check_keys(judge, "judge")
    cli.check_out_dir(out, "out")
    bars, bars_path = _thresholds(thresholds)
    if report:
        cli.check_new_file(report, "report", inputs=[rows if isinstance(rows, (str, Path)) else None, bars_path])
    if (workers > 1 or executor != "local" or pool is not None) and not isinstance(target, (str, AgentSpec)):
        raise ConfigError("workers/executor: a worker rebuilds the target from its import path: give "
                          "'package.module:callable' (or a turngate.gate.run.AgentSpec), not the object")
    options = TargetOptions(version=version, model=model, timeout=timeout)
    agent = _agent(target, options)
    chosen = _seeds(seeds)
    settings = Settings(model=model, judge=judge, trials=len(chosen), seeds=chosen, parallelism=parallelism,
                        timeout=timeout, upload=upload, judge_timeout=judge_timeout, workers=workers,
                        executor=executor, pool=pool)
    reference_path = _reference_path(reference, bars_path)
    argv = [f"turngate.run_gate target={agent.spec}", f"rows={_label(rows)}", f"thresholds={bars_path or 'dict'}"]
    gate = prepare([agent], _source(rows), settings, bars, argv, reference_path=reference_path,
                   explicit_reference=isinstance(reference, (str, Path)), thresholds_path=bars_path,
                   selection={"only": only, "tags": tags, "limit": limit})
    path = cli.new_results_path(out, gate.record.meta.version)  # a new file, never another run's
    save_record(gate.record, path)  # from the start: `regression.py --resume` can finish it
    return gate, path


def _agent(target: Any, options: TargetOptions) -> AgentSpec:
    if isinstance(target, AgentSpec):
        if target.target is not None:  # built by the caller: noted as load_target notes it, for the plan
            note_built(target.spec, version_of(target.target), version_file_of(target.target))
        return target.load()
    if isinstance(target, str):
        return agents_for(target, options)[0]
    # a callable given in Python: named by where it is defined (the record's `agent`, for --resume)
    spec = f"{getattr(target, '__module__', None) or '?'}:{getattr(target, '__qualname__', type(target).__name__)}"
    obj = target
    if getattr(obj, "is_target_factory", False):
        obj = obj(options)
    elif options.version is not None:
        raise ConfigError(f"target {spec}: version= needs an agent factory (a @target_factory callable)")
    if not _is_async_callable(obj):
        raise ConfigError(f"target {spec}: not an async callable (inputs, seed) -> Turn (got {type(obj).__name__})")
    note_built(spec, version_of(obj), version_file_of(obj))  # as load_target notes them, for the plan
    note_code(spec)
    return AgentSpec(spec, options, obj)


def _source(rows: Any) -> RowSource:
    if isinstance(rows, (str, Path)):
        if not Path(rows).is_file():
            raise ConfigError(f"rows {rows}: no such dataset file")
        return JsonlSource(rows)
    if isinstance(rows, RowSource):
        return rows
    if isinstance(rows, (list, tuple)):
        return ListSource(list(rows))
    raise ConfigError(f"rows: expected a JSONL path, a list of rows or a RowSource, got {type(rows).__name__}")


def _label(rows: Any) -> str:
    return str(rows) if isinstance(rows, (str, Path)) else type(rows).__name__


def _thresholds(thresholds: Any) -> tuple[Thresholds, str | None]:
    if isinstance(thresholds, Thresholds):
        return thresholds, None
    if isinstance(thresholds, (str, Path)):
        return load_thresholds(thresholds), str(thresholds)
    if isinstance(thresholds, Mapping):
        try:  # the scorers named are the scorers that run, as a bars file's provenance.scorers says
            return Thresholds.model_validate({"provenance": {"scorers": list(thresholds)},
                                              "scorers": {name: {"bar": bar} for name, bar in thresholds.items()}}), None
        except ValidationError as exc:
            err = exc.errors()[0]
            raise ConfigError(f"thresholds: {'.'.join(map(str, err['loc']))}: {err['msg']}") from None
    raise ConfigError(f"thresholds: expected a bars file or {{scorer: bar}}, got {type(thresholds).__name__}")


def _reference_path(reference: Any, bars_path: str | None) -> str | None:
    if reference is False:
        return None
    if isinstance(reference, (str, Path)):
        return str(reference)
    if reference is not None:
        raise ConfigError(f"reference: expected a path, None or False, got {reference!r}")
    if bars_path is None:  # bars given in Python: no accepted run beside them
        return None
    beside = Path(bars_path).with_name(REFERENCE_NAME)
    if not beside.is_file():
        raise ConfigError(f"{beside}: no reference file beside the thresholds (run {cli.command('calibrate')} --write, "
                          "or pass reference=False to judge by the bars only)")
    return str(beside)


def _seeds(seeds: Iterable[int] | str) -> list[int]:
    if isinstance(seeds, str):
        from turngate.core.seeds import parse_seeds

        return parse_seeds(seeds)
    try:
        chosen = list(seeds)
    except TypeError:
        raise ConfigError(f"seeds: expected a list of seeds or '0-4', got {seeds!r}") from None
    if not chosen or any(isinstance(s, bool) or not isinstance(s, int) or s < 0 for s in chosen):
        raise ConfigError(f"seeds: expected one or more non-negative whole numbers, got {seeds!r}")
    if len(set(chosen)) != len(chosen):
        raise ConfigError(f"seeds: {chosen} repeats a seed (a run's trial number is its seed)")
    return sorted(chosen)


@contextlib.contextmanager
def _quiet(on: bool):
    from turngate.output.console import console

    old = console.quiet
    console.quiet = on or old
    try:
        yield
    finally:
        console.quiet = old


__all__ = ["GateResult", "run_gate", "run_gate_async"]
