"""What a gate could see: simulated gates of the same rows, trials, reruns and policy, with a
break put in, judged by plan_reruns() and decide() exactly as the gate judges its runs.

A simulated gate draws a *truth* from the reference's posterior (per row, the rates of its
failure patterns, i.e. the scorers that fail together in one run, from a Dirichlet over the
accepted counts, plus a Jeffreys-sized chance of a failure the accepted run never showed), draws
the gate's runs from it, applies a break, plans the reruns from stage 1 and draws them from the
same (broken) truth, then decides. No agent call: summary counts only. scripts/gate_study.py
builds its studies from the same pieces (draw_truth, draw, summary_of, simulate_gate).

The three breaks of the statement (docs/gate.md, "What this gate could see"):
  1. one row, chosen at random among the rows simulated, and one of its scorers, chosen at
     random among those that apply to it: every run of the row fails that scorer;
  2. the same, on each run with probability 1/2 (the other runs as accepted);
  3. the scorer with the most applicable runs: every run it applies to fails it with extra
     probability 0.05 (a run that fails it anyway stays failed): its mean drops by 5 points
     times its pass rate.
Each figure is the share of GATES simulated gates that fail (exit 1). Gate i of break k draws
from its own stream (seed, k, i), so the figures are the same for the same reference, rows,
trials, bars, reruns and policy, and a gate with more trials sees the same truths and breaks.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from turngate.record.sensitivity import BreakKind, SeenBreak, Sensitivity
from turngate.record.summaries import (
    CellCounts,
    ConfirmationSummary,
    RunCount,
    ScorerSummary,
    Tally,
    VersionSummary,
)
from turngate.verdict.confirm import ANY, Counts
from turngate.verdict.decide import EXIT_FAIL, decide, plan_reruns, rerun_stops
from turngate.verdict.policy import DEFAULT, GatePolicy
from turngate.verdict.reference import PRIOR, Cell, Reference, RowRef
from turngate.verdict.stats import wilson

GATES = 40  # simulated gates per break (120 in all): ~1.4 s at one trial, ~4 s at five for 74 rows (docs/gate.md)
SEED = 0
DROP = 0.05  # break 3: extra failure probability per applicable run
GATE_SEED_BASE = 10_000  # a simulated gate's own seeds: only plan_reruns' fresh seeds depend on them

Truth = dict[str, tuple[list[str], list[str], list[frozenset[str]], np.ndarray]]


@dataclass(frozen=True)
class Break:
    """How the version under test differs from the truth. Runs of `rows` (None: every row
    `fails` applies to) are broken with probability `rate`; a broken run fails exactly `fails`
    (replace) or `fails` on top of what it failed anyway."""
    fails: frozenset[str]
    rows: frozenset[str] | None = None
    rate: float = 1.0
    replace: bool = True

    @classmethod
    def row(cls, row_id: str, fails: frozenset[str], rate: float = 1.0) -> Break:
        return cls(fails=fails, rows=frozenset([row_id]), rate=rate)


class Bar:
    """What decide() reads of a registry entry: .bar."""

    def __init__(self, bar: float):
        self.bar = bar


def patterns_of(row: RowRef, seeds: list[int]) -> tuple[list[str], list[str], Counter]:
    """(applicable scorers, n/a scorers, Counter of failing-scorer sets over the accepted seeds)."""
    applicable = sorted(n for n, c in row.cells.items() if c.passed + c.failed)
    na = sorted(n for n, c in row.cells.items() if not c.passed + c.failed)
    by_seed: dict[int, set[str]] = {s: set() for s in seeds}
    for name, c in row.cells.items():
        for s in c.failed_seeds:
            by_seed.setdefault(s, set()).add(name)
    return applicable, na, Counter(frozenset(v) for v in by_seed.values())


def all_patterns(reference: Reference) -> dict[str, tuple[list[str], list[str], Counter]]:
    return {rid: patterns_of(row, reference.seeds) for rid, row in reference.rows.items()}


def draw_truth(reference: Reference, rng: np.random.Generator,
               patterns: dict[str, tuple[list[str], list[str], Counter]] | None = None) -> Truth:
    """row -> (applicable, na, patterns, probabilities): a plausible world the accepted run came
    from. patterns: all_patterns(reference), when drawing many truths from one reference."""
    truth = {}
    for rid, row in reference.rows.items():
        applicable, na, counts = patterns[rid] if patterns is not None else patterns_of(row, reference.seeds)
        pats = list(counts)
        alpha = [counts[p] + (PRIOR if p else 0.0) for p in pats]
        if applicable:  # a failure the accepted run never showed: one scorer, Jeffreys-sized
            pats.append(frozenset([applicable[rng.integers(len(applicable))]]))
            alpha.append(PRIOR)
        truth[rid] = (applicable, na, pats, rng.dirichlet(alpha))
    return truth


def draw(truth: Truth, rows: list[str], n: int, rng: np.random.Generator,
         broken: Break | None = None) -> dict[str, list[frozenset[str]]]:
    """row -> list of n failing-scorer sets, as the truth (and the break) make them."""
    out = {}
    for rid in rows:
        applicable, na, pats, probs = truth[rid]
        hit = broken is not None and (rid in broken.rows if broken.rows is not None
                                      else bool(broken.fails & set(applicable)))
        if hit and broken.rate >= 1.0 and broken.replace:
            out[rid] = [broken.fails] * n  # no draw: the row's runs are the break's
            continue
        runs = [pats[i] for i in rng.choice(len(pats), size=n, p=probs)]
        if hit:
            fails = broken.fails & set(applicable)
            runs = [(fails if broken.replace else p | fails) if u < broken.rate else p
                    for p, u in zip(runs, rng.random(n), strict=True)]
        out[rid] = runs
    return out


def simulated_reference(truth: Truth, runs: dict[str, list[frozenset[str]]], seeds: list[int]) -> Reference:
    """A reference made of these drawn runs (the study's fresh references)."""
    rows = {}
    for rid, pats in runs.items():
        applicable, na, _, _ = truth[rid]
        cells = {n: Cell(na=len(pats)) for n in na}
        for name in applicable:
            failed = [seeds[i] for i, p in enumerate(pats) if name in p]
            cells[name] = Cell(passed=len(pats) - len(failed), failed=len(failed), failed_seeds=failed)
        rows[rid] = RowRef(sha="0", cells=cells)
    return Reference(provenance={"version": "simulated"}, seeds=list(seeds), rows=rows)


def summary_of(truth: Truth, runs: dict[str, list[frozenset[str]]], trials: int,
               kind: type[Tally] = VersionSummary) -> Tally:
    """The numbers decide() reads, as turngate/verdict/summary.py computes them from runs."""
    cells, failed_runs, totals = {}, {}, Counter()
    # built unvalidated (model_construct): every count is an int made here, and a statement
    # builds thousands of these
    for rid, pats in runs.items():
        applicable, na, _, _ = truth[rid]
        n = len(pats)
        per = {name: CellCounts.model_construct(passed=0, failed=0, na=n) for name in na}
        fails = Counter(name for p in pats for name in p)
        for name in applicable:
            f = fails[name]
            per[name] = CellCounts.model_construct(passed=n - f, failed=f, na=0)
            totals[(name, "n")] += n
            totals[(name, "passed")] += n - f
        cells[rid] = per
        failed_runs[rid] = RunCount.model_construct(runs=n, failed=sum(1 for p in pats if p))
    names = sorted({n for per in cells.values() for n in per})
    scorers = {}
    for n in names:
        tot, ok = totals[(n, "n")], totals[(n, "passed")]
        low, high = wilson(ok, tot)
        scorers[n] = ScorerSummary(mean=ok / tot if tot else None, n=tot, passed=ok, low=low, high=high)
    return kind(runs=sum(len(p) for p in runs.values()), trials=trials, scorers=scorers, cells=cells,
                failed_runs=failed_runs)


def simulate_gate(truth: Truth, reference: Reference, bars: dict[str, Any], trials: int, rng: np.random.Generator,
                  broken: Break | None = None, confirm: bool = True, policy: GatePolicy = DEFAULT,
                  fixed: int | None = None) -> tuple[int, dict]:
    """One gate of `trials` runs per row drawn from the truth (and the break), its reruns planned
    and drawn as the gate plans and makes them, judged by decide(). bars: name -> object with
    .bar. (exit code, {why, reruns, regressed})."""
    rows = list(truth)
    seeds = list(range(GATE_SEED_BASE, GATE_SEED_BASE + trials))
    summary = summary_of(truth, draw(truth, rows, trials, rng, broken), trials)
    below = summary.below({n: b.bar for n, b in bars.items()})
    plan = plan_reruns(summary, reference, seeds, fixed=fixed, below_bar=below, policy=policy) if confirm else {}
    made = 0
    if confirm:
        reruns = {rid: draw(truth, [rid], len(s), rng, broken)[rid] for rid, s in plan.items()}
        # a row that stops early keeps the reruns its batches called for (the verdict is the same)
        for rid, stop in rerun_stops(summary, reference, fixed=fixed, below_bar=below, policy=policy).items():
            applicable = truth[rid][0]
            outcomes = [{**{u: Counts(int(u in pats), 1) for u in applicable}, ANY: Counts(int(bool(pats)), 1)}
                        for pats in reruns[rid]]
            reruns[rid] = reruns[rid][:stop.needed(outcomes)]
        conf = summary_of(truth, reruns, trials, ConfirmationSummary) if reruns else ConfirmationSummary()
        made = sum(len(s) for s in reruns.values())
        conf.rows, conf.runs = len(plan), made
        summary.confirmation = conf
    v = decide(summary, reference, bars, policy=policy)
    why = ("bar" if any(s.ok is False and s.mean is not None and s.bar is not None and s.mean < s.bar
                        for s in v.scorers.values()) else
           "row" if any(x.kind == "row" for x in v.regressed) else
           "aggregate" if v.regressed else "")
    return v.exit_code, {"why": why, "reruns": made,
                         "regressed": [x.row_id for x in v.regressed]}


def drop_scorer(reference: Reference) -> str | None:
    """Break 3's scorer: the one with the most applicable accepted runs (ties: by name)."""
    runs: Counter = Counter()
    for row in reference.rows.values():
        for name, c in row.cells.items():
            runs[name] += c.passed + c.failed
    best = sorted((-n, name) for name, n in runs.items() if n)
    return best[0][1] if best else None


def _row_break(truth: Truth, rng: np.random.Generator, rate: float) -> Break | None:
    rows = [rid for rid, (applicable, *_) in truth.items() if applicable]
    if not rows:
        return None
    rid = rows[rng.integers(len(rows))]
    applicable = truth[rid][0]
    return Break.row(rid, frozenset([applicable[rng.integers(len(applicable))]]), rate)


def sensitivity(reference: Reference | None, trials: int, bars: dict[str, float], *, rows: list[str] | None = None,
                confirm: bool = True, fixed: int | None = None, policy: GatePolicy = DEFAULT,
                gates: int = GATES, seed: int = SEED) -> Sensitivity:
    """The statement of what a gate of these rows (None: every reference row) x `trials` could
    see, against this reference, with these bars (name -> bar), reruns (confirm, --confirm K as
    fixed) and policy. Deterministic for the same inputs."""
    if reference is None:
        return Sensitivity(line="what this gate could see: not simulated (no reference: the bars alone judge)",
                           trials=trials, reruns=confirm, seed=seed)
    wanted = set(rows) if rows is not None else set(reference.rows)
    keep = [rid for rid in reference.rows if rid in wanted]  # the reference's order: not the dataset's
    ref = reference.model_copy(update={"rows": {rid: reference.rows[rid] for rid in keep}})
    if unbarred := ref.scorers() - set(bars):  # scorers this gate does not run: not in its runs either
        ref = ref.without_scorers(unbarred)
    scorer = drop_scorer(ref)
    if not keep or scorer is None:
        return Sensitivity(line="what this gate could see: not simulated (the reference holds none of its rows)",
                           trials=trials, reruns=confirm, seed=seed)
    registry = {n: Bar(bars[n]) for n in ref.scorers()}
    patterns = all_patterns(ref)
    seen = []
    for k, kind in enumerate(BreakKind):
        caught = made = 0
        for i in range(gates):
            rng = np.random.default_rng([seed, k, i])
            truth = draw_truth(ref, rng, patterns)
            if kind == BreakKind.SCORER_DROP:
                broken = Break(fails=frozenset([scorer]), rate=DROP, replace=False)
            else:
                broken = _row_break(truth, rng, 1.0 if kind == BreakKind.ROW_ALWAYS else 0.5)
            if broken is None:
                continue
            code, _ = simulate_gate(truth, ref, registry, trials, rng, broken, confirm=confirm, policy=policy,
                                    fixed=fixed)
            made += 1
            caught += code == EXIT_FAIL
        seen.append(SeenBreak(kind=kind, caught=caught, gates=made,
                              scorer=scorer if kind == BreakKind.SCORER_DROP else None))
    what = "; ".join(s.words for s in seen)
    line = (f"this gate would catch {what} ({gates} simulated gates each: {len(keep)} rows x {trials} "
            f"trial(s) against the reference, reruns {'as planned' if confirm else 'off'})")
    return Sensitivity(line=line, gates=gates, rows=len(keep), trials=trials, reruns=confirm, seed=seed, breaks=seen)
