"""How much can the gate see? Its false-alarm rate on an unchanged version and its detection
rate for one-change variants, measured on held-out seeds.

    python scripts/gate_power.py --version v3 --trials 1            # 20 one-trial gates per variant
    python scripts/gate_power.py --version v3 --trials 5            # 20 five-trial gates per variant
    python scripts/gate_power.py --version v3 --seeds 100-119 --variants unchanged no-clause-5 redact-off

Variants of the version are written as version files in a temporary directory: each policy
clause of the prompt deleted in turn, one clause added (ADDED: a rule that makes a known mistake,
such as "add-claims-done", which reports every request as completed whatever the tool replied),
each server switch flipped (hardened, redact), a hotter offline model (temperature 0.5) and the
previous version's settings (v2: switches off). `--write-versions DIR` writes the version files
there and exits, for `evals gate --version DIR/<file>.toml`. Each
runs once over all held-out seeds, in this process; the seeds are cut into K blocks of
--trials seeds and each block is judged as one gate run by turngate.verdict.decide.decide against the
committed bars and reference. Held-out means: no seed of the reference (refused otherwise).
Default seeds: K=20 blocks starting right after the reference's last seed.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
import time
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from rich.table import Table

from app.refund_agent.versions import load_version
from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.core.seeds import format_seeds, parse_seeds
from turngate.gate.run import DEFAULT_AGENT, DEFAULT_DATASET, agents_for, load_rows_for, run_seeds
from turngate.jobs.runner import Settings
from turngate.jobs.target import TargetOptions
from turngate.output.console import console
from turngate.output.wording import decide
from turngate.record.summaries import ConfirmationSummary
from turngate.scoring.scorers import make_evaluators, registry
from turngate.sources.row_sources import source_for
from turngate.verdict.decide import plan_reruns, rerun_stops, reruns_needed
from turngate.verdict.policy import DEFAULT, RETIRED, GatePolicy
from turngate.verdict.reference import DEFAULT_PATH as REFERENCE_PATH
from turngate.verdict.reference import check_rows, load_reference
from turngate.verdict.stats import wilson
from turngate.verdict.summary import summarise
from turngate.verdict.thresholds import DEFAULT_PATH, load_thresholds


@dataclass
class Variant:
    name: str
    change: str
    fields: dict  # the version file's fields


def policy_clauses(instructions: str) -> list[tuple[int, int]]:
    """(first, last) line index of each bullet under the prompt's "Policy:" heading, with its
    indented continuation lines."""
    lines = instructions.splitlines()
    out, i, in_policy = [], 0, False
    while i < len(lines):
        if lines[i].strip().lower().startswith("policy"):
            in_policy = True
        elif in_policy and lines[i].lstrip().startswith("- "):
            j = i
            while j + 1 < len(lines) and lines[j + 1].startswith((" ", "\t")) and not lines[j + 1].lstrip().startswith("- "):
                j += 1
            out.append((i, j))
            i = j
        elif in_policy and lines[i].strip() and not lines[i].startswith((" ", "\t")):
            in_policy = False
        i += 1
    return out


# One-change variants that add a policy bullet: name -> the bullet. Each makes one failure mode
# of evals/TAXONOMY.md on purpose, to show the gate names its scorer.
ADDED = {
    # M8 (claims_match_actions): a write the tool refused is told as done
    "claims-done": "- Always tell the customer their request has been completed.",
}


def slug(text: str, words: int = 4) -> str:
    return "-".join(re.findall(r"[a-z0-9]+", text.lower())[:words])


def variants_of(version: str, previous: str | None) -> list[Variant]:
    spec = load_version(version)
    base = {"description": spec.description, "model": spec.model, "hardened": spec.hardened,
            "redact": spec.redact, "instructions": spec.instructions}
    out = [Variant("unchanged", "none", dict(base))]
    lines = spec.instructions.splitlines()
    k = 0
    for a, b in policy_clauses(spec.instructions):
        bullet = " ".join(x.strip() for x in lines[a:b + 1])[2:]
        sentences = re.split(r"(?<=[.!?])\s+(?=[A-Z])", bullet)
        # a bullet holding several rules (window, limit, escalation) loses one sentence at a time
        for gone in range(len(sentences)) if len(sentences) > 1 else [None]:
            kept = [x for i, x in enumerate(sentences) if i != gone]
            clause = bullet if gone is None else sentences[gone]
            k += 1
            text = lines[:a] + ([f"- {' '.join(kept)}"] if gone is not None else []) + lines[b + 1:]
            out.append(Variant(f"no-clause-{k}-{slug(clause)}", f'deleted: "{clause[:70]}"',
                               {**base, "instructions": "\n".join(text)}))
    if clauses := policy_clauses(spec.instructions):
        last = clauses[-1][1]
        for name, bullet in ADDED.items():
            text = lines[:last + 1] + [bullet] + lines[last + 1:]
            out.append(Variant(f"add-{name}", f'added: "{bullet[2:][:70]}"', {**base, "instructions": "\n".join(text)}))
    for switch in ("hardened", "redact"):
        state = "off" if base[switch] else "on"
        out.append(Variant(f"{switch}-{state}", f"{switch} = {not base[switch]}", {**base, switch: not base[switch]}))
    if base["model"].startswith("offline"):
        out.append(Variant("temperature-0.5", "model offline:temperature=0.5", {**base, "model": "offline:temperature=0.5"}))
    if previous:
        prev = load_version(previous)
        settings = {"model": prev.model, "hardened": prev.hardened, "redact": prev.redact}
        if any(base[k] != v for k, v in settings.items()):
            out.append(Variant(f"{previous}-settings", f"{previous}'s model and switches "
                               + ", ".join(f"{k}={v}" for k, v in settings.items()), {**base, **settings}))
    return out


def policy_arg(text: str) -> tuple[str, GatePolicy]:
    """--policy NAME:KNOB=V,KNOB=V -> (NAME, the default policy with those knobs)."""
    name, _, knobs = text.partition(":")
    try:
        values = {k.strip(): float(v) for k, v in (kv.split("=", 1) for kv in knobs.split(",") if kv.strip())}
        if retired := sorted(set(values) & RETIRED):
            raise ValueError(f"{', '.join(retired)}: a knob of an earlier decision rule (docs/validation-gate.md 7.2)")
        fields = {k: int(v) if isinstance(getattr(DEFAULT, k, None), int) else v for k, v in values.items()}
        return name, GatePolicy.from_dict(DEFAULT.as_dict() | fields)
    except ValueError as exc:
        raise ConfigError(f"--policy {text}: {exc}") from None


def toml_file(fields: dict) -> str:
    """A version file; JSON string escapes are valid TOML basic strings."""
    def value(v):
        return ("true" if v else "false") if isinstance(v, bool) else json.dumps(v)
    return "".join(f"{k} = {value(v)}\n" for k, v in fields.items())


def blocks_of(seeds: list[int], trials: int) -> list[list[int]]:
    return [seeds[i:i + trials] for i in range(0, len(seeds) - trials + 1, trials)]


def gate_blocks(runs, rows, blocks, reference, reg, rerun=None, policy: GatePolicy = DEFAULT) -> list[dict]:
    """Judge each block of seeds as one gate run of the variant (runs: its RunResults), with the
    confirmation reruns the gate would make under `policy`: rerun(plan) runs {row: seeds} and
    returns RunResults."""
    bars = {n: s.bar for n, s in reg.items()}
    by_seed: dict[int, list] = {}
    for r in runs:
        by_seed.setdefault(r.trial, []).append(r)
    out = []
    for block in blocks:
        block_runs = [r for s in block for r in by_seed.get(s, [])]
        summary = summarise(block_runs, rows, bars, len(block))
        reruns, per_row = 0, {}
        if rerun is not None:
            plan = plan_reruns(summary, reference, list(block), below_bar=summary.below(bars), policy=policy)
            stops = rerun_stops(summary, reference, below_bar=summary.below(bars), policy=policy)
            got = rerun(plan) if plan else []
            if stops:  # a row that stops early keeps only the reruns its batches called for
                by_row: dict[str, list] = {}
                for r in got:
                    by_row.setdefault(r.row_id, []).append(r)
                got = [r for rid, rs in by_row.items()
                       for r in (rs[:reruns_needed(stops[rid], rs, reference)] if rid in stops else rs)]
            conf = summarise(got, rows, bars, len(block))
            summary.confirmation = ConfirmationSummary.of(conf, rows=len(plan), runs=len(got))
            reruns = len(got)
            per_row = dict(Counter(r.row_id for r in got))
        v = decide(summary, reference, reg, policy=policy)
        gave = [f"{x.row_id} / {x.scorer}" for x in v.regressed if x.kind == "row"]
        gave += [f"{n} mean" for n, s in v.scorers.items() if s.ok is False]
        gave += [f"total: {x.scorer}" for x in v.regressed if x.kind == "aggregate"]
        out.append({"seeds": format_seeds(block), "exit_code": v.exit_code, "gave_away": gave, "line": v.line,
                    "reruns": reruns, "rerun_rows": per_row, "runs": len(block_runs), "flaky": [x.row_id for x in v.flaky]})
    return out


def rerunner(agents, loaded, settings, evaluators, cache: Path | None = None):
    """Confirmation reruns in this process, each (row, seed) run once and kept (in `cache` too,
    when given, so another policy or another invocation replays the same reruns)."""
    from turngate.gate.run import execute, new_record

    done: dict[tuple[str, int], object] = {}
    if cache is not None and cache.exists():
        done = {(r.row_id, r.trial): r for r in load_runs(cache)}
    by_id = {r.id: r for r in loaded.rows}

    def rerun(plan: dict[str, list[int]]) -> list:
        todo = [(by_id[rid], s) for rid, seeds in plan.items() for s in seeds if (rid, s) not in done]
        if todo:
            record = new_record(agents, loaded, loaded.rows, settings, {}, ["gate_power", "confirm"])
            with tempfile.TemporaryDirectory() as tmp:
                if not execute(record, todo, settings, Path(tmp) / "confirm.json", agents, evaluators):
                    raise KeyboardInterrupt
            for r in record.runs:
                done[(r.row_id, r.trial)] = r
            if cache is not None:
                save_runs(list(done.values()), cache)
        return [done[(rid, s)] for rid, seeds in plan.items() for s in seeds]

    return rerun


def save_runs(runs, path: Path) -> None:
    """Only what a verdict needs: row, seed and each scorer's pass / fail / n-a."""
    path.write_text(json.dumps([[r.row_id, r.trial, {n: v.passed for n, v in r.verdicts.items()}] for r in runs]))


