"""Running a gate as a library: targets, rows and settings in, a results record out.
The commands (regression, calibrate, scripts/bench) and turngate.run_gate (turngate/gate/api.py) call
these; none imports another command. `prepare` makes every check a gate makes before its
first agent call; regression.py and run_gate share it.

    agents = agents_for("examples.faq_bot:target", TargetOptions())      # + baseline for a factory
    loaded = load_rows_for(JsonlSource("examples/faq_bot/dataset.jsonl"), agents[0])
    settings = Settings(trials=1, upload=False)
    record = new_record(agents, loaded, loaded.rows, settings, bars, argv)
    done = execute(record, [(row, 0) for row in loaded.rows], settings, path, agents, evaluators)
    # then turngate.gate.conclude.finish(...) decides and prints, as regression.py does
"""
from __future__ import annotations

import asyncio
import time
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from turngate.core.cli_support import git_commit
from turngate.core.errors import ConfigError
from turngate.core.project import project
from turngate.jobs.runner import Plan, Settings, duration_hints, run_plan
from turngate.jobs.target import (
    DEFAULT_AGENT,
    Target,
    TargetOptions,
    load_target,
    model_of,
    name_of,
    tool_names_of,
    version_of,
)
from turngate.record.results import Meta, Record, RunResult
from turngate.record.summaries import ConfirmationSummary, VersionSummary
from turngate.sources.dataset import Row
from turngate.sources.row_sources import Loaded, RowSource
from turngate.verdict.summary import summarise

DEFAULT_DATASET = project().path("dataset", "dataset.jsonl")  # [tool.turngate] dataset, else ./dataset.jsonl
CHECKPOINT_EVERY_S = 5.0


@dataclass
class AgentSpec:
    """A target and how to rebuild it (in a worker process, or on --resume)."""
    spec: str
    options: TargetOptions
    target: Target | None = None

    def load(self) -> AgentSpec:
        if self.target is None:
            self.target = load_target(self.spec, self.options)
        return self

    @property
    def version(self) -> str:
        return version_of(self.load().target)


def agents_for(spec: str, options: TargetOptions, baseline: str | None = None) -> list[AgentSpec]:
    """The candidate, and the same factory at the baseline version if one is asked for."""
    agents = [AgentSpec(spec, options).load()]
    if baseline is not None:
        agents.append(AgentSpec(spec, replace(options, version=baseline)).load())
    return agents


def load_rows_for(source: RowSource, agent: AgentSpec) -> Loaded:
    """Rows validated against what the agent can do (its tool list and its own row check)."""
    target = agent.load().target
    return source.load(tool_names=tool_names_of(target), check_row=getattr(target, "validate_row", None))


def new_record(agents: list[AgentSpec], loaded: Loaded, rows: list[Row], settings: Settings,
               bars: dict[str, Any], argv: list[str], *, thresholds_path: str | None = None,
               selection: dict[str, Any] | None = None, redacted: bool = False) -> Record:
    """An empty record of these rows of `loaded` (selection: how they were chosen; None: all of
    them, or these by id), judged by today's rule (its reference set by prepare)."""
    from turngate.record.results import dataset_index
    from turngate.verdict.rule import judged_with

    cand = agents[0].load()
    if selection is None and [r.id for r in rows] != [r.id for r in loaded.rows]:
        selection = {"only": [r.id for r in rows]}
    target = cand.target
    seeds = list(settings.seeds) if settings.seeds is not None else list(range(settings.trials))
    from turngate.scoring.scorers import judge_scorers

    judged = bool(set(bars) & judge_scorers())  # a judge named but never built is not the run's judge
    meta = Meta(version=version_of(target), version_description=getattr(target, "description", "") or "",
                baseline=agents[1].version if len(agents) > 1 else None, model=model_of(target),
                judge=settings.judge if judged else None, dataset=loaded.name, dataset_sha256=loaded.sha256,
                git_commit=git_commit(), trials=len(seeds), seeds=seeds,
                parallelism=settings.parallelism, timeout=settings.timeout, thresholds=bars, argv=argv,
                started=datetime.now(UTC).isoformat(timespec="seconds"), agent=cand.spec,
                agent_version=cand.options.version, model_override=cand.options.model, job=name_of(target),
                transport=settings.transport, max_retries=settings.max_retries,
                judge_timeout=settings.judge_timeout, workers=settings.workers,
                faults=list(settings.fault_specs), thresholds_path=thresholds_path, selection=selection or {},
                confirm={"enabled": settings.confirm, "k": settings.confirm_k}, redacted=redacted,
                judged_with=judged_with(policy=policy_for(settings)),
                dataset_rows=dataset_index([r.model_dump(mode="json", exclude_unset=True) for r in loaded.rows],
                                           redacted))
    return Record(meta=meta, rows=[r.model_dump(mode="json", exclude_unset=True) for r in rows])


