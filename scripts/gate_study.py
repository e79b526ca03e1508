"""How often does the gate fail an unchanged version, and how often does it see a break?
Measured on simulated fresh worlds, never on the accepted run the gate is judged against.

    python scripts/gate_study.py                                  # 400 worlds per cell, t = 1 3 5 10 20, refs 20, 100 and 300
    python scripts/gate_study.py --worlds 100 --trials 1 5 --refs 20

Each simulated gate: (1) a *truth* is drawn from the committed reference's posterior: per row, the
rates of its failure patterns (which scorers fail together in one run) from a Dirichlet over the
accepted counts, plus a Jeffreys-sized chance of a failure the accepted run never showed; (2) a
*new reference* of 20, 100 or 300 runs per row is drawn from that truth, and bars are proposed from it
exactly as calibrate.py does; (3) a fresh gate of t runs per row is drawn from the same truth and
judged by turngate.verdict.decide.decide against that reference, with its confirmation reruns drawn from the
truth too. The false-alarm rate is the share of gates that fail; a break ("one row now fails every
run" on a row the accepted run fails now and then, or never) measures detection.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from turngate.commands.calibrate import propose
from turngate.verdict.policy import DEFAULT, RETIRED, GatePolicy
from turngate.verdict.reference import Reference, load_reference
from turngate.verdict.sensitivity import (  # the pieces the gate's own sensitivity statement uses
    Break,
    Truth,
    all_patterns,
    draw,
    draw_truth,
    simulate_gate,
    summary_of,
)
from turngate.verdict.sensitivity import simulated_reference as reference_of
from turngate.verdict.stats import wilson

REPO = Path(__file__).resolve().parents[1]

BUDGET = DEFAULT.false_alarm_bound  # the documented false-alarm bound per gate (docs/gate.md#the-policy)


class Bars(dict):
    """name -> object with .bar, as decide() reads a registry."""


def one_gate(truth: Truth, reference: Reference, bars: dict, trials: int, rng: np.random.Generator,
             broken: dict | None = None, confirm: bool = True, policy: GatePolicy = DEFAULT) -> tuple[int, dict]:
    """A simulated gate (turngate/verdict/sensitivity.py simulate_gate). broken: row -> the set it
    now fails on every run."""
    brk = None
    if broken:
        (rid, fails), = broken.items()
        brk = Break.row(rid, fails)
    return simulate_gate(truth, reference, bars, trials, rng, brk, confirm=confirm, policy=policy)


def world(base: Reference, ref_trials: int, rng: np.random.Generator,
          patterns: dict | None = None) -> tuple[dict, Reference, dict]:
    """A truth, a reference drawn from it, and the bars calibrate.py would propose from that reference."""
    truth = draw_truth(base, rng, patterns)
    seeds = list(range(ref_trials))
    runs = draw(truth, list(truth), ref_trials, rng)
    ref = reference_of(truth, runs, seeds)
    summary = summary_of(truth, runs, ref_trials)
    bars = Bars({n: type("Bar", (), {"bar": b.bar})() for n, b in propose(summary, ref_trials).items()})
    for n in summary.scorers:  # a scorer propose() left out (no verdicts) still needs a bar
        bars.setdefault(n, type("Bar", (), {"bar": 0.0})())
    return truth, ref, bars


def clean_share(pats: list, probs) -> float:
    """How often a row's runs pass every scorer: 0 for a row that always fails one (no clean pattern)."""
    return probs[pats.index(frozenset())] if frozenset() in pats else 0.0


def study(base: Reference, worlds: int, trials: list[int], refs: list[int], seed: int = 0,
          breaks: bool = True, policy: GatePolicy = DEFAULT) -> dict:
    """False-alarm (and, with breaks, detection) rates per (reference size, trials)."""
    rng = np.random.default_rng(seed)
    patterns = all_patterns(base)  # the same every world: drawn truths differ, not the accepted counts
    out = {}
    for ref_trials in refs:
        for t in trials:
            fails, why, reruns, caught_noisy, caught_quiet, n_break = 0, Counter(), [], 0, 0, 0
            for _ in range(worlds):
                truth, ref, bars = world(base, ref_trials, rng, patterns)
                code, info = one_gate(truth, ref, bars, t, rng, policy=policy)
                fails += code == 1
                why[info["why"] or "pass"] += 1
                reruns.append(info["reruns"])
                if breaks:
                    noisy = [rid for rid, (a, _, pats, probs) in truth.items()
                             if a and 0.03 < 1 - clean_share(pats, probs) < 0.3]
                    quiet = [rid for rid, (a, _, pats, probs) in truth.items()
                             if a and 1 - clean_share(pats, probs) < 0.01]
                    if noisy and quiet:
                        n_break += 1
                        rid = noisy[rng.integers(len(noisy))]
                        bad = frozenset([truth[rid][0][rng.integers(len(truth[rid][0]))]])
                        caught_noisy += one_gate(truth, ref, bars, t, rng, broken={rid: bad}, policy=policy)[0] == 1
                        rid = quiet[rng.integers(len(quiet))]
                        bad = frozenset([truth[rid][0][rng.integers(len(truth[rid][0]))]])
                        caught_quiet += one_gate(truth, ref, bars, t, rng, broken={rid: bad}, policy=policy)[0] == 1
            low, high = wilson(fails, worlds)
            out[f"ref{ref_trials}-t{t}"] = {
                "reference_trials": ref_trials, "trials": t, "gates": worlds, "false_alarms": fails,
                "rate": fails / worlds, "interval": [round(low, 4), round(high, 4)], "why": dict(why),
                "mean_reruns": round(float(np.mean(reruns)), 1),
                "break_noisy_caught": f"{caught_noisy}/{n_break}", "break_quiet_caught": f"{caught_quiet}/{n_break}"}
    return out


