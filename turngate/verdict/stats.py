"""The statistics the gate and the comparison report: all small, all exact or standard."""
from __future__ import annotations

from functools import lru_cache
from math import comb, exp, lgamma, log, log1p, sqrt
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


_LN_2PI = 1.8378770664093454835606594728112  # log(2 pi)


def _stirlerr(n: int) -> float:
    """log(n!) - log(sqrt(2 pi n) (n/e)^n), the error of Stirling's formula (Loader 2000).
    Small n directly (the terms are small, so no cancellation of large numbers); larger n by
    its asymptotic series, which is then exact to double precision."""
    if n <= 15:
        return lgamma(n + 1) - (n + 0.5) * log(n) + n - _LN_2PI / 2 if n else 0.0
    nn = n * n
    s0, s1, s2, s3, s4 = 1 / 12, 1 / 360, 1 / 1260, 1 / 1680, 1 / 1188
    if n > 500:
        return (s0 - s1 / nn) / n
    if n > 80:
        return (s0 - (s1 - s2 / nn) / nn) / n
    if n > 35:
        return (s0 - (s1 - (s2 - s3 / nn) / nn) / nn) / n
    return (s0 - (s1 - (s2 - (s3 - s4 / nn) / nn) / nn) / nn) / n


def _bd0(x: float, m: float) -> float:
    """x log(x/m) + m - x without the cancellation when x is near m (Loader 2000)."""
    if abs(x - m) < 0.1 * (x + m):
        v = (x - m) / (x + m)
        s, ej, v2, j = (x - m) * v, 2 * x * v, v * v, 1
        while True:
            ej *= v2
            s1 = s + ej / (2 * j + 1)
            if s1 == s:
                return s1
            s, j = s1, j + 1
    return x * log(x / m) + m - x


def log_binom_half_pmf(k: int, n: int) -> float:
    """log P(X = k), X ~ Binomial(n, 1/2), to full double precision for any n: Loader's
    saddle-point form (as in R's dbinom), not log(n!) - log(k!) - ..., whose large terms
    cancel and would lose ~log10(n) digits."""
    if k == 0 or k == n:
        return -n * log(2)
    return (_stirlerr(n) - _stirlerr(k) - _stirlerr(n - k) - _bd0(k, n / 2) - _bd0(n - k, n / 2)
            - 0.5 * (_LN_2PI + log(k) + log1p(-k / n)))


def binom_half_cdf(k: int, n: int) -> float:
    """P(X <= k), X ~ Binomial(n, 1/2): the top term P(X = k) in log space times the sum of the
    lower terms relative to it, each from the last by one ratio i / (n - i + 1) <= 1, summed
    until the rest cannot change the total. O(min(k, sqrt(n))) terms, relative error ~1e-14."""
    if k < 0:
        return 0.0
    if k >= n:
        return 1.0
    if 2 * k > n:  # above the middle the terms would first grow: the complement instead
        return 1.0 - binom_half_cdf(n - k - 1, n)
    total = term = 1.0
    for i in range(k, 0, -1):
        term *= i / (n - i + 1)
        total += term
        # the terms still to come fall at least as fast as the next ratio r: they add at most
        # term * r / (1 - r)
        r = (i - 1) / (n - i + 2)
        if term * r < total * (1 - r) * 1e-17:
            break
    return min(1.0, exp(log_binom_half_pmf(k, n) + log(total)))


def mcnemar_exact(b: int, c: int) -> float:
    """Two-sided exact McNemar p-value; b = pass->fail, c = fail->pass discordant pairs."""
    n = b + c
    if n == 0 or b == c:
        return 1.0
    # Binomial(n, 1/2) is symmetric, so the two-sided p is twice the smaller tail, capped at 1.
    # In log space (binom_half_cdf): exact to ~1e-14 and fast for any n; underflows to 0 only
    # below ~1e-308.
    return min(1.0, 2 * binom_half_cdf(min(b, c), n))


def holm_adjusted(pvalues: list[float]) -> list[float]:
    """Holm's (1979) step-down adjusted p-values, in the order given: sorted ascending, the
    i-th smallest (from 0) becomes max over j <= i of min(1, (m - j) p_(j)). Rejecting every
    hypothesis whose adjusted p is below alpha controls the family-wise error rate at alpha
    (the chance of any false rejection among the m), whatever the dependence between them."""
    m = len(pvalues)
    order = sorted(range(m), key=lambda i: pvalues[i])
    out, running = [1.0] * m, 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


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


@lru_cache(maxsize=65536)  # pure; a gate (and its sensitivity's simulated gates) asks the same tails again and again
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


@lru_cache(maxsize=65536)
def beta_binomial_pmf(n: int, a: float, b: float) -> tuple[float, ...]:
    """P(X = j), j = 0..n, for X ~ BetaBinomial(n, a, b). A tuple: it is cached (every gate asks
    for the same accepted rows' pmfs), so it must not be changed in place."""
    base = lgamma(n + 1) - _log_beta(a, b)
    return tuple(exp(base - lgamma(j + 1) - lgamma(n - j + 1) + _log_beta(j + a, n - j + b)) for j in range(n + 1))


def sum_upper_tails(pmfs: list[list[float]] | list[tuple[float, ...]], cap: int) -> list[float]:
    """P(S >= k) for k = 0..cap, S the sum of independent counts with these pmfs. Mass above
    `cap` is lumped into `cap`, so the cost is len(pmfs) x cap x pmf length, whatever the totals."""
    return list(_sum_upper_tails(tuple(p if isinstance(p, tuple) else tuple(p) for p in pmfs), cap))


@lru_cache(maxsize=4096)  # the same rows' pmfs recur with the same cap across a gate's tests and simulated gates
def _sum_upper_tails(pmfs: tuple[tuple[float, ...], ...], cap: int) -> tuple[float, ...]:
    import numpy as np

    dist = np.zeros(cap + 1)
    dist[0] = 1.0
    for pmf in pmfs:
        full = np.convolve(dist, np.asarray(pmf, dtype=float))
        dist = full[:cap + 1].copy()
        dist[cap] += full[cap + 1:].sum()
    tails = np.minimum(1.0, np.cumsum(dist[::-1])[::-1])
    return tuple(float(x) for x in tails)
