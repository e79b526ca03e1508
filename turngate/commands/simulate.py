"""Simulate: persona-driven users talk to a pinned agent version for several turns;
every conversation is scored with the gate's scorers.

    python evals/simulate.py --version v2 [--scenarios datasets/scenarios.toml]
        [--personas datasets/personas.toml] [--max-turns 6] [--seeds N]
        [--sim-model offline|openai:<m>|orq:<m>] [--judge offline] [--out results]
        [--only-scenario ID ...] [--only-persona ID ...]

Writes results/sim-<version>-<timestamp>/<scenario>--<persona>--s<seed>.json per
conversation and summary.json, and prints the failures with the failing scorer and
the user turn after which things went wrong. Exit 0 when the simulation ran (failures
are findings, not errors), 2 on a user mistake.
"""
from __future__ import annotations

import argparse
import asyncio
import sys
from datetime import datetime
from pathlib import Path

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.core.project import project
from turngate.jobs.target import DEFAULT_AGENT
from turngate.output.console import console
from turngate.scoring.scorers import judge_scorers, make_evaluators, scorer_names
from turngate.simulation.report import print_summary, summarise, write_summary
from turngate.simulation.run import Settings, known_turns, run_all, write_records
from turngate.simulation.specs import known_tactics, load_personas, load_scenarios, pick
from turngate.sources.dataset import load_rows


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("simulate"), description=" ".join(__doc__.split("\n\n")[0].split()))
    p.add_argument("--agent", default=DEFAULT_AGENT, help=f"the agent to talk to: module:attr (default {DEFAULT_AGENT})")
    default_version = project().value("simulate_version")
    p.add_argument("--version", default=default_version,
                   help=f"agent version to talk to, for a factory agent (default {default_version or 'its own'})")
    p.add_argument("--model", help="override the version's model: offline[:...] | openai:<m> | orq:<m>")
    p.add_argument("--scenarios", default=str(project().path("scenarios", "scenarios.toml")))
    p.add_argument("--personas", default=str(project().path("personas", "personas.toml")))
    p.add_argument("--only-scenario", nargs="+", metavar="ID", help="run only these scenarios")
    p.add_argument("--only-persona", nargs="+", metavar="ID", help="run only these personas")
    p.add_argument("--max-turns", type=int, default=6, help="user turns per conversation at most (default 6)")
    p.add_argument("--seeds", type=int, default=3, help="conversations per persona x scenario, seeds 0..N-1 (default 3)")
    p.add_argument("--sim-model", default="offline", help="the simulated user: offline | openai:<m> | orq:<m>")
    p.add_argument("--judge", default=project().value("judge"),
                   help="the gate's policy judge, when its bars name one (default: [tool.turngate] judge; none)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per agent run before it fails as 'timeout'")
    p.add_argument("--dataset", default=str(project().path("dataset", "dataset.jsonl")),
                   help="dataset to check findings against (which failures no row has yet)")
    p.add_argument("--out", default="results", help="results directory")
    return p


def check_args(a: argparse.Namespace) -> None:
    for name, low in (("max_turns", 1), ("seeds", 1)):
        if getattr(a, name) < low:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least {low}")
    cli.check_positive(a.timeout, "--timeout")
    cli.check_keys(a.model, "--model")
    cli.check_keys(a.judge, "--judge")
    cli.check_out_dir(a.out)
    from turngate.jobs.models import make_model, parse_spec

    if parse_spec(a.sim_model).provider != "offline":
        make_model(a.sim_model)  # a missing key is a one-line error now, not mid-run


def out_dir(root: str, version: str) -> Path:
    """A new directory for this run: created here (mkdir fails if it exists), so two runs
    started in the same second, even in two processes, never share one."""
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for n in range(1, 1000):
        path = Path(root) / (f"sim-{version}-{stamp}" + (f"-{n}" if n > 1 else ""))
        try:
            path.mkdir(parents=True)
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"--out {root}: no free directory name for sim-{version}-{stamp}")


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(sys.argv[1:] if argv is None else argv)
    check_args(a)
    from turngate.jobs.models import parse_spec
    from turngate.jobs.target import TargetOptions, load_target

    # unknown agent, version or model: a one-line error here, before any conversation
    agent = load_target(a.agent, TargetOptions(version=a.version, model=a.model, timeout=a.timeout))
    scenarios = pick(load_scenarios(a.scenarios), a.only_scenario, "--only-scenario")
    # persona tactics are the scenarios' users' own names (the scripted user knows none)
    personas = pick(load_personas(a.personas, tactics=known_tactics(scenarios)), a.only_persona, "--only-persona")
    # Every registered scorer; the judge-backed ones only with a judge (there is no default one)
    skipped = sorted(judge_scorers()) if not a.judge else []
    evaluators = make_evaluators(a.judge, names=[n for n in scorer_names() if n not in skipped])
    if skipped:
        console.print(f"[dim]no --judge: {', '.join(skipped)} not scored[/]")
    settings = Settings(version=a.version or str(getattr(agent, 'version', '') or ''), model=a.model, sim_model=str(parse_spec(a.sim_model)), judge=a.judge,
                        seeds=a.seeds, max_turns=a.max_turns, evaluators=evaluators, timeout=a.timeout,
                        known=known_turns(load_rows(a.dataset)), target=agent)
    target = out_dir(a.out, a.version or str(getattr(agent, 'version', '') or 'agent'))
    started = datetime.now().isoformat(timespec="seconds")
    done = [0]
    total = a.seeds * len(personas) * len(scenarios)

    def progress(rec) -> None:
        done[0] += 1
        mark = f"[red]{rec.failure.scorer}[/] after turn {rec.failure.after_turn}" if rec.failure else "[green]ok[/]"
        console.print(f"  [{done[0]}/{total}] {rec.conversation}: {len(rec.turns)} turns, {rec.ended}; {mark}")

    records = asyncio.run(run_all(personas, scenarios, settings, target.name, on_record=progress))
    write_records(records, target)
    meta = {"run": target.name, "version": settings.version, "model": a.model or str(getattr(agent, "model", "") or ""),
            "sim_model": settings.sim_model, "judge": a.judge, "seeds": a.seeds, "max_turns": a.max_turns,
            "scenarios": [s.id for s in scenarios], "personas": [p.id for p in personas],
            "dataset": a.dataset, "git_commit": cli.git_commit(), "started": started}
    summary = summarise(records, meta)
    write_summary(summary, target)
    print_summary(summary, target)
    return cli.EXIT_PASS

