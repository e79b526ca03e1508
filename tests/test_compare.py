"""compare(): matched pairs, exact McNemar, the paired interval, flips; and the compare command."""
from __future__ import annotations

import json
import os
from math import comb

import pytest

from tests.record_helpers import SCORERS, record, row, run, runs_from_pairs
from turngate.commands.compare import main
from turngate.output.comparison_table import print_comparison
from turngate.output.wording import regression_lines
from turngate.record.results import digest_of, load_record, save_record, seal_text
from turngate.verdict.comparison import compare, regressions
from turngate.verdict.stats import newcombe_paired_interval

# 10 pass on both, 8 pass->fail, 1 fail->pass, 3 fail on both, 2 where the baseline is n/a
PAIRS = [(True, True)] * 10 + [(True, False)] * 8 + [(False, True)] * 1 + [(False, False)] * 3 + [(None, True)] * 2


def exact_two_sided(b: int, c: int) -> float:
    """McNemar's exact test from first principles: binomial(b + c, 1/2), doubled smaller tail."""
    n, k = b + c, min(b, c)
    return min(1.0, 2 * sum(comb(n, i) for i in range(k + 1)) / 2 ** n)


def recount(base_runs, cand_runs, scorer):
    """An independent recount straight from the runs, the way a reader of the JSON would."""
    base = {(r.row_id, r.trial): r.verdicts[scorer].passed for r in base_runs}
    cand = {(r.row_id, r.trial): r.verdicts[scorer].passed for r in cand_runs}
    both = [(base[k], cand[k]) for k in base if k in cand and base[k] is not None and cand[k] is not None]
    return {"n": len(both), "b": sum(1 for x, y in both if x and not y), "c": sum(1 for x, y in both if y and not x),
            "baseline_passed": sum(1 for x, _ in both if x), "candidate_passed": sum(1 for _, y in both if y)}


def test_known_counts_match_a_recount_and_exact_mcnemar():
    base, cand = runs_from_pairs("v2", "v3", PAIRS, trials=2)
    out = compare(base, cand, SCORERS, baseline="v2", candidate="v3")
    s = out["scorers"]["refund_outcome"]
    again = recount(base, cand, "refund_outcome")
    assert (s["n"], s["b"], s["c"]) == (again["n"], again["b"], again["c"]) == (22, 8, 1)
    assert s["both_pass"] == 10 and s["both_fail"] == 3 and s["skipped_pairs"] == 2
    assert s["baseline_mean"] == pytest.approx(again["baseline_passed"] / 22) == pytest.approx(18 / 22)
    assert s["candidate_mean"] == pytest.approx(11 / 22)
    assert s["diff"] == pytest.approx(-7 / 22)
    assert s["p_value"] == pytest.approx(exact_two_sided(8, 1)) == pytest.approx(20 / 512)
    assert s["low"] < s["diff"] < s["high"] < 0  # the interval excludes zero here
    assert s["worse"] is True and s["better"] is False
    assert out["worse"] == ["refund_outcome"] and out["better"] == []
    # the other scorer passed everywhere on both sides
    judge = out["scorers"]["policy_judge"]
    assert (judge["n"], judge["b"], judge["c"], judge["p_value"], judge["worse"]) == (24, 0, 0, 1.0, False)
    assert out["pairs"] == 24 and out["unmatched"]["baseline_only"] == out["unmatched"]["candidate_only"] == 0


def test_flips_list_every_discordant_pair_with_both_explanations():
    base, cand = runs_from_pairs("v2", "v3", PAIRS, trials=2)
    out = compare(base, cand, SCORERS, baseline="v2", candidate="v3")
    regressed, fixed = out["flips"]["regressed"], out["flips"]["fixed"]
    assert len(regressed) == 8 and len(fixed) == 1
    f = fixed[0]
    assert f["scorer"] == "refund_outcome"
    assert f["baseline_explanation"] == f"v2 {f['row_id']}#{f['trial']} refund_outcome: fail"
    assert f["candidate_explanation"] == f"v3 {f['row_id']}#{f['trial']} refund_outcome: pass"
    assert {(x["row_id"], x["trial"]) for x in regressed}.isdisjoint({(f["row_id"], f["trial"])})
    json.dumps(out)  # the section goes into the results JSON as is


