"""The typed numbers a results record keeps beside its runs: each version's summary (what
turngate/verdict/summary.py computes from the runs) and the stored verdict (what
turngate/verdict/decide.py decided). Both are derived: every reader recomputes them from the runs
(turngate/gate/recheck.py), so they are outside the record's digest and their layout may change
between schema versions. Every count is a labelled field; the validators read the layout of
results@2 files too (cells `[passed, failed, na]`, failed_runs `[runs, failed]`, `pass@K` keys,
the verdict under summary["verdict"]: see Record in turngate/record/results.py)."""
from __future__ import annotations

import re
from enum import StrEnum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from turngate.core import cli_support as cli
from turngate.record.sensitivity import Sensitivity

ANY = "*"  # the unit "runs failing some scorer" (turngate/verdict/confirm.py)

# serialised with every field, defaults included, so the generated JSON Schema lists them as required
_CONFIG = ConfigDict(extra="forbid", json_schema_serialization_defaults_required=True)


def _from_list(data: Any, names: tuple[str, ...]) -> Any:
    """A results@2 list of counts as the labelled fields it meant."""
    if isinstance(data, (list, tuple)):
        if len(data) != len(names):
            raise ValueError(f"expected {len(names)} counts ({', '.join(names)}), got {len(data)}")
        return dict(zip(names, data, strict=True))
    return data


class CellCounts(BaseModel):
    """One (row, scorer) in one version: how many of its runs passed, failed, or had nothing
    to check (n/a)."""
    model_config = _CONFIG
    passed: int = Field(0, description="runs the scorer passed")
    failed: int = Field(0, description="runs the scorer failed")
    na: int = Field(0, description="runs the scorer had nothing to check on")

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return _from_list(data, ("passed", "failed", "na"))

    @property
    def applicable(self) -> int:
        return self.passed + self.failed

    @property
    def runs(self) -> int:
        return self.passed + self.failed + self.na


class RunCount(BaseModel):
    """One row in one version: its runs, and how many of them failed some scorer."""
    model_config = _CONFIG
    runs: int = Field(0, description="the row's runs")
    failed: int = Field(0, description="its runs some scorer failed")

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return _from_list(data, ("runs", "failed"))


_PASS_K = re.compile(r"^pass([@^])(\d+)$")


def _pass_k(data: Any) -> Any:
    """results@2's `pass@1`, `pass@K` and `pass^K` keys (K = the trials) as labelled fields."""
    if not isinstance(data, dict):
        return data
    out = {}
    for key, value in data.items():
        m = _PASS_K.match(key)
        if m is None:
            out[key] = value
        else:
            out["pass_at_1" if m[0] == "pass@1" else "pass_at_k" if m[1] == "@" else "pass_hat_k"] = value
    return out


class Correction(BaseModel):
    """The judge's pass rate corrected for its measured bias (turngate/scoring/judge_correction.py)."""
    model_config = _CONFIG
    theta: float | None = Field(description="None: no correction possible (method says why)")
    low: float = Field(description="95% interval, from seeded Monte Carlo draws")
    high: float
    method: str = Field(description="how it was corrected, or why it could not be")


class ScorerSummary(BaseModel):
    """One scorer over one version's runs. ok, gate_bar, accepted and p_value are the
    verdict's (turngate/verdict/decide.py apply()); the rest is counted from the runs."""
    model_config = _CONFIG
    mean: float | None = Field(None, description="passed / n; None: n/a on every run")
    low: float = Field(0.0, description="Wilson 95% interval of the mean")
    high: float = 1.0
    n: int = Field(0, description="runs with a pass or a fail")
    passed: int = 0
    na: int = Field(0, description="runs the scorer had nothing to check on")
    bar: float | None = Field(None,
                              description="the calibrated bar (thresholds file); None: not judged by a bar")
    ok: bool | None = Field(None, description="the verdict on this scorer; None: n/a or not judged")
    gate_bar: float | None = Field(None,
                                   description="what the mean must reach at this many runs against the accepted run")
    accepted: float | None = Field(None, description="the accepted run's mean on these rows")
    p_value: float | None = Field(None,
                                  description="one-sided: this many failures or more under the accepted rates")
    pass_at_k: float | None = Field(None,
                                    description="with trials K > 1: the share of rows passing at least once in K")
    pass_hat_k: float | None = Field(None, description="with trials K > 1: the share of rows passing all K")
    corrected: Correction | None = Field(None, description="the judge scorer only, with a stored calibration")

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return _pass_k(data)

    @property
    def failed(self) -> int:
        return self.n - self.passed


