"""`--markdown PATH`: the gate's verdict as Markdown for a sticky pull-request comment.

The first line is a hidden marker (MARKER) that sticky-comment actions find the comment by, so
each run replaces the last one. Then the verdict headline and its reasons (at most ten, as the
terminal shows them), the scorer table (mean, bar, n), the rows that fail the gate, the regressed
and flaky rows, what the confirmation reruns cost, and a link to the report artifact whose URL is
the placeholder REPORT_URL: the workflow replaces the literal text `{report_url}` with the
artifact's address (e.g. `sed -i "s|{report_url}|$URL|" comment.md`); left as is, it is plain text.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from turngate.core.atomic_write import write_atomic
from turngate.core.seeds import format_seeds
from turngate.output.row_outcomes import outcomes
from turngate.record.results import Record
from turngate.verdict.decide import Verdict, job_label

MARKER = "<!-- turngate: gate verdict -->"
REPORT_URL = "{report_url}"
MAX_ROWS = 20  # rows listed per section; the rest are counted
MAX_CHARS = 60_000  # GitHub refuses a comment over 65,536 characters


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _listed(lines: list[str], what: str) -> list[str]:
    out = [f"- {line}" for line in lines[:MAX_ROWS]]
    if len(lines) > MAX_ROWS:
        out.append(f"- ... and {len(lines) - MAX_ROWS} more {what} (see the report)")
    return out


def pr_comment(record: Record, verdict: Verdict, *, results: str | Path | None = None,
               comparison: dict[str, Any] | None = None, fail_on_regression: bool = False) -> str:
    m = record.meta
    job = job_label(record, m.version)
    mark = "PASS" if verdict.exit_code == 0 else "FAIL" if verdict.exit_code == 1 else "NOT JUDGED"
    head, *reasons = verdict.lines(limit=10, results=str(results) if results else None)
    out = [MARKER, f"### {job}: {head}" if head.startswith(("PASS", "FAIL")) else f"### {job}: {mark}: {head}"]
    if reasons:
        out += [""] + [f"- {r.strip().removeprefix('- ')}" for r in reasons]
    if verdict.sensitivity is not None:
        out += ["", f"**What this verdict could see**: {_cell(verdict.sensitivity.line)}"]
    seeds = format_seeds(m.seeds)
    out += ["", f"{len(record.rows)} rows x {m.trials} seed(s) ({seeds}), model `{m.model}`, judge `{m.judge}`, "
                f"exit code {verdict.exit_code}",
            "", f"[HTML report and results file]({REPORT_URL})" + (f" · results: `{Path(results).name}`" if results else "")]
    if verdict.scorers:
        out += ["", "| scorer | mean | bar | n | verdict |", "|---|---:|---:|---:|---|"]
        for name, s in verdict.scorers.items():
            state = "n/a" if s.ok is None else "pass" if s.ok else "**FAIL**"
            out.append(f"| {_cell(name)} | {_num(s.mean, '.3f')} | {_num(s.bar, '.2f')} | {s.n} | {state} |")
    rows = outcomes(record, verdict, comparison=comparison, fail_on_regression=fail_on_regression)
    if verdict.regressed:
        out += ["", f"**Regressed ({len(verdict.regressed)})**: flagged and confirmed on reruns", ""]
        out += _listed([_cell(x.line) for x in verdict.regressed], "regressed")
    others = [o for o in rows if o.failed and o.status != "regressed"]
    if others:
        out += ["", f"**Other rows failing the gate ({len(others)})**: their runs failed a scorer that fails it", ""]
        out += _listed([f"`{o.row_id}` ({o.passed}/{len(o.runs)} runs passed): {_cell(o.reasons[0])}"
                        for o in others], "rows")
    if verdict.flaky:
        out += ["", f"**Flaky ({len(verdict.flaky)})**: flagged, not confirmed by reruns (does not fail the gate)", ""]
        out += _listed([_cell(x.line) for x in verdict.flaky], "flaky")
    if verdict.insufficient:
        out += ["", f"**Insufficient data ({len(verdict.insufficient)})**: flagged, nothing could confirm it", ""]
        out += _listed([_cell(x.line) for x in verdict.insufficient], "rows")
    c = verdict.confirmation
    if c is not None:
        share = f" (+{c.share:.0%} of the gate's runs)" if c.share else ""
        out += ["", f"**Confirmation cost**: {c.rows} flagged row(s) rerun on fresh seeds, "
                    f"{c.runs} runs{share}"]
    elif verdict.exit_code != 2:
        out += ["", "**Confirmation cost**: no reruns"]
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
