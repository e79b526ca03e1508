"""The regression gate: a fixed dataset through a pinned agent version, binary scorers,
calibrated bars, an exit code.

    evals gate --version v3 [--trials 5] [--baseline v2] [--only ID ...]
    evals gate --agent mypkg.agent:target --dataset rows.jsonl --thresholds bars.toml

Exit 0: every scorer's mean is at or above its bar (and, with --fail-on-regression, no
scorer is significantly worse than the baseline). Exit 1: some scorer is below. Exit 2:
the run cannot be judged (bad arguments, bad dataset, no rows, interrupted).
"""
from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.core.faults import check_targets, parse_faults, server_fault, server_fault_env
from turngate.core.project import project
from turngate.core.seeds import seeds_from_args
from turngate.gate.conclude import finish
from turngate.gate.run import (
    DEFAULT_AGENT,
    DEFAULT_DATASET,
    agents_for,
    execute_and_confirm,
    gate_evaluators,
    missing_pairs,
    prepare,
)
from turngate.jobs.runner import Settings
from turngate.jobs.target import TargetOptions, tool_names_of
from turngate.output.console import console, print_json, use_stderr
from turngate.record.gate_json import GateJson
from turngate.record.results import Record, load_record, save_record
from turngate.scoring.scorers import registry as scorer_registry
from turngate.sources.row_sources import source_for
from turngate.verdict.reference import DEFAULT_PATH as REFERENCE_PATH
from turngate.verdict.thresholds import DEFAULT_PATH, Bar, Thresholds, load_thresholds


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("gate"), description=" ".join(__doc__.split("\n\n")[0].split()))  # the first paragraph
    p.add_argument("--agent", default=DEFAULT_AGENT, metavar="MODULE:CALLABLE",
                   help=f"the target: an async (inputs, seed) -> Turn, or a factory (default {DEFAULT_AGENT})")
    p.add_argument("--version", help="agent version to gate, for a factory target (default: the factory's own)")
    p.add_argument("--baseline", help="also run this version on the same rows/seeds and compare")
    src = p.add_mutually_exclusive_group()
    src.add_argument("--dataset", default=str(DEFAULT_DATASET), help="local JSONL dataset")
    src.add_argument("--dataset-id", help="orq.ai dataset id (needs ORQ_API_KEY)")
    p.add_argument("--only", nargs="+", metavar="ID", help="run only these row ids")
    p.add_argument("--tags", nargs="+", metavar="TAG", help="run only rows with any of these tags")
    p.add_argument("--limit", type=int, help="run only the first N selected rows")
    p.add_argument("--trials", type=int, default=1, help="runs per row, seeds 0..N-1 (default 1)")
    p.add_argument("--seeds", metavar="SEEDS", help="which seeds to run instead: 20-39, 7 or 1,3,5 (fresh or held-out seeds)")
    p.add_argument("--reference", help="the accepted run's per-row counts (default: reference.json beside "
                                         "--thresholds)")
    p.add_argument("--no-reference", action="store_true", help="judge by the bars only")
    p.add_argument("--parallelism", type=int, default=8, help="rows in flight at once (default 8)")
    p.add_argument("--model", help="override the version's model: offline[:...] | openai:<m> | orq:<m>")
    p.add_argument("--judge", default=project().value("judge"),
                   help="the policy judge, when the bars name policy_judge: a registered judge | openai:<m> | orq:<m> "
                        "(default: [tool.turngate] judge; none)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per run before it fails as 'timeout'")
    p.add_argument("--max-retries", type=int, default=8,
                   help="provider retries on 429/5xx/connection errors, with backoff (default 8)")
    p.add_argument("--transport", choices=["memory", "stdio"], default="memory", help="how to reach the MCP server")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH), help="bars file (default: [tool.turngate] thresholds, else ./thresholds.toml)")
    p.add_argument("--out", default="results", help="results directory")
    p.add_argument("--no-upload", action="store_true", help="do not upload to orq.ai even if ORQ_API_KEY is set")
    p.add_argument("--quiet", action="store_true", help="skip evaluatorq's own progress and table")
    p.add_argument("--evaluatorq-table", action="store_true",
                   help="also print evaluatorq's own progress and results table (off by default)")
    p.add_argument("--json", action="store_true",
                   help="print a JSON summary on stdout for scripts; everything else goes to stderr")
    p.add_argument("--cache", nargs="?", const=str(Path(".cache") / "model-calls.sqlite"), metavar="PATH",
                   help="store model calls on disk (LangChain cache); reruns of unchanged calls cost nothing")
    p.add_argument("--resume", metavar="RESULTS", help="finish an interrupted run: only the missing (row, trial) pairs")
    p.add_argument("--redact-results", action="store_true", help="mask emails and phone numbers in the results file")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="with --baseline: also exit 1 when a scorer is significantly worse (McNemar p<0.05)")
    p.add_argument("--report", metavar="PATH.html", help="write a self-contained HTML report")
    p.add_argument("--junit", metavar="PATH.xml",
                   help="write the verdict as JUnit XML for a CI test-report UI: one test case per row")
    p.add_argument("--markdown", metavar="PATH.md",
                   help="write the verdict as Markdown for a sticky PR comment ({report_url}: the report's link)")
    p.add_argument("--dry-run", action="store_true",
                   help="print the plan (rows x seeds, expected model calls) and exit 0; runs nothing, writes no results")
    p.add_argument("--force", action="store_true", help="let --report, --junit, --markdown replace an existing file")
    p.add_argument("--judge-timeout", type=float, default=60.0, help="seconds before a judge verdict fails")
    p.add_argument("--workers", type=int, default=1,
                   help="run conversations in N worker processes (CPU-bound fast models; default 1), "
                        "or N Ray workers with --executor ray")
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="where conversations run: local (this process, or --workers processes) or ray "
                        "(Ray workers on RAY_ADDRESS's cluster, else a local Ray; one provider budget; see docs/ray.md)")
    p.add_argument("--max-model-calls", type=int, metavar="N",
                   help="stop cleanly after N agent model calls to a provider (exit 2; finish with --resume)")
    conf = p.add_mutually_exclusive_group()
    conf.add_argument("--confirm", type=int, metavar="K",
                      help="rerun each flagged row K times on fresh seeds (default: K chosen per row, 3-20 at one trial, up to 60 at five or more)")
    conf.add_argument("--no-confirm", action="store_true",
                      help="no confirmation reruns: flagged rows are judged on this gate's runs alone (stricter, blinder)")
    p.add_argument("--rerun-budget", type=budget, metavar="SHARE",
                   help="reruns for scorers' totals (diffuse changes: a hotter model, a safety switch off) up to "
                        "this share of the gate's runs (default 0.05; 'none': no cap; see docs/gate.md#the-policy)")
    p.add_argument("--shard", metavar="K/N",
                   help="run shard K of N: a cost-balanced part of the rows, every seed (merge with `evals merge`)")
    p.add_argument("--fault", action="append", metavar="KIND[:ARG]",
                   help="inject a fault to test the harness (see turngate/core/faults.py); repeatable")
    return p


