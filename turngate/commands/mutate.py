"""Mutation testing of an agent's prompt and settings: which one-change edits would the gate not notice?

    evals mutate --version v3 [--dry-run] [--max-model-calls N] [--json] [--markdown FILE] [--report FILE.html]
    evals mutate --agent examples.faq_bot:target --dataset rows.jsonl --thresholds bars.toml
    evals mutate --version v3 --review review/        # survivors as draft failure modes for evals review

Each mutant (a sentence deleted, a rule word weakened or negated, a number or unit changed, a list
item dropped, a switch flipped, the temperature nudged) goes through the gate on the baseline's
rows, seeds, bars and reference: killed (the gate fails), survived (some row behaves differently,
the gate passes), equivalent (no row behaves differently), or error. Exit 0 when every mutant was
classified (survivors are findings, not failures), 2 when it could not run. See docs/mutate.md.
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
from pathlib import Path

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.core.project import project
from turngate.core.seeds import format_seeds, seeds_from_args
from turngate.gate.run import DEFAULT_AGENT, DEFAULT_DATASET
from turngate.jobs.target import TargetOptions
from turngate.mutate.operators import OPERATORS, Mutant
from turngate.output.console import console
from turngate.verdict.thresholds import DEFAULT_PATH


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("mutate"), description=__doc__.splitlines()[0])
    p.add_argument("--agent", default=DEFAULT_AGENT, metavar="MODULE:CALLABLE",
                   help=f"a mutable target (docs/mutate.md#your-own-agent) or a factory of one (default {DEFAULT_AGENT})")
    p.add_argument("--version", help="the agent version to mutate, for a factory target (default: the factory's own)")
    p.add_argument("--model", help="override the version's model: offline[:...] | openai:<m> | orq:<m>")
    p.add_argument("--dataset", default=str(DEFAULT_DATASET), help="local JSONL dataset")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH), help="bars file (default: [tool.turngate] thresholds)")
    p.add_argument("--reference", help="the accepted run's per-row counts (default: reference.json beside --thresholds)")
    p.add_argument("--no-reference", action="store_true", help="judge by the bars only")
    p.add_argument("--trials", type=int, help="runs per row, seeds 0..N-1 (default 1, as the gate)")
    p.add_argument("--seeds", metavar="SEEDS", help="which seeds to run instead: 20-39, 7 or 1,3,5")
    p.add_argument("--operators", nargs="+", choices=OPERATORS, metavar="OP",
                   help=f"only these operators ({', '.join(OPERATORS)}; default all)")
    p.add_argument("--edits", nargs="+", metavar="FILE.toml",
                   help="also these hand-made edits (instructions, switches, temperature; a version file as it "
                        "stands), mutants of operator 'edit'; `--operators edit` runs only them")
    p.add_argument("--propose", type=int, metavar="N",
                   help="also N edits proposed by a model (--proposer), mutants of operator 'llm': one call "
                        "before the gates, not counted in --max-model-calls; invalid edits are listed and dropped")
    p.add_argument("--proposer", metavar="MODEL",
                   help="the model --propose asks: openai:<m> | orq:<provider/m> (default: --model when it is one)")
    p.add_argument("--mutants", nargs="+", metavar="ID", help="only the mutants whose id starts with one of these")
    p.add_argument("--parallelism", type=int, default=8, help="rows in flight at once in each gate (default 8)")
    p.add_argument("--jobs", type=int, default=1,
                   help="mutants gated at once, in this process (a provider model's calls share one budget and "
                        "limiter; the offline model is CPU-bound: no faster). Default 1")
    p.add_argument("--workers", type=int, default=1,
                   help="run each gate's conversations in N worker processes (CPU-bound fast models), or N Ray "
                        "workers with --executor ray; one pool for the whole run. Default 1")
    p.add_argument("--executor", default="local", choices=["local", "ray"],
                   help="where conversations run, as evals gate: local (this process, or --workers processes) or "
                        "ray (RAY_ADDRESS's cluster, else a local Ray); one provider budget for the whole run")
    p.add_argument("--judge", default=project().value("judge"),
                   help="the policy judge, when the bars name policy_judge (default: [tool.turngate] judge)")
    p.add_argument("--timeout", type=float, default=120.0, help="seconds per run before it fails as 'timeout'")
    p.add_argument("--out", default="results", help="results directory: each gate's results file goes to OUT/mutate/")
    p.add_argument("--max-model-calls", type=int, metavar="N",
                   help="agent model calls for the whole run: a mutant starts only when its gate fits")
    p.add_argument("--resume", action="store_true",
                   help="reuse the baseline and the mutants already classified by an interrupted run of the same "
                        "question (agent, version, rows, bars, reference, seeds) in OUT/mutate/")
    p.add_argument("--dry-run", action="store_true",
                   help="print the mutants, runs and expected model calls, and exit 0; runs nothing")
    p.add_argument("--list", action="store_true", help="with --dry-run: also list every mutant's id and change")
    p.add_argument("--json", action="store_true", help="print the report as JSON on stdout (the rest on stderr)")
    p.add_argument("--markdown", metavar="PATH.md", help="write the report as a Markdown section")
    p.add_argument("--report", metavar="PATH.html",
                   help="write the report as a self-contained HTML page (every mutant's diff, rows and scorers)")
    p.add_argument("--review", metavar="DIR",
                   help="hand the survivors to evals review: their records and a review file in DIR, each "
                        "survivor a draft failure mode with its changed runs noted (evals review then opens it)")
    p.add_argument("--force", action="store_true",
                   help="let --markdown and --report replace an existing file, and --review its review file")
    return p


def check_args(a: argparse.Namespace) -> list[int]:
    from turngate.jobs.executors import check_executor

    for name, low in (("parallelism", 1), ("max_model_calls", 1), ("jobs", 1), ("workers", 1), ("propose", 1)):
        if getattr(a, name) is not None and getattr(a, name) < low:
            raise ConfigError(f"--{name.replace('_', '-')} must be at least {low}")
    cli.check_positive(a.timeout, "--timeout")
    cli.check_keys(a.model, "--model")
    if a.proposer and not a.propose:
        raise ConfigError("--proposer: give --propose N, the number of edits to ask for")
    if a.propose and not proposer(a):
        raise ConfigError("--propose: name the model to ask with --proposer openai:<m> (or --model openai:<m>)")
    if not Path(a.dataset).is_file():
        raise ConfigError(f"--dataset {a.dataset}: no such dataset file")
    if not Path(a.thresholds).is_file():
        raise ConfigError(f"--thresholds {a.thresholds}: no such bars file")
    if a.no_reference and a.reference:
        raise ConfigError("--reference and --no-reference: give one")
    check_executor(a.executor)  # --executor ray without ray installed: one line, exit 2
    cli.check_out_dir(a.out)
    for flag, path in (("--markdown", a.markdown), ("--report", a.report)):
        if path:
            cli.check_new_file(path, flag, force=a.force, inputs=[a.dataset, a.thresholds])
    if a.review:
        from turngate.mutate.handoff import check_folder

        check_folder(a.review, a.force)
    if a.markdown and a.report and Path(a.markdown).resolve() == Path(a.report).resolve():
        raise ConfigError(f"--markdown and --report: both {a.markdown}; give two files")
    return seeds_from_args(a.seeds, a.trials)


def proposer(a: argparse.Namespace) -> str | None:
    """The model --propose asks: --proposer, else --model when it is a provider's."""
    if a.proposer:
        return a.proposer
    return a.model if a.model and a.model.split(":", 1)[0] in ("openai", "orq") else None


