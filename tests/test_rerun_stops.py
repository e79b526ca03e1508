"""Stage 2 made cheaper without changing whether a gate fails: a row rerun only for its own flag stops once
it can no longer be confirmed (confirm.RowStop), and the reruns asked by units' totals are given
out within a budget (GatePolicy.rerun_budget), the rows with the least likely stage 1 first, a
scorer below its bar always. Readers check that a record's reruns are exactly what that rule
calls for."""
from __future__ import annotations

import random

import pytest

from tests.record_helpers import run
from tests.test_verdict import BARS, REG, ROWS, SCORERS, reference_from, runs_for
from turngate.commands import regression, show
from turngate.output.wording import decide
from turngate.record.results import load_record, save_record
from turngate.record.summaries import CellCounts, ConfirmationSummary, RunCount
from turngate.verdict.confirm import Counts, RowStop, screen, unit_p
from turngate.verdict.decide import plan_reruns, rerun_stops, reruns_needed
from turngate.verdict.policy import DEFAULT, GatePolicy
from turngate.verdict.reference import Cell, Reference, RowRef
from turngate.verdict.summary import summarise

ROW_BY_ID = {r["id"]: r for r in ROWS}


def both(fail, seeds, ref, policy=DEFAULT):
    """The gate of version `fail` judged on every planned rerun, and on the reruns the stops call for."""
    seeds = list(seeds)
    summary = summarise(runs_for(seeds, fail), ROW_BY_ID, BARS, len(seeds))
    below = summary.below(BARS)
    plan = plan_reruns(summary, ref, seeds, below_bar=below, policy=policy)
    stops = rerun_stops(summary, ref, below_bar=below, policy=policy)
    full = {rid: [run("v3", rid, s, {n: not fail(rid, s, n) for n in SCORERS}) for s in ss] for rid, ss in plan.items()}
    cut = {rid: rs[:reruns_needed(stops[rid], rs, ref)] if rid in stops else rs for rid, rs in full.items()}
    out = []
    for reruns in (full, cut):
        flat = [r for rs in reruns.values() for r in rs]
        s = summary.model_copy(deep=True)
        s.confirmation = ConfirmationSummary.of(summarise(flat, ROW_BY_ID, BARS, len(seeds)), rows=len(plan),
                                                runs=len(flat))
        out.append((decide(s, ref, REG, policy=policy), len(flat)))
    return out, stops


NOISY = reference_from(runs_for(range(100), lambda rid, s, n: n == "refund_outcome" and (s * 7 + int(rid[-2:] if
                                                                                                    rid[-2:].isdigit() else 3)) % 100 < 12),
                       range(100))


@pytest.mark.parametrize("draw", range(30))
def test_stopping_early_never_changes_whether_the_gate_fails(draw):
    """Random versions (every row fails at its own rate, some rows broken for good): the gate on
    the reruns the stops call for fails exactly when it fails on every planned rerun, at one and
    five trials, and never confirms a row the full plan does not (a stopped row could not have
    been Holm's first rejection; one a later step would also confirm may be reported flaky)."""
    rng = random.Random(draw)
    rates = {r["id"]: rng.choice([0.0, 0.05, 0.12, 0.3, 1.0]) for r in ROWS}
    salt = rng.random()

    def fail(rid, s, n):
        return n == "refund_outcome" and random.Random(f"{salt}/{rid}/{s}").random() < rates[rid]

    for seeds in ([500 + draw], range(600 + 5 * draw, 605 + 5 * draw)):
        (full, n_full), (cut, n_cut), = both(fail, seeds, NOISY)[0]
        assert cut.exit_code == full.exit_code
        assert {x.row_id for x in cut.regressed} <= {x.row_id for x in full.regressed}
        assert bool(cut.regressed) == bool(full.regressed)
        assert n_cut <= n_full


def test_a_noisy_row_whose_reruns_pass_stops_early_and_a_broken_one_does_not():
    """One failure on a row the accepted run fails 12% of the time: flagged, planned for its K
    reruns; its reruns pass, and after a few it cannot be confirmed any more. The same row broken
    for good is rerun K times and fails the gate."""
    noisy = "r05"
    fail = lambda rid, s, n: rid == noisy and n == "refund_outcome" and s == 500  # noqa: E731
    ((full, n_full), (cut, n_cut)), stops = both(fail, [500], NOISY)
    assert noisy in stops and stops[noisy].k == n_full > 1
    assert n_cut < n_full and cut.exit_code == full.exit_code == 0
    broken = lambda rid, s, n: rid == noisy and n == "refund_outcome"  # noqa: E731
    ((full, n_full), (cut, n_cut)), _ = both(broken, [500], NOISY)
    assert cut.exit_code == full.exit_code == 1 and n_cut == n_full  # a broken row is rerun in full


