"""Run rows x trials through one or two targets with evaluatorq and collect the graded
runs. The three layers stay separate: rows come in (any RowSource), jobs call a Target
(turngate/jobs/target.py) and return its Turn, the evaluators score the Turn. Nothing here knows
which agent it runs."""
from __future__ import annotations

import asyncio
import signal
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pydantic import ValidationError

from turngate.core.faults import job_fault
from turngate.core.scrubbing import scrub, secret_values
from turngate.core.turn import Turn
from turngate.jobs.executors import is_budget_stop, open_executor, wants_executor
from turngate.jobs.target import model_of, name_of, target_inputs, version_of
from turngate.record.results import RunResult, ScorerVerdict
from turngate.sources.dataset import Row, row_to_datapoint

if TYPE_CHECKING:  # evaluatorq costs ~1.5 s to import: only when a run starts
    from evaluatorq import DataPoint


@dataclass
class Settings:
    model: str | None = None  # None: each version's own default model
    judge: str | None = None  # built only when the bars name a judge scorer
    trials: int = 1
    seeds: list[int] | None = None  # which seeds to run (a run's trial number is its seed); None: 0..trials-1
    parallelism: int = 8
    timeout: float = 120.0
    transport: str = "memory"
    max_retries: int = 8  # provider retries (turngate.jobs.model_calls.DEFAULT_MAX_RETRIES)
    upload: bool = True  # with ORQ_API_KEY: the results as an orq Experiment, after the verdict
    print_table: bool = False  # evaluatorq's own table: off unless asked for
    judge_timeout: float = 60.0
    faults: list = field(default_factory=list)  # turngate.core.faults.Fault, for testing the harness
    fault_specs: list[str] = field(default_factory=list)  # the --fault strings, for the record
    workers: int = 1  # >1: conversations run in that many worker processes (turngate/jobs/workers.py)
    executor: str = "local"  # local: this process, or --workers processes; ray: Ray workers (turngate/jobs/executors.py)
    cache_path: str | None = None  # with workers: each worker opens the on-disk model cache
    cache_stats: dict | None = None  # filled by run_plan when workers served from the cache
    confirm: bool = True  # stage 2: rerun flagged rows on fresh seeds (turngate/verdict/confirm.py)
    confirm_k: int | None = None  # reruns per flagged row; None: chosen per row by the design
    rerun_budget: float | None = None  # GatePolicy.rerun_budget (--rerun-budget); None: the policy's default
    pool: object | None = None  # an executor to reuse across runs (turngate/jobs/executors.py); else run_plan makes one


@dataclass
class Plan:
    """The (row, trial) pairs to run; evaluatorq sees one datapoint per pair.

    Pairs start longest first (LPT scheduling): a long conversation started last would set
    the wall time alone. "Long" is the number of model calls the row took in the newest
    stored results (`hints`), else a guess from its number of user turns."""
    pairs: list[tuple[Row, int]]
    hints: dict[str, float] = field(default_factory=dict)
    points: list[DataPoint] = field(default_factory=list)
    by_point: dict[int, tuple[Row, int]] = field(default_factory=dict)
    stop: Callable[[], None] | None = None  # run_plan's: stop the plan as Ctrl-C does

    def __post_init__(self):
        self.pairs = sorted(self.pairs, key=lambda p: -self.hints.get(p[0].id, 3.0 * len(p[0].user_turns())))
        for row, trial in self.pairs:
            point = row_to_datapoint(row)
            self.points.append(point)
            self.by_point[id(point)] = (row, trial)


