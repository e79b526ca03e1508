"""The two-stage gate's statistics: screen a gate's runs, plan confirmation reruns, judge them.

Why two stages: at one trial a single failure on a row the accepted version fails now and then
cannot tell "as usual" from "broken"; no threshold on one gate can have both a low false-alarm
rate and see that break. So stage 1 only *screens*, liberally; stage 2 reruns exactly the
flagged rows on fresh seeds and the gate fails only on what the reruns confirm.

Every test here compares failures now with the accepted run (reference.json) through the
Beta-binomial predictive: a row's accepted counts give a Jeffreys posterior on its failure rate,
so the reference's own uncertainty (20 accepted runs say less than 100) is part of every p-value.
No blocks of seeds, no empirical quantiles: the p-values are exact sums.

- A *unit* is one row x scorer (failed / applicable runs) or the row's runs that failed some
  scorer (`ANY`).
- Stage 1 flags a row when one of its units failed and its tail p is at or below screen_p, and
  flags a scorer (or ANY) *in aggregate* when its total over rows has a p at or below
  screen_p_agg (diffuse degradation: many rows each a little worse). A total has two
  statistics, Bonferroni-combined (either_p): the summed failures (a rise spread over the noisy
  rows) and the summed surprise, -ln of each row's own tail p (evidence_p: a few quiet rows that
  now fail a little).
- Stage 2 reruns each flagged row on K fresh seeds (K: the fewest reruns that confirm a row
  now failing every run, policy.power_rate), stopping once it cannot be confirmed (RowStop), the
  rows that failed a flagged total (aggregate_reruns), and, many more times, every row that
  failed a *quiet* unit, one the accepted run (nearly) never failed (quiet_reruns: a diffuse
  change shows as such rows failing a little). A rerun's
  null is the row's rate as the accepted run and this gate saw it together (with_gate), so a
  rerun p is valid whatever stage 1 showed and chose. A flagged row is tested on its reruns; a
  flagged total on stage 1's p and its reruns' p (summed surprise over every rerun row) combined
  by Fisher, unconditionally (an adaptive two-stage design: the reruns may depend on stage 1 in
  any way because their p is valid given it). The flagged rows are one Holm family at row_share
  of alpha; the totals another at the rest, every unit's total a member (one stage 1 did not
  flag counts as p = 1, so the family cannot shrink with the data). So P(any false
  confirmation) <= alpha + alpha_stage1_rows (a row may also stand on stage 1 alone, at a
  Bonferroni over every candidate). Every knob named here is a field of GatePolicy
  (turngate/verdict/policy.py). docs/validation-gate.md has the design's measured power and cost,
  and (7.2) what each device buys; decision rule 3 dropped two of rule 2's that bought no
  detection: the lean asked of a total's reruns (it cost some) and the pooled test of the
  totals stage 1 did not flag.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from functools import lru_cache
from math import comb, exp, log

from turngate.record.summaries import ANY as SUMMARY_ANY
from turngate.record.summaries import CellCounts, FlagKind, FlagStatus, RunCount
from turngate.verdict.policy import DEFAULT, GatePolicy
from turngate.verdict.reference import PRIOR, Reference
from turngate.verdict.stats import beta_binomial_pmf, beta_binomial_sf, sum_upper_tails

ANY = SUMMARY_ANY  # the unit "some scorer failed in this run"
# every level, screen and rerun count comes from a GatePolicy (turngate/verdict/policy.py)
CONFIRM_BASE, CONFIRM_STRIDE = 1_000_000_000, 4096  # confirmation seeds: far from any gate's own


def unit_label(unit: str) -> str:
    return "some scorer" if unit == ANY else unit


@dataclass(frozen=True)
class Counts:
    failed: int
    applicable: int


def accepted_units(reference: Reference, row_id: str) -> dict[str, Counts]:
    """The accepted failures of every testable unit of a row."""
    ref = reference.rows.get(row_id)
    if ref is None:
        return {}
    hit = _ACCEPTED.get(id(ref))
    if hit is not None and hit[0] is ref:
        return dict(hit[1])
    out = {name: Counts(c.failed, c.passed + c.failed) for name, c in ref.cells.items() if c.passed + c.failed}
    if ref.runs:
        out[ANY] = Counts(len(ref.failed_seeds()), ref.runs)
    if len(_ACCEPTED) >= 100_000:
        _ACCEPTED.clear()
    _ACCEPTED[id(ref)] = (ref, out)  # the row itself is kept: its id cannot be reused while the entry stands
    return dict(out)


# accepted_units per accepted row (a RowRef is never changed in place: a narrowed reference is made of
# new or the same rows): screen() and judge() ask for every row's units many times per gate
_ACCEPTED: dict[int, tuple[object, dict[str, Counts]]] = {}


def observed_units(cells: dict[str, CellCounts] | None, failed_runs: RunCount | None) -> dict[str, Counts]:
    """A gate's (or its reruns') failures per unit of one row, from the summary's numbers."""
    out = {name: Counts(c.failed, c.applicable) for name, c in (cells or {}).items()}
    if failed_runs is not None:
        out[ANY] = Counts(failed_runs.failed, failed_runs.runs)
    return out