SPREAD_ROWS, SPREAD_RATE = 12, 0.1  # the quiet-spread break: hardened-off's size (docs/validation-gate.md 1)
HOT = 2.0  # the hot break: every failure pattern of every row this many times as likely (temperature 0.5: ~2x)


def hotter(truth: Truth, factor: float = HOT) -> Truth:
    """The truth of a hotter model: each row's failure patterns `factor` times as likely, taken
    from its clean runs (all of them, at most)."""
    out = {}
    for rid, (a, na, pats, probs) in truth.items():
        clean = [i for i, p in enumerate(pats) if not p]
        failing = 1 - sum(probs[i] for i in clean)
        scale = min(factor, 1 / failing) if failing > 0 else 1.0
        new = np.array([pr * scale if pt else 0.0 for pt, pr in zip(pats, probs, strict=True)])
        if clean:
            new[clean[0]] = max(0.0, 1 - new.sum())
        out[rid] = (a, na, pats, new / new.sum())
    return out


def spread_break(truth: Truth, rng: np.random.Generator) -> Break | None:
    """Hardened tools off, simulated: a scorer, and up to SPREAD_ROWS rows that (nearly) never fail
    it (truth < 1%), each now failing it on SPREAD_RATE of its runs on top (quiet rows failing one
    run in ten; docs/validation-gate.md section 1)."""
    names = sorted({n for a, _, _, _ in truth.values() for n in a})
    name = names[rng.integers(len(names))]
    quiet = [rid for rid, (a, _, pats, probs) in truth.items()
             if name in a and sum(pr for pt, pr in zip(pats, probs, strict=True) if name in pt) < 0.01]
    picked = [quiet[i] for i in rng.permutation(len(quiet))[:SPREAD_ROWS]]
    return Break(fails=frozenset([name]), rows=frozenset(picked), rate=SPREAD_RATE, replace=False) if picked else None


def compare_devices(base: Reference, worlds: int, trials: list[int], refs: list[int], seed: int,
                    policies: dict[str, GatePolicy]) -> dict:
    """Several policies judged on the same simulated gates: each world, and each of its gates
    (unchanged, a noisy row broken, a quiet row broken, a hotter model, a quiet spread), draws from its own
    stream (seed, reference, trials, world, gate), and every policy judges the gate drawn from the
    same state of that stream (its reruns, whose number the policy decides, continue it). Per cell
    and policy: false alarms, reruns per unchanged gate, and each break's gates caught (and their
    reruns)."""
    patterns = all_patterns(base)
    kinds = ("unchanged", "noisy", "quiet", "hot", "spread")
    out = {}
    for ref_trials in refs:
        for t in trials:
            cell = {name: {k: [0, 0, 0] for k in kinds} for name in policies}  # caught, gates, reruns
            for w in range(worlds):
                wrng = np.random.default_rng([seed, ref_trials, t, w])
                truth, ref, bars = world(base, ref_trials, wrng, patterns)
                breaks: dict[str, Break | None] = {"unchanged": None}
                noisy = [rid for rid, (a, _, pats, probs) in truth.items()
                         if a and 0.03 < 1 - clean_share(pats, probs) < 0.3]
                quiet = [rid for rid, (a, _, pats, probs) in truth.items()
                         if a and 1 - clean_share(pats, probs) < 0.01]
                for kind, pool in (("noisy", noisy), ("quiet", quiet)):
                    rid = pool[wrng.integers(len(pool))] if pool else None
                    breaks[kind] = (Break.row(rid, frozenset([truth[rid][0][wrng.integers(len(truth[rid][0]))]]))
                                    if rid else None)
                breaks["spread"] = spread_break(truth, wrng)
                hot = hotter(truth)
                for g, kind in enumerate(kinds):
                    if kind not in ("unchanged", "hot") and breaks[kind] is None:
                        continue
                    for name, policy in policies.items():
                        grng = np.random.default_rng([seed, ref_trials, t, w, 1 + g])
                        code, info = simulate_gate(hot if kind == "hot" else truth, ref, bars, t, grng,
                                                   breaks.get(kind), policy=policy)
                        c = cell[name][kind]
                        c[0] += code == 1
                        c[1] += 1
                        c[2] += info["reruns"]
            for name, per in cell.items():
                out[f"ref{ref_trials}-t{t}/{name}"] = {
                    "reference_trials": ref_trials, "trials": t, "policy": name,
                    **{k: {"caught": c, "gates": n, "mean_reruns": round(r / max(1, n), 1)}
                       for k, (c, n, r) in per.items()}}
    return out


