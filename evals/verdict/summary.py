"""From graded runs to the numbers the gate decides on. Pure functions over the record,
so regression, regrade, compare and the report all compute the same thing."""
from __future__ import annotations

from collections import defaultdict

from evals.record.results import RunResult
from evals.record.summaries import (
    CellCounts,
    FailingRun,
    KindSummary,
    RunCount,
    ScorerSummary,
    VersionSummary,
)
from evals.sources.dataset import KIND_ORDER
from evals.verdict.reference import cell_counts
from evals.verdict.stats import pass_at_k, pass_hat_k, wilson


def scorer_names(runs: list[RunResult]) -> list[str]:
    names: list[str] = []
    for r in runs:
        names += [n for n in r.verdicts if n not in names]
    return names


def row_kind(row: dict) -> str:
    """Same rule as Row.kind, on the row dicts a results record stores."""
    tags = row.get("inputs", {}).get("tags", [])
    return next((k for k in KIND_ORDER if k in tags), "other")


def summarise(runs: list[RunResult], rows: dict[str, dict], bars: dict[str, float], trials: int) -> VersionSummary:
    names = scorer_names(runs)
    per_row: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        for name, v in r.verdicts.items():
            if v.passed is not None:
                per_row[name][r.row_id].append(v.passed)
    scorers = {}
    for name in names:
        values = [p for row in per_row[name].values() for p in row]
        n, passed = len(values), sum(values)
        low, high = wilson(passed, n)
        bar = bars.get(name)
        # ok is left None: evals/verdict/decide.py, the one place that decides, fills it in
        entry = ScorerSummary(mean=passed / n if n else None, low=low, high=high, n=n, passed=passed,
                              na=sum(1 for r in runs if name in r.verdicts and r.verdicts[name].passed is None),
                              bar=bar)
        if trials > 1:
            groups = [(len(v), sum(v)) for v in per_row[name].values() if v]
            entry.pass_at_k = sum(pass_at_k(a, c, trials) for a, c in groups) / len(groups) if groups else None
            entry.pass_hat_k = sum(pass_hat_k(a, c, trials) for a, c in groups) / len(groups) if groups else None
        scorers[name] = entry
    # per row kind: a run passes when every scorer that applies to it passes
    by_kind: dict[str, KindSummary] = {}
    kind_runs: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        ok = all(v.passed is not False for v in r.verdicts.values())
        kind = row_kind(rows.get(r.row_id, {}))
        for k in (kind, "all"):
            kind_runs[k][r.row_id].append(ok)
    for kind, per in sorted(kind_runs.items()):
        groups = [(len(v), sum(v)) for v in per.values()]
        k = KindSummary(rows=len(groups), pass_at_1=sum(c / a for a, c in groups) / len(groups))
        if trials > 1:
            k.pass_at_k = sum(pass_at_k(a, c, trials) for a, c in groups) / len(groups)
            k.pass_hat_k = sum(pass_hat_k(a, c, trials) for a, c in groups) / len(groups)
        by_kind[kind] = k
    failing = []
    for r in sorted(runs, key=lambda r: (r.row_id, r.trial)):
        bad = [(n, v) for n, v in r.verdicts.items() if v.passed is False]
        if bad:
            failing.append(FailingRun(row_id=r.row_id, trial=r.trial, scorer=bad[0][0],
                                      explanation=bad[0][1].explanation, failed_scorers=[n for n, _ in bad]))
    cells = {rid: {n: CellCounts(passed=c.passed, failed=c.failed, na=c.na) for n, c in per.items()}
             for rid, per in cell_counts(runs).items()}
    failed_runs: dict[str, RunCount] = {}  # row -> its runs, and the runs where some scorer failed
    for r in runs:
        count = failed_runs.setdefault(r.row_id, RunCount())
        count.runs += 1
        count.failed += any(v.passed is False for v in r.verdicts.values())
    # no verdict here: evals/verdict/decide.py decides, from these numbers and the reference
    return VersionSummary(runs=len(runs), rows=len({r.row_id for r in runs}), trials=trials,
                          agent_errors=sum(1 for r in runs if r.turn.error), scorers=scorers, by_kind=by_kind,
                          failing=failing, cells=cells, failed_runs=failed_runs)
