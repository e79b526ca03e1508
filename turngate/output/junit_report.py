"""`--junit PATH`: the gate's verdict as JUnit XML for a CI test-report UI, built with
junitparser (its `xunit2` flavour: the Jenkins xunit plugin's junit-10.xsd, which Surefire,
pytest and most report tools read).

One <testsuite> named after the job (mybot@v3), one <testcase> per row (classname the
job, name the row id) holding its runs:
  - <failure> when the row fails the gate's verdict (turngate/output/row_outcomes.py: regressed, or its
    runs failed a scorer that failed the gate), the message its first reason, the text every
    reason and the failing scorers' explanations, run by run;
  - <flakyFailure type="flaky"> (Surefire's "failed, then passed on rerun") for a flaky row:
    flagged at stage 1, not confirmed by its reruns; it does not fail the gate, so the case passes.
    Its classname is the job's plus `.flaky`, because not every reporter reads <flakyFailure>:
    dorny/test-reporter knows only failed, skipped and success, and puts a case whose classname
    differs from its suite's name in a group of that name ("mybot@v3.flaky");
    mikepenz/action-junit-report titles a case by its classname's last dotted part ("flaky.<row>")
    and, with `flaky_summary: true`, lists <flakyFailure> cases in a table of flaky tests;
  - <error type="interrupted"> for a row whose planned runs did not all finish;
  - <system-out>: each run, one line (seed, pass or the failed scorers), then the reruns.
The schema has no properties on a testcase, so the suite's <properties> carry the rest: the
verdict headline and each reason, the exit code, seeds, trials, the results file, each scorer's
mean and bar, and per row its pass count (`row.<id>.passed` = `4/5`) and flag (`row.<id>.status`).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from turngate.core.atomic_write import write_atomic
from turngate.core.seeds import format_seeds
from turngate.output.row_outcomes import RowOutcome, failed_scorers, outcomes, run_label
from turngate.record.results import Record
from turngate.verdict.decide import Verdict, job_label

# characters XML 1.0 cannot hold at all (a model's answer may contain them)
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


def _text(record: Record, text: str) -> str:
    text = _NOT_XML.sub("\ufffd", text)
    if record.meta.redacted:  # --redact-results: nothing leaves the run unmasked
        from turngate.core.redaction import mask_text

        text = mask_text(text)
    return text


def _seconds(value: float) -> float:
    return round(max(value, 0.0), 3)  # never 1e-05: the schema's time pattern has no exponent


def _run_line(run) -> str:
    bad = failed_scorers(run)
    what = ("FAIL " + ", ".join(bad)) if bad else "pass"
    if run.turn.error:
        what += f" (error: {run.turn.error})"
    return f"{run_label(run)}: {what}"


def _case(record: Record, o: RowOutcome, job: str):
    from junitparser import Error, Failure
    from junitparser.xunit2 import FlakyFailure, TestCase

    flaky = o.status == "flaky" and not o.failed
    case = TestCase(o.row_id, f"{job}.flaky" if flaky else job, _seconds(sum(r.turn.seconds for r in o.runs + o.reruns)))
    results = []
    if o.failed:
        body = o.reasons + [""] + o.explanations()
        failure = Failure(_text(record, o.reasons[0]), "regressed" if o.status == "regressed" else "gate")
        failure.text = _text(record, "\n".join(body))
        results.append(failure)
    if o.missing > 0:
        error = Error(f"interrupted: {len(o.runs)} of {o.planned} runs finished", "interrupted")
        results.append(error)
    if results:
        case.result = results
    if flaky:
        flaky = FlakyFailure(_text(record, f"flaky (not confirmed by reruns): {o.flag.line}"), "flaky")
        flaky.text = _text(record, "\n".join(o.explanations()))
        case.add_interim_result(flaky)
    lines = [f"{job} / {o.row_id}: passed {o.passed}/{len(o.runs)} runs"
             + (f", {len(o.reruns)} confirmation rerun(s)" if o.reruns else "")
             + (f"; flagged: {o.status}" if o.status else "")]
    lines += [_run_line(r) for r in o.runs + o.reruns]
    case.system_out = _text(record, "\n".join(lines))
    return case


def build_junit(record: Record, verdict: Verdict, *, results: str | Path | None = None,
                comparison: dict[str, Any] | None = None, fail_on_regression: bool = False):
    """A junitparser.xunit2.JUnitXml of the verdict on the record's candidate version."""
    from junitparser.xunit2 import JUnitXml, TestSuite

    m = record.meta
    job = job_label(record, m.version)
    rows = outcomes(record, verdict, comparison=comparison, fail_on_regression=fail_on_regression)
    suite = TestSuite(job)
    props: list[tuple[str, Any]] = [
        ("job", job), ("version", m.version), ("model", m.model), ("judge", m.judge), ("dataset", m.dataset),
        ("exit_code", verdict.exit_code), ("verdict", verdict.headline),
        *((f"verdict.reason.{i}", r) for i, r in enumerate(verdict.reasons, 1)),
        ("seeds", format_seeds(m.seeds)), ("trials", m.trials), ("results", results),
        ("baseline", m.baseline), ("git_commit", m.git_commit),
        ("rows", len(rows)), ("rows.failed", sum(o.failed for o in rows)),
        ("rows.regressed", ",".join(x.row_id for x in verdict.regressed if x.kind == "row")),
        ("rows.flaky", ",".join(x.row_id for x in verdict.flaky if x.kind == "row")),
    ]
    if (sight := verdict.sensitivity) is not None:  # what the verdict could see
        props.append(("sensitivity", sight.line))
        props += [(f"sensitivity.{b.kind.value.replace(' ', '_')}", f"{b.caught}/{b.gates}") for b in sight.breaks]
    if verdict.confirmation is not None:
        props += [("confirmation.rows", verdict.confirmation.rows),
                  ("confirmation.runs", verdict.confirmation.runs)]
    for name, s in verdict.scorers.items():
        state = "n/a" if s.ok is None else "pass" if s.ok else "FAIL"
        mean = "-" if s.mean is None else f"{s.mean:.3f}"
        bar = "-" if s.bar is None else f"{s.bar:.2f}"
        props.append((f"scorer.{name}", f"mean {mean}, bar {bar}, n {s.n}: {state}"))
    for o in rows:
        props.append((f"row.{o.row_id}.passed", f"{o.passed}/{len(o.runs)}"))
        if o.status:
            props.append((f"row.{o.row_id}.status", o.status))
    for name, value in props:
        if value is not None and value != "":
            suite.add_property(name, _text(record, str(value)))
    for o in rows:
        suite.add_testcase(_case(record, o, job))
    suite.update_statistics()
    suite.time = _seconds(suite.time or 0.0)
    suite.timestamp = m.started
    xml = JUnitXml(job)
    xml.add_testsuite(suite)
    xml.update_statistics()
    xml.time = _seconds(xml.time or 0.0)
    return xml


def write_junit(record: Record, verdict: Verdict, path: str | Path, *, force: bool = True, **kwargs) -> Path:
    """Build and write the JUnit file (UTF-8, indented), whole or not at all; the path written."""
    import io

    buffer = io.BytesIO()
    build_junit(record, verdict, **kwargs).write(buffer, pretty=True)
    return write_atomic(path, buffer.getvalue(), what="the JUnit file", exclusive=not force)
