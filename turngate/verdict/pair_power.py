"""What a comparison's McNemar test could reach with the pairs it has.

McNemar's exact test conditions on the discordant pairs: with D of them, the smallest p it can
give is 2 x 0.5^D (all D one way), so a scorer whose D pairs could not reach the Holm-adjusted
level even that way could not have been called worse, whatever its flips say. Such a scorer
with pass->fail flips makes a comparison "cannot judge" (turngate/verdict/decide.py: exit 2)
instead of a bare PASS. `needed` is the fewest pass->fail flips (none back) that would be
significant with the other scorers' p-values as they are; over the scorer's pairs it is the
smallest pass-rate drop the test could detect."""
from __future__ import annotations

from turngate.record.sensitivity import PairPower, Sensitivity
from turngate.verdict.stats import holm_adjusted, mcnemar_exact

MOST = 64  # 2 x 0.5^64 is below any level a family of scorers could ask for


def _significant_with(p: float, others: list[float], alpha: float) -> bool:
    """Whether a scorer with this p would be significant in a Holm family with the others."""
    return holm_adjusted([p, *others])[0] < alpha


def needed_flips(pairs: int, others: list[float], alpha: float) -> int | None:
    """The fewest one-way discordant pairs that reach significance; None: more than `pairs`."""
    for b in range(1, min(pairs, MOST) + 1):
        if _significant_with(mcnemar_exact(b, 0), others, alpha):
            return b
    return None


def pair_power(comparison: dict) -> list[PairPower]:
    """Per compared scorer: its pairs, its flips, what McNemar could reach with them."""
    alpha = comparison.get("alpha", 0.05)
    scorers = comparison["scorers"]
    family = {n: s["p_value"] for n, s in scorers.items() if s["b"] + s["c"]}
    out = []
    for name, s in scorers.items():
        others = [p for n, p in family.items() if n != name]
        discordant = s["b"] + s["c"]
        need = needed_flips(s["n"], others, alpha)
        judged = discordant > 0 and _significant_with(mcnemar_exact(discordant, 0), others, alpha)
        out.append(PairPower(scorer=name, pairs=s["n"], pass_to_fail=s["b"], fail_to_pass=s["c"], needed=need,
                             judged=judged))
    return out


def blind(powers: list[PairPower]) -> list[PairPower]:
    """The scorers with pass->fail flips the test could not have judged."""
    return [x for x in powers if x.pass_to_fail and not x.judged]


def blind_line(x: PairPower) -> str:
    """`tool_use: 4 pass->fail, 0 fail->pass over 6 pairs: not enough pairs to detect ...`"""
    head = (f"{x.scorer}: {x.pass_to_fail} pass->fail, {x.fail_to_pass} fail->pass over {x.pairs} pairs: "
            f"{x.pass_to_fail + x.fail_to_pass} discordant pair(s) cannot reach significance")
    if x.needed is None:
        return head + f"; with {x.pairs} pairs no difference can be detected"
    return (head + f" ({x.needed} needed, all one way); not enough pairs to detect a difference smaller "
                   f"than {x.smallest_drop:.0%}")


def comparison_sensitivity(comparison: dict) -> Sensitivity:
    """A comparison's statement: the smallest drop each scorer's pairs could show, and which
    scorers' flips it could not judge."""
    powers = pair_power(comparison)
    drops = [x.smallest_drop for x in powers if x.smallest_drop is not None]
    if not powers:
        line = "this comparison could see nothing: no scorer has a pair where both verdicts apply"
    elif not drops:
        line = "this comparison cannot detect any difference: no scorer has enough pairs for McNemar to reach significance"
    else:
        best = min(powers, key=lambda x: (x.smallest_drop is None, x.smallest_drop or 0.0, x.scorer))
        line = (f"this comparison could detect a pass-rate drop of {best.smallest_drop:.0%} or more "
                f"({best.needed} of {best.pairs} pairs pass->fail) at best ({best.scorer}), "
                f"McNemar exact, Holm over the scorers at {comparison.get('alpha', 0.05):g}")
        if unseen := [x.scorer for x in powers if x.smallest_drop is None]:
            line += f"; none on {', '.join(unseen)} (too few pairs)"
    return Sensitivity(line=line, pairs=powers)