def unit_p(now: Counts, accepted: Counts) -> float:
    """P(at least this many failures) under the accepted rate (Beta-binomial predictive)."""
    return beta_binomial_sf(now.failed, now.applicable, accepted.failed + PRIOR,
                            accepted.applicable - accepted.failed + PRIOR)


def with_gate(accepted: Counts, now: Counts | None) -> Counts:
    """A row's rate as the accepted run and this gate saw it together: what its reruns are
    drawn from if nothing changed (stage 1 chose the row for its failures: leaving them out
    would make a flagged row's reruns look worse than chance)."""
    if now is None:
        return accepted
    return Counts(accepted.failed + now.failed, accepted.applicable + now.applicable)


def expected_failures(parts: list[tuple[Counts, Counts]]) -> float:
    """The failures these (now, accepted) units make likely: each unit's runs now times its
    accepted rate's Jeffreys mean."""
    return sum(n.applicable * (a.failed + PRIOR) / (a.applicable + 2 * PRIOR) for n, a in parts)


def aggregate_p(parts: list[tuple[Counts, Counts]]) -> float:
    """P(the total of failures over these (now, accepted) units is at least what it is): the
    exact tail of a sum of independent Beta-binomials (rows' runs are independent)."""
    parts = [(n, a) for n, a in parts if n.applicable]
    failed = sum(n.failed for n, _ in parts)
    if failed == 0:
        return 1.0
    pmfs = [beta_binomial_pmf(n.applicable, a.failed + PRIOR, a.applicable - a.failed + PRIOR) for n, a in parts]
    return sum_upper_tails(pmfs, failed)[failed]


def evidence_p(parts: list[tuple[Counts, Counts]], step: float = DEFAULT.evidence_step) -> float:
    """P(the rows' summed surprise is at least what it is) under the accepted rates: each row's
    surprise is -ln of its own tail p (0 when it did not fail), on a grid of `step`, and
    the null distribution of the sum is exact (each row's surprise takes the value of x failures
    with that count's Beta-binomial probability; rows are independent). Unlike the sum of
    failures, a failure on a row that never failed counts for far more than one on a row that
    fails one run in six: a change that breaks quiet rows a little is not drowned by the usual
    failures of the noisy ones."""
    parts = [(n, a) for n, a in parts if n.applicable]
    keys = [(n.applicable, a.failed + PRIOR, a.applicable - a.failed + PRIOR, step) for n, a in parts]
    observed = sum(_surprise(*k)[1][n.failed] for k, (n, _) in zip(keys, parts, strict=True))
    if observed == 0:
        return 1.0
    return sum_upper_tails([_lumped(*k, observed) for k in keys], observed)[observed]


# evidence_p's per-row pieces depend only on the row's runs, its accepted rate and the grid: cached,
# since every gate (and every simulated gate of turngate/verdict/sensitivity.py) asks for the same rows again


@lru_cache(maxsize=65536)
def _surprise(n: int, a: float, b: float, step: float) -> tuple[tuple[float, ...], tuple[int, ...]]:
    """(pmf, surprise grid): P(x failures) and -ln P(at least x) on the grid, x = 0..n."""
    pmf = beta_binomial_pmf(n, a, b)
    tails = [min(1.0, sum(pmf[x:])) for x in range(len(pmf))]
    return pmf, tuple(int(-log(max(t, 1e-300)) / step + 1e-9) for t in tails)


@lru_cache(maxsize=65536)
def _lumped(n: int, a: float, b: float, step: float, observed: int) -> tuple[float, ...]:
    """A row's surprise distribution, everything beyond the observed sum in one lump."""
    pmf, grid = _surprise(n, a, b, step)
    out = [0.0] * (min(max(grid), observed) + 1)
    for x, g in enumerate(grid):
        out[min(g, observed)] += pmf[x]
    return tuple(out)


