"""Terminal and CI output of a summary: a rich table, then the failing rows; and the same
as Markdown for $GITHUB_STEP_SUMMARY.

Piped or redirected output is not wrapped at 80 columns: scorer names, row ids and paths stay
whole (`| cat`, CI logs). With --json the human output goes to stderr and stdout carries
only the JSON summary."""
from __future__ import annotations

import contextlib
import json
import os
import sys
from typing import TYPE_CHECKING

from pydantic import BaseModel
from rich.console import Console
from rich.table import Table

from turngate.core import cli_support as cli

if TYPE_CHECKING:
    from turngate.record.summaries import VersionSummary

PIPE_WIDTH = 200  # columns when not a terminal: wide enough for whole names, tables stay compact

console = Console(highlight=False)


def _fit_width() -> None:
    """A terminal keeps its own width; a pipe or file gets PIPE_WIDTH and no soft wrapping."""
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console.width = PIPE_WIDTH
        console.soft_wrap = True


_fit_width()


@contextlib.contextmanager
def use_stderr():
    """Human output to stderr for the duration (stdout is kept for --json)."""
    # Console.stderr, not Console.file: setting file would pin today's sys.stdout for good.
    old = console.stderr
    console.stderr = True
    _fit_width()
    try:
        yield
    finally:
        console.stderr = old


def print_json(data) -> None:
    """A JSON document on stdout, one line, for scripts (a pydantic model as it serialises itself)."""
    text = data.model_dump_json(by_alias=True) if isinstance(data, BaseModel) else json.dumps(data, default=str)
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _pct(v) -> str:
    return "-" if v is None else f"{v:.3f}"


def print_summary(summary: VersionSummary, label: str, *, max_failing: int = 15) -> None:
    """`label` names what ran (the job name, e.g. mybot@v3)."""
    trials = summary.trials
    t = Table(title=f"{label}: {summary.rows} rows x {trials} trial(s), "
                    f"{summary.runs} runs, {summary.agent_errors} agent errors")
    accepted = any(s.accepted is not None for s in summary.scorers.values())
    cols = ("scorer", "mean", "95% CI", "n", "bar") + (("accepted", "bar at n", "p") if accepted else ()) + ("verdict",)
    for col in cols:
        t.add_column(col, justify="left" if col == "scorer" else "right")
    if trials > 1:
        t.add_column(f"pass@{trials}", justify="right")
        t.add_column(f"pass^{trials}", justify="right")
    for name, s in summary.scorers.items():
        verdict = "n/a" if s.ok is None else "[green]pass[/]" if s.ok else "[red]FAIL[/]"
        cells = [name, _pct(s.mean), f"{s.low:.2f}-{s.high:.2f}", str(s.n), "-" if s.bar is None else f"{s.bar:.2f}"]
        if accepted:  # the accepted run on these rows, the bar that implies at this many runs, one-sided p
            p = s.p_value
            cells += [_pct(s.accepted), _pct(s.gate_bar), "-" if p is None else f"{p:.2g}"]
        cells.append(verdict)
        if trials > 1:
            cells += [_pct(s.pass_at_k), _pct(s.pass_hat_k)]
        t.add_row(*cells)
        if corr := s.corrected:
            t.add_row(f"  {name} (bias-corrected)", _pct(corr.theta), f"{corr.low:.2f}-{corr.high:.2f}",
                      str(s.n), "", *([""] * (3 if accepted else 0)), "info", *([""] * (2 if trials > 1 else 0)))
    console.print(t)
    kinds = Table(title="by row kind (a run passes when every scorer that applies passes)")
    kinds.add_column("kind")
    kinds.add_column("rows", justify="right")
    kinds.add_column("pass@1", justify="right")
    if trials > 1:
        kinds.add_column(f"pass@{trials}", justify="right")
        kinds.add_column(f"pass^{trials}", justify="right")
    for kind, k in summary.by_kind.items():
        kinds.add_row(kind, str(k.rows), _pct(k.pass_at_1), *([_pct(k.pass_at_k), _pct(k.pass_hat_k)] if trials > 1 else []))
    console.print(kinds)
    failing = summary.failing
    if failing:
        console.print(f"[bold]failing runs ({len(failing)}), first reason each:[/]")
        for f in failing[:max_failing]:
            console.print(f"  {f.row_id}#{f.trial}  {f.scorer}: {f.explanation}", markup=False)
        if len(failing) > max_failing:
            console.print(f"  ... and {len(failing) - max_failing} more ({cli.command('show')} <results> ROW_ID)")


def markdown(summary: VersionSummary, label: str, verdict_line: str) -> str:
    trials = summary.trials
    head = "| scorer | mean | 95% CI | n | bar | verdict |" + (f" pass@{trials} | pass^{trials} |" if trials > 1 else "")
    lines = [f"### {label}: {verdict_line}", "", head,
             "|" + "---|" * (head.count("|") - 1)]
    for name, s in summary.scorers.items():
        verdict = "n/a" if s.ok is None else "pass" if s.ok else "**FAIL**"
        row = (f"| {name} | {_pct(s.mean)} | {s.low:.2f}-{s.high:.2f} | {s.n} | "
               f"{'-' if s.bar is None else format(s.bar, '.2f')} | {verdict} |")
        if trials > 1:
            row += f" {_pct(s.pass_at_k)} | {_pct(s.pass_hat_k)} |"
        lines.append(row)
    if summary.failing:
        lines += ["", "<details><summary>failing runs</summary>", ""]
        lines += [f"- `{f.row_id}#{f.trial}` {f.scorer}: {f.explanation}" for f in summary.failing[:50]]
        lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def append_step_summary(text: str) -> None:
    path = os.environ.get("GITHUB_STEP_SUMMARY")
    if path:
        with open(path, "a") as fh:
            fh.write(text)