def markdown(res: dict) -> str:
    """The study as docs/validation.md shows it."""
    out = ["| reference | trials | unchanged: gates failed | 95% Wilson | reruns per gate | noisy row broken: caught "
           "| quiet row broken: caught |", "|---|---|---|---|---|---|---|"]
    for r in res.values():
        lo, hi = r["interval"]
        out.append(f"| {r['reference_trials']} runs | {r['trials']} | {r['false_alarms']}/{r['gates']} | "
                   f"[{lo:.3f}, {hi:.3f}] | {r['mean_reruns']} | {r['break_noisy_caught']} | {r['break_quiet_caught']} |")
    return "\n".join(out)


def policy_of(text: str) -> GatePolicy:
    """KNOB=V,KNOB=V -> the default policy with those knobs (an unknown knob: exit 2, one line)."""
    try:
        values = {k.strip(): float(v) for k, v in (kv.split("=", 1) for kv in text.split(",") if kv.strip())}
        if retired := sorted(set(values) & RETIRED):
            raise ValueError(f"{', '.join(retired)}: a knob of an earlier decision rule (docs/validation-gate.md 7.2)")
        return GatePolicy.from_dict(DEFAULT.as_dict() | values)
    except ValueError as exc:
        print(f"error: --policy {text}: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/gate_study.py", description=__doc__.splitlines()[0])
    p.add_argument("--reference", default=str(REPO / "evals" / "reference.json"))
    p.add_argument("--worlds", type=int, default=400, help="simulated gates per (reference, trials) cell")
    p.add_argument("--trials", type=int, nargs="+", default=[1, 3, 5, 10, 20])
    p.add_argument("--refs", type=int, nargs="+", default=[20, 100, 300], help="accepted runs per row in the reference")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--no-breaks", action="store_true", help="false alarms only")
    p.add_argument("--out", help="write the table as JSON here")
    p.add_argument("--markdown", metavar="JSON", help="print the table of docs/validation.md from a --out file, and exit")
    p.add_argument("--policy", metavar="KNOB=V,...", default="",
                   help="judge under the default GatePolicy with these knobs changed, e.g. quiet_rate=0,"
                        "alpha_stage1_rows=0 (a device switched off: turngate/verdict/policy.py)")
    p.add_argument("--compare", action="append", metavar="NAME:KNOB=V,...", default=[],
                   help="judge the same simulated gates under the default policy (or --policy) and each of "
                        "these (repeatable): false alarms, reruns, and the breaks caught, diffuse ones too")
    a = p.parse_args(argv)
    if a.compare:
        named = {"default": policy_of(a.policy)}
        for text in a.compare:
            name, _, knobs = text.partition(":")
            named[name] = policy_of(",".join(x for x in (a.policy, knobs) if x))
        res = compare_devices(load_reference(a.reference), a.worlds, a.trials, a.refs, a.seed, named)
        print(f"{'cell':>12} {'policy':>10}  " + "  ".join(f"{k:>16}" for k in
                                                          ("unchanged", "noisy", "quiet", "hot", "spread")))
        for key, r in res.items():
            cells = [f"{r[k]['caught']}/{r[k]['gates']} ({r[k]['mean_reruns']})" for k in
                     ("unchanged", "noisy", "quiet", "hot", "spread")]
            print(f"{key.split('/')[0]:>12} {r['policy']:>10}  " + "  ".join(f"{c:>16}" for c in cells))
        if a.out:
            Path(a.out).write_text(json.dumps(res, indent=1))
        return 0
    if a.markdown:
        print(markdown(json.loads(Path(a.markdown).read_text())))
        return 0
    res = study(load_reference(a.reference), a.worlds, a.trials, a.refs, a.seed, not a.no_breaks,
                policy_of(a.policy))
    print(f"{'reference':>9} {'trials':>6} {'false alarms':>14} {'95% CI':>16}  {'reruns':>6}  "
          f"{'break, noisy row':>16} {'break, quiet row':>16}  why")
    for r in res.values():
        lo, hi = r["interval"]
        print(f"{r['reference_trials']:>9} {r['trials']:>6} {r['false_alarms']:>6}/{r['gates']:<7} "
              f"[{lo:.3f}, {hi:.3f}]  {r['mean_reruns']:>6}  {r['break_noisy_caught']:>16} "
              f"{r['break_quiet_caught']:>16}  {r['why']}")
    if a.out:
        Path(a.out).write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