def either_p(parts: list[tuple[Counts, Counts]], step: float = DEFAULT.evidence_step) -> float:
    """The smaller of the two totals' p-values (summed failures, summed surprise), doubled
    (Bonferroni): a rise spread over the noisy rows shows in the first, a few quiet rows
    broken a little in the second."""
    return min(1.0, 2 * min(aggregate_p(parts), evidence_p(parts, step)))


def critical_count(k: int, accepted: Counts, level: float) -> int | None:
    """The fewest failures in k reruns that reach `level` (None: not even k of k)."""
    return next((x for x in range(1, k + 1) if unit_p(Counts(x, k), accepted) <= level), None)


def reruns_for(accepted: Counts, level: float, k_max: int, policy: GatePolicy = DEFAULT) -> tuple[int, bool]:
    """(K, reachable): the fewest reruns that confirm a row now failing policy.power_rate of its
    runs with probability policy.power at `level`; k_max and False when even that many cannot."""
    rate = policy.power_rate
    for k in range(policy.k_min, k_max + 1):
        x = critical_count(k, accepted, level)
        if x is not None and sum(comb(k, j) * rate ** j * (1 - rate) ** (k - j)
                                 for j in range(x, k + 1)) >= policy.power:
            return k, True
    return k_max, critical_count(k_max, accepted, level) is not None


@dataclass
class RowFlag:
    row_id: str
    units: list[str]  # the units that flagged it (scorer names, ANY)
    p: float  # stage 1: the smallest unit p
    now: dict[str, Counts]
    accepted: dict[str, Counts]
    n_units: int = 1  # every testable unit of the row (the one-stage test's Bonferroni factor)
    reruns: int = 0
    reachable: bool = True  # False: even failing every rerun could not confirm (accepted rate too high)


@dataclass
class AggregateFlag:
    unit: str  # a scorer, or ANY (runs that failed some scorer)
    p: float
    rows: list[str]  # the rows that failed it now: they are rerun
    failed: int
    expected: float
    bar: bool = False  # the scorer's mean is below its bar: the reruns decide whether that stands


@dataclass
class Screen:
    """What stage 1 found and what stage 2 must rerun."""
    rows: list[RowFlag] = field(default_factory=list)
    aggregates: list[AggregateFlag] = field(default_factory=list)
    reruns: dict[str, int] = field(default_factory=dict)  # row -> K (the most it is rerun)
    # rows rerun for a unit's total (a flagged total's rows, quiet rows), within the rerun budget:
    # all their reruns are made and every total is tested on them; a row rerun only for its own
    # flag is in `stops` instead: its reruns stop once it can no longer be confirmed
    fixed: dict[str, int] = field(default_factory=dict)
    stops: dict[str, RowStop] = field(default_factory=dict)
    candidates: int = 0  # rows and aggregates that could have been flagged (the one-stage family)
    totals: dict[str, AggregateFlag] = field(default_factory=dict)  # every unit's total, flagged or not
    gate: dict[str, dict[str, Counts]] = field(default_factory=dict)  # row -> unit -> this gate's failures

    @property
    def family(self) -> int:
        return len(self.rows) + len(self.aggregates)

    @property
    def runs(self) -> int:
        return sum(self.reruns.values())