def check_args(a: argparse.Namespace) -> None:
    for name, low in (("trials", 1), ("parallelism", 1), ("max_retries", 0), ("workers", 1), ("confirm", 1),
                      ("max_model_calls", 1)):
        if getattr(a, name) is not None and getattr(a, name) < low:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least {low}")
    cli.check_positive(a.timeout, "--timeout")
    from turngate.jobs.executors import check_executor

    check_executor(a.executor)  # --executor ray without ray installed: one line, exit 2
    cli.check_positive(a.judge_timeout, "--judge-timeout")
    if a.fail_on_regression and not a.baseline and not a.resume:
        raise ConfigError("--fail-on-regression needs --baseline VERSION")
    if a.baseline is not None and a.baseline == a.version:
        raise ConfigError(f"--baseline {a.baseline} is the --version itself; compare with another version")
    cli.check_keys(a.model, "--model")
    cli.check_keys(a.judge, "--judge")
    # every path the run will write, before any agent call: a bad one must not cost a whole run
    cli.check_out_dir(a.out)
    cli.check_cache(a.cache)
    if a.report:
        cli.check_new_file(a.report, "--report", force=a.force,
                           inputs=[a.dataset, a.thresholds, a.resume, a.cache])
    check_outputs(a)


def check_outputs(a: argparse.Namespace) -> None:
    """--junit and --markdown as --report: new files (or --force), never an input, never one another."""
    outputs = [(flag, path) for flag, path in (("--report", a.report), ("--junit", a.junit),
                                               ("--markdown", a.markdown)) if path]
    for i, (flag, path) in enumerate(outputs):
        for other_flag, other in outputs[:i]:
            if Path(path).resolve() == Path(other).resolve():
                raise ConfigError(f"{flag} {path}: {other_flag} writes that file too; give each its own")
        if flag != "--report":
            cli.check_new_file(path, flag, force=a.force, inputs=[a.dataset, a.thresholds, a.resume, a.cache])


