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
from turngate.record.summaries import (
    CellCounts,
    ConfirmationSummary,
    RunCount,
    ScorerSummary,
    Tally,
    VersionSummary,
)
from turngate.verdict.confirm import ANY, Counts
from turngate.verdict.decide import decide, plan_reruns, rerun_stops
from turngate.verdict.policy import DEFAULT, GatePolicy
from turngate.verdict.reference import PRIOR, Cell, Reference, RowRef, load_reference
from turngate.verdict.stats import wilson

REPO = Path(__file__).resolve().parents[1]

BUDGET = DEFAULT.false_alarm_bound  # the documented false-alarm bound per gate (docs/gate.md#the-policy)


class Bars(dict):
    """name -> object with .bar, as decide() reads a registry."""


def patterns_of(row: RowRef, seeds: list[int]) -> tuple[list[str], list[str], Counter]:
    """(applicable scorers, n/a scorers, Counter of failing-scorer sets over the accepted seeds)."""
    applicable = sorted(n for n, c in row.cells.items() if c.passed + c.failed)
    na = sorted(n for n, c in row.cells.items() if not c.passed + c.failed)
    by_seed: dict[int, set[str]] = {s: set() for s in seeds}
    for name, c in row.cells.items():
        for s in c.failed_seeds:
            by_seed.setdefault(s, set()).add(name)
    return applicable, na, Counter(frozenset(v) for v in by_seed.values())


def draw_truth(reference: Reference, rng: np.random.Generator) -> dict:
    """row -> (applicable, na, patterns, probabilities): a plausible world the accepted run came from."""
    truth = {}
    for rid, row in reference.rows.items():
        applicable, na, counts = patterns_of(row, reference.seeds)
        pats = list(counts)
        alpha = [counts[p] + (PRIOR if p else 0.0) for p in pats]
        if applicable:  # a failure the accepted run never showed: one scorer, Jeffreys-sized
            pats.append(frozenset([applicable[rng.integers(len(applicable))]]))
            alpha.append(PRIOR)
        truth[rid] = (applicable, na, pats, rng.dirichlet(alpha))
    return truth


def draw(truth: dict, rows: list[str], n: int, rng: np.random.Generator, broken: dict | None = None) -> dict:
    """row -> list of n failing-scorer sets. broken: row -> the set it now fails on every run."""
    out = {}
    for rid in rows:
        applicable, na, pats, probs = truth[rid]
        if broken and rid in broken:
            out[rid] = [broken[rid]] * n
        else:
            out[rid] = [pats[i] for i in rng.choice(len(pats), size=n, p=probs)]
    return out


def reference_of(truth: dict, runs: dict, seeds: list[int]) -> Reference:
    rows = {}
    for rid, pats in runs.items():
        applicable, na, _, _ = truth[rid]
        cells = {n: Cell(na=len(pats)) for n in na}
        for name in applicable:
            failed = [seeds[i] for i, p in enumerate(pats) if name in p]
            cells[name] = Cell(passed=len(pats) - len(failed), failed=len(failed), failed_seeds=failed)
        rows[rid] = RowRef(sha="0", cells=cells)
    return Reference(provenance={"version": "simulated"}, seeds=list(seeds), rows=rows)


def summary_of(truth: dict, runs: dict, trials: int, kind: type[Tally] = VersionSummary) -> Tally:
    """The numbers decide() reads, as turngate/verdict/summary.py computes them from runs."""
    cells, failed_runs, totals = {}, {}, Counter()
    for rid, pats in runs.items():
        applicable, na, _, _ = truth[rid]
        per = {n: CellCounts(na=len(pats)) for n in na}
        for name in applicable:
            f = sum(1 for p in pats if name in p)
            per[name] = CellCounts(passed=len(pats) - f, failed=f)
            totals[(name, "n")] += len(pats)
            totals[(name, "passed")] += len(pats) - f
        cells[rid] = per
        failed_runs[rid] = RunCount(runs=len(pats), failed=sum(1 for p in pats if p))
    names = sorted({n for per in cells.values() for n in per})
    scorers = {}
    for n in names:
        tot, ok = totals[(n, "n")], totals[(n, "passed")]
        low, high = wilson(ok, tot)
        scorers[n] = ScorerSummary(mean=ok / tot if tot else None, n=tot, passed=ok, low=low, high=high)
    return kind(runs=sum(len(p) for p in runs.values()), trials=trials, scorers=scorers, cells=cells,
                failed_runs=failed_runs)


