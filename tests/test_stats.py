"""The statistics in plain math: exact McNemar and normal quantiles against values worked by hand."""
from __future__ import annotations

import pytest

from turngate.verdict.stats import mcnemar_exact, z_for


@pytest.mark.parametrize("b, c, p", [
    (0, 0, 1.0),
    (5, 5, 1.0),
    (0, 5, 2 / 32),                    # 2 * P(X <= 0), X ~ Bin(5, 1/2)
    (9, 1, 2 * (1 + 10) / 1024),       # 2 * P(X <= 1), n = 10
    (2, 6, 2 * (1 + 8 + 28) / 256),    # 2 * P(X <= 2), n = 8
    (3, 4, 1.0),                       # twice the tail exceeds 1: capped
])
def test_mcnemar_exact_matches_hand_computed_binomial_tails(b, c, p):
    assert mcnemar_exact(b, c) == pytest.approx(p, rel=1e-12)
    assert mcnemar_exact(c, b) == mcnemar_exact(b, c)  # two-sided: symmetric


def test_mcnemar_exact_stays_exact_for_large_counts():
    assert mcnemar_exact(0, 2000) == 2 / 2**2000 * 1  # tiny but not an overflow error
    assert 0 < mcnemar_exact(700, 800) < 0.05 < mcnemar_exact(740, 760)


@pytest.mark.parametrize("confidence, z", [(0.95, 1.959963984540054), (0.99, 2.5758293035489004),
                                           (0.5, 0.6744897501960817)])
def test_z_for_gives_the_two_sided_normal_quantile(confidence, z):
    assert z_for(confidence) == pytest.approx(z, rel=1e-12)
