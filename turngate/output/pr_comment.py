"""`--markdown PATH`: the gate's verdict as Markdown for a sticky pull-request comment, read in
ten seconds: the headline, one section of what fails the gate (the scorers, then the rows, each
once, a row by its own first failure), what the verdict could see, then collapsed: the flaky and
insufficient-data items (rows and scorers apart, never a row that fails the gate) and the whole
scorer table; last, one line of plan, cost and links.

The first line is a hidden marker (MARKER) that sticky-comment actions find the comment by, so
each run replaces the last one. The report link's URL is the placeholder REPORT_URL: the workflow
replaces the literal text `{report_url}` with the artifact's address (e.g.
`sed -i "s|{report_url}|$URL|" comment.md`); left as is, it is plain text.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from turngate.core.atomic_write import write_atomic
from turngate.core.seeds import format_seeds
from turngate.output.row_outcomes import outcomes
from turngate.record.results import Record
from turngate.verdict.confirm import ANY
from turngate.verdict.decide import Verdict, job_label

MARKER = "<!-- turngate: gate verdict -->"
REPORT_URL = "{report_url}"
MAX_ROWS = 15  # rows listed per section; the rest are counted
MAX_CELL = 140  # characters of one reason or failure in a cell
MAX_CHARS = 60_000  # GitHub refuses a comment over 65,536 characters


def _cell(text: str, limit: int = MAX_CELL) -> str:
    text = " ".join(text.split()).replace("|", "\\|")
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _capped(items: list, what: str) -> tuple[list, str | None]:
    more = len(items) - MAX_ROWS
    return items[:MAX_ROWS], (f"... and {more} more {what} (see the report)" if more > 0 else None)


def _why(name: str, text: str) -> str:
    """A scorer's reason without its own name in front (the table's first column says it)."""
    for prefix in (f"{name}: ", f"scorer worse: {name}: "):
        if text.startswith(prefix):
            return text[len(prefix):]
    return text


def _failing(record: Record, verdict: Verdict, rows) -> list[str]:
    """What fails the gate: a table of the scorers, then one of the rows; each named once."""
    out: list[str] = []
    aggregates = {x.row_id: x for x in verdict.regressed if x.kind == "aggregate"}
    scorers = [(n, s, s.reason or (aggregates[n].line if n in aggregates else "failed the gate"))
               for n, s in verdict.scorers.items() if s.ok is False]
    if ANY in aggregates:  # a rise in failing runs over all scorers: one line, as a scorer would be
        scorers.append(("any scorer", None, aggregates[ANY].line))
    if scorers:
        out += ["", "| scorer | mean | bar | why it fails the gate |", "|---|---:|---:|---|"]
        for name, s, why in scorers:
            out.append(f"| {_cell(name)} | {_num(s and s.mean, '.3f')} | {_num(s and s.bar, '.2f')} | "
                       f"{_cell(_why(name, why.removeprefix('failing runs: some scorer: ')))} |")
    failing = [o for o in rows if o.failed]
    if failing:
        shown, more = _capped(failing, "rows")
        out += ["", "| row | runs passed | first failure |", "|---|---:|---|"]
        for o in shown:
            first = next(iter(o.explanations(limit=1)), "no run of it passed")
            mark = "regressed (confirmed on reruns): " if o.status == "regressed" else ""
            out.append(f"| `{_cell(o.row_id, 80)}` | {o.passed}/{len(o.runs)} | {_cell(mark + first)} |")
        if more:
            out += ["", more]
    return out


def _not_failing(verdict: Verdict, rows) -> list[str]:
    """Flagged but not failing the gate, rows and scorers apart, in a collapsed section."""
    failing = {o.row_id for o in rows if o.failed}
    groups = []
    for what, items in (("flaky", verdict.flaky), ("insufficient data", verdict.insufficient)):
        row_items = [x for x in items if x.kind == "row" and x.row_id not in failing]
        scorer_items = [x for x in items if x.kind != "row"]
        if row_items or scorer_items:
            groups.append((what, row_items, scorer_items))
    if not groups:
        return []
    summary = "; ".join(f"{what}: " + ", ".join(f"{n} {unit}" for n, unit in ((len(r), "row(s)"), (len(sc), "scorer(s)")) if n)
                        for what, r, sc in groups)
    out = ["", f"<details><summary>Flagged, not failing the gate ({summary})</summary>", ""]
    for what, row_items, scorer_items in groups:
        lines = [f"- `{_cell(x.row_id, 80)}`: {_cell(x.line.removeprefix(x.row_id + ': '))}" for x in row_items]
        lines += [f"- scorer {_cell(x.line)}" for x in scorer_items]
        shown, more = _capped(lines, what)
        out += [f"**{what.capitalize()}**: " + ("not confirmed by reruns" if what == "flaky"
                                               else "nothing could confirm it"), "", *shown]
        out += [f"- {more}"] if more else []
        out.append("")
    out.append("</details>")
    return out


def pr_comment(record: Record, verdict: Verdict, *, results: str | Path | None = None,
               comparison: dict[str, Any] | None = None, fail_on_regression: bool = False) -> str:
    m = record.meta
    job = job_label(record, m.version)
    mark = "PASS" if verdict.exit_code == 0 else "FAIL" if verdict.exit_code == 1 else "NOT JUDGED"
    head, *reasons = verdict.lines(limit=10, results=str(results) if results else None)
    out = [MARKER, f"### {job}: {head}" if head.startswith(("PASS", "FAIL")) else f"### {job}: {mark}: {head}"]
    rows = outcomes(record, verdict, comparison=comparison, fail_on_regression=fail_on_regression)
    if verdict.exit_code == 2 and reasons:  # cannot judge: why, as the terminal says it
        out += [""] + [f"- {_cell(r.strip().removeprefix('- '), 400)}" for r in reasons]
    out += _failing(record, verdict, rows)
    if verdict.sensitivity is not None:
        out += ["", f"**What this verdict could see**: {_cell(verdict.sensitivity.line, 600)}"]
    out += _not_failing(verdict, rows)
    if verdict.scorers:
        out += ["", f"<details><summary>Every scorer ({len(verdict.scorers)})</summary>", "",
                "| scorer | mean | bar | n | verdict |", "|---|---:|---:|---:|---|"]
        for name, s in verdict.scorers.items():
            state = "n/a" if s.ok is None else "pass" if s.ok else "**FAIL**"
            out.append(f"| {_cell(name)} | {_num(s.mean, '.3f')} | {_num(s.bar, '.2f')} | {s.n} | {state} |")
        out += ["", "</details>"]
    c = verdict.confirmation
    cost = (f"{c.rows} flagged row(s) rerun, {c.runs} runs" + (f" (+{c.share:.0%})" if c.share else "")
            if c is not None else "no reruns" if verdict.exit_code != 2 else None)
    out += ["", f"{len(record.rows)} rows x {m.trials} seed(s) ({format_seeds(m.seeds)}), model `{m.model}`, "
                f"judge `{m.judge}`" + (f"; confirmation: {cost}" if cost else "") + f"; exit code {verdict.exit_code}"
                f" · [HTML report and results file]({REPORT_URL})" + (f" · `{Path(results).name}`" if results else "")]
    text = "\n".join(out) + "\n"
    if m.redacted:
        from turngate.core.redaction import mask_text

        text = mask_text(text)
    if len(text) > MAX_CHARS:
        text = text[:MAX_CHARS].rsplit("\n", 1)[0] + f"\n\n... cut at {MAX_CHARS} characters; see the report\n"
    return text


def write_pr_comment(record: Record, verdict: Verdict, path: str | Path, *, force: bool = True, **kwargs) -> Path:
    """The comment, written whole or not at all; the path written."""
    return write_atomic(path, pr_comment(record, verdict, **kwargs), what="the Markdown file", exclusive=not force)
