"""How a verdict's findings read: the only place their text is made.

turngate.verdict.decide.decide gives findings and flags as kinds and numbers (turngate/record/
summaries.py: Finding, FlaggedRow); `word` turns them into the lines every output prints and a
results file stores: each flag's line, each reason, the FAIL headline, each scorer's reason and
the notes of the flags the reruns did not confirm. Every caller of decide() words its verdict
before printing or storing it (decide.stored refuses one that was not).
"""
from __future__ import annotations

from turngate.record.summaries import ANY, Finding, FindingKind, FlaggedRow, FlagKind, FlagStatus, UnitCounts
from turngate.verdict.decide import Verdict


def p_text(p: float) -> str:
    return f"{p:.2g}" if p >= 1e-4 else f"{p:.1e}"


def _label(unit: str) -> str:
    return "some scorer" if unit == ANY else unit


def _counts(c: UnitCounts) -> str:
    return f"{c.failed}/{c.runs}"


def _rows(rows: list[str]) -> str:
    return " [" + ", ".join(rows[:3]) + (f" +{len(rows) - 3}" if len(rows) > 3 else "") + "]" if rows else ""


def bar_text(name: str, mean: float, bar: float) -> str:
    """`tool_use: mean 0.903 < bar 0.95`"""
    return f"{name}: mean {mean:.3f} < bar {bar:.2f}"


def flag_line(x: FlaggedRow) -> str:
    """One flagged row or total in one line: what the accepted run, this gate and the reruns
    each showed, and the p that decided; prefixed by what it means when it fails the gate."""
    if x.kind == FlagKind.ROW:
        per = []
        for u in x.scorers:
            part = f"{_label(u)} failed {_counts(x.accepted[u])} accepted, {_counts(x.first[u])} now"
            if u in x.reruns:
                part += f", {_counts(x.reruns[u])} on reruns"
            per.append(part)
        text = f"{x.row_id}: " + "; ".join(per)
        text += f" (p = {p_text(x.p_value)})" if x.p_value is not None else f" (p = {p_text(x.p_first)}, no reruns)"
        if x.status == FlagStatus.REGRESSED:
            return "row regressed: " + text
        if x.status == FlagStatus.INSUFFICIENT and x.p_value is not None:
            text += ": even failing every rerun could not confirm against the accepted rate"
        return text
    what, first, rr = _label(x.row_id), x.first, x.reruns
    if x.pooled:
        text = f"{what}: the reruns of the flagged rows, pooled"
    else:
        text = (f"{what}: {first.failed} failure(s) now where the accepted run makes {first.expected:g} "
                f"likely (p = {p_text(x.p_first)})")
    if x.p_value is not None:
        text += (f"; reruns of {x.rerun_rows} row(s): {rr.failed}/{rr.runs} failed, {rr.expected:g} "
                 f"expected" + (f" (p = {p_text(x.p_reruns)}; with stage 1, p = {p_text(x.p_value)})"
                                if x.p_reruns is not None else f" (p = {p_text(x.p_value)})"))
    text += _rows(x.rows)
    if x.status == FlagStatus.REGRESSED and not x.bar_stands:
        text = ("failing runs: " if x.row_id == ANY else "scorer worse: ") + text
    elif x.bar is not None and x.status != FlagStatus.REGRESSED:
        # a bar breached at stage 1 whose rows pass on reruns as accepted
        text = f"{bar_text(x.row_id, x.mean, x.bar)} at stage 1, not confirmed: {text}"
    return text


def baseline_text(name: str, s: dict, baseline: str) -> str:
    """A scorer of a comparison, significantly worse or better than the baseline (McNemar, Holm)."""
    def num(v):
        return "-" if v is None else format(v, ".3f")
    return (f"{name}: significantly {'worse' if s['worse'] else 'better'} than {baseline} "
            f"({num(s['baseline_mean'])} -> {num(s['candidate_mean'])}, difference {s['diff']:+.3f} "
            f"[{s['low']:+.3f}, {s['high']:+.3f}], McNemar p={s['p_value']:.3g}, "
            f"Holm-adjusted p={s.get('p_holm', s['p_value']):.3g}: "
            f"{s['b']} pass->fail vs {s['c']} fail->pass over {s['n']} pairs)")


