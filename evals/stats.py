"""The statistics the gate and the comparison report: all small, all exact or standard."""
from __future__ import annotations

from math import comb, exp, lgamma, sqrt
from statistics import NormalDist

Z95 = 1.959963984540054


def wilson(passed: int, n: int, z: float = Z95) -> tuple[float, float]:
    """95% Wilson score interval for a pass rate; (0, 1) when there is no data."""
    if n == 0:
        return (0.0, 1.0)
    p = passed / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (max(0.0, centre - half), min(1.0, centre + half))


def pass_at_k(n: int, c: int, k: int) -> float:
    """Chance at least one of k tries succeeds (unbiased estimate from n trials, c passed)."""
    if k > n:
        k = n
    return 1.0 if n - c < k else 1 - comb(n - c, k) / comb(n, k)


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Chance all k tries succeed: the reliability number."""
    if k > n:
        k = n
    return comb(c, k) / comb(n, k) if n else 0.0


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value; b = pass->fail, c = fail->pass discordant pairs."""
    n = b + c
    if n == 0:
        return 1.0
    # Binomial(n, 1/2) is symmetric, so the two-sided p is twice the smaller tail, capped at 1.
    # Exact integer sums: no float underflow for large n.
    tail = sum(comb(n, i) for i in range(min(b, c) + 1))
    return min(1.0, 2 * tail / 2**n)


def paired_diff_interval(b: int, c: int, n: int, z: float = Z95) -> tuple[float, float, float]:
    """Difference of matched pass rates (candidate - baseline) with a 95% Wald interval
    for paired proportions. b = pass->fail, c = fail->pass, n = matched pairs."""
    if n == 0:
        return (0.0, -1.0, 1.0)
    diff = (c - b) / n
    var = ((b + c) / n - diff * diff) / n
    half = z * sqrt(max(var, 0.0))
    return (diff, max(-1.0, diff - half), min(1.0, diff + half))


def proportion_interval(p: float, n: int) -> tuple[float, float]:
    return wilson(round(p * n), n)


def cohen_kappa(tp: int, fn: int, fp: int, tn: int) -> float:
    """Cohen's kappa for two raters on a binary label (human = rows, judge = columns)."""
    n = tp + fn + fp + tn
    if n == 0:
        return 0.0
    observed = (tp + tn) / n
    expected = ((tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)) / (n * n)
    return 1.0 if expected == 1 else (observed - expected) / (1 - expected)


def z_for(confidence: float) -> float:
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def newcombe_paired_interval(both: int, b: int, c: int, neither: int, z: float = Z95) -> tuple[float, float, float]:
    """Difference of matched pass rates (candidate - baseline) with Newcombe's (1998)
    square-and-add interval for paired data: Wilson intervals of both margins combined with
    the pairs' correlation (continuity-corrected, as in Newcombe's method 10 and Altman's
    "Statistics with Confidence").
    Unlike the Wald interval it stays inside [-1, 1] and does not collapse to a point when
    there are no discordant pairs. both = pass on both, b = pass->fail, c = fail->pass,
    neither = fail on both."""
    n = both + b + c + neither
    if n == 0:
        return (0.0, -1.0, 1.0)
    cand, base = both + c, both + b  # passes on each side
    p1, p2 = cand / n, base / n
    l1, u1 = wilson(cand, n, z)
    l2, u2 = wilson(base, n, z)
    margins = (both + c) * (b + neither) * (both + b) * (c + neither)
    cross = both * neither - b * c
    # the correction shrinks a positive correlation by n/2, so the interval never narrows on noise
    cross = cross - n / 2 if cross > n / 2 else cross if cross < 0 else 0.0
    phi = cross / sqrt(margins) if margins > 0 else 0.0
    diff = p1 - p2
    below = sqrt(max((p1 - l1) ** 2 - 2 * phi * (p1 - l1) * (u2 - p2) + (u2 - p2) ** 2, 0.0))
    above = sqrt(max((u1 - p1) ** 2 - 2 * phi * (u1 - p1) * (p2 - l2) + (p2 - l2) ** 2, 0.0))
    return (diff, max(-1.0, diff - below), min(1.0, diff + above))


def _log_beta(a: float, b: float) -> float:
    return lgamma(a) + lgamma(b) - lgamma(a + b)


def beta_binomial_sf(k: int, n: int, a: float, b: float) -> float:
    """P(X >= k) for X ~ BetaBinomial(n, a, b): the chance of k or more failures in n runs
    when the failure rate is Beta(a, b) (the posterior from an accepted run). Exact sum."""
    if k <= 0:
        return 1.0
    if k > n:
        return 0.0
    base = lgamma(n + 1) - _log_beta(a, b)
    total = sum(exp(base - lgamma(j + 1) - lgamma(n - j + 1) + _log_beta(j + a, n - j + b)) for j in range(k, n + 1))
    return min(1.0, total)


def normal_sf(z: float) -> float:
    """One-sided upper tail of the standard normal."""
    return NormalDist().cdf(-z)


def beta_binomial_pmf(n: int, a: float, b: float) -> list[float]:
    """P(X = j), j = 0..n, for X ~ BetaBinomial(n, a, b)."""
    base = lgamma(n + 1) - _log_beta(a, b)
    return [exp(base - lgamma(j + 1) - lgamma(n - j + 1) + _log_beta(j + a, n - j + b)) for j in range(n + 1)]


def sum_upper_tails(pmfs: list[list[float]], cap: int) -> list[float]:
    """P(S >= k) for k = 0..cap, S the sum of independent counts with these pmfs. Mass above
    `cap` is lumped into `cap`, so the cost is len(pmfs) x cap x pmf length, whatever the totals."""
    dist = [1.0] + [0.0] * cap
    for pmf in pmfs:
        new = [0.0] * (cap + 1)
        for s, ps in enumerate(dist):
            if ps:
                for j, pj in enumerate(pmf):
                    new[min(cap, s + j)] += ps * pj
        dist = new
    tails, acc = [0.0] * (cap + 1), 0.0
    for k in range(cap, -1, -1):
        acc += dist[k]
        tails[k] = min(1.0, acc)
    return tails