def options_from(a: argparse.Namespace) -> TargetOptions:
    return TargetOptions(version=a.version, model=a.model, transport=a.transport, max_retries=a.max_retries,
                         timeout=a.timeout)


def in_workers(workers: int, executor: str) -> bool:
    """The conversations (and so the model cache) live in worker processes, not here."""
    return workers > 1 or executor != "local"


@contextlib.contextmanager
def model_call_budget(limit: int | None, path: Path):
    """--max-model-calls for this gate: counted from zero, said when it stopped the run."""
    from turngate.jobs import model_calls
    model_calls.set_budget(limit)
    try:
        yield
    finally:
        spent = model_calls.budget()
        model_calls.set_budget(None)
        if spent.stopped:
            console.print(f"stopped at --max-model-calls {limit}: {spent.used} agent model calls made; "
                          f"the runs it cut are not kept (finish with --resume {path})", markup=False,
                          highlight=False)


def enable_cache(path: str | None) -> object | None:
    if not path:
        return None
    from turngate.jobs.model_cache import enable_cache as enable

    return enable(path)


def print_model_calls(record: Record) -> None:
    """Provider calls (openai:/orq:): counts, 429s, retries, wall time against the physical limit."""
    from turngate.gate.dry_run import usage_line
    from turngate.jobs.model_calls import summary_lines

    if line := usage_line(record):  # from each run's Turn: every executor (in-process, --workers)
        console.print(line, markup=False, highlight=False)
    for line in summary_lines(record.meta.model_calls):
        console.print(line, markup=False, highlight=False)


def print_plan(pairs: list, agents: list, out_dir: str | Path, settings: Settings) -> None:
    """--dry-run: the plan and its expected model calls (turngate/gate/dry_run.py)."""
    from turngate.gate.dry_run import plan_lines
    from turngate.jobs.target import name_of

    versions = [(name_of(x.target), x.version) for x in agents]
    for line in plan_lines(pairs, versions, out_dir, judge=settings.judge, confirm=settings.confirm,
                           confirm_k=settings.confirm_k):
        console.print(line, markup=False, highlight=False)


def budget(text: str) -> float:
    """--rerun-budget: a share of the gate's runs (0 or more), or none (no cap)."""
    if text.strip().lower() in ("none", "inf"):
        return float("inf")
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"{text!r}: a share of the gate's runs (0.05, 0.5, 2) or none")
    return value


def cache_line(st: dict) -> str:
    return f"model calls: {st['model_calls_made']} made, {st['served_from_cache']} served from cache"


# Flags that define a run; --resume takes them from the results file and refuses them here.
RUN_FLAGS = ("agent", "version", "baseline", "dataset", "dataset_id", "only", "tags", "limit", "trials", "seeds",
             "confirm", "no_confirm", "rerun_budget",
             "reference", "no_reference",
             "parallelism", "model", "judge", "timeout", "max_retries", "transport", "thresholds", "workers",
             "fault", "judge_timeout", "redact_results", "shard")


def resume(a: argparse.Namespace, argv: list[str], started: float) -> int:
    """Run only the (row, trial) pairs an interrupted results file lacks, with every setting
    the file recorded (rows, seeds, model, judge, timeouts, retries, workers, faults, bars).
    The agent comes from --agent (or the default), never from the file: the file's agent is
    compared with it, and so are each version file's digest and the digest of the agent's code;
    any differing is refused, as is a second --resume of the same file while one runs (an OS
    lock on <results>.lock beside the real file, a symlink to it sharing the lock)."""
    from turngate.record.results import holding

    defaults = parser().parse_args([])
    given = [f for f in RUN_FLAGS if f != "agent" and getattr(a, f) != getattr(defaults, f)]
    if given:
        raise ConfigError(f"--resume restores the run's own settings; drop --{given[0].replace('_', '-')}")
    path = Path(a.resume)
    if not path.is_file():
        load_record(path)  # the one-line error for a missing or unreadable file, before any lock file
    cli.WORKING.append(path)  # an interrupt names it (with how to finish it), never removes it
    with holding(path, f"{cli.command('gate')} --resume {path}"):
        return _resume(a, argv, started, path)