class KindSummary(BaseModel):
    """One kind of row (golden, adversarial, ... and "all"): a run passes when every scorer
    that applies to it passes."""
    model_config = _CONFIG
    rows: int = Field(description="rows of this kind")
    pass_at_1: float = Field(description="the mean share of a row's runs passing every scorer that applies")
    pass_at_k: float | None = Field(None, description="with trials K > 1")
    pass_hat_k: float | None = None

    @model_validator(mode="before")
    @classmethod
    def _legacy(cls, data: Any) -> Any:
        return _pass_k(data)


class FailingRun(BaseModel):
    """A run some scorer failed: the first failing scorer's reason, and every failing scorer."""
    model_config = _CONFIG
    row_id: str
    trial: int = Field(description="the run's seed")
    scorer: str = Field(description="the first scorer that failed it")
    explanation: str = Field(description="that scorer's reason")
    failed_scorers: list[str] = Field(default_factory=list, description="every scorer that failed it")


class Tally(BaseModel):
    """The numbers of a set of runs (one version's, or its confirmation reruns')."""
    model_config = _CONFIG
    runs: int = 0
    rows: int = 0
    trials: int = Field(1, description="K, of pass_at_k / pass_hat_k")
    agent_errors: int = 0
    scorers: dict[str, ScorerSummary] = Field(default_factory=dict)
    by_kind: dict[str, KindSummary] = Field(default_factory=dict)
    failing: list[FailingRun] = Field(default_factory=list)
    cells: dict[str, dict[str, CellCounts]] = Field(default_factory=dict,
                                                    description="row id -> scorer -> counts")
    failed_runs: dict[str, RunCount] = Field(default_factory=dict,
                                             description="row id -> runs, runs failing some scorer")

    def below(self, bars: dict[str, float]) -> list[str]:
        """The scorers whose mean is below their bar (the ones stage 1 flags in aggregate)."""
        return [n for n, s in self.scorers.items() if s.n and n in bars and s.mean < bars[n] - 1e-12]


class ConfirmationSummary(Tally):
    """The confirmation reruns of a gate's flagged rows (turngate/verdict/confirm.py)."""
    planned: int = Field(0, description="reruns the plan called for")
    share: float | None = Field(None, description="reruns / the gate's runs")

    @classmethod
    def of(cls, tally: Tally, **update: Any) -> ConfirmationSummary:
        """The reruns' numbers (summarise() of them), with what only the plan knows."""
        return cls.model_validate({**tally.model_dump(include=set(Tally.model_fields)), **update})


class VersionSummary(Tally):
    """One version's planned runs; the candidate's also holds its confirmation reruns."""
    confirmation: ConfirmationSummary | None = None
    confirm_skipped: str | None = Field(None, description="why no reruns were made (meta.confirm.skipped)")


def unit_label(unit: str) -> str:
    return "some scorer" if unit == ANY else unit


class FlagKind(StrEnum):
    """What stage 1 flagged: one row, or a unit's total over rows (a scorer, or ANY)."""
    ROW = "row"
    AGGREGATE = "aggregate"


class FlagStatus(StrEnum):
    """How a flag ended (turngate/verdict/confirm.py judge)."""
    REGRESSED = "regressed"  # confirmed: fails the gate
    FLAKY = "flaky"  # not confirmed by the reruns: reported, does not fail
    INSUFFICIENT = "insufficient data"  # nothing could confirm it (no reruns, or even failing every rerun would not)


class FindingKind(StrEnum):
    """Why a gate failed: each reason of a verdict is one finding of one kind."""
    BAR = "bar"  # a scorer's mean below its bar (confirmed by reruns where there were any)
    ROW = "row regressed"  # a flagged row its reruns confirmed
    SCORER = "scorer worse"  # a scorer's total over rows, confirmed
    FAILING_RUNS = "failing runs"  # the runs failing some scorer, summed over rows, confirmed
    BASELINE = "baseline"  # --fail-on-regression: significantly worse than the baseline (McNemar, Holm)


class Finding(BaseModel):
    """One reason a verdict fails, typed: its kind, what it is about (a scorer or a row) and its
    numbers. decide() (turngate/verdict/decide.py) gives only those; `text` is how the output
    layer words them (turngate/output/wording.py), stored so a reader of the record shows what
    the gate printed. Readers count and select findings by kind and subject, never by their text."""
    model_config = _CONFIG
    kind: FindingKind
    subject: str = Field(description="the scorer, the row, or \"*\" for the runs failing some scorer")
    text: str = Field("", description="the reason in one line, as the verdict prints it")
    mean: float | None = Field(None, description="bar: the scorer's mean")
    bar: float | None = Field(None, description="bar: the scorer's bar")
    p_value: float | None = Field(None, description="the p that decided (None: a bar with nothing to confirm it by)")


