"""From graded runs to the numbers the gate decides on. Pure functions over the record,
so regression, regrade, compare and the report all compute the same thing."""
from __future__ import annotations

from collections import defaultdict

from turngate.record.results import RunResult
from turngate.record.summaries import (
    CellCounts,
    FailingRun,
    KindSummary,
    RunCount,
    ScorerSummary,
    VersionSummary,
)
from turngate.sources.kinds import kind_of
from turngate.verdict.stats import pass_at_k, pass_hat_k, wilson


def scorer_names(runs: list[RunResult]) -> list[str]:
    """Every scorer name, in first-seen order."""
    names: dict[str, None] = {}
    for r in runs:
        names.update(dict.fromkeys(r.verdicts))
    return list(names)


def row_kind(row: dict) -> str:
    """Same rule as Row.kind, on the row dicts a results record stores."""
    return kind_of(row.get("inputs", {}).get("tags", []))


def summarise(runs: list[RunResult], rows: dict[str, dict], bars: dict[str, float], trials: int, *,
              failing: bool = True, names: list[str] | None = None) -> VersionSummary:
    """failing=False: without the failing runs one by one (a reader that shows none of them and
    leaves no scorer out, turngate.verdict.decide.reads_failing). names: scorer_names(runs), when the
    caller has them."""
    names = scorer_names(runs) if names is None else names
    # one pass over the runs for every count below (a big record has 100k runs x 8 scorers):
    # per (row, scorer) its passed / failed / n/a counts and per row its runs and failed runs;
    # the means, pass@k and the kinds' numbers all follow from those
    bad_runs: list[tuple[tuple[str, int], list]] = []
    cells: dict[str, dict[str, list[int]]] = {}  # row -> scorer -> [passed, failed, n/a]
    failed_runs: dict[str, list[int]] = {}  # row -> [runs, runs where some scorer failed]
    applied: dict[str, list[str]] = defaultdict(list)  # scorer -> rows it applied to, in first-seen order
    agent_errors = 0
    for r in runs:
        rid = r.row_id
        row_cells = cells.get(rid)
        bad = []
        for name, v in r.verdicts.items():
            if row_cells is None:  # a row only once it has a verdict, as turngate.reference.cell_counts
                row_cells = cells[rid] = {}
            c = row_cells.get(name)
            if c is None:
                c = row_cells[name] = [0, 0, 0]
            passed = v.passed
            if passed is None:
                c[2] += 1
                continue
            if not (c[0] or c[1]):  # the row's first verdict that applies: its place in the means' sums
                applied[name].append(rid)
            if passed:
                c[0] += 1
            else:
                c[1] += 1
                bad.append((name, v))
        if bad and failing:
            bad_runs.append(((rid, r.trial), bad))
        entry = failed_runs.get(rid)
        if entry is None:
            entry = failed_runs[rid] = [0, 0]
        entry[0] += 1
        entry[1] += bool(bad)
        agent_errors += bool(r.agent_error)
    scorers = {}
    for name in names:
        # rows where the scorer applied at least once, in the order their first such verdict came
        groups = [(c[0] + c[1], c[0]) for c in (cells[rid][name] for rid in applied[name])]
        n, passed = sum(a for a, _ in groups), sum(p for _, p in groups)
        low, high = wilson(passed, n)
        bar = bars.get(name)
        # ok is left None: turngate/verdict/decide.py, the one place that decides, fills it in
        entry = ScorerSummary(mean=passed / n if n else None, low=low, high=high, n=n, passed=passed,
                              na=sum(c[2] for per in cells.values() if (c := per.get(name))), bar=bar)
        if trials > 1:
            entry.pass_at_k = sum(pass_at_k(a, c, trials) for a, c in groups) / len(groups) if groups else None
            entry.pass_hat_k = sum(pass_hat_k(a, c, trials) for a, c in groups) / len(groups) if groups else None
        scorers[name] = entry
    # per row kind: a run passes when every scorer that applies to it passes
    kind_groups: dict[str, list[tuple[int, int]]] = defaultdict(list)
    for rid, (a, failed) in failed_runs.items():
        for k in (row_kind(rows.get(rid, {})), "all"):
            kind_groups[k].append((a, a - failed))
    by_kind: dict[str, KindSummary] = {}
    for kind, groups in sorted(kind_groups.items()):
        k = KindSummary(rows=len(groups), pass_at_1=sum(c / a for a, c in groups) / len(groups))
        if trials > 1:
            k.pass_at_k = sum(pass_at_k(a, c, trials) for a, c in groups) / len(groups)
            k.pass_hat_k = sum(pass_hat_k(a, c, trials) for a, c in groups) / len(groups)
        by_kind[kind] = k
    bad_runs.sort(key=lambda x: x[0])  # stable: as sorted(runs) by (row, trial) gave them
    # built unvalidated: every value comes from a validated run, and a big record fails tens of
    # thousands of runs (validating each again was a third of this function's time)
    failed = [FailingRun.model_construct(row_id=rid, trial=trial, scorer=bad[0][0], explanation=bad[0][1].explanation,
                                         failed_scorers=[n for n, _ in bad]) for (rid, trial), bad in bad_runs]
    typed_cells = {rid: {n: CellCounts(passed=c[0], failed=c[1], na=c[2]) for n, c in per.items()}
                   for rid, per in cells.items()}
    counts = {rid: RunCount(runs=a, failed=b) for rid, (a, b) in failed_runs.items()}
    # no verdict here: turngate/verdict/decide.py decides, from these numbers and the reference
    return VersionSummary(runs=len(runs), rows=len(failed_runs), trials=trials,
                          agent_errors=agent_errors, scorers=scorers, by_kind=by_kind,
                          failing=failed, cells=typed_cells, failed_runs=counts)