def test_a_run_compared_with_itself_has_no_flips_and_p_one():
    base, _ = runs_from_pairs("v3", "v3", PAIRS, trials=2)
    out = compare(base, base, SCORERS, baseline="v3", candidate="v3")
    for s in out["scorers"].values():
        assert s["b"] == s["c"] == 0 and s["p_value"] == 1.0 and s["diff"] == 0.0
        assert not s["worse"] and not s["better"]
        assert s["low"] <= 0.0 <= s["high"]
    assert out["flips"] == {"regressed": [], "fixed": []}
    assert regressions(out) == []


def test_better_is_not_a_regression():
    base, cand = runs_from_pairs("v1", "v3", [(False, True)] * 12 + [(True, True)] * 5)
    out = compare(base, cand, SCORERS, baseline="v1", candidate="v3")
    s = out["scorers"]["refund_outcome"]
    assert s["better"] and not s["worse"] and s["c"] == 12 and s["p_value"] == pytest.approx(exact_two_sided(0, 12))
    assert regressions(out) == []


def test_regression_lines_name_the_rule_and_the_numbers():
    base, cand = runs_from_pairs("v2", "v3", PAIRS, trials=2)
    lines = regression_lines(compare(base, cand, SCORERS, baseline="v2", candidate="v3"))
    assert len(lines) == 1
    assert lines[0].startswith("regression rule: refund_outcome: significantly worse than v2")
    assert "p=0.0391" in lines[0] and "8 pass->fail vs 1 fail->pass" in lines[0]


def test_unmatched_pairs_are_counted_not_compared():
    base, cand = runs_from_pairs("v2", "v3", [(True, True)] * 4, trials=2)
    out = compare(base, cand[:-1] + [run("v3", "r999", 0, {"refund_outcome": False})], SCORERS,
                  baseline="v2", candidate="v3")
    assert out["pairs"] == 3
    assert out["unmatched"] == {"baseline_only": 1, "candidate_only": 1,
                                "examples": ["v2 r001#1", "v3 r999#0"]}


def test_newcombe_interval_matches_the_published_example():
    # Cavo et al. 2012 paired table [[59, 6], [16, 80]] (Fagerland, Lydersen & Laake, ch. 8):
    # estimate -0.0621, 95% CI -0.1186 to -0.0046
    diff, low, high = newcombe_paired_interval(59, 16, 6, 80)
    assert (round(diff, 4), round(low, 4), round(high, 4)) == (-0.0621, -0.1186, -0.0046)


def test_print_comparison_caps_the_flips(capsys):
    base, cand = runs_from_pairs("v2", "v3", PAIRS, trials=2)
    print_comparison(compare(base, cand, SCORERS, baseline="v2", candidate="v3"), max_flips=3)
    out = capsys.readouterr().out
    assert "regressed (8)" in out and "... 5 more" in out and "fixed (1)" in out


# -- the command --------------------------------------------------------------------------

ROWS = [row(f"r{k:03d}") for k in range(12)]


def write_pair(tmp_path, *, sha_b="a" * 64, rows_b=ROWS, version_b="v3"):
    base, cand = runs_from_pairs("v2", version_b, PAIRS, trials=2)
    ids = {r["id"] for r in rows_b}  # B holds a run of each of its own rows, and no other (its plan)
    cand = [r for r in cand if r.row_id in ids] + [run(version_b, r["id"], t, dict.fromkeys(SCORERS, True))
                                                    for r in rows_b if r not in ROWS for t in range(2)]
    a = save_record(record("v2", base, ROWS, trials=2), tmp_path / "A.json")
    b = save_record(record(version_b, cand, rows_b, sha=sha_b, trials=2), tmp_path / "B.json")
    return a, b


def test_cli_compares_and_fails_only_with_the_flag(tmp_path, capsys):
    a, b = write_pair(tmp_path)
    before = (a.read_bytes(), b.read_bytes())
    assert main([str(a), str(b)]) == 0
    assert main([str(a), str(b), "--fail-on-regression"]) == 1
    out = capsys.readouterr().out
    assert "regression rule: refund_outcome" in out
    assert (a.read_bytes(), b.read_bytes()) == before  # the inputs are never written


