"""The baseline and every mutant through the gate, on the same rows, seeds,
bars and reference (turngate.run_gate_async: the same checks, run loop, confirmation reruns and
verdict as `evals gate`), within a model-call budget.

The budget counts agent model calls from the runs themselves (Turn.usage: the offline model's
too). It is shared out up front, in mutant order: after the baseline, as many mutants run as its
own cost (its gate, reruns and temperature-0 run) fits in what is left, the rest are "not run";
a provider's calls are also hard-capped by turngate.jobs.model_calls, so a mutant that costs more
than the baseline stops cleanly (reported as an error, not as killed).

Behaviour probe: when the target has a temperature other than 0, whether a mutant changed any row's
behaviour is decided on a second run of the baseline and of each mutant the gate did not kill, at
temperature 0 on the same rows and seeds (bars only, no reruns): at 0 a run depends on the prompt
only through what the model makes of it. A mutant that changes the temperature is compared on its
gate's runs.
"""
from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from turngate.core.errors import ConfigError
from turngate.mutate.classify import EQUIVALENT, ERROR, NOT_RUN, Classified, classify
from turngate.mutate.operators import Mutant
from turngate.mutate.protocol import understanding_of
from turngate.record.results import Record


@dataclass(frozen=True)
class GateSettings:
    """What every gate of one mutation run shares: the gate's own arguments."""
    dataset: Any                      # a JSONL path (or rows, as run_gate takes them)
    thresholds: Any                   # a bars file (or {scorer: bar})
    reference: str | bool | None = None  # None: reference.json beside the thresholds, as the gate; False: none
    seeds: tuple[int, ...] = (0,)
    parallelism: int = 8
    judge: str | None = None
    timeout: float = 120.0
    out: str = "results"
    # where the conversations run, as `evals gate --workers N --executor ray`: one executor (and one
    # provider budget) for every gate of the run; a worker rebuilds each mutant from `agent` and
    # `options` (TargetOptions.derive)
    workers: int = 1
    executor: str = "local"
    options: Any = None  # the TargetOptions the target was loaded with (None: TargetOptions())


@dataclass
class Outcome:
    mutant: Mutant
    result: Classified
    calls: int = 0
    runs: int = 0
    results: str | None = None
    seconds: float = 0.0
    probe: str | None = None  # its temperature-0 run's results file, when behaviour was compared there


@dataclass
class Baseline:
    version: str
    line: str
    calls: int
    runs: int
    results: str
    rows: int
    probe: str | None = None  # its temperature-0 run's results file, when behaviour is compared there


@dataclass
class MutationRun:
    agent: str
    version: str
    seeds: list[int]
    settings: GateSettings
    baseline: Baseline
    outcomes: list[Outcome] = field(default_factory=list)
    budget: int | None = None
    spent: int = 0
    base: Any = None  # the target's Mutable as it stood: what each mutant's diff is against


def calls_of(record: Record) -> int:
    return sum(r.turn.usage.llm_calls for r in record.runs)


@dataclass(frozen=True)
class Where:
    """The target as the gate takes it: its spec and options (what a worker rebuilds it from), and
    the executor every gate of the run shares (None: in this process)."""
    agent: str
    options: Any
    pool: Any = None


def _spec(where: Where, target: Any, edited=None, label: str | None = None):
    """The base target, or its mutant `edited` versioned `label`, as a gate's AgentSpec."""
    from dataclasses import replace

    from turngate.gate.run import AgentSpec
    from turngate.mutate.protocol import mutation_of

    if edited is None:
        return AgentSpec(where.agent, where.options, target)
    return AgentSpec(where.agent, replace(where.options, derive=mutation_of(edited, label)),
                     target.mutant(edited, label))


async def _gate(agent: Any, s: GateSettings, where: Where, probe: bool = False):
    from turngate.gate.api import run_gate_async

    return await run_gate_async(agent, rows=s.dataset, thresholds=s.thresholds,
                                reference=False if probe else s.reference,
                                seeds=list(s.seeds), parallelism=s.parallelism, out=s.out, judge=s.judge,
                                timeout=s.timeout, quiet=True, workers=s.workers, executor=s.executor,
                                pool=where.pool)


def equivalent_reason(target: Any, base_text: str, mutant: Mutant) -> str:
    """Why a mutant changed nothing: the model's own reading of the prompt when it offers one."""
    if mutant.line is None:
        return "no row's behaviour depends on this setting on these seeds"
    before = understanding_of(target, base_text)
    if before is None:
        return "no row behaves differently on these seeds (the target does not say what its model reads)"
    if before == understanding_of(target, mutant.edited.instructions):
        return "the model does not act on it: its reading of the prompt is unchanged"
    return "no row exercises it: the model reads the edit, but no row behaves differently"


async def run_mutation(target: Any, agent: str, version: str, mutants: list[Mutant], settings: GateSettings,
                       budget: int | None = None, progress: Callable[[str], None] = lambda line: None,
                       resume: bool = False, jobs: int = 1) -> MutationRun:
    """The baseline's gate, then each mutant's, classified. A baseline that does not pass its own
    gate is a ConfigError: a mutant's failure would mean nothing. Each result is appended to a
    journal in settings.out, named by everything that decides it (journal.py); `resume` reuses it.
    `jobs` mutants' gates run at once in this event loop; their conversations run where
    settings.workers/executor say, on one executor opened for the whole run (one provider budget)."""
    from turngate.jobs import model_calls
    from turngate.jobs.executors import opened
    from turngate.jobs.runner import Settings
    from turngate.jobs.target import TargetOptions

    model_calls.set_budget(budget)  # providers' calls, hard-capped over the whole run
    try:
        options = settings.options or TargetOptions()
        base = Where(agent, options)
        executor = Settings(workers=settings.workers, executor=settings.executor, parallelism=settings.parallelism)
        with opened(executor, [_spec(base, target)]) as shared:  # after set_budget: the workers share it
            where = Where(agent, options, shared.pool)
            return await _run(target, where, version, mutants, settings, budget, progress, resume, jobs)
    finally:
        model_calls.set_budget(None)