def _resume(a: argparse.Namespace, argv: list[str], started: float, path: Path) -> int:
    """resume(), holding the lock."""
    from turngate.gate.recheck import earlier_rule, file_reference, reference_of
    from turngate.gate.run import keep_reference
    from turngate.jobs.target import version_file_of
    from turngate.record.results import planned_file

    record = load_record(path)  # its runs match its plan and digest, or a one-line error
    m = record.meta
    if m.compared_files:
        raise ConfigError(f"--resume {path}: a compare.py record; resume the gate runs it compares")
    if m.agent is None:  # a results@1 file, from before records named their agent: the command names it
        console.print(f"note: {path} names no agent (an early record): finishing it with --agent {a.agent}",
                      markup=False)
    elif a.agent != m.agent:  # a results file never picks the code that runs
        raise ConfigError(f"--resume {path}: the run was made by agent {m.agent!r}, this command uses {a.agent!r} "
                          f"(pass --agent {m.agent} if that is the agent to finish it with)")
    if m.complete:
        console.print(f"{path} is already complete; nothing to resume")
    faults = parse_faults(m.faults)
    cli.check_keys(m.judge, f"{path}: judge", "--judge")
    settings = Settings(model=m.model_override, judge=m.judge, trials=m.trials, parallelism=m.parallelism,
                        timeout=m.timeout or 120.0, transport=m.transport, max_retries=m.max_retries,
                        upload=not a.no_upload, print_table=a.evaluatorq_table and not a.quiet,
                        judge_timeout=m.judge_timeout, faults=faults, fault_specs=list(m.faults), workers=m.workers,
                        executor=a.executor, cache_path=a.cache if in_workers(m.workers, a.executor) else None)
    options = TargetOptions(version=m.agent_version, model=m.model_override, transport=m.transport,
                            max_retries=m.max_retries, timeout=m.timeout)
    agents = agents_for(a.agent, options, m.baseline)  # --agent, with the run's own options
    for agent, version in zip(agents, m.versions, strict=True):
        if agent.version != version:
            raise ConfigError(f"--resume {path}: --agent {a.agent} now builds version {agent.version!r}, "
                              f"the record's runs are of {version!r}")
        planned, now = planned_file(record, version), version_file_of(agent.target)
        if record.plan is None or (planned is None and now is not None):
            console.print(f"note: {path} stored no version file digest for {version}: not checked", markup=False)
        elif (planned or {}).get("sha256") != (now or {}).get("sha256"):
            shown = (now or planned)["path"]
            raise ConfigError(f"--resume {path}: {version}'s version file {shown} changed since the run "
                              f"(sha256 {(planned or {}).get('sha256', 'none')[:12]} then, "
                              f"{(now or {}).get('sha256', 'none')[:12]} now): its runs would mix two agents; "
                              "start a new run")
    check_agent_code(record, path, a.agent)
    evaluators = gate_evaluators(settings, m.thresholds)
    pairs = missing_pairs(record)
    redo = {(row.id, t) for row, t in pairs}
    record.runs = [r for r in record.runs if (r.row_id, r.trial) not in redo]  # drop half-done pairs
    console.print(f"resuming {path}, {record.incomplete() or 'complete'}: {len(pairs)} of "
                  f"{len(record.rows) * m.trials} (row, trial) pairs to run")
    if a.dry_run:  # the file untouched: nothing run, nothing saved
        conf = m.confirm or {}
        print_plan(pairs, agents, path.parent, Settings(judge=m.judge, confirm=bool(conf.get("enabled")),
                                                        confirm_k=conf.get("k")))
        from turngate.gate.recheck import reference_of
        from turngate.gate.sight import line, of_record

        console.print(line(of_record(record, reference_of(record))), markup=False, highlight=False)
        return cli.EXIT_PASS
    cache = enable_cache(a.cache) if not in_workers(m.workers, a.executor) else None
    reference = reference_of(record)  # the copy it carries: the one the run started with
    if earlier_rule(record, path):  # an earlier layout carries none: its file, kept now; reruns planned anew
        reference = file_reference(record)
        keep_reference(record, reference, m.reference)
        record.runs = [r for r in record.runs if r.stage != "confirm"]
    with server_fault_env(server_fault(faults)), model_call_budget(a.max_model_calls, path):
        completed = execute_and_confirm(record, pairs, settings, path, agents, evaluators, reference)
    print_model_calls(record)
    stats = cache.stats() if cache is not None else settings.cache_stats
    if a.cache and stats is not None:
        record.meta.cache = stats
        console.print(cache_line(stats))
    record.meta.resumed = [*m.resumed, argv]
    registry = scorer_registry(Thresholds(provenance={"scorers": list(m.thresholds)},  # the run's own bars
                                          scorers={n: Bar(bar=b) for n, b in m.thresholds.items()}))
    code = finish(record, path, registry, reference, completed, started, fail_on_regression=a.fail_on_regression,
                  report=a.report, junit=a.junit, pr_comment=a.markdown, force=a.force)
    return partial(record, uploaded(path, settings, code))


