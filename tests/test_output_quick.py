"""The output layer on one small real gate record, for the quick loop (tests/test_ci_outputs.py
runs whole gates, failing ones too): the PR comment and the JUnit file are made from the
record's own verdict, and each says what that verdict says."""
from __future__ import annotations

from turngate.gate.recheck import recompute
from turngate.output.junit_report import build_junit
from turngate.output.pr_comment import MARKER, REPORT_URL, pr_comment
from turngate.record.results import load_record


def test_a_passing_record_renders_in_every_ci_output(small_gate_record, tmp_path):
    path = tmp_path / "gate.json"
    path.write_text(small_gate_record)
    record = load_record(path)
    verdict = recompute(record, path)
    assert verdict.exit_code == 0
    md = pr_comment(record, verdict, results=path)
    assert md.startswith(MARKER + "\n### ") and "PASS" in md.splitlines()[1]
    assert f"]({REPORT_URL})" in md and "why it fails the gate" not in md
    for row in record.rows:  # a passing gate lists no row as failing
        assert f"| `{row['id']}` |" not in md
    xml = build_junit(record, verdict, results=path)
    (suite,) = list(xml)
    assert [c.name for c in suite] == [r["id"] for r in record.rows] and suite.failures == 0