def chosen(mutants: list[Mutant], prefixes: list[str] | None) -> list[Mutant]:
    if not prefixes:
        return mutants
    kept = [m for m in mutants if any(m.id.startswith(p) for p in prefixes)]
    if not kept:
        raise ConfigError(f"--mutants {' '.join(prefixes)}: no mutant's id starts with these (see --dry-run --list)")
    return kept


def dry_run(a, target, mutants: list[Mutant], seeds: list[int]) -> list[str]:
    """The plan: mutants, gates, runs and model calls, from the gate's own estimate per run."""
    from collections import Counter

    from turngate.gate.dry_run import expected_calls
    from turngate.gate.run import AgentSpec, load_rows_for
    from turngate.jobs.runner import duration_hints
    from turngate.jobs.target import version_of
    from turngate.sources.row_sources import source_for

    rows = load_rows_for(source_for(a.dataset, None), AgentSpec(a.agent, TargetOptions(), target)).rows
    pairs = [(row, s) for row in rows for s in seeds]
    # per-row counts from a mutation run's own baseline, else from the gate's results in --out
    hints = duration_hints(Path(a.out) / "mutate", version_of(target)) or duration_hints(Path(a.out), version_of(target))
    calls, guessed = expected_calls(pairs, hints)
    gates = len(mutants) + 1
    # behaviour at temperature 0 (turngate/mutate/runner.py): one more gate for the baseline and
    # for each mutant the gate does not kill, but those changing the temperature
    t = target.mutable().temperature
    probes = 1 + sum(m.edited.temperature == t for m in mutants) if t else 0
    ops = Counter(m.operator for m in mutants)
    lines = [f"dry run: {len(mutants)} mutants of {version_of(target)} ("
             + ", ".join(f"{n} {op}" for op, n in ops.items()) + f") + the baseline = {gates} gates"
             + (f", and up to {probes} more at temperature 0 to compare behaviour" if probes else ""),
             f"  each: {len(rows)} rows x {len(seeds)} seed(s) ({format_seeds(seeds)}) = {len(pairs)} runs, "
             f"about {calls} agent model calls"
             + (f" ({guessed} run(s) guessed at 3 per user turn)" if guessed else " (stored per-row counts)"),
             f"  in all: at most {(gates + probes) * len(pairs)} runs, about {(gates + probes) * calls} agent model "
             "calls; confirmation reruns of flagged rows may add runs, not counted"]
    if a.max_model_calls:
        fit = max(0, a.max_model_calls // max(1, calls * (2 if probes else 1)) - 1)  # the baseline first
        lines.append(f"  --max-model-calls {a.max_model_calls}: about {min(fit, len(mutants))} of {len(mutants)} "
                     "mutants fit; the rest are reported as not run")
    if a.propose:
        lines.append(f"  --propose {a.propose}: {proposer(a)} is asked once for up to {a.propose} more mutants before "
                     "the gates (not asked in a dry run), each a gate like the rest")
    if a.list:
        lines += [f"  {m.id}: {m.description}" for m in mutants]
    lines.append("nothing run: no agent call, no results file written")
    return lines


def proposed(a: argparse.Namespace, base) -> list[Mutant]:
    """The proposer's valid edits as mutants; each one dropped is said on a line (stderr with --json)."""
    from turngate.mutate.propose import propose

    got = propose(base, a.propose, proposer(a), timeout=a.timeout)
    say = console.print if not a.json else (lambda line, **_: print(line, file=sys.stderr))
    say(f"--propose {a.propose}: {got.model} proposed {len(got.mutants)} valid edit(s)"
        + (f", {len(got.dropped)} dropped" if got.dropped else ""), markup=False, highlight=False)
    for why in got.dropped:
        say(f"  dropped: {why}", markup=False, highlight=False)
    return got.mutants


@cli.guarded
def main(argv=None) -> int:
    from turngate.core.atomic_write import write_atomic
    from turngate.core.plugins import load_plugins
    from turngate.jobs.target import load_target, version_of
    from turngate.mutate.edits import edit_mutant
    from turngate.mutate.operators import mutants_of
    from turngate.mutate.page import page
    from turngate.mutate.protocol import mutable_of
    from turngate.mutate.report import markdown, print_report, summary
    from turngate.mutate.runner import GateSettings, run_mutation
    from turngate.output.console import use_stderr

    a = parser().parse_args(argv)
    seeds = check_args(a)
    load_plugins()  # the project's expect keys and scorers, before any row is read
    options = TargetOptions(version=a.version, model=a.model, timeout=a.timeout)
    target = load_target(a.agent, options)
    base = mutable_of(target, a.agent)
    made = mutants_of(base) + [edit_mutant(path, base) for path in a.edits or []]
    ids = [m.id for m in made]
    if dup := sorted({i for i in ids if ids.count(i) > 1}):
        raise ConfigError(f"--edits: two edits make mutant {dup[0]}; give the files different names")
    if a.propose and not a.dry_run and (not a.operators or "llm" in a.operators):
        made += proposed(a, base)
    mutants = chosen([m for m in made if not a.operators or m.operator in a.operators], a.mutants)
    if a.dry_run:
        print("\n".join(dry_run(a, target, mutants, seeds)))  # plain lines, never wrapped
        return cli.EXIT_PASS
    reference = False if a.no_reference else a.reference
    settings = GateSettings(dataset=a.dataset, thresholds=a.thresholds, reference=reference, seeds=tuple(seeds),
                            parallelism=a.parallelism, judge=a.judge, timeout=a.timeout,
                            out=str(Path(a.out) / "mutate"), workers=a.workers, executor=a.executor,
                            options=options)
    Path(settings.out).mkdir(parents=True, exist_ok=True)
    version = version_of(target)
    with use_stderr() if a.json else contextlib.nullcontext():
        console.print(f"mutate {version}: {len(mutants)} mutants, each gated on seeds {format_seeds(seeds)}",
                      markup=False, highlight=False)
        run = asyncio.run(run_mutation(target, a.agent, version, mutants, settings, a.max_model_calls,
                                       lambda line: console.print(line, markup=False, highlight=False), a.resume,
                                       a.jobs))
        data = summary(run)
        print_report(data)
        if a.markdown:
            write_atomic(a.markdown, markdown(data), what="the Markdown report")
            console.print(f"markdown: {a.markdown}", markup=False, highlight=False)
        if a.report:
            write_atomic(a.report, page(data), what="the HTML report")
            console.print(f"report: {a.report}", markup=False, highlight=False)
        if a.review:
            from turngate.mutate.handoff import write_handoff

            handed = write_handoff(run, a.review)
            data["review"] = {"folder": str(handed.folder), "file": str(handed.review), "survivors": handed.survivors,
                              "runs": handed.runs, "command": handed.command}
            console.print(f"review: {handed.survivors} survivor(s), {handed.runs} changed run(s) noted in "
                          f"{handed.review}; open them with: {handed.command}" if handed.survivors else
                          "review: no survivor to hand over; nothing written", markup=False, highlight=False)
    if a.json:
        print(json.dumps(data))
    return cli.EXIT_PASS