def check_agent_code(record: Record, path: Path, spec: str) -> None:
    """Refuse to finish a record whose agent's code (the --agent module's package,
    turngate/core/agent_code.py) changed since the run. A record from before plans stored that
    digest is finished with a one-line note, and stores the digest now for a later --resume."""
    from turngate.core.agent_code import code_changed
    from turngate.core.provenance import built_agent_code

    if record.plan is None:  # a results@1 file: noted with its version files above
        return
    planned, now = record.plan.agent_code, built_agent_code(spec)
    if planned is None and now is not None:
        console.print(f"note: {path} stored no digest of the agent's code (an earlier record): not checked; "
                      "stored now for a later --resume", markup=False)
        record.plan.agent_code = now
    elif changed := code_changed(planned, now):
        raise ConfigError(f"--resume {path}: the agent's code changed since the run ({changed}): its runs "
                          "would mix two agents; start a new run")


def json_summary(path: Path, code: int) -> GateJson:
    """What --json prints (turngate/record/gate_json.py): the verdict and each version's numbers,
    for scripts; read back from the results file and recomputed from its runs, as every reader
    does (turngate/gate/recheck.py)."""
    from turngate.gate.recheck import recompute

    record = load_record(path)
    recompute(record, path)
    m = record.meta
    return GateJson(exit_code=code, results=str(path), version=m.version, baseline=m.baseline, job=m.job,
                    agent=m.agent, incomplete=record.incomplete(), verdict=record.verdict, summary=record.summary)


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    a = parser().parse_args(argv)
    try:
        return _main(a, argv)
    finally:
        if a.cache:  # the cache is process-wide (LangChain's global): it ends with this gate
            from turngate.jobs.model_cache import disable_cache

            disable_cache()


def _main(a: argparse.Namespace, argv: list[str]) -> int:
    if not a.json:
        return run(a, argv)
    with use_stderr():
        try:
            code = run(a, argv)
        except Exception as exc:  # a user mistake: scripts still get a JSON line, the error line goes to stderr
            if isinstance(exc, cli.user_errors()):
                from turngate.core.scrubbing import scrub

                print_json(GateJson(exit_code=cli.EXIT_UNJUDGED, error=scrub(str(exc))))
            raise
        path = getattr(a, "results_path", None)
    print_json(json_summary(path, code) if path is not None and path.exists() else GateJson(exit_code=code))
    return code


