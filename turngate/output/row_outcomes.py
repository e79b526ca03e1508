"""Each row's part in a gate verdict, for the CI outputs (JUnit XML, the PR comment): its runs,
its flag class, and why it fails the gate, if it does. Nothing is decided here: the reasons are
read off the Verdict that turngate/verdict/decide.py `decide()` made.

A row fails when
  - it is in verdict.regressed (stage 1 flagged it, its reruns confirmed it), or
  - its planned runs failed a scorer whose total failed the gate (below its bar, or worse on
    reruns: ScorerResult.ok is False), or
  - it is one of the rows rerun for a confirmed rise in failing runs and some run of it failed, or
  - (--fail-on-regression) it flipped pass -> fail on a scorer significantly worse than the baseline.
"""
from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from turngate.record.results import Record, RunResult
from turngate.record.summaries import FindingKind
from turngate.verdict.confirm import ANY
from turngate.verdict.decide import FlaggedRow, Verdict


@dataclass
class RowOutcome:
    row_id: str
    planned: int  # the row's planned (gate) runs: one per seed
    runs: list[RunResult] = field(default_factory=list)  # its planned runs present, by seed
    reruns: list[RunResult] = field(default_factory=list)  # its confirmation reruns, by seed
    flag: FlaggedRow | None = None  # stage 1 flagged it: flag.status regressed / flaky / insufficient data
    reasons: list[str] = field(default_factory=list)  # why it fails the gate; empty: it does not
    scorers: set[str] = field(default_factory=set)  # the scorers behind those reasons (ANY: any scorer)

    @property
    def failed(self) -> bool:
        return bool(self.reasons)

    @property
    def status(self) -> str | None:
        return self.flag.status if self.flag is not None else None

    @property
    def passed(self) -> int:
        """Planned runs in which no scorer failed."""
        return sum(1 for r in self.runs if not failed_scorers(r))

    @property
    def missing(self) -> int:
        return self.planned - len(self.runs)

    def explanations(self, limit: int = 50) -> list[str]:
        """`seed 3: tool_use: search_faq was never called` for each failed verdict of the scorers
        behind the reasons (every failed verdict when none), planned runs then reruns."""
        out = []
        for r in self.runs + self.reruns:
            for name in failed_scorers(r):
                if not self.scorers or ANY in self.scorers or name in self.scorers:
                    out.append(f"{run_label(r)}: {name}: {r.verdicts[name].explanation}")
        return out[:limit] + ([f"... and {len(out) - limit} more"] if len(out) > limit else [])


def failed_scorers(run: RunResult) -> list[str]:
    return [n for n, v in run.verdicts.items() if v.passed is False]


def run_label(run: RunResult) -> str:
    return f"seed {run.seed}" + (" (rerun)" if run.stage == "confirm" else "")


def outcomes(record: Record, verdict: Verdict, *, comparison: dict[str, Any] | None = None,
             fail_on_regression: bool = False) -> list[RowOutcome]:
    """One RowOutcome per row of the record, in dataset order, for its candidate version."""
    version = record.meta.version
    gate: dict[str, list[RunResult]] = defaultdict(list)
    reruns: dict[str, list[RunResult]] = defaultdict(list)
    for r in record.runs:
        if r.version == version:
            (gate if r.stage == "gate" else reruns)[r.row_id].append(r)
    seeds = record.plan.seeds.get(version, record.meta.seeds) if record.plan is not None else record.meta.seeds
    flags = {x.row_id: x for x in verdict.regressed + verdict.flaky + verdict.insufficient if x.kind == "row"}
    aggregates = {x.row_id: x for x in verdict.regressed if x.kind == "aggregate"}
    # the scorers whose total failed the gate, each with the reason line that says so
    bad = {n: s.reason or (aggregates[n].line if n in aggregates else f"{n}: failed the gate")
           for n, s in verdict.scorers.items() if s.ok is False}
    flipped: dict[str, set[str]] = defaultdict(set)  # scorer -> rows that went pass -> fail
    rules: dict[str, str] = {}
    if comparison is not None and fail_on_regression:
        worse = set(comparison.get("worse") or [n for n, s in comparison["scorers"].items() if s.get("worse")])
        for f in comparison["flips"]["regressed"]:
            if f["scorer"] in worse:
                flipped[f["scorer"]].add(f["row_id"])
        for n in worse:
            rules[n] = next((f.text for f in verdict.findings if f.kind == FindingKind.BASELINE and f.subject == n),
                            f"regression rule: {n}: significantly worse than {comparison['baseline']}")
    out = []
    for row in record.rows:
        rid = row["id"]
        o = RowOutcome(rid, planned=len(seeds), runs=sorted(gate.get(rid, []), key=lambda r: r.seed),
                       reruns=sorted(reruns.get(rid, []), key=lambda r: r.seed), flag=flags.get(rid))
        failing = {n for r in o.runs for n in failed_scorers(r)}
        if o.flag is not None and o.flag.status == "regressed":
            o.reasons.append(o.flag.line)
            o.scorers |= set(o.flag.scorers)
        for n, reason in bad.items():
            if n in failing:
                o.reasons.append(reason)
                o.scorers.add(n)
        if ANY in aggregates and rid in aggregates[ANY].rows and failing:
            o.reasons.append(aggregates[ANY].line)
            o.scorers.add(ANY)
        for n, rows in flipped.items():
            if rid in rows:
                o.reasons.append(rules[n])
                o.scorers.add(n)
        o.reasons = list(dict.fromkeys(o.reasons))
        out.append(o)
    return out