def test_hopeless_is_exact():
    """A stop is called hopeless only when k - done more failures could not reach the level, and
    then its p on the reruns made is no lower than that best case."""
    rng = random.Random(5)
    for _ in range(300):
        acc = Counts(rng.randint(0, 60), 300)
        k = rng.randint(3, 20)
        stop = RowStop(("u",), {"u": acc}, k, 10 ** -rng.uniform(2, 4))
        done = rng.randint(1, k)
        failed = rng.randint(0, done)
        best = unit_p(Counts(failed + k - done, k), acc)
        assert stop.hopeless(done, {"u": Counts(failed, done)}) == (best > stop.level)
        assert unit_p(Counts(failed, done), acc) >= best - 1e-12


def test_the_budget_caps_the_totals_reruns_but_never_a_bar_breach():
    def row(failed, runs):
        return RowRef(sha="0", cells={"refund_outcome": Cell(passed=runs - failed, failed=failed,
                                                             failed_seeds=list(range(failed)))})

    ids = [f"q{i}" for i in range(10)] + ["idle"]
    ref = Reference(provenance={"version": "t"}, seeds=list(range(100)), rows={i: row(0, 100) for i in ids})
    cells = {i: {"refund_outcome": CellCounts(passed=4, failed=1)} for i in ids[:3]}
    cells.update({i: {"refund_outcome": CellCounts(passed=5, failed=0)} for i in ids[3:]})
    runs = {i: RunCount(runs=5, failed=c["refund_outcome"].failed) for i, c in cells.items()}
    open_ = screen(cells, runs, ref, trials=5, policy=GatePolicy(rerun_budget=float("inf")))
    assert set(open_.fixed) == {"q0", "q1", "q2"} and all(k == 60 for k in open_.fixed.values())
    capped = screen(cells, runs, ref, trials=5, policy=GatePolicy(rerun_budget=0.5))
    assert sum(capped.fixed.values()) <= 0.5 * 55 and capped.fixed  # 27 of 55 runs: one row's worth
    assert set(capped.stops) | set(capped.fixed) == {"q0", "q1", "q2"}  # the others stop early instead
    owed = screen(cells, runs, ref, trials=5, below_bar={"refund_outcome"}, policy=GatePolicy(rerun_budget=0.0))
    assert set(owed.fixed) == {"q0", "q1", "q2"} and not owed.stops  # a breach gets its reruns


def _gate(tmp_path, seed):
    """Three noisy rows under low bars (one failure in three runs would breach the real ones, and
    a breach is always rerun in full)."""
    import tomllib

    from turngate.verdict.reference import DEFAULT_PATH as REFERENCE
    from turngate.verdict.thresholds import DEFAULT_PATH as BARS_PATH

    bars = tmp_path / "low-bars.toml"
    if not bars.exists():
        names = tomllib.loads(BARS_PATH.read_text())["scorers"]
        bars.write_text("".join(f"[scorers.{n}]\nbar = 0.1\n\n" for n in names))
    out = tmp_path / f"g{seed}"
    code = regression.main(["--version", "v3", "--seeds", str(seed), "--only", "refund_manager_approved_a1005",
                            "refund_quoted_policy_90_days", "refund_currency_a1008", "--no-upload", "--quiet",
                            "--thresholds", str(bars), "--reference", str(REFERENCE), "--out", str(out)])
    (path,) = out.glob("*.json")
    return code, path


def test_a_record_holds_exactly_the_reruns_its_stops_call_for(tmp_path, capsys):
    """A real gate of three noisy rows, on the first seed where one of them stopped early: the
    record reads back; keeping a rerun past the stop, or deleting the one that stopped it, is refused."""
    for seed in range(4000, 4200):
        code, path = _gate(tmp_path, seed)
        record = load_record(path)
        planned = record.meta.confirm.get("rows") or {}
        made = {rid: [r for r in record.runs if r.stage == "confirm" and r.row_id == rid] for rid in planned}
        stopped = [rid for rid, seeds in planned.items() if 0 < len(made[rid]) < len(seeds)]
        if stopped:
            break
    else:
        pytest.fail("no seed in 4000-4199 made a noisy row stop early")
    assert code == 0 and show.main([str(path), "--verdict"]) == 0
    rid = stopped[0]
    seeds = planned[rid]
    last = max((r for r in made[rid]), key=lambda r: seeds.index(r.trial))
    extra = last.model_copy(update={"trial": seeds[len(made[rid])], "seed": seeds[len(made[rid])]})
    for edit, needle in ((lambda rec: rec.runs.append(extra), "not in the plan"),
                         (lambda rec: rec.runs.remove(next(r for r in rec.runs if r.stage == "confirm" and r.row_id == rid
                                                           and r.trial == last.trial)), "missing")):
        rec = load_record(path)
        edit(rec)
        bad = tmp_path / "bad.json"
        save_record(rec, bad)
        capsys.readouterr()
        assert show.main([str(bad), "--verdict"]) == 2
        assert needle in capsys.readouterr().err