async def _baseline(target, version, mutable, settings, where) -> tuple[Baseline, Record, Record | None]:
    base = await _gate(_spec(where, target), settings, where)
    if base.exit_code != 0:
        raise ConfigError(f"baseline {version} does not pass its own gate ({base.verdict.headline}; {base.path}): "
                          "mutation testing needs a passing baseline")
    probe = None
    if mutable.temperature:  # behaviour compared at temperature 0 (see above)
        cold = await _gate(_spec(where, target, mutable.edited(temperature=0.0), f"{version}-t0"), settings, where,
                           True)
        probe = cold.record
    calls = calls_of(base.record) + (calls_of(probe) if probe is not None else 0)
    return (Baseline(version, base.verdict.headline, calls, len(base.record.runs), str(base.path),
                     len(base.record.rows), str(cold.path) if probe is not None else None), base.record, probe)


async def _run(target, where, version, mutants, settings, budget, progress, resume, jobs) -> MutationRun:
    from turngate.mutate import journal

    mutable = target.mutable()
    base_text = mutable.instructions
    started = time.perf_counter()
    agent = where.agent
    path = journal.path_for(settings, agent, version, mutable)
    stored = journal.read(path) if resume else None
    if stored is not None:
        baseline, done = stored
        base_record, probe = journal.records(baseline)
        progress(f"resumed from {path}: the baseline and {len(done)} mutant(s) classified before")
    else:
        baseline, base_record, probe = await _baseline(target, version, mutable, settings, where)
        done = {}
        journal.start(path, baseline)
    calls = baseline.calls
    run = MutationRun(agent, version, list(settings.seeds), settings, baseline, budget=budget, spent=calls,
                      base=mutable)
    progress(f"baseline {version}: {baseline.line} ({baseline.runs} runs, {calls} model calls, "
             f"{time.perf_counter() - started:.1f} s)")
    by_index: dict[int, Outcome] = {}
    todo = []
    for i, mutant in enumerate(mutants):
        if mutant.id in done:
            by_index[i] = journal.outcome(mutant, done[mutant.id])
            run.spent += by_index[i].calls
        else:
            todo.append(i)
    # the budget decides up front, in mutant order: as many gates as fit at the baseline's own cost
    fit = len(todo) if budget is None or calls == 0 else max(0, (budget - run.spent) // calls)
    for i in todo[fit:]:
        by_index[i] = Outcome(mutants[i], Classified(NOT_RUN, reason=f"--max-model-calls {budget}: {run.spent} spent "
                                                                     f"before, {fit} more gate(s) of about {calls} fit"))
    gates = asyncio.Semaphore(jobs)

    async def one(i: int) -> None:
        async with gates:
            started = time.perf_counter()
            outcome = await _one(target, where, version, base_record, base_text, mutants[i], settings, probe,
                                 mutable.temperature)
            outcome.seconds = time.perf_counter() - started
            run.spent += outcome.calls
            by_index[i] = outcome
            journal.add(path, outcome)
            console.quiet = quiet  # no gate runs while this line is printed: one event loop, no await
            progress(f"[{i + 1}/{len(mutants)}] {mutants[i].id}: {outcome.result.status} ({outcome.seconds:.1f} s)")
            console.quiet = True

    from turngate.output.console import console

    quiet, console.quiet = console.quiet, True  # once for all: each gate's own quiet would undo another's
    try:
        await asyncio.gather(*(one(i) for i in todo[:fit]))
    finally:
        console.quiet = quiet
    run.outcomes = [by_index[i] for i in range(len(mutants))]
    return run


async def _one(target, where: Where, version: str, baseline: Record, base_text: str, mutant: Mutant,
               settings: GateSettings, probe: Record | None, base_temperature: float | None = None) -> Outcome:
    from turngate.core.cli_support import user_errors

    label = f"{version}-{mutant.id}"
    try:
        got = await _gate(_spec(where, target, mutant.edited, label), settings, where)
        records = [got.record]
        behaviour_of, probe_path = None, None
        # a mutant of the temperature itself is compared on its own gate's runs: at 0 it would be the baseline
        if probe is not None and mutant.edited.temperature == base_temperature and got.exit_code == 0:
            cold = await _gate(_spec(where, target, mutant.edited.edited(temperature=0.0), f"{label}-t0"), settings,
                               where, True)
            records.append(cold.record)
            behaviour_of, probe_path = (probe, cold.record), str(cold.path)
    except user_errors() as exc:  # a mutant that cannot be built or run: an error, never silently killed
        return Outcome(mutant, Classified(ERROR, reason=str(exc).splitlines()[0]))
    except Exception as exc:  # noqa: BLE001  (the agent's own crash on an edited prompt is a finding)
        return Outcome(mutant, Classified(ERROR, reason=f"{type(exc).__name__}: {exc}".splitlines()[0]))
    result = classify(baseline, got.record, got.verdict, behaviour_of)
    from turngate.jobs import model_calls

    if result.status == ERROR and model_calls.budget().stopped:  # the run's one hard cap, wherever it was hit
        result.reason = f"--max-model-calls {model_calls.budget().limit} spent during its gate ({result.reason})"
    if result.status == EQUIVALENT:
        result.reason = equivalent_reason(target, base_text, mutant)
    return Outcome(mutant, result, sum(map(calls_of, records)), sum(len(r.runs) for r in records), str(got.path),
                   probe=probe_path)