def one_gate(truth: dict, reference: Reference, bars: dict, trials: int, rng: np.random.Generator,
             broken: dict | None = None, confirm: bool = True, policy: GatePolicy = DEFAULT) -> tuple[int, dict]:
    rows = list(truth)
    seeds = list(range(10_000, 10_000 + trials))
    summary = summary_of(truth, draw(truth, rows, trials, rng, broken), trials)
    below = summary.below({n: b.bar for n, b in bars.items()})
    plan = plan_reruns(summary, reference, seeds, below_bar=below, policy=policy) if confirm else {}
    if confirm:
        reruns = {rid: draw(truth, [rid], len(s), rng, broken)[rid] for rid, s in plan.items()}
        stops = rerun_stops(summary, reference, below_bar=below, policy=policy)
        for rid, stop in stops.items():  # a row that stops early keeps the reruns its batches called for
            applicable = truth[rid][0]
            outcomes = [{**{u: Counts(int(u in pats), 1) for u in applicable}, ANY: Counts(int(bool(pats)), 1)}
                        for pats in reruns[rid]]
            reruns[rid] = reruns[rid][:stop.needed(outcomes)]
        conf = summary_of(truth, reruns, trials, ConfirmationSummary) if reruns else ConfirmationSummary()
        conf.rows, conf.runs = len(plan), sum(len(s) for s in reruns.values())
        summary.confirmation = conf
    v = decide(summary, reference, bars, policy=policy)
    why = ("bar" if any(s.ok is False and s.mean is not None and s.bar is not None and s.mean < s.bar
                        for s in v.scorers.values()) else
           "row" if any(x.kind == "row" for x in v.regressed) else
           "aggregate" if v.regressed else "")
    return v.exit_code, {"why": why, "reruns": conf.runs if confirm else 0,
                         "regressed": [x.row_id for x in v.regressed]}


def world(base: Reference, ref_trials: int, rng: np.random.Generator) -> tuple[dict, Reference, dict]:
    """A truth, a reference drawn from it, and the bars calibrate.py would propose from that reference."""
    truth = draw_truth(base, rng)
    seeds = list(range(ref_trials))
    runs = draw(truth, list(truth), ref_trials, rng)
    ref = reference_of(truth, runs, seeds)
    summary = summary_of(truth, runs, ref_trials)
    bars = Bars({n: type("Bar", (), {"bar": b.bar})() for n, b in propose(summary, ref_trials).items()})
    for n in summary.scorers:  # a scorer propose() left out (no verdicts) still needs a bar
        bars.setdefault(n, type("Bar", (), {"bar": 0.0})())
    return truth, ref, bars


def study(base: Reference, worlds: int, trials: list[int], refs: list[int], seed: int = 0,
          breaks: bool = True, policy: GatePolicy = DEFAULT) -> dict:
    """False-alarm (and, with breaks, detection) rates per (reference size, trials)."""
    rng = np.random.default_rng(seed)
    out = {}
    for ref_trials in refs:
        for t in trials:
            fails, why, reruns, caught_noisy, caught_quiet, n_break = 0, Counter(), [], 0, 0, 0
            for _ in range(worlds):
                truth, ref, bars = world(base, ref_trials, rng)
                code, info = one_gate(truth, ref, bars, t, rng, policy=policy)
                fails += code == 1
                why[info["why"] or "pass"] += 1
                reruns.append(info["reruns"])
                if breaks:
                    noisy = [rid for rid, (a, _, pats, probs) in truth.items()
                             if a and 0.03 < 1 - probs[pats.index(frozenset())] < 0.3] if True else []
                    quiet = [rid for rid, (a, _, pats, probs) in truth.items()
                             if a and 1 - probs[pats.index(frozenset())] < 0.01]
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


def markdown(res: dict) -> str:
    """The study as docs/validation.md shows it."""
    out = ["| reference | trials | unchanged: gates failed | 95% Wilson | reruns per gate | noisy row broken: caught "
           "| quiet row broken: caught |", "|---|---|---|---|---|---|---|"]
    for r in res.values():
        lo, hi = r["interval"]
        out.append(f"| {r['reference_trials']} runs | {r['trials']} | {r['false_alarms']}/{r['gates']} | "
                   f"[{lo:.3f}, {hi:.3f}] | {r['mean_reruns']} | {r['break_noisy_caught']} | {r['break_quiet_caught']} |")
    return "\n".join(out)


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
    a = p.parse_args(argv)
    if a.markdown:
        print(markdown(json.loads(Path(a.markdown).read_text())))
        return 0
    res = study(load_reference(a.reference), a.worlds, a.trials, a.refs, a.seed, not a.no_breaks)
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