def policy_for(settings: Settings) -> Any:
    """The GatePolicy a gate run with these settings is judged by (the default, or its --rerun-budget)."""
    from dataclasses import replace as with_knob

    from turngate.verdict.policy import DEFAULT

    return DEFAULT if settings.rerun_budget is None else with_knob(DEFAULT, rerun_budget=settings.rerun_budget)


def agents_from_meta(meta: Meta) -> list[AgentSpec]:
    """The agents a stored run used, rebuilt with its settings (for --resume)."""
    if meta.agent is None:
        raise ConfigError("the record names no agent (an early record): name the agent to run it with")
    options = TargetOptions(version=meta.agent_version, model=meta.model_override, transport=meta.transport,
                            max_retries=meta.max_retries, timeout=meta.timeout)
    return agents_for(meta.agent, options, meta.baseline)


def summarise_record(record: Record, bars: dict[str, float]) -> dict[str, VersionSummary]:
    """Each version's summary of its planned runs; the candidate's also holds its confirmation
    reruns' numbers (.confirmation) when the gate made them."""
    rows = record.row_by_id()
    out = {v: summarise(record.runs_for(v), rows, bars, record.meta.trials) for v in record.meta.versions}
    conf = record.meta.confirm
    cand = out[record.meta.version]
    if conf and conf.get("enabled") and not conf.get("skipped"):
        reruns = record.runs_for(record.meta.version, "confirm")
        part = summarise(reruns, rows, bars, record.meta.trials)
        cand.confirmation = ConfirmationSummary.of(
            part, rows=len(conf.get("rows") or {}), runs=len(reruns),
            planned=sum(len(v) for v in (conf.get("rows") or {}).values()),
            share=len(reruns) / cand.runs if cand.runs else None)
    elif conf and conf.get("skipped"):
        cand.confirm_skipped = conf["skipped"]
    return out


def missing_pairs(record: Record) -> list[tuple[Row, int]]:
    """(row, trial) pairs some version has no run for, in dataset order."""
    rows = [Row.model_validate(r) for r in record.rows]
    have: dict[tuple[str, int], set[str]] = {}
    for r in record.runs:
        have.setdefault((r.row_id, r.trial), set()).add(r.version)
    want = set(record.meta.versions)
    # a run's trial number is its seed (turngate/core/seeds.py): meta.seeds says which runs belong
    return [(row, t) for row in rows for t in record.meta.seeds if have.get((row.id, t), set()) < want]


def execute(record: Record, pairs: list[tuple[Row, int]], settings: Settings, path: Path,
            agents: list[AgentSpec], evaluators: list[dict], *, stage: str = "gate") -> bool:
    """Run the pairs into the record, checkpointing to path as runs finish. False: interrupted."""
    return asyncio.run(execute_async(record, pairs, settings, path, agents, evaluators, stage=stage))


async def execute_async(record: Record, pairs: list[tuple[Row, int]], settings: Settings, path: Path,
                        agents: list[AgentSpec], evaluators: list[dict], *, stage: str = "gate") -> bool:
    """`execute` inside a running event loop (a notebook, an async test)."""
    from turngate.record.results import save_record

    last_save = [float("-inf")]  # the first finished runs reach the disk at once, then every few seconds

    def on_runs(runs: list[RunResult]) -> None:
        for r in runs:
            r.stage = stage
        record.runs.extend(runs)
        if time.monotonic() - last_save[0] > CHECKPOINT_EVERY_S:
            save_record(record, path)
            last_save[0] = time.monotonic()

    plan = Plan(pairs, hints=duration_hints(path.parent, record.meta.version))
    # Provider calls (openai:/orq:) start at the run's parallelism and are counted per run.
    from turngate.jobs import model_calls
    model_calls.configure(parallelism=settings.parallelism)
    if stage == "gate":  # the reruns' calls are counted on top, and told apart in confirm_async
        model_calls.reset_call_stats()
    started = time.perf_counter()
    try:
        return await run_plan(f"{name_of(agents[0].target)}", agents, plan, evaluators, settings, on_runs)
    finally:
        record.meta.model_calls = model_calls.run_summary(time.perf_counter() - started, settings.parallelism)


def confirm(record: Record, reference: Any, settings: Settings, path: Path, agents: list[AgentSpec],
            evaluators: list[dict]) -> bool:
    """Stage 2 of the gate: rerun the rows stage 1 flagged on fresh seeds (turngate/verdict/confirm.py)."""
    return asyncio.run(confirm_async(record, reference, settings, path, agents, evaluators))