def test_cli_writes_a_results_file_with_the_comparison(tmp_path):
    a, b = write_pair(tmp_path)
    assert main([str(a), str(b), "--out", str(tmp_path / "cmp.json")]) == 0
    combined = load_record(tmp_path / "cmp.json")
    assert combined.meta.version == "v3" and combined.meta.baseline == "v2"
    assert combined.comparison["scorers"]["refund_outcome"]["b"] == 8
    assert {r.version for r in combined.runs} == {"v2", "v3"}


def test_cli_refuses_different_datasets(tmp_path, capsys):
    a, b = write_pair(tmp_path, sha_b="b" * 64)
    assert main([str(a), str(b)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: compare: the two runs are over different datasets") and "\n" not in err
    assert "--allow-different-rows" in err


def test_cli_refuses_different_row_sets_and_allows_the_common_rows(tmp_path, capsys):
    a, b = write_pair(tmp_path, rows_b=ROWS[:10] + [row("extra")])
    assert main([str(a), str(b)]) == 2
    assert "row ids differ" in capsys.readouterr().err
    assert main([str(a), str(b), "--allow-different-rows", "--out", str(tmp_path / "cmp.json")]) == 0
    assert "comparing 10 common rows; dropped 2 only in A, 1 only in B" in capsys.readouterr().out
    combined = load_record(tmp_path / "cmp.json")
    assert {r.row_id for r in combined.runs} == {f"r{k:03d}" for k in range(10)}
    assert combined.comparison["pairs"] == 20


def test_cli_same_version_on_both_sides_gets_distinct_labels(tmp_path):
    a, b = write_pair(tmp_path, version_b="v2")
    assert main([str(a), str(b), "--out", str(tmp_path / "cmp.json")]) == 0
    c = load_record(tmp_path / "cmp.json").comparison
    assert (c["baseline"], c["candidate"]) == ("v2 (A)", "v2 (B)")


def test_cli_unreadable_file_is_a_one_line_error(tmp_path, capsys):
    a, _ = write_pair(tmp_path)
    assert main([str(a), str(tmp_path / "missing.json")]) == 2
    assert capsys.readouterr().err.strip() == f"error: {tmp_path / 'missing.json'}: no such results file"


def test_cli_verdict_is_the_shared_decision_and_is_stored(tmp_path, capsys):
    """compare's line and exit code come from turngate.verdict.decide.decide, and are stored as decided."""
    a, b = write_pair(tmp_path)
    assert main([str(a), str(b), "--out", str(tmp_path / "soft.json")]) == 0
    soft = load_record(tmp_path / "soft.json").verdict
    assert soft.exit_code == 0 and soft.line.startswith("1 scorer(s) significantly worse (not failing")
    assert main([str(a), str(b), "--fail-on-regression", "--out", str(tmp_path / "hard.json")]) == 1
    hard = load_record(tmp_path / "hard.json").verdict
    assert hard.exit_code == 1 and hard.line.startswith("FAIL: 1 scorer significantly worse than the baseline\n"
                                                              "regression rule: refund_outcome")
    assert main([str(a), str(a), "--out", str(tmp_path / "same.json")]) == 0
    assert load_record(tmp_path / "same.json").verdict.line == \
        "PASS: no scorer significantly worse than v2 (A) (Holm, family-wise 0.05)"


# -- the lean comparison (no --out: each side reduced to its summary and verdict table) ------------

def _outcome(capsys, argv):
    code = main(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("flag", [[], ["--fail-on-regression"]])
def test_the_lean_comparison_is_the_one_written_out(tmp_path, capsys, flag):
    from turngate.gate import sides
    from turngate.verdict.comparison import combined

    a, b = write_pair(tmp_path)
    code, out, _ = _outcome(capsys, [str(a), str(b), *flag])
    assert code == (1 if flag else 0) and "refund_outcome" in out
    # the full path (the runs written out) stores the same comparison
    assert main([str(a), str(b), *flag, "--out", str(tmp_path / "full.json")]) == code
    capsys.readouterr()
    full = load_record(tmp_path / "full.json")
    lean = sides.read_sides([str(a), str(b)], lean=True)
    again = combined(lean[1].record.meta, full.rows, "v2", "v3", summaries=(lean[0].summary, lean[1].summary),
                     tables=(lean[0].table, lean[1].table))
    assert again.comparison == full.comparison
    # the same numbers; the failing runs one by one stay where the side was read (the flips show them)
    assert {k: s.model_dump(exclude={"failing"}) for k, s in again.summary.items()} == \
        {k: s.model_dump(exclude={"failing"}) for k, s in full.summary.items()}
    assert all(s.failing for s in full.summary.values()) and not any(s.failing for s in again.summary.values())


def test_an_edited_side_fails_with_its_own_line(tmp_path, capsys):
    a, b = write_pair(tmp_path)
    data = json.loads(b.read_text())
    data["runs"][0]["verdicts"]["refund_outcome"]["passed"] = not data["runs"][0]["verdicts"]["refund_outcome"]["passed"]
    b.write_text(json.dumps(data))  # edited after it was written: the digest no longer matches
    code, out, err = _outcome(capsys, [str(a), str(b)])
    assert code == 2 and err.strip().splitlines() == [f"error: {b}: digest mismatch: meta, plan, rows or runs "
                                                      "changed after the file was written"]
    code, out, err = _outcome(capsys, [str(tmp_path / "missing.json"), str(b)])
    assert code == 2 and err.strip() == f"error: {tmp_path / 'missing.json'}: no such results file"


# -- big files: each side read by the same read_side in a process of its own (turngate/gate/sides.py) --

@pytest.mark.parametrize("flag", [[], ["--fail-on-regression"]])
def test_sides_read_in_parallel_give_what_one_process_gives(tmp_path, capsys, monkeypatch, flag):
    from turngate.gate import sides

    a, b = write_pair(tmp_path)
    serial = _outcome(capsys, [str(a), str(b), *flag])
    pids, real_read = tmp_path / "pids", sides.read_side

    def read_side(path, *, lean):  # notes which process read each side
        with pids.open("a") as f:
            f.write(f"{os.getpid()}\n")
        return real_read(path, lean=lean)

    monkeypatch.setattr(sides, "PARALLEL_FROM_BYTES", 1)  # every file counts as big
    monkeypatch.setattr(sides, "read_side", read_side)
    parallel = _outcome(capsys, [str(a), str(b), *flag])
    assert parallel == serial and serial[0] == (1 if flag else 0)
    readers = pids.read_text().split()
    assert len(set(readers)) == 2 and str(os.getpid()) not in readers  # two other processes


def test_a_side_read_in_another_process_fails_with_its_own_line(tmp_path, capsys, monkeypatch):
    from turngate.gate import sides

    monkeypatch.setattr(sides, "PARALLEL_FROM_BYTES", 1)
    a, b = write_pair(tmp_path)
    data = json.loads(b.read_text())
    data["runs"][0]["turn"]["tool_calls"] = "get_order"  # retyped, digest and seal recomputed
    data["digest"] = digest_of(data)
    b.write_text(seal_text(json.dumps(data, indent=1)))
    code, _, err = _outcome(capsys, [str(a), str(b)])
    assert code == 2 and err.startswith(f"error: {b}: not a results record") and "tool_calls" in err
    assert len(err.strip().splitlines()) == 1
    code, _, err = _outcome(capsys, [str(tmp_path / "missing.json"), str(b)])
    assert code == 2 and err.strip() == f"error: {tmp_path / 'missing.json'}: no such results file"


def test_a_pair_stored_twice_counts_once_with_its_later_verdicts():
    """A resumed run may hold a (row, trial) twice: the later one counts, in the first one's place."""
    from turngate.verdict.comparison import VerdictTable

    base, cand = runs_from_pairs("v2", "v3", [(True, True)] * 4, trials=1)
    redo = cand[1].model_copy(deep=True)
    redo.verdicts["refund_outcome"] = type(redo.verdicts["refund_outcome"])(passed=False, explanation="redo")
    table = VerdictTable.of([*cand, redo])
    assert table.keys == [r.key for r in cand]
    assert table.passed["refund_outcome"] == [True, False, True, True]
    assert table.explanations["refund_outcome"][1] == "redo"
    s = compare(base, [*cand, redo], SCORERS, baseline="v2", candidate="v3")["scorers"]["refund_outcome"]
    assert (s["n"], s["b"], s["c"]) == (4, 1, 0)