def run(a: argparse.Namespace, argv: list[str]) -> int:
    started = time.perf_counter()
    check_args(a)
    if a.resume:
        a.results_path = Path(a.resume)
        return resume(a, argv, started)
    faults = parse_faults(a.fault)
    if server_fault(faults):
        a.transport = "stdio"  # server faults need a real server process
    agents = agents_for(a.agent, options_from(a), a.baseline)  # unknown agent/version/model: exit 2 here
    if len(agents) > 1 and agents[0].version == agents[1].version:  # the same runs would count twice
        raise ConfigError(f"--baseline {a.baseline} is the version under test; compare with another version")
    explicit_reference = a.reference is not None
    # an agent's bars and its accepted run live side by side
    a.reference = a.reference or str(Path(a.thresholds).with_name(REFERENCE_PATH.name))
    seeds = seeds_from_args(a.seeds, a.trials if a.trials != 1 else None)
    settings = Settings(model=a.model, judge=a.judge, trials=len(seeds), seeds=seeds, parallelism=a.parallelism,
                        timeout=a.timeout, transport=a.transport, max_retries=a.max_retries,
                        upload=not a.no_upload, print_table=a.evaluatorq_table and not a.quiet,
                        judge_timeout=a.judge_timeout, faults=faults, fault_specs=a.fault or [],
                        workers=a.workers, executor=a.executor,
                        cache_path=a.cache if in_workers(a.workers, a.executor) else None,
                        confirm=not a.no_confirm, confirm_k=a.confirm, rerun_budget=a.rerun_budget)
    gate = prepare(agents, source_for(a.dataset, a.dataset_id), settings, load_thresholds(a.thresholds), argv,
                   reference_path=None if a.no_reference else a.reference, explicit_reference=explicit_reference,
                   thresholds_path=a.thresholds, selection={"only": a.only, "tags": a.tags, "limit": a.limit},
                   redacted=a.redact_results)
    record, registry, reference = gate.record, gate.registry, gate.reference
    check_targets(faults, [r.id for r in gate.rows], tool_names_of(agents[0].target))
    if a.shard:  # a part of the plan's rows; meta.shard names the whole plan (turngate/jobs/shards.py)
        from turngate.jobs.shards import parse_shard, shard_hints, take_shard
        from turngate.verdict.reference import check_rows as narrow

        k, n = parse_shard(a.shard)
        hints, source = shard_hints(Path(a.out), record.meta.version)
        gate.rows = take_shard(record, gate.rows, hints, k, n, source)
        if reference is not None:  # as a reader narrows it to the record's rows (turngate/gate/recheck.py)
            reference, _ = narrow(reference, record.rows, record.meta.reference, explicit=False)
    m = record.meta
    if a.dry_run:  # every check above made; nothing run, no results file
        print_plan(gate.pairs, agents, a.out, settings)
        from turngate.gate.sight import line, of_record

        # the statement the gate prints after its verdict, from the same settings and policy
        console.print(line(of_record(record, reference)), markup=False, highlight=False)
        return cli.EXIT_PASS
    name = f"{m.version}-vs-{m.baseline}" if m.baseline else m.version
    path = a.results_path = cli.new_results_path(a.out, name)  # a new file, never another run's
    save_record(record, path)  # an (empty, incomplete) record from the start: resumable whatever happens
    cache = enable_cache(a.cache) if not in_workers(a.workers, a.executor) else None
    with server_fault_env(server_fault(faults)), model_call_budget(a.max_model_calls, path):
        completed = execute_and_confirm(record, gate.pairs, settings, path, agents, gate.evaluators, reference)
    print_model_calls(record)
    stats = cache.stats() if cache is not None else settings.cache_stats
    if a.cache and stats is not None:
        record.meta.cache = stats
        console.print(cache_line(stats))
    code = finish(record, path, registry, reference, completed, started, fail_on_regression=a.fail_on_regression,
                  report=a.report, junit=a.junit, pr_comment=a.markdown, force=a.force)
    return partial(record, uploaded(path, settings, code))


def uploaded(path: Path, settings: Settings, code: int) -> int:
    """With ORQ_API_KEY (and no --no-upload): the finished results as an orq Experiment
    (turngate/gate/orq_experiment.py). The exit code is the verdict's whatever the upload does."""
    if settings.upload and os.environ.get("ORQ_API_KEY", "").strip():
        from turngate.gate.orq_experiment import upload

        upload(path)
    return code


def partial(record: Record, code: int) -> int:
    """A shard's verdict is printed, then marked as partial; its exit code is the shard's own."""
    from turngate.jobs.shards import partial_line

    if line := partial_line(record):
        console.print(line, markup=False, highlight=False)
    return code

