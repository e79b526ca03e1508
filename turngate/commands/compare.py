"""Compare a candidate agent version with a baseline over matched (row, trial) pairs.

    evals compare results/A.json results/B.json [--allow-different-rows]
                  [--report PATH.html] [--out PATH.json] [--fail-on-regression]

A is the baseline, B the candidate; each file contributes the runs of its own (candidate)
version. Per scorer: both means, the difference with a 95% interval, and an exact McNemar
test on the discordant pairs, Holm-adjusted over the scorers (family-wise error rate 0.05);
then every flip (passed on one side, failed on the other).
Exit 0, or 1 with --fail-on-regression when a scorer is significantly worse (Holm-adjusted
p < 0.05); 2 when the two runs cannot be compared (different datasets, unreadable files), or
when a scorer has pass->fail flips too few for McNemar to ever reach significance and none is
significantly worse (cannot judge, instead of a bare PASS).
"""
from __future__ import annotations

import argparse
import sys

from rich.markup import escape

from turngate.core import cli_support as cli
from turngate.gate.sides import read_sides
from turngate.output.comparison_table import print_comparison
from turngate.output.console import console
from turngate.output.wording import decide
from turngate.record.results import plan_of, planned_file, save_record, stored_row_sha256
from turngate.verdict.comparison import (
    _label,
    align,
    combined,
    combined_record,
    regressions,
)
from turngate.verdict.decide import stored
from turngate.verdict.rule import judged_with


def row_hashes(record) -> list[list[str]]:
    """[id, sha256] of a record's rows as it stores them, in its order."""
    if record.plan is not None:
        return [[rid, sha] for rid, sha in record.plan.rows.items()]
    return [[r["id"], stored_row_sha256(r, record.meta.redacted)] for r in record.rows]


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("compare"), description=__doc__.splitlines()[0])
    p.add_argument("baseline", metavar="A.json", help="results of the baseline (what shipped)")
    p.add_argument("candidate", metavar="B.json", help="results of the candidate")
    p.add_argument("--allow-different-rows", action="store_true",
                   help="compare the rows both runs share instead of refusing different datasets")
    p.add_argument("--report", metavar="PATH.html", help="also write the HTML report of the comparison")
    p.add_argument("--out", metavar="PATH.json", help="also write both runs and the comparison as one results file")
    p.add_argument("--fail-on-regression", action="store_true",
                   help="exit 1 when any scorer is significantly worse than the baseline "
                        "(McNemar, Holm-adjusted over the scorers: 5%% family-wise)")
    p.add_argument("--junit", metavar="PATH.xml", help="also write the verdict as JUnit XML, one case per row")
    p.add_argument("--markdown", metavar="PATH.md", help="also write the verdict as Markdown for a PR comment")
    p.add_argument("--force", action="store_true", help="let --out/--report/--junit/--markdown replace an existing file")
    return p


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(sys.argv[1:] if argv is None else argv)
    # where it writes, before any work: never over an input, never over a file unless --force
    if a.out:
        cli.check_new_file(a.out, "--out", force=a.force, inputs=[a.baseline, a.candidate])
    if a.report:
        cli.check_new_file(a.report, "--report", force=a.force, inputs=[a.baseline, a.candidate, a.out])
    for flag, path in (("--junit", a.junit), ("--markdown", a.markdown)):
        if path:
            cli.check_new_file(path, flag, force=a.force,
                               inputs=[a.baseline, a.candidate, a.out, a.report, a.junit if flag != "--junit" else None])
    # the runs themselves are needed only to write them out; else each side is read, checked
    # and reduced to its summary and verdict table (turngate/gate/sides.py)
    lean = not (a.out or a.report or a.junit or a.markdown or a.allow_different_rows)
    side_a, side_b = read_sides([a.baseline, a.candidate], lean=lean)
    rec_a, rec_b = side_a.record, side_b.record
    rows, note = align(rec_a, rec_b, a.allow_different_rows)
    if note:
        console.print(note)
    if rec_a.meta.judge != rec_b.meta.judge:
        console.print(f"[yellow]warning[/]: the runs used different judges ({rec_a.meta.judge} vs "
                      f"{rec_b.meta.judge}); policy_judge differences mix agent and judge changes")
    base_label, cand_label = _label(rec_a, rec_b, "A"), _label(rec_b, rec_a, "B")
    if lean:  # every row on both sides (align refused anything else): the sides' own summaries hold
        record = combined(rec_b.meta, rows, base_label, cand_label, summaries=(side_a.summary, side_b.summary),
                          tables=(side_a.table, side_b.table))
    else:
        record = combined_record(rec_a, rec_b, rows, base_label, cand_label)
    record.meta.compared_files = {"baseline": str(a.baseline), "candidate": str(a.candidate),
                                  "fail_on_regression": str(a.fail_on_regression).lower()}
    # today's rule; a comparison is judged against no reference (McNemar over the pairs)
    record.meta.reference, record.meta.judged_with = None, judged_with()
    if [r["id"] for r in rows] != [r["id"] for r in rec_b.rows]:  # the rows both share: A's are part of its selection
        shared = [*(record.meta.selection or {}).get("shared_with", []), row_hashes(rec_a)]
        record.meta.selection = {**(record.meta.selection or {}), "shared_with": shared}
    record.plan = plan_of(record, seeds={cand_label: list(rec_b.meta.seeds), base_label: list(rec_a.meta.seeds)},
                          version_files={cand_label: planned_file(rec_b), base_label: planned_file(rec_a)})
    comparison = record.comparison
    print_comparison(comparison)
    verdict = decide(record.summary[cand_label], comparison=comparison, fail_on_regression=a.fail_on_regression)
    code, line, worse = verdict.exit_code, verdict.line, bool(regressions(comparison))
    record.verdict = stored(verdict)
    if a.out:
        console.print(f"results: {save_record(record, cli.claim_file(a.out, '--out', force=a.force))}")
    if a.report:
        from turngate.output.html_report import write_report

        console.print(f"report: {write_report(record, a.report, force=a.force)}")
    if a.junit or a.markdown:
        from turngate.gate.conclude import write_ci_outputs

        write_ci_outputs(record, verdict, a.out or a.candidate, junit=a.junit, pr_comment=a.markdown,
                         fail_on_regression=a.fail_on_regression, force=a.force)
    colour = "yellow" if code == 2 else "green" if not worse else "red" if code else "yellow"
    console.print(f"[bold {colour}]{escape(line)}[/]")
    if verdict.sensitivity is not None:  # what McNemar could reach with these pairs
        console.print(f"sensitivity: {verdict.sensitivity.line}", markup=False, highlight=False)
    return code