class UnitCounts(BaseModel):
    """A unit's failures out of its runs (the accepted run's, this gate's, or the reruns')."""
    model_config = _CONFIG
    failed: int = Field(description="failures")
    runs: int | None = Field(None,
                             description="an aggregate's stage-1 count has no runs, only what was expected")
    expected: float | None = Field(None,
                                   description="an aggregate: the failures the accepted rates make likely")


class FlaggedRow(BaseModel):
    """A row (or a scorer's total over rows) stage 1 flagged, and what its reruns said."""
    model_config = _CONFIG
    row_id: str = Field(
        description="the row, or for an aggregate flag the scorer (\"*\": runs failing some scorer)")
    kind: FlagKind = Field(FlagKind.ROW, description="\"row\" or \"aggregate\"")
    status: FlagStatus = Field(
        description="\"regressed\" (confirmed; fails the gate), \"flaky\" (not confirmed), \"insufficient data\"")
    scorers: list[str] = Field(
        description="the units that flagged it: scorer names, \"*\" for \"some scorer\"")
    # failures / runs in the accepted run, this gate and the reruns: per unit for a row, one total
    # for an aggregate (whose first has `expected` instead of runs)
    accepted: dict[str, UnitCounts] = Field(default_factory=dict)
    first: dict[str, UnitCounts] | UnitCounts = Field(default_factory=dict)
    reruns: dict[str, UnitCounts] | UnitCounts = Field(default_factory=dict)
    p_first: float = Field(description="stage 1 (screening) p")
    p_value: float | None = Field(description="stage 2 (on the reruns alone); None: judged in one stage")
    rows: list[str] = Field(default_factory=list, description="an aggregate's rows (rerun)")
    p_reruns: float | None = Field(None, description="an aggregate: its reruns' own p, before Fisher's "
                                                     "combination with stage 1 (p_value)")
    rerun_rows: int | None = Field(None, description="an aggregate: the rerun rows its reruns' p is over")
    pooled: bool = Field(False, description="an aggregate stage 1 did not flag, tested on the reruns pooled "
                        "(decision rules 1-2; rule 3 tests flagged totals only)")
    reachable: bool = Field(True, description="a row: False when even failing every rerun could not confirm")
    mean: float | None = Field(None, description="an aggregate of a scorer below its bar: its mean")
    bar: float | None = Field(None, description="an aggregate of a scorer below its bar: the bar")
    bar_stands: bool = Field(False, description="regressed only because a breach with no reruns to judge it "
                                                "stands (fail closed)")
    line: str = Field("", description="the flag in one line, as the verdict prints it "
                                      "(worded by turngate/output/wording.py)")

    @property
    def scorer(self) -> str:
        return ", ".join(unit_label(u) for u in self.scorers)


class StoredVerdict(BaseModel):
    """The gate's verdict as a results file and --json keep it: the decision without the
    per-scorer results (those are in each version's summary: ok, gate_bar, accepted, p_value)."""
    model_config = _CONFIG
    exit_code: int = Field(description="0 pass, 1 failed, 2 cannot judge")
    line: str = Field(description="the headline, then one reason per line (see lines())")
    reasons: list[str] = Field(default_factory=list, description="each finding's text, in order")
    findings: list[Finding] = Field(default_factory=list, description="why it fails, typed: one per reason")
    regressed: list[FlaggedRow] = Field(default_factory=list, description="confirmed: each fails the gate")
    flaky: list[FlaggedRow] = Field(default_factory=list, description="flagged, not confirmed by the reruns")
    insufficient: list[FlaggedRow] = Field(default_factory=list,
                                           description="flagged, nothing to confirm with")
    notes: list[str] = Field(default_factory=list)
    confirmation: ConfirmationSummary | None = Field(None, description="what the reruns were and cost")
    sensitivity: Sensitivity | None = Field(
        None, description="what this verdict could see (a gate: simulated breaks; a comparison: McNemar's reach)")

    @model_validator(mode="before")
    @classmethod
    def _no_critical_p(cls, data: Any) -> Any:
        """Records before the two-stage gate stored a `critical_p` (always None since): dropped on read."""
        if isinstance(data, dict) and "critical_p" in data:
            data = {k: v for k, v in data.items() if k != "critical_p"}
        return data

    @property
    def headline(self) -> str:
        return self.line.splitlines()[0] if self.line else ""

    def lines(self, limit: int = 10, results: str | None = None) -> list[str]:
        """The headline and at most `limit` reasons, one per line; the rest counted, with where to see them."""
        out = [self.headline] + [f"  - {r}" for r in self.reasons[:limit]]
        if len(self.reasons) > limit:
            where = f"{cli.command('show')} {results} --verdict" if results else "the results file"
            out.append(f"  ... and {len(self.reasons) - limit} more (see {where})")
        return out