def regression_lines(comparison: dict) -> list[str]:
    """The line of each scorer significantly worse than the baseline."""
    base = comparison["baseline"]
    return [f"regression rule: {baseline_text(n, s, base)}" for n, s in comparison["scorers"].items() if s["worse"]]


def finding_text(f: Finding, flags: list[FlaggedRow], comparison: dict | None = None) -> str:
    """A finding in one line. flags: the verdict's confirmed flags (a confirmed row or total is
    worded as its flag; a bar breach names the reruns that confirmed it)."""
    kind = FlagKind.ROW if f.kind == FindingKind.ROW else FlagKind.AGGREGATE
    flag = next((x for x in flags if x.kind == kind and x.row_id == f.subject), None)
    if f.kind == FindingKind.BAR:
        text = bar_text(f.subject, f.mean, f.bar)
        if flag is None or flag.bar_stands:
            return text
        rr = flag.reruns
        if rr.runs:
            text += (f", confirmed on reruns of {len(flag.rows)} row(s): {rr.failed}/{rr.runs} failed, "
                     f"{rr.expected:g} expected (p = {p_text(f.p_value)})")
        return text + _rows(flag.rows)
    if f.kind == FindingKind.BASELINE:
        if comparison is None:
            raise ValueError(f"a baseline finding on {f.subject} without its comparison")
        return f"regression rule: {baseline_text(f.subject, comparison['scorers'][f.subject], comparison['baseline'])}"
    if flag is None:
        raise ValueError(f"a {f.kind} finding on {f.subject} without its flag")
    return flag.line


_HEADLINE = {FindingKind.ROW: ("row regressed", "rows regressed"),
             FindingKind.BAR: ("scorer below its bar", "scorers below their bars"),
             FindingKind.SCORER: ("scorer worse on reruns", "scorers worse on reruns"),
             FindingKind.FAILING_RUNS: ("rise in failing runs", "rises in failing runs"),
             FindingKind.BASELINE: ("scorer significantly worse than the baseline",
                                    "scorers significantly worse than the baseline")}


def headline(findings: list[Finding]) -> str:
    """`FAIL: 2 rows regressed, 1 scorer below its bar`: what the findings add up to, counted
    by kind in the order each kind first appears."""
    counts: dict[FindingKind, int] = {}
    for f in findings:
        counts[f.kind] = counts.get(f.kind, 0) + 1
    return "FAIL: " + ", ".join(f"{n} {_HEADLINE[k][n != 1]}" for k, n in counts.items())


def word(verdict: Verdict) -> Verdict:
    """The verdict decide() gave, worded (in place, and returned): each flag's line, each
    finding's text and the reasons, the FAIL line, each scorer's reason, the unconfirmed flags'
    notes. Wording twice changes nothing."""
    flags = verdict.regressed + verdict.flaky + verdict.insufficient
    for x in flags:
        x.line = flag_line(x)
    for f in verdict.findings:
        f.text = finding_text(f, verdict.regressed, verdict._comparison)
    if verdict.findings:
        verdict.reasons = [f.text for f in verdict.findings]
        verdict.line = "\n".join([headline(verdict.findings), *verdict.reasons])
    bars = {f.subject: f.text for f in verdict.findings if f.kind == FindingKind.BAR}
    for name, r in verdict.scorers.items():
        r.reason = bars.get(name) or (bar_text(name, r.mean, r.bar) if r.below_bar else None)
    if verdict._unconfirmed:
        at = verdict._unconfirmed_at
        verdict.notes[at:at] = [f"{x.status}: {x.line}" for x in verdict._unconfirmed]
        verdict._unconfirmed = []
    return verdict


def decide(*args, **kwargs) -> Verdict:
    """turngate.verdict.decide.decide, worded: what every command (and turngate.decide) calls."""
    from turngate.verdict.decide import decide as typed

    return word(typed(*args, **kwargs))
