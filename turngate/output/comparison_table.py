"""The comparison of two versions printed in the terminal (the numbers: turngate.verdict.comparison)."""
from __future__ import annotations

from rich.markup import escape
from rich.table import Table

from turngate.output.console import console
from turngate.verdict.comparison import ALPHA, MAX_FLIPS_SHOWN, _holm, _num, _p


def print_comparison(comparison: dict, *, max_flips: int = MAX_FLIPS_SHOWN) -> None:
    base, cand = comparison["baseline"], comparison["candidate"]
    um = comparison["unmatched"]
    t = Table(title=f"{escape(cand)} vs baseline {escape(base)}: {comparison['pairs']} matched (row, trial) pairs"
                    + (f", unmatched {um['baseline_only']} baseline / {um['candidate_only']} candidate"
                       if um["baseline_only"] or um["candidate_only"] else ""),
              box=None, padding=(0, 1, 0, 0), pad_edge=False, header_style="bold")
    # narrow enough for an 80-column CI log; the scorer name is never cut
    t.add_column("scorer", no_wrap=True)
    for col in (escape(base), escape(cand), "diff", "95% CI", "p→f", "f→p", "p", "Holm p", "n", ""):
        t.add_column(col, justify="right", overflow="fold")
    for name, s in comparison["scorers"].items():
        mark = "[red]worse[/]" if s["worse"] else "[green]better[/]" if s["better"] else "n.s." if s["n"] else "n/a"
        t.add_row(name, _num(s["baseline_mean"]), _num(s["candidate_mean"]),
                  "-" if s["diff"] is None else f"{s['diff']:+.3f}",
                  f"{s['low']:+.2f},{s['high']:+.2f}" if s["n"] else "-",
                  str(s["b"]), str(s["c"]), _p(s["p_value"]), _p(_holm(s)), str(s["n"]), mark)
    console.print(t)
    console.print("p: exact McNemar; p→f / f→p: pairs that passed on the baseline and fail on the candidate, "
                  "and the reverse; 95% CI: Newcombe, paired", style="dim")
    alpha = comparison.get("alpha", ALPHA)
    if "family_size" in comparison:
        console.print(f"worse / better: Holm p < {alpha}, Holm's step-down over the {comparison['family_size']} "
                      f"scorer(s) with a discordant pair: an unchanged version is flagged on any scorer with "
                      f"chance at most {alpha:.0%} (family-wise), not {alpha:.0%} per scorer", style="dim")
    else:  # stored before the correction
        console.print(f"worse / better: p < {alpha} per scorer (stored without a multiple-testing correction)",
                      style="dim")
    for kind, title in (("regressed", f"passed on {base}, fail on {cand}"), ("fixed", f"failed on {base}, pass on {cand}")):
        flips = comparison["flips"][kind]
        if not flips:
            console.print(f"[bold]{kind}[/] (0): none")
            continue
        console.print(f"[bold]{kind}[/] ({len(flips)}): {escape(title)}")
        for f in flips[:max_flips]:
            console.print(f"  {f['row_id']}#{f['trial']} {f['scorer']}", markup=False)
            console.print(f"      {base}: {f['baseline_explanation']}", markup=False)
            console.print(f"      {cand}: {f['candidate_explanation']}", markup=False)
        if len(flips) > max_flips:
            console.print(f"  ... {len(flips) - max_flips} more (see the comparison section of the results JSON)")


# -- the command ----------------------------------------------------------------------