def screen(cells: dict[str, dict[str, CellCounts]], failed_runs: dict[str, RunCount], reference: Reference, trials: int,
           below_bar: set[str] | frozenset[str] = frozenset(), policy: GatePolicy = DEFAULT) -> Screen:
    """Stage 1 over a gate's summary numbers (VersionSummary.cells and .failed_runs).
    below_bar: scorers whose mean is below their bar; each is flagged in aggregate, so that a bar
    breached by a fluke (a rare failure on a row that never failed in 20 accepted runs) is not
    a red light unless the reruns of its rows confirm it."""
    out = Screen()
    rows = sorted(rid for rid in failed_runs if rid in reference.rows)
    seen = {rid: (observed_units(cells.get(rid), failed_runs.get(rid)), accepted_units(reference, rid)) for rid in rows}
    out.gate = {rid: now for rid, (now, _) in seen.items()}
    for rid in rows:
        now, acc = seen[rid]
        ps = {u: unit_p(now[u], acc[u]) for u in now if u in acc and now[u].failed}
        flagged = _units_to_test({u: p for u, p in ps.items() if p <= policy.screen_p}, now, acc)
        if flagged:
            out.rows.append(RowFlag(rid, flagged, min(ps[u] for u in flagged), now, acc,
                                    n_units=len([u for u in now if u in acc])))
    names = sorted({n for rid in rows for n in (cells.get(rid) or {})}) + [ANY]
    out.candidates = len(rows) + len(names)
    for unit in names:
        parts, failing = [], []
        for rid in rows:
            now, acc = seen[rid]
            if unit in now and unit in acc:
                parts.append((now[unit], acc[unit]))
                if now[unit].failed:
                    failing.append(rid)
        p = either_p(parts, policy.evidence_step)
        expected = expected_failures(parts)
        total = AggregateFlag(unit, p, failing, sum(n.failed for n, _ in parts), expected, bar=unit in below_bar)
        out.totals[unit] = total
        if p <= policy.screen_p_agg or (unit in below_bar and failing):
            out.aggregates.append(total)
    k_cap = max(policy.k_max, trials)
    m = max(1, len(out.rows))
    for flag in out.rows:
        level = policy.level(FlagKind.ROW) / m / len(flag.units)
        ks = [reruns_for(with_gate(flag.accepted[u], flag.now[u]), level, k_cap, policy) for u in flag.units]
        flag.reruns = max(k for k, _ in ks)
        flag.reachable = any(ok for _, ok in ks)
        out.reruns[flag.row_id] = flag.reruns
    wanted: dict[str, int] = {}  # row -> reruns a unit's total asks of it
    owed: set[str] = set()  # rows of a scorer below its bar: their reruns are outside the budget
    k_agg = aggregate_reruns(trials, policy)
    for agg in out.aggregates:
        for rid in agg.rows:
            wanted[rid] = max(wanted.get(rid, 0), k_agg)
            if agg.bar:
                owed.add(rid)  # without reruns a breach stands: a fluke must get its chance to pass
    k_quiet = quiet_reruns(trials, policy)
    for rid in rows:
        now, acc = seen[rid]
        if any(now[u].failed and u in acc and quiet(acc[u], policy) for u in now):
            wanted[rid] = max(wanted.get(rid, 0), k_quiet)
    # the budget goes to the rows whose stage 1 was least likely first (a break shows there):
    # which rows get how many reruns depends on stage 1 only, so every rerun p stays valid
    gate_runs = sum(c.runs for c in failed_runs.values())
    left = int(policy.rerun_budget * gate_runs) if policy.rerun_budget != float("inf") else None
    strength = {rid: min((unit_p(seen[rid][0][u], seen[rid][1][u]) for u in seen[rid][0]
                          if u in seen[rid][1] and seen[rid][0][u].failed), default=1.0) for rid in wanted}
    for rid in sorted(wanted, key=lambda r: (strength[r], r)):
        k = max(wanted[rid], out.reruns.get(rid, 0))
        if left is not None and rid not in owed:
            k = min(k, left) if left >= min(policy.k_agg_min, policy.k_quiet_min) else 0
            if k and k < out.reruns.get(rid, 0):
                k = 0  # what is left cannot make even the row's own reruns unconditional
            left -= k
        if k:
            out.fixed[rid] = out.reruns[rid] = k
    for flag in out.rows:
        if flag.row_id not in out.fixed:
            # the level of Holm's first step, the one K was sized for: a row that cannot reach it
            # cannot be the first rejection, so stopping it never turns a failing gate green
            out.stops[flag.row_id] = RowStop(
                tuple(flag.units), {u: with_gate(flag.accepted[u], flag.now[u]) for u in flag.units}, flag.reruns,
                policy.level(FlagKind.ROW) / m / len(flag.units))
    return out


