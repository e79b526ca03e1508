"""The comparison's statistics against reference implementations (test-only dependencies):
exact McNemar against scipy.stats.binomtest at counts up to 10^5 discordant pairs, Holm's
step-down against statsmodels' multipletests, and what the correction changes for
--fail-on-regression."""
from __future__ import annotations

import dataclasses
import random
from decimal import Decimal, localcontext
from math import comb

import pytest

from tests.record_helpers import record, row, run
from turngate.commands.compare import main
from turngate.output.wording import regression_lines
from turngate.record.results import save_record
from turngate.verdict.comparison import compare, regressions
from turngate.verdict.stats import binom_half_cdf, holm_adjusted, log_binom_half_pmf, mcnemar_exact

scipy_stats = pytest.importorskip("scipy.stats")
multitest = pytest.importorskip("statsmodels.stats.multitest")

COUNTS = [0, 1, 2, 3, 5, 8, 13, 30, 99, 100, 101, 500, 999, 1000, 1001, 5000, 8000, 9900, 10000, 10100, 20000]


def _grid() -> list[tuple[int, int]]:
    rng = random.Random(18)
    pairs = [(b, c) for b in COUNTS for c in COUNTS]
    # near the middle, where the tail has the most terms and p is moderate, at large n
    pairs += [(n - d, n + d) for n in (5000, 10000, 20000, 50000) for d in (0, 1, 7, 50, 100, 200, 400)]
    pairs += [(rng.randint(0, 30000), rng.randint(0, 30000)) for _ in range(150)]
    return pairs


def test_mcnemar_matches_scipy_binomtest_to_1e_10_relative():
    checked = 0
    for b, c in _grid():
        ours = mcnemar_exact(b, c)
        assert mcnemar_exact(c, b) == ours
        ref = 1.0 if b + c == 0 else min(1.0, scipy_stats.binomtest(b, b + c, 0.5).pvalue)
        if ref > 1e-290:  # both are doubles: below that the tail is denormal or zero on both sides
            assert ours == pytest.approx(ref, rel=1e-10, abs=0), (b, c)
            checked += 1
        else:
            assert ours < 1e-280, (b, c)
    assert checked > 300


def _exact_log_pmf(k: int, n: int) -> float:
    """log(C(n, k) / 2^n) from the exact integer, in 40-digit decimals."""
    with localcontext() as ctx:
        ctx.prec = 40
        return float((Decimal(comb(n, k)) / Decimal(2) ** n).ln())


