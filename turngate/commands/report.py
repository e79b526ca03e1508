"""One self-contained HTML report of a results record: the verdict and why, each scorer's
mean and interval against its bar (a Vega-Lite chart), baseline vs candidate when the record
has a comparison, and a rows x scorers grid whose cells open the run behind them.

    evals report results/v3-20261129-101500.json [--out PATH.html] [--force]

Nothing is fetched when the file is opened: the data and the Vega / Vega-Lite / vega-embed
bundle (shipped by the vl-convert-python package, BSD-3-Clause) are inlined. Every text from
the record (user messages, answers, tool replies) is escaped: server-side with html.escape,
in the page only through textContent, never innerHTML.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from turngate.core import cli_support as cli
from turngate.gate.recheck import judged_by, rejudged
from turngate.output.html_report import build_html, write_report  # noqa: F401  (re-exported for callers of this module)
from turngate.record.results import load_record


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("report"), description=" ".join(__doc__.split("\n\n")[0].split()))  # the first paragraph
    p.add_argument("results", help="a results file (from regression, regrade or compare --out)")
    p.add_argument("--out", metavar="PATH.html", help="where to write (default: beside the results, .html)")
    p.add_argument("--force", action="store_true", help="let --out replace an existing file")
    p.add_argument("--reference", metavar="FILE", help="re-judge against this reference (`current`: the project's "
                                                       "configured one), not the copy the record carries")
    return p


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(sys.argv[1:] if argv is None else argv)
    out = Path(a.out) if a.out else Path(a.results).with_suffix(".html")
    cli.check_new_file(out, "--out", force=a.force, inputs=[a.results])  # never over a file unless --force
    record = load_record(a.results)  # its runs match its plan and digest, or a one-line error
    # the summary and verdict the page shows come from the runs, never the file's (but an earlier rule's)
    _, label = rejudged(record, a.results, a.reference, lambda note: print(f"note: {note}"))
    if line := record.incomplete():
        print(f"{a.results}: {line}")
    print(f"{a.results}: judged by {judged_by(record, label)}")
    print(f"report: {write_report(record, out, force=a.force)}")
    return cli.EXIT_PASS