def duration_hints(results_dir: Path, version: str) -> dict[str, float]:
    """Model calls per row in the newest complete results file of this version (cheap to read
    compared with a run; no file, no hints)."""
    import json

    for path in sorted(results_dir.glob(f"{version}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)[:3]:
        try:
            data = json.loads(path.read_text())
            if not data["meta"].get("complete"):
                continue
            calls: dict[str, list[int]] = {}
            for run in data["runs"]:
                calls.setdefault(run["row_id"], []).append((run["turn"].get("usage") or {}).get("llm_calls", 0))
            return {rid: max(v) for rid, v in calls.items()}
        except (OSError, ValueError, KeyError, TypeError):
            continue
    return {}


def failed_turn(version: str, model: str, seed: int, error: str) -> Turn:
    return Turn(version=version, model=model, seed=seed, error=scrub(error))


async def _faulty_agent(kind: str):
    if kind == "agent-raises":
        raise RuntimeError("injected fault: the agent raised")
    await asyncio.Event().wait()  # run-hangs: never returns


def make_job(agent, plan: Plan, settings: Settings, pool=None):
    """An evaluatorq job calling one target (an turngate.gate.run.AgentSpec) on each (row, trial)."""
    from evaluatorq import job

    target = agent.target
    version, model = version_of(target), model_of(target)

    @job(name_of(target))
    async def run_agent(point: DataPoint, index: int) -> dict:
        row, trial = plan.by_point[id(point)]
        fault = job_fault(settings.faults, row.id)
        if fault == "not-a-turn":
            return {"text": "injected fault: this job output is not a Turn"}
        try:
            # A target given the timeout (a factory that takes it) enforces it itself and keeps the
            # partial Turn; the outer guard catches a run that ignores it or cancellation.
            inputs = target_inputs(row)
            call = (_faulty_agent(fault) if fault else
                    pool.run_target(agent.spec, agent.options, inputs, trial) if pool is not None else
                    target(inputs, trial))
            turn = await asyncio.wait_for(call, settings.timeout + 5)
            turn = turn.model_dump(mode="json") if isinstance(turn, Turn) else turn
        except TimeoutError:
            return failed_turn(version, model, trial, "timeout").model_dump(mode="json")
        except Exception as exc:  # never let evaluatorq skip the evaluators: a crash is a failed Turn
            if is_budget_stop(str(exc)):
                return await _stopped_by_budget(plan)
            return failed_turn(version, model, trial, f"{type(exc).__name__}: {exc}").model_dump(mode="json")
        if isinstance(turn, dict) and is_budget_stop(turn.get("error")):
            return await _stopped_by_budget(plan)
        return turn

    return run_agent


async def _stopped_by_budget(plan: Plan):
    """--max-model-calls refused this run a call: it is not a result. The plan stops as on
    Ctrl-C (what finished is kept, the record is resumable) and this run never reaches it."""
    from turngate.jobs import model_calls
    model_calls.budget().stopped = True
    if plan.stop is not None:
        plan.stop()
    await asyncio.Event().wait()  # cancelled by the stop


def _stored_turn(jr, version: str, trial: int) -> Turn:
    """The job's Turn as stored; anything else becomes a failed Turn saying what came back."""
    if jr.error:
        return failed_turn(version, "unknown", trial, f"job failed: {jr.error}")
    try:
        return Turn.model_validate(jr.output)
    except ValidationError as exc:
        got = type(jr.output).__name__
        return failed_turn(version, "unknown", trial, f"job output is not a Turn ({got}: {exc.error_count()} errors)")


def collect(result, plan: Plan, scorer_names: list[str], jobs: dict[str, str]) -> list[RunResult]:
    """evaluatorq's DataPointResult -> our RunResults, failing closed on anything missing.
    `jobs` maps each job name to the version label its runs are stored under."""
    row, trial = plan.by_point.get(id(result.data_point), (None, None))
    if row is None:  # datapoints are matched by identity; evaluatorq passes ours through unchanged
        raise RuntimeError("evaluatorq returned a datapoint the plan does not know")
    runs = []
    secrets = secret_values()
    for jr in result.job_results or []:
        version = jobs.get(jr.job_name, jr.job_name)
        turn = _stored_turn(jr, version, trial)
        scores = {s.evaluator_name: s for s in jr.evaluator_scores or []}
        verdicts = {}
        for name in scorer_names:
            s = scores.get(name)
            if s is None:
                why = f"scorer did not run ({jr.error})" if jr.error else "scorer did not run"
                verdicts[name] = ScorerVerdict(passed=False, explanation=scrub(why, secrets))
            elif s.error:
                verdicts[name] = ScorerVerdict(passed=False, explanation=scrub(f"scorer raised: {s.error}", secrets))
            else:
                verdicts[name] = ScorerVerdict(passed=s.score.pass_, explanation=scrub(s.score.explanation or "", secrets))
        runs.append(RunResult(row_id=row.id, trial=trial, seed=trial, version=version, job=jr.job_name,
                              turn=turn, verdicts=verdicts))
    if result.error:  # the datapoint failed before any job ran: every version fails it
        for job_name, version in jobs.items():
            runs.append(RunResult(row_id=row.id, trial=trial, seed=trial, version=version, job=job_name,
                                  turn=failed_turn(version, "unknown", trial, f"row failed: {result.error}"),
                                  verdicts={n: ScorerVerdict(passed=False, explanation=f"row failed: {result.error}")
                                            for n in scorer_names}))
    return runs


async def run_plan(name: str, agents: list, plan: Plan, evaluators: list[dict], settings: Settings,
                   on_runs: Callable[[list[RunResult]], None]) -> bool:
    """Run the plan through each agent (turngate.gate.run.AgentSpec: candidate first); call on_runs as
    each datapoint completes. Returns False when interrupted (Ctrl-C / SIGTERM): what finished
    has been handed to on_runs, the rest has not."""
    from evaluatorq import evaluatorq

    names = [e["name"] for e in evaluators]
    jobs = {name_of(a.target): version_of(a.target) for a in agents}
    if len(jobs) != len(agents):
        raise ValueError(f"two targets share a job name: {[name_of(a.target) for a in agents]}")
    pool, own_pool = settings.pool, False
    if pool is None and wants_executor(settings):
        pool, own_pool = open_executor(settings, agents), True
    task = asyncio.ensure_future(evaluatorq(
        name, data=plan.points, jobs=[make_job(a, plan, settings, pool) for a in agents], evaluators=evaluators,
        datapoint_parallelism=settings.parallelism, llm_parallelism=-1, print_results=settings.print_table,
        description=f"{len(plan.pairs)} runs x {len(agents)} version(s)",
        on_datapoint_complete=lambda r: on_runs(collect(r, plan, names, jobs)),
        _send_results=False))  # the experiment is uploaded after the verdict (turngate/gate/orq_experiment.py)
    loop = asyncio.get_running_loop()
    interrupted = False

    def stop(*_):
        nonlocal interrupted
        interrupted = True
        task.cancel()

    plan.stop = stop
    # the handlers in place before (the command's: KeyboardInterrupt, exit 2), put back afterwards:
    # remove_signal_handler alone would leave SIGTERM at the OS default (killed, exit 143)
    before = {}
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            previous = signal.getsignal(sig)
            loop.add_signal_handler(sig, stop)
            before[sig] = previous
        except (NotImplementedError, RuntimeError, ValueError):
            pass
    try:
        await task
    except asyncio.CancelledError:
        if not interrupted:
            raise
    finally:
        for sig, previous in before.items():
            try:
                loop.remove_signal_handler(sig)
                if previous is not None:
                    signal.signal(sig, previous)
            except (NotImplementedError, RuntimeError, ValueError):
                pass
        if pool is not None:  # the workers' provider calls count in this gate's record
            from turngate.jobs import model_calls
            try:
                model_calls.absorb(pool.take_call_stats())
            finally:
                if own_pool:
                    settings.cache_stats = pool.cache_stats()
                    pool.close()
    return not interrupted