def execute_and_confirm(record: Record, pairs: list[tuple[Row, int]], settings: Settings, path: Path,
                        agents: list[AgentSpec], evaluators: list[dict], reference: Any) -> bool:
    """Both stages in one event loop: a provider client (openai:, orq:) is bound to the loop it
    was first used on, so the reruns must not start a second one. False: interrupted."""
    from turngate.jobs.executors import opened

    with opened(settings, agents) as run_settings:  # one executor (processes, Ray workers) for both stages
        async def both() -> bool:
            done = await execute_async(record, pairs, run_settings, path, agents, evaluators) if pairs else True
            return done and await confirm_async(record, reference, run_settings, path, agents, evaluators)

        return asyncio.run(both())


async def confirm_async(record: Record, reference: Any, settings: Settings, path: Path, agents: list[AgentSpec],
                        evaluators: list[dict]) -> bool:
    """`confirm` in a running loop. Only the candidate is rerun; the plan (row -> seeds) and its
    cost are stored in meta.confirm, and only (row, seed) pairs not yet run are run, so a resumed
    record finishes the same plan. False: interrupted."""
    from turngate.verdict.decide import plan_reruns, rerun_stops, reruns_needed
    from turngate.verdict.rule import policy_of

    conf = record.meta.confirm
    if not conf or not conf.get("enabled"):
        return True
    bars = record.meta.thresholds
    cand = summarise(record.runs_for(record.meta.version), record.row_by_id(), bars, record.meta.trials)
    policy = policy_of(record.meta)
    plan = plan_reruns(cand, reference, record.meta.seeds, fixed=conf.get("k"), below_bar=cand.below(bars),
                       policy=policy)
    stops = rerun_stops(cand, reference, fixed=conf.get("k"), below_bar=cand.below(bars), policy=policy)
    conf["rows"] = plan
    rows = {r["id"]: r for r in record.rows}

    def missing() -> list:
        """The reruns still to make: every planned seed of a row in no stop, and of a row that
        stops early the next batch it needs given the reruns made (a resumed record goes on the same way)."""
        made = {}
        for r in record.runs_for(record.meta.version, "confirm"):
            made[(r.row_id, r.trial)] = r
        out = []
        for rid, seeds in plan.items():
            n = len(seeds)
            if rid in stops:
                done = [made[(rid, s)] for s in seeds if (rid, s) in made]
                n = reruns_needed(stops[rid], done, reference)
            out += [(Row.model_validate(rows[rid]), s) for s in seeds[:n] if (rid, s) not in made]
        return out

    pairs = missing()
    if not pairs:
        return True
    from turngate.output.console import console

    most = sum(len(v) for v in plan.values())
    console.print(f"confirming: {len(plan)} flagged row(s), {most} reruns at most on fresh "
                  f"seeds ({', '.join(f'{rid} x{len(v)}' for rid, v in list(plan.items())[:4])}"
                  + (" ..." if len(plan) > 4 else "") + (f"; {len(stops)} stop once they cannot be confirmed" if stops
                                                         else "") + ")", markup=False, highlight=False)
    before = dict(record.meta.model_calls or {})
    done = True
    while pairs and done:  # rounds: a row that stops early gets its next batch only when it still may confirm
        done = await execute_async(record, pairs, replace(settings, upload=False), path, agents[:1], evaluators,
                                   stage="confirm")
        pairs = missing() if done else []
    after = record.meta.model_calls or {}
    # record.meta may have been rebuilt by a checkpoint meanwhile: write through it, not `conf`
    record.meta.confirm = {**(record.meta.confirm or conf), "model_calls": _calls_between(before, after)}
    if before:
        record.meta.model_calls = before  # the gate's own figures stay; the reruns' are in meta.confirm
    return done


def _calls_between(before: dict, after: dict) -> dict | None:
    """The provider calls made between two meta.model_calls snapshots (counts subtracted)."""
    if not after:
        return None
    models = {}
    for key, st in (after.get("models") or {}).items():
        old = (before.get("models") or {}).get(key, {})
        models[key] = {k: (v - old.get(k, 0) if isinstance(v, int | float) and not isinstance(v, bool)
                           and k.startswith(("requests", "ok", "rate_limited", "server_errors", "connection",
                                             "retries", "gave_up", "tokens", "latency"))
                           and k not in ("requests_binding", "tokens_binding") else v)
                       for k, v in st.items()}
    return {**after, "models": models}


