"""The HTML report: self-contained and escaped (static checks), and working in headless
Chromium (verdict, chart, grid, drill-down, no console errors, no network)."""
from __future__ import annotations

import re
import shutil
import tempfile
from pathlib import Path

import pytest

from tests.record_helpers import record, row, run, runs_from_pairs
from turngate.commands import report
from turngate.output.wording import finding_text, headline
from turngate.record.results import save_record
from turngate.record.summaries import Correction, Finding, FindingKind, StoredVerdict
from turngate.verdict.comparison import combined_record, worse_scorers

REPO = Path(__file__).resolve().parents[1]
INJECTION = "<script>alert('x')</script><img src=x onerror=alert(1)>"
# 10 pass->fail vs 1: refund_outcome stays significant under Holm with policy_judge in the family
PAIRS = [(True, True)] * 8 + [(True, False)] * 10 + [(False, True)] * 1 + [(False, False)] * 3 + [(None, True)] * 2


def comparison_record():
    """A v3-vs-v2 record (2 trials) with a regression and one answer that tries to inject markup."""
    base, cand = runs_from_pairs("v2", "v3", PAIRS, trials=2)
    cand[0] = run("v3", "r000", 0, {"refund_outcome": True, "policy_judge": False}, answer=INJECTION,
                  user="Refund A-1001 </script><b>bold</b>")
    rows = [row(f"r{k:03d}") for k in range(12)]
    rec = combined_record(record("v2", base, rows, trials=2), record("v3", cand, rows, trials=2), rows, "v2", "v3")
    findings = [Finding(kind=FindingKind.BASELINE, subject=n, p_value=p) for n, p in worse_scorers(rec.comparison)]
    for f in findings:
        f.text = finding_text(f, [], rec.comparison)
    reasons = [f.text for f in findings]
    rec.verdict = StoredVerdict(exit_code=1, line="\n".join([headline(findings), *reasons]), reasons=reasons,
                                findings=findings)  # as decide() writes it
    rec.summary["v3"].scorers["policy_judge"].corrected = Correction(theta=0.9, low=0.7, high=1.0, method="test")
    return rec


@pytest.fixture(scope="module")
def report_file(tmp_path_factory):
    return report.write_report(comparison_record(), tmp_path_factory.mktemp("report") / "report.html")


def test_report_is_self_contained(report_file):
    html = report_file.read_text()
    scripts = re.findall(r"<script\b([^>]*)>", html, re.I)
    assert len(scripts) == 4 and not any(re.search(r"\bsrc\s*=", attrs, re.I) for attrs in scripts)
    assert "window.vegaEmbed" in html  # the chart library is inlined
    # the markup itself (script bodies aside, which the browser test watches at run time)
    markup = re.sub(r"(<script\b[^>]*>).*?(</script>)", r"\1\2", html, flags=re.S | re.I)
    for tag in re.findall(r"<(?:link|img|iframe|source|embed|object|audio|video)\b[^>]*>", markup, re.I):
        assert not re.search(r"\b(?:src|href|data)\s*=", tag, re.I), tag
    assert not re.search(r"(?:src|href)\s*=\s*[\"']?(?:https?:)?//", markup, re.I)
    assert not re.search(r"@import|url\(", markup, re.I)


def test_report_escapes_record_text(report_file):
    html = report_file.read_text()
    assert INJECTION not in html and "<b>bold</b>" not in html and "</script><b>" not in html
    # the only script end tags are the page's own four
    assert html.count("</script>") == 4


def test_report_cli(tmp_path, capsys):
    src = save_record(comparison_record(), tmp_path / "cmp.json")
    assert report.main([str(src)]) == 0
    assert (tmp_path / "cmp.html").exists()
    assert report.main([str(tmp_path / "nope.json")]) == 2
    assert "no such results file" in capsys.readouterr().err


def chromium() -> str | None:
    for name in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if name and Path(name).exists():
            return name
    return None


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


def test_report_in_headless_chromium(report_file):
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary (Debian package 'chromium'); .ci/run installs it")
    from playwright.sync_api import sync_playwright

    problems, requests, dialogs = [], [], []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(profile, executable_path=binary, headless=True, args=FLAGS,
                                                        viewport={"width": 1400, "height": 1000})
        try:
            page = browser.new_page()
            page.on("console", lambda m: m.type == "error" and problems.append(m.text))
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(report_file.as_uri())

            # the verdict and why
            # the verdict and why, in lines: the headline, then one reason per list item
            assert page.inner_text("#verdict .headline") == "FAIL: 1 scorer significantly worse than the baseline"
            assert page.locator("#verdict ul.reasons li").first.inner_text().startswith("regression rule: refund_outcome")
            # both charts rendered by vega-embed
            page.wait_for_selector("#chart-means svg", timeout=15000)
            page.wait_for_selector("#chart-diff svg", timeout=15000)
            assert "policy_judge" in page.inner_text("#chart-means")
            # the grid: 12 rows x 2 scorers, pass fractions over the 2 trials
            assert page.locator("#grid button.cell").count() == 24
            cell = page.locator("#grid button.cell[data-row='r005'][data-scorer='refund_outcome']")
            assert cell.inner_text() == "0/2▼" and "fail" in cell.get_attribute("class")
            assert page.locator("#grid button.cell[data-row='r009'][data-scorer='refund_outcome']").inner_text() == "1/2▲"

            # drill down: the injected answer shows as text, and nothing ran
            page.click("#grid button.cell[data-row='r000'][data-scorer='policy_judge']")
            page.wait_for_selector("#conversation .msg")
            conversation = page.inner_text("#conversation")
            assert INJECTION in conversation and "Refund A-1001 </script><b>bold</b>" in conversation
            assert page.locator("#detail b").count() == 0 and page.locator("#detail img").count() == 0
            detail = page.inner_text("#detail")
            assert "policy_judge (v3, trial 0): fail" in detail and "v3 r000#0 policy_judge: fail" in detail
            assert "same row and trial on v2: pass" in detail
            tools = page.inner_text("#tool-calls")
            assert "refund_order" in tools and '"order_id": "A-1001"' in tools and '"reference": "W-0001"' in tools

            # the trial picker shows the other trial
            page.click("#detail .picker button[data-trial='1']")
            assert "policy_judge (v3, trial 1)" in page.inner_text("#detail")
            # the baseline's grid
            page.click("#versions button[data-version='v2']")
            assert page.locator("#grid button.cell[data-row='r005'][data-scorer='refund_outcome']").inner_text() == "2/2"
            page.click("#versions button[data-version='v3']")
            # a flip link (in the collapsed "fixed" list) jumps to its run
            page.click("#comparison details.fixed summary")
            page.click("#comparison button.link[data-row='r009']")
            assert page.inner_text("#detail-title") == "r009 · refund_outcome · v3"

            shot = REPO / "results" / "report-screenshot.png"
            shot.parent.mkdir(exist_ok=True)
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 10_000
        finally:
            browser.close()
    assert problems == [], problems
    assert dialogs == [], dialogs
    assert [u for u in requests if not u.startswith("file:")] == []