def load_runs(path: Path) -> list:
    from turngate.record.results import RunResult, ScorerVerdict

    return [RunResult(row_id=rid, trial=seed, seed=seed, version="variant", job="variant",
                      turn={"version": "variant", "model": "offline", "seed": seed},
                      verdicts={n: ScorerVerdict(passed=p, explanation="") for n, p in v.items()})
            for rid, seed, v in json.loads(path.read_text())]


@cli.guarded
def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/gate_power.py", description=__doc__.splitlines()[0])
    p.add_argument("--version", default="v3", help="version name or version file (default v3)")
    p.add_argument("--trials", type=int, nargs="+", default=[1],
                   help="seeds per gate; several (1 5) are judged from the same runs (default 1)")
    p.add_argument("--blocks", type=int, default=20, help="gates per variant and --trials value (default 20)")
    p.add_argument("--seeds", help="held-out seeds, cut into blocks (default: right after the reference's seeds)")
    p.add_argument("--variants", nargs="+", help="only these variants (names as printed; prefixes match)")
    p.add_argument("--previous", default="v2", help="version whose settings make one variant (default v2; 'none')")
    p.add_argument("--thresholds", default=str(DEFAULT_PATH))
    p.add_argument("--reference", default=str(REFERENCE_PATH))
    p.add_argument("--dataset", default=str(DEFAULT_DATASET))
    p.add_argument("--parallelism", type=int, default=16)
    p.add_argument("--runs-dir", help="keep each variant's verdicts here; a variant already there is not run again")
    p.add_argument("--out", help="also write the figures as JSON here")
    p.add_argument("--write-versions", metavar="DIR",
                   help="write the variants' version files (<version>-<variant>.toml) here and exit")
    p.add_argument("--policy", action="append", metavar="NAME:KNOB=V,...", default=[],
                   help="judge under this GatePolicy too (turngate/verdict/policy.py), e.g. "
                        "lean:power_rate=1.0,k_quiet_per_trial=6; repeatable; the default policy always")
    a = p.parse_args(argv)
    if a.write_versions:
        out_dir = Path(a.write_versions)
        out_dir.mkdir(parents=True, exist_ok=True)
        chosen = variants_of(a.version, None if a.previous == "none" else a.previous)
        chosen = [v for v in chosen if not a.variants or any(v.name.startswith(w) for w in a.variants)]
        if not chosen:
            raise ConfigError(f"--variants {' '.join(a.variants)}: none of these is a variant of {a.version}")
        for v in chosen:
            path = out_dir / f"{Path(a.version).stem}-{v.name}.toml"
            path.write_text(toml_file(v.fields))
            console.print(f"{path}: {v.change}", markup=False)
        return 0
    if min(a.trials) < 1 or a.blocks < 1:
        raise ConfigError("--trials and --blocks must be at least 1")
    reg = registry(load_thresholds(a.thresholds))
    reference = load_reference(a.reference)
    if a.seeds:
        pool = parse_seeds(a.seeds)
    else:
        start = max(reference.seeds) + 1 if reference.seeds else 0
        pool = list(range(start, start + a.blocks * max(a.trials)))
    if overlap := sorted(set(pool) & set(reference.seeds)):
        raise ConfigError(f"--seeds: {format_seeds(overlap)} calibrated the reference; held-out seeds must not")
    policies = {"default": DEFAULT} | dict(policy_arg(x) for x in a.policy)
    plan = {t: blocks_of(pool, t)[:a.blocks] for t in a.trials}
    if not all(plan.values()):
        raise ConfigError(f"--seeds {format_seeds(pool)}: fewer seeds than --trials {max(a.trials)}")
    seeds = sorted({s for blocks in plan.values() for b in blocks for s in b})
    variants = variants_of(a.version, None if a.previous == "none" else a.previous)
    if a.variants:
        variants = [v for v in variants if any(v.name.startswith(w) for w in a.variants)]
        if not variants:
            raise ConfigError(f"--variants {' '.join(a.variants)}: none of these is a variant of {a.version}")
    evaluators = make_evaluators("offline")
    settings = Settings(judge="offline", trials=len(seeds), parallelism=a.parallelism, upload=False,
                        print_table=False)
    console.print(f"gate power of {a.version}: {len(variants)} variants; "
                  + ", ".join(f"{len(b)} gates of {t} trial(s)" for t, b in plan.items())
                  + f"; held-out seeds {format_seeds(seeds)}; reference {reference.provenance.get('version')} "
                  f"seeds {format_seeds(reference.seeds)}")
    runs_dir = Path(a.runs_dir) if a.runs_dir else None
    if runs_dir:
        runs_dir.mkdir(parents=True, exist_ok=True)
    results = {(name, t): [] for name in policies for t in plan}
    with tempfile.TemporaryDirectory() as tmp:
        for v in variants:
            started = time.perf_counter()
            path = Path(tmp) / f"{a.version}-{v.name}.toml"
            path.write_text(toml_file(v.fields))
            agents = agents_for(DEFAULT_AGENT, TargetOptions(version=str(path)))
            loaded = load_rows_for(source_for(a.dataset, None), agents[0])
            row_dicts = [r.model_dump(mode="json", exclude_unset=True) for r in loaded.rows]
            check_rows(reference, row_dicts, a.reference)
            cached = runs_dir / f"{v.name}.json" if runs_dir else None
            runs = load_runs(cached) if cached and cached.exists() else []
            if not {r.trial for r in runs} >= set(seeds):
                record, done = run_seeds(agents, loaded, loaded.rows, seeds, settings, evaluators, ["gate_power"])
                if not done:
                    return cli.EXIT_UNJUDGED
                runs = record.runs_for(record.meta.version)
                if cached:
                    save_runs(runs, cached)
            rows = {r["id"]: r for r in row_dicts}
            rerun = rerunner(agents, loaded, settings, evaluators,
                             runs_dir / f"{v.name}.reruns.json" if runs_dir else None)
            line = []
            for (name, t), out in results.items():
                gates = gate_blocks(runs, rows, plan[t], reference, reg, rerun, policies[name])
                failed = sum(1 for g in gates if g["exit_code"] == 1)
                low, high = wilson(failed, len(gates))
                tells = Counter(x for g in gates for x in g["gave_away"])
                reruns = sum(g["reruns"] for g in gates) / len(gates)
                share = sum(g["reruns"] for g in gates) / max(1, sum(g["runs"] for g in gates))
                out.append({"variant": v.name, "change": v.change, "gates": len(gates), "failed": failed,
                            "rate": failed / len(gates), "low": low, "high": high, "reruns": reruns,
                            "rerun_share": share, "gave_away": tells.most_common(), "blocks": gates})
                line.append(f"{failed}/{len(gates)} at {t} trial(s) ({name}, +{share:.0%} reruns)")
            console.print(f"  {v.name}: gates failed {', '.join(line)} ({time.perf_counter() - started:.0f} s)",
                          markup=False)
    for (name, t), rs in results.items():
        t_ = Table(title=f"gate power: {a.version}, policy {name}, {len(plan[t])} held-out gates of {t} trial(s) each "
                         f"(seeds {format_seeds(sorted({s for b in plan[t] for s in b}))})")
        for col in ("variant", "change", "gates failed", "rate", "95% Wilson", "reruns per gate",
                    "what gave it away (gates)"):
            t_.add_column(col, overflow="fold")
        for r in rs:
            label = "false alarms" if r["variant"] == "unchanged" else "detected"
            t_.add_row(r["variant"], r["change"], f"{r['failed']}/{r['gates']} {label}", f"{r['rate']:.2f}",
                       f"{r['low']:.2f}-{r['high']:.2f}", f"{r['reruns']:.1f} (+{r['rerun_share']:.0%})",
                       "; ".join(f"{k} ({n})" for k, n in r["gave_away"][:3]))
        console.print(t_)
    if a.out:
        Path(a.out).write_text(json.dumps({"version": a.version, "seeds": format_seeds(seeds),
                                           "reference": reference.provenance,
                                           "policies": {n: p.as_dict() for n, p in policies.items()},
                                           "results": {f"{n}/{t}": rs for (n, t), rs in results.items()}}, indent=1))
        console.print(f"figures: {a.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