def run_seeds(agents: list[AgentSpec], loaded: Loaded, rows: list[Row], seeds: list[int], settings: Settings,
              evaluators: list[dict], argv: list[str], path: Path | None = None) -> tuple[Record, bool]:
    """Run every row at every seed through the agents (candidate first) into a new record:
    what calibrate.py and scripts/gate_power.py share. (record, completed)."""
    import tempfile

    settings = replace(settings, trials=len(seeds))
    record = new_record(agents, loaded, rows, settings, {}, argv)
    record.meta.seeds = list(seeds)
    with tempfile.TemporaryDirectory() as tmp:
        completed = execute(record, [(r, s) for r in rows for s in seeds], settings,
                            path or Path(tmp) / "run.json", agents, evaluators)
    record.meta.complete = completed
    return record, completed


def gate_evaluators(settings: Settings, bars: dict[str, float]) -> list[dict]:
    """The scorers the bars file names, in registry order: a bars file selects what runs, so
    an agent lists only the scorers that apply to it."""
    from turngate.scoring.scorers import evaluators_for

    return evaluators_for(bars, settings.judge, judge_timeout=settings.judge_timeout, faults=settings.faults)


@dataclass
class Prepared:
    """A gate checked and ready to run: nothing has called the agent or written a file yet."""
    agents: list[AgentSpec]
    rows: list[Row]
    settings: Settings
    evaluators: list[dict]
    registry: dict  # scorer name -> ScorerSpec with its bar (turngate.scoring.scorers.registry)
    reference: Any  # turngate.verdict.reference.Reference, or None: judged by the bars only
    record: Record  # empty, its meta filled

    @property
    def pairs(self) -> list[tuple[Row, int]]:
        return [(row, seed) for row in self.rows for seed in self.record.meta.seeds]


def prepare(agents: list[AgentSpec], source: RowSource, settings: Settings, thresholds: Any, argv: list[str], *,
            reference_path: str | None, explicit_reference: bool = True, thresholds_path: str | None = None,
            selection: dict[str, Any] | None = None, redacted: bool = False) -> Prepared:
    """Every check a gate makes before its first agent call (regression.py and turngate.run_gate
    share it): bars against the scorer registry, the judge, the rows against the agent, the
    reference against the rows. thresholds: an turngate.verdict.thresholds.Thresholds; settings.seeds:
    the seeds to run. Bad input raises ConfigError/DatasetError; notes are printed."""
    from turngate.output.console import console
    from turngate.scoring.scorers import judge_scorers
    from turngate.scoring.scorers import registry as scorer_registry
    from turngate.sources.dataset import select
    from turngate.verdict.reference import check_judge, check_rows, load_reference

    registry = scorer_registry(thresholds)  # a scorer without a bar, or a bar without a scorer
    reference = load_reference(reference_path) if reference_path is not None else None
    # bad judge, fault or bars (a scorer unknown to the registry) are argument errors, before any agent runs
    evaluators = gate_evaluators(settings, thresholds.bars())
    loaded = load_rows_for(source, agents[0])
    sel = selection or {}
    rows = select(loaded.rows, sel.get("only"), sel.get("tags"), sel.get("limit"))
    record = new_record(agents, loaded, rows, settings, thresholds.bars(), argv, thresholds_path=thresholds_path,
                        selection=selection, redacted=redacted)
    if reference is not None:  # an explicit reference from another dataset: a ConfigError here
        reference, notes = check_rows(reference, record.rows, reference_path, explicit=explicit_reference)
        reference, judge_notes = check_judge(reference, record.meta.judge, judge_scorers())
        for note in notes + judge_notes:
            console.print(f"[yellow]note:[/] {note}")
        record.meta.reference = reference_path if reference is not None else None
        keep_reference(record, reference, reference_path)
    return Prepared(agents, rows, settings, evaluators, registry, reference, record)


def keep_reference(record: Record, reference: Any, path: str | Path | None) -> None:
    """Store in the record the part of the reference it is judged against (its rows; every
    scorer's cells) and today's rule: its readers judge it from that copy, never from the file."""
    import hashlib

    from turngate.verdict.rule import judged_with, policy_of

    copy = None
    if reference is not None:
        ids = {r["id"] for r in record.rows}
        copy = reference.model_copy(update={"rows": {k: v for k, v in reference.rows.items() if k in ids}})
    source = None
    if copy is not None and path is not None:
        try:
            source = {"path": str(path), "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest()}
        except OSError:
            source = {"path": str(path)}
    record.meta.judged_with = judged_with(copy, source, policy=policy_of(record.meta))


__all__ = ["keep_reference", "DEFAULT_AGENT", "DEFAULT_DATASET", "AgentSpec", "agents_for", "agents_from_meta", "confirm",
           "confirm_async", "execute", "execute_and_confirm",
           "execute_async", "gate_evaluators", "prepare", "Prepared",
           "load_rows_for", "missing_pairs", "new_record", "run_seeds", "summarise_record"]