@dataclass(frozen=True)
class RowStop:
    """A row rerun only for its own flag: its reruns are made in batches (one at a time, then
    growing, up to k: checkpoints) and stop at the first batch after which it can no longer reach
    the level of Holm's first step (the row family's level over its m flagged rows and its units,
    the level K was sized for), even if every rerun left failed every unit. That never changes
    whether the gate fails: a row that cannot reach the first step's level cannot be Holm's first
    rejection, and its p on the reruns made is at least its best case (failures can only rise by
    the runs not made), so the rows' family rejects something exactly when it would on every
    planned rerun. When it does, a stopped row that Holm's later, more lenient steps would also
    have confirmed is reported flaky rather than regressed: the gate fails either way. (m counts
    every flagged row; in the rare gate where a row's reruns leave no unit to judge, Holm's family
    is smaller and its first step a little more lenient than the stop's level.) A stop never
    confirms more than the full plan, so the false-alarm bound holds.
    On an unchanged version a noisy row's first reruns mostly pass: then it costs one or two
    reruns, not k (rule 1 stopped at the most lenient level instead: three to five)."""
    units: tuple[str, ...]
    accepted: dict[str, Counts]  # per unit, the accepted runs and this gate's together (with_gate)
    k: int
    level: float  # the row family's level over its m flagged rows and its units: Holm's first step

    def checkpoints(self) -> list[int]:
        """After which rerun the row is looked at: each of the first four (an unchanged noisy row
        is hopeless after a few passes), then every half again (a broken row needs few rounds)."""
        out, c = [], 1
        while c < self.k:
            out.append(c)
            c = min(self.k, c + 1 if c < 4 else -(-3 * c // 2))
        return out + [self.k]

    def hopeless(self, done: int, observed: dict[str, Counts]) -> bool:
        """After `done` reruns with these failures per unit: not even k - done more failures
        could bring a unit to the level."""
        more = self.k - done
        return all(unit_p(Counts(observed.get(u, Counts(0, 0)).failed + more,
                                 observed.get(u, Counts(0, 0)).applicable + more), self.accepted[u]) > self.level
                   for u in self.units)

    def needed(self, outcomes: list[dict[str, Counts]]) -> int:
        """How many reruns this row needs, given the outcomes of the ones made (in plan order:
        each run's failures per unit, Counts(1, 1) failed, (0, 1) passed, (0, 0) n/a)."""
        for c in self.checkpoints():
            if c > len(outcomes):
                return c
            observed = {u: Counts(sum(o[u].failed for o in outcomes[:c] if u in o),
                                  sum(o[u].applicable for o in outcomes[:c] if u in o)) for u in self.units}
            if self.hopeless(c, observed):
                return c
        return self.k


def aggregate_reruns(trials: int, policy: GatePolicy = DEFAULT) -> int:
    """Reruns per row of a flagged total (the rows that failed it now). Most of them are rows
    that fail now and then anyway, whose few more failures count for little in the reruns'
    summed surprise, so a rise spread over them (a hotter model) needs many reruns when stage 1
    saw little of it: with 20, five-trial gates of a hotter model whose reruns failed 19% where
    12% was expected still missed the family's level; 30 cost an unchanged version about 30% more
    reruns (docs/validation-gate.md, section 6).
    Fewer at one or two trials, where a flagged total is thin evidence and mostly a fluke."""
    return min(policy.k_agg_max, max(policy.k_agg_min, policy.k_agg_per_trial * trials))


def rerun_bounds(trials: int, policy: GatePolicy = DEFAULT) -> tuple[int, int]:
    """The fewest and the most reruns the design gives one flagged row at this many trials: a
    row's own tests (reruns_for), a flagged total's rows (aggregate_reruns), a quiet unit's rows
    (quiet_reruns)."""
    return (min(policy.k_min, policy.k_agg_min, policy.k_quiet_min),
            max(max(policy.k_max, trials), aggregate_reruns(trials, policy), quiet_reruns(trials, policy)))


def quiet(accepted: Counts, policy: GatePolicy = DEFAULT) -> bool:
    """The accepted run makes a failure of this unit rare, and is sure of it (enough runs)."""
    return (accepted.failed + PRIOR) / (accepted.applicable + 2 * PRIOR) <= policy.quiet_rate


def quiet_reruns(trials: int, policy: GatePolicy = DEFAULT) -> int:
    """Reruns of a row that failed a *quiet* unit now (one the accepted run failed in at most
    a Jeffreys-mean rate of at most policy.quiet_rate), whether or not a total was flagged: a diffuse change (a safety
    switch off) shows as rows that never failed now failing one run in ten, and such a row
    needs many reruns to stand out against a rate the accepted run and this gate's own failure
    leave uncertain (60 reruns of a row failing 10% against 0 of 100 accepted and 1 of 5 now:
    p ~ 5e-3; 40: ~1e-2). Such failures are rare on an unchanged version (a fifth of five-trial
    gates has one), so this costs little there."""
    return min(policy.k_quiet_max, max(policy.k_quiet_min, policy.k_quiet_per_trial * trials))


def _units_to_test(ps: dict[str, float], now: dict[str, Counts], acc: dict[str, Counts]) -> list[str]:
    """At most two units per flagged row, so the reruns' Bonferroni stays small: the scorer whose
    failure was least likely (a break shows there first) and the runs failing some scorer (a row
    failing several of its usual ways at once), unless both say the same thing."""
    scorers = sorted((p, u) for u, p in ps.items() if u != ANY)
    out = [scorers[0][1]] if scorers else []
    if ANY in ps and not (out and now[out[0]] == now[ANY] and acc[out[0]] == acc[ANY]):
        out.append(ANY)
    return out


def confirm_seeds(gate_seeds: list[int], avoid: set[int], k: int) -> list[int]:
    """k fresh seeds for the reruns, derived from the gate's own seeds (another gate gets
    others, so two gates never share a confirmation) and never one in `avoid` (the gate's and
    the reference's seeds: rerunning one would repeat its run, not draw a new one)."""
    digest = hashlib.sha256(",".join(map(str, sorted(gate_seeds))).encode()).digest()
    start = CONFIRM_BASE + int.from_bytes(digest[:4], "big") % 100_000 * CONFIRM_STRIDE
    out, s = [], start
    while len(out) < k:
        if s not in avoid:
            out.append(s)
        s += 1
    return out


@dataclass
class RowEvidence:
    """A flagged row's numbers per tested unit: the accepted run's, this gate's, its reruns'."""
    accepted: dict[str, Counts]
    first: dict[str, Counts]
    reruns: dict[str, Counts]  # only the units its reruns could test
    reachable: bool  # False: even failing every rerun could not confirm
    n_units: int  # every testable unit of the row (the one-stage Bonferroni factor)


@dataclass
class TotalEvidence:
    """A unit's total over rows: stage 1's, and the reruns' over the rerun rows."""
    rows: list[str]  # the rows that failed it now
    bar: bool  # the scorer's mean is below its bar
    p_reruns: float | None
    rerun_rows: int
    first_failed: int
    first_expected: float
    reruns: Counts
    reruns_expected: float


@dataclass
class Judged:
    """One flagged row or aggregate after stage 2 (or judged in one stage)."""
    kind: FlagKind
    key: str  # row id, or the aggregate's unit
    p1: float
    p2: float | None  # None: no reruns to judge
    evidence: RowEvidence | TotalEvidence
    status: FlagStatus = FlagStatus.FLAKY
    units: list[str] = field(default_factory=list)


def fisher(p1: float, p2: float) -> float:
    """Fisher's combination of two independent p-values: the chi-square(4) tail of -2 ln(p1 p2)."""
    x = -2 * (log(max(p1, 1e-300)) + log(max(p2, 1e-300)))
    return min(1.0, exp(-x / 2) * (1 + x / 2))


def holm(ps: list[float], alpha: float) -> list[bool]:
    """Holm's step-down: which of these p-values are rejected at family-wise level alpha."""
    order = sorted(range(len(ps)), key=lambda i: ps[i])
    out = [False] * len(ps)
    for rank, i in enumerate(order):
        if ps[i] > alpha / (len(ps) - rank):
            break
        out[i] = True
    return out


def judge(found: Screen, reference: Reference, confirm_cells: dict[str, dict[str, CellCounts]] | None,
          confirm_failed: dict[str, RunCount] | None, policy: GatePolicy = DEFAULT) -> list[Judged]:
    """Stage 2: each flagged row's reruns against its accepted units, each flagged aggregate's
    reruns summed over its rows; Holm over the family at policy.alpha. Without reruns for a member
    (none were made: --no-confirm, a regrade that flags a new row), it is judged on stage 1 at
    policy.alpha_one_stage instead and, when that does not reject, is 'insufficient data'."""
    confirm_cells, confirm_failed = confirm_cells or {}, confirm_failed or {}
    items: list[Judged] = []
    for flag in found.rows:
        now = observed_units(confirm_cells.get(flag.row_id), confirm_failed.get(flag.row_id))
        tested = [u for u in flag.units if u in now and now[u].applicable]
        if tested:
            # against the accepted runs and this gate's together (with_gate): the row was chosen for its failures
            p2 = min(1.0, len(flag.units) * min(unit_p(now[u], with_gate(flag.accepted[u], flag.now[u]))
                                                for u in tested))
        else:
            p2 = None
        evidence = RowEvidence(accepted={u: flag.accepted[u] for u in flag.units}, first={u: flag.now[u] for u in flag.units},
                               reruns={u: now[u] for u in tested}, reachable=flag.reachable, n_units=flag.n_units)
        items.append(Judged(FlagKind.ROW, flag.row_id, flag.p, p2, evidence, units=list(flag.units)))
    # Every flagged unit's total (a scorer, or the runs failing some scorer) is one test of a
    # fixed family: stage 1's tail p over every row, combined (Fisher) with the tail p of the
    # reruns of every rerun row. Under "nothing changed" a row's reruns follow the Beta-binomial
    # of its accepted runs *and this gate's* (the rate it is rerun at is what both saw), so the
    # reruns' p is valid given whatever stage 1 showed, whichever rows it chose and however many
    # reruns: the two p-values combine without conditioning on the flag (an adaptive two-stage
    # design). A total stage 1 did not flag is not tested (rule 2 tested it on the reruns pooled;
    # that caught nothing the rest did not: docs/validation-gate.md 7.2), but it stays in the
    # family (p = 1), so the family cannot shrink with the data.
    rerun_rows = sorted(found.fixed)  # a row rerun only for its own flag may stop early: not pooled
    for total in found.aggregates:
        unit = total.unit
        parts = []
        for rid in rerun_rows:
            now = observed_units(confirm_cells.get(rid), confirm_failed.get(rid)).get(unit)
            acc = accepted_units(reference, rid).get(unit)
            if now is not None and acc is not None and now.applicable:
                parts.append((now, with_gate(acc, found.gate.get(rid, {}).get(unit))))
        p2 = evidence_p(parts, policy.evidence_step) if parts else None
        p = None if p2 is None else fisher(total.p, p2)
        evidence = TotalEvidence(rows=list(total.rows), bar=total.bar, p_reruns=p2, rerun_rows=len(parts),
                                 first_failed=total.failed, first_expected=total.expected,
                                 reruns=Counts(sum(n.failed for n, _ in parts), sum(n.applicable for n, _ in parts)),
                                 reruns_expected=expected_failures(parts))
        items.append(Judged(FlagKind.AGGREGATE, unit, total.p, p, evidence, units=[unit]))
    for kind in (FlagKind.ROW, FlagKind.AGGREGATE):
        # two families, alpha split between them (Bonferroni), Holm within each: many weakly
        # flagged rows must not starve the test of a diffuse rise, nor the other way round
        confirmed = [x for x in items if x.p2 is not None and x.kind == kind]
        # the totals' family is every unit, tested or not (untested: p = 1), so which units had
        # rerun rows (chosen by stage 1) cannot shrink it
        pad = max(0, len(found.totals) - len(confirmed)) if kind == FlagKind.AGGREGATE else 0
        hits = holm([x.p2 for x in confirmed] + [1.0] * pad, policy.level(kind))[:len(confirmed)]
        for x, hit in zip(confirmed, hits, strict=True):
            reachable = not isinstance(x.evidence, RowEvidence) or x.evidence.reachable
            x.status = FlagStatus.REGRESSED if hit else FlagStatus.FLAKY if reachable else FlagStatus.INSUFFICIENT
    # A row whose gate alone is overwhelming (many trials, a small reference: the gate's own
    # failures then weigh as much as the accepted runs in its reruns' null) stands on stage 1
    # at a Bonferroni over every candidate: at most policy.alpha_stage1_rows more false confirmations.
    for x in items:
        if isinstance(x.evidence, RowEvidence) and x.p2 is not None and x.status != FlagStatus.REGRESSED:
            if min(1.0, x.p1 * x.evidence.n_units) <= policy.alpha_stage1_rows / max(1, found.candidates):
                x.status = FlagStatus.REGRESSED
    single = [x for x in items if x.p2 is None]
    if single:
        # one stage: stage 1's own data chose the flags, so the family is every candidate (all rows
        # with all their units, every aggregate), not the flagged few: Bonferroni over all of them
        level = policy.alpha_one_stage / max(1, found.candidates)
        for x in single:
            p = min(1.0, x.p1 * (x.evidence.n_units if isinstance(x.evidence, RowEvidence) else 1))
            x.status = FlagStatus.REGRESSED if p <= level else FlagStatus.INSUFFICIENT
    return items

