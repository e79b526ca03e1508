"""summarise() against a recount made the plain way, straight from the runs (every verdict listed
per row and scorer): the same counts, means, pass@k and kinds, to the last bit, on runs of any
shape (rows and scorers missing from some runs, n/a verdicts, agent errors), and the same numbers
without the failing runs when asked for none."""
from __future__ import annotations

from collections import defaultdict

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.record_helpers import turn
from turngate.record.results import RunResult, ScorerVerdict
from turngate.verdict.stats import pass_at_k, pass_hat_k
from turngate.verdict.summary import row_kind, summarise

NAMES = ["a", "b", "c"]
ROWS = {f"r{i}": {"id": f"r{i}", "inputs": {"tags": [tag]}} for i, tag in enumerate(["golden", "refuse", "x", "open"])}

runs_strategy = st.lists(
    st.tuples(st.sampled_from([*ROWS, "gone"]),  # "gone": a row the record's rows do not hold
              st.dictionaries(st.sampled_from(NAMES), st.sampled_from([True, False, None])),
              st.booleans()),
    max_size=40)


def _runs(spec) -> list[RunResult]:
    out = []
    for i, (rid, verdicts, errored) in enumerate(spec):
        t = turn("v3", i)
        t["error"] = "boom" if errored else None
        out.append(RunResult(row_id=rid, trial=i, seed=i, version="v3", job="refund-agent@v3", turn=t,
                             verdicts={n: ScorerVerdict(passed=p, explanation=f"{n}{i}") for n, p in verdicts.items()}))
    return out


def recount(runs: list[RunResult], trials: int) -> dict:
    per_row: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    na: dict[str, int] = defaultdict(int)
    kind_runs: dict[str, dict[str, list[bool]]] = defaultdict(lambda: defaultdict(list))
    for r in runs:
        for name, v in r.verdicts.items():
            if v.passed is None:
                na[name] += 1
            else:
                per_row[name][r.row_id].append(v.passed)
        ok = not any(v.passed is False for v in r.verdicts.values())
        for k in (row_kind(ROWS.get(r.row_id, {})), "all"):
            kind_runs[k][r.row_id].append(ok)
    scorers = {}
    for name in dict.fromkeys(n for r in runs for n in r.verdicts):
        groups = [(len(v), sum(v)) for v in per_row[name].values()]
        n, passed = sum(a for a, _ in groups), sum(c for _, c in groups)
        scorers[name] = {"n": n, "passed": passed, "na": na[name], "mean": passed / n if n else None,
                         "pass_at_k": sum(pass_at_k(a, c, trials) for a, c in groups) / len(groups)
                         if trials > 1 and groups else None,
                         "pass_hat_k": sum(pass_hat_k(a, c, trials) for a, c in groups) / len(groups)
                         if trials > 1 and groups else None}
    kinds = {k: {"rows": len(per), "pass_at_1": sum(sum(v) / len(v) for v in per.values()) / len(per)}
             for k, per in kind_runs.items()}
    failing = [(r.row_id, r.trial, [n for n, v in r.verdicts.items() if v.passed is False]) for r in runs]
    return {"scorers": scorers, "kinds": kinds, "agent_errors": sum(bool(r.turn.error) for r in runs),
            "rows": len({r.row_id for r in runs}),
            "failing": sorted((rid, t, names) for rid, t, names in failing if names)}


# a row whose first verdict on a scorer is n/a comes later in that scorer's sums than its first
# run does: summed in another order, pass@k differs in the last bit
ORDER_MATTERS = [("r1", {"a": None, "c": False, "b": False}, False), ("r3", {"a": True}, False),
                 ("r0", {"b": True, "c": None, "a": True}, False), ("r0", {"a": False}, False),
                 ("r1", {"b": None, "a": True}, False), ("r1", {"c": None, "b": None, "a": True}, False),
                 ("r0", {"a": True}, False), ("r2", {"c": None, "b": True, "a": None}, False)]


@settings(max_examples=300, deadline=None)
@given(runs_strategy, st.integers(min_value=1, max_value=4))
@example(ORDER_MATTERS, 2)
def test_summarise_is_the_plain_recount(spec, trials):
    runs = _runs(spec)
    want = recount(runs, trials)
    got = summarise(runs, ROWS, {"a": 0.5}, trials)
    assert list(got.scorers) == list(want["scorers"])
    for name, s in got.scorers.items():
        w = want["scorers"][name]
        assert (s.n, s.passed, s.na, s.mean, s.pass_at_k, s.pass_hat_k) == \
            (w["n"], w["passed"], w["na"], w["mean"], w["pass_at_k"], w["pass_hat_k"])
    assert {k: (v.rows, v.pass_at_1) for k, v in got.by_kind.items()} == \
        {k: (v["rows"], v["pass_at_1"]) for k, v in want["kinds"].items()}
    assert (got.runs, got.rows, got.agent_errors) == (len(runs), want["rows"], want["agent_errors"])
    assert [(f.row_id, f.trial, f.failed_scorers) for f in got.failing] == want["failing"]
    lean = summarise(runs, ROWS, {"a": 0.5}, trials, failing=False)
    assert lean.failing == [] and lean.model_dump(exclude={"failing"}) == got.model_dump(exclude={"failing"})