def test_the_binomial_pieces_match_exact_arithmetic_and_scipy_on_both_sides_of_the_middle():
    for n in (1, 2, 7, 30, 31, 500, 4001, 40000):
        for k in sorted({0, 1, n // 3, n // 2 - 1, n // 2, n // 2 + 1, n - 1, n}):
            if not 0 <= k <= n:
                continue
            # against the exact value (scipy's logpmf itself is off by ~1e-11 here)
            assert log_binom_half_pmf(k, n) == pytest.approx(_exact_log_pmf(k, n), rel=1e-14, abs=1e-13), (k, n)
            cdf = scipy_stats.binom.cdf(k, n, 0.5)
            assert binom_half_cdf(k, n) == pytest.approx(cdf, rel=1e-10, abs=1e-15), (k, n)


def test_mcnemar_of_100k_discordant_pairs_is_a_probability_not_an_error():
    assert mcnemar_exact(50000, 50000) == 1.0
    assert 0 < mcnemar_exact(49700, 50300) < 0.06 < mcnemar_exact(49800, 50200) < 1
    assert mcnemar_exact(0, 100000) == 0.0  # 2 / 2^100000 is below every double


def _random_pvalues(rng: random.Random, m: int) -> list[float]:
    """A mix of nulls (uniform), real effects (tiny p) and values near Holm's thresholds."""
    out = []
    for _ in range(m):
        kind = rng.random()
        if kind < 0.4:
            out.append(rng.random())
        elif kind < 0.7:
            out.append(rng.random() ** 6 * 0.05)
        else:
            out.append(0.05 / rng.randint(1, m) * rng.uniform(0.8, 1.2))
    return out


def test_holm_rejects_exactly_what_statsmodels_rejects(monkeypatch):
    # multipletests runs gc.collect() on every call (0.1 s each inside a test session)
    monkeypatch.setattr("gc.collect", lambda *a: 0)
    rng = random.Random(6)
    rejected_any = partial = 0
    for _ in range(3000):
        m = rng.randint(1, 12)
        ps = _random_pvalues(rng, m)
        ours = holm_adjusted(ps)
        reject, corrected, _, _ = multitest.multipletests(ps, alpha=0.05, method="holm")
        assert [p < 0.05 for p in ours] == list(reject), ps
        assert ours == pytest.approx(list(corrected), rel=1e-12)
        rejected_any += any(reject)
        partial += 0 < sum(reject) < m
    assert rejected_any > 1000 and partial > 500  # the sets exercise the step-down, not just all-or-nothing


def _eight_scorer_runs(b: int, c: int, rows: int = 60):
    """Two versions over `rows` matched pairs where each of 8 scorers has b pass->fail and c
    fail->pass pairs (at different rows per scorer), the rest passing on both."""
    names = [f"scorer_{j}" for j in range(8)]
    base, cand = [], []
    for k in range(rows):
        was, now = {}, {}
        for j, name in enumerate(names):
            pos = (k - 5 * j) % rows
            was[name], now[name] = (True, False) if pos < b else (False, True) if pos < b + c else (True, True)
        base.append(run("v2", f"r{k:03d}", 0, was))
        cand.append(run("v3", f"r{k:03d}", 0, now))
    return names, base, cand


def test_eight_scorers_each_at_p_003_no_longer_flag():
    """An unchanged-like comparison: 14 pass->fail vs 4 fail->pass on every scorer (McNemar
    p = 0.031 each). Tested alone at 0.05, all eight were 'significantly worse'; Holm's
    adjusted p is 8 x 0.031 = 0.25 for the smallest, so none is."""
    names, base, cand = _eight_scorer_runs(14, 4)
    out = compare(base, cand, names, baseline="v2", candidate="v3")
    for s in out["scorers"].values():
        assert (s["b"], s["c"]) == (14, 4) and s["p_value"] == pytest.approx(0.0309, abs=5e-5)
        assert s["p_holm"] == pytest.approx(8 * s["p_value"]) and not s["worse"] and not s["better"]
    assert out["worse"] == [] and regressions(out) == [] and out["family_size"] == 8
    assert "Holm" in out["method"]["rule"] and "Holm" in out["method"]["correction"]


def test_a_clear_regression_on_one_scorer_still_flags_among_eight():
    names, base, cand = _eight_scorer_runs(0, 0)
    for k in range(20):  # scorer_3 now fails 20 pairs it passed
        cand[k].verdicts["scorer_3"] = dataclasses.replace(cand[k].verdicts["scorer_3"], passed=False)
    out = compare(base, cand, names, baseline="v2", candidate="v3")
    s = out["scorers"]["scorer_3"]
    assert s["b"] == 20 and s["p_holm"] == s["p_value"] < 1e-5  # the only scorer with a discordant pair
    assert out["worse"] == ["scorer_3"] and out["family_size"] == 1
    assert regressions(out) == ["scorer_3"]
    assert len(lines := regression_lines(out)) == 1 and "Holm-adjusted p=" in lines[0]


def test_unchanged_comparisons_flag_some_scorer_at_most_5_percent_of_the_time():
    """Simulated comparisons of an unchanged version: 8 scorers, each with a binomial(40, 1/2)
    split of its discordant pairs. Per-scorer testing flags one of them ~20% of the time;
    Holm keeps the family-wise rate under 0.05 (plus Monte Carlo error)."""
    rng = random.Random(21)
    raw = holm = 0
    trials = 3000
    for _ in range(trials):
        ps = []
        for _ in range(8):
            b = sum(rng.random() < 0.5 for _ in range(40))
            ps.append(mcnemar_exact(b, 40 - b))
        raw += any(p < 0.05 for p in ps)
        holm += any(p < 0.05 for p in holm_adjusted(ps))
    assert raw / trials > 0.12
    assert holm / trials <= 0.05 + 2 * (0.05 * 0.95 / trials) ** 0.5


def test_compare_with_fail_on_regression_passes_eight_scorers_at_p_003(tmp_path, capsys):
    names, base, cand = _eight_scorer_runs(14, 4)
    rows = [row(f"r{k:03d}") for k in range(60)]
    paths = []
    for version, runs in (("v2", base), ("v3", cand)):
        rec = record(version, runs, rows)
        rec.meta.thresholds = {n: 0.5 for n in names}  # the helper's bars name other scorers
        paths.append(save_record(rec, tmp_path / f"{version}.json"))
    a, b = paths
    assert main([str(a), str(b), "--fail-on-regression"]) == 0
    out = capsys.readouterr().out
    assert "Holm" in out and "8 scorer(s) with a discordant pair" in out
    assert "regression rule" not in out
