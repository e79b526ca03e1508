"""The HTML report: self-contained and escaped (static checks), and working in headless
Chromium (verdict, chart, grid, drill-down, no console errors, no network)."""
from __future__ import annotations

import contextlib
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


RERUN_SEED = 1255090688  # the first fresh seed of a flagged row's confirmation reruns, as a real gate draws it


def rerun_record():
    """A one-trial gate of 3 rows whose row r001 failed refund_outcome and was rerun 8 times on
    fresh seeds, 3 of the reruns failing it again."""
    rows = [row(f"r{k:03d}") for k in range(3)]
    runs = [run("v3", f"r{k:03d}", 0, {"refund_outcome": k != 1, "policy_judge": True}) for k in range(3)]
    for i in range(8):
        again = run("v3", "r001", RERUN_SEED + i, {"refund_outcome": i not in (1, 4, 6), "policy_judge": True})
        runs.append(again.model_copy(update={"stage": "confirm"}))
    return record("v3", runs, rows)


@pytest.fixture(scope="module")
def rerun_report_file(tmp_path_factory):
    return report.write_report(rerun_record(), tmp_path_factory.mktemp("report") / "reruns.html")


def test_the_report_keeps_a_rows_reruns_apart_from_its_trials():
    from turngate.output.html_report import payload

    data = payload(rerun_record())
    assert data["trials"] == 1
    assert {rid: list(by_trial) for rid, by_trial in data["runs"]["v3"].items()} == \
        {"r000": ["0"], "r001": ["0"], "r002": ["0"]}  # the planned trial only: one chip, one run per cell
    reruns = data["reruns"]["v3"]
    assert list(reruns) == ["r001"] and [r["seed"] for r in reruns["r001"]] == list(range(RERUN_SEED, RERUN_SEED + 8))
    assert [r["failed"] for r in reruns["r001"]] == [i in (1, 4, 6) for i in range(8)]


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
    """Debian's chromium, when playwright (the [browser] extra) is there to drive it; else None: skip."""
    import importlib.util

    if importlib.util.find_spec("playwright") is None:
        return None
    for name in ("/usr/bin/chromium", shutil.which("chromium"), shutil.which("chromium-browser")):
        if name and Path(name).exists():
            return name
    return None


FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run"]


@contextlib.contextmanager
def headless_browser(binary: str):
    """Debian's chromium driven by playwright in a throwaway profile; closed on the way out."""
    from playwright.sync_api import sync_playwright

    with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(profile, executable_path=binary, headless=True, args=FLAGS,
                                                        viewport={"width": 1300, "height": 900})
        try:
            yield browser
        finally:
            browser.close()



def test_report_in_headless_chromium(report_file):
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary (Debian package 'chromium') or no playwright (the [browser] extra); .ci/run installs both")
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


def test_a_one_trial_gate_shows_one_trial_chip_and_its_reruns_apart(rerun_report_file):
    """The grid and the trial chips are the planned runs; a flagged row's reruns are a count in
    their own column and chips of their own, numbered, never labelled by their raw seeds."""
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary (Debian package 'chromium') or no playwright (the [browser] extra); .ci/run installs both")
    from playwright.sync_api import sync_playwright

    problems = []
    with tempfile.TemporaryDirectory() as profile, sync_playwright() as pw:
        browser = pw.chromium.launch_persistent_context(profile, executable_path=binary, headless=True, args=FLAGS)
        try:
            page = browser.new_page()
            page.on("console", lambda m: m.type == "error" and problems.append(m.text))
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.goto(rerun_report_file.as_uri())
            # a cell counts the planned run only: the flagged row's one trial failed, the reruns are not in it
            assert page.locator("#grid button.cell").count() == 6
            assert page.locator("#grid button.cell[data-row='r001'][data-scorer='refund_outcome']").inner_text() == "✗"
            assert page.locator("#grid button.cell[data-row='r001'][data-scorer='policy_judge']").inner_text() == "✓"
            assert page.locator("#grid th").all_inner_texts()[:3] == ["row", "kind", "reruns"]
            assert page.locator("#grid button.reruns").count() == 1  # only the flagged row was rerun
            assert page.locator("#grid button.reruns[data-row='r001']").inner_text() == "3/8 failed"

            page.click("#grid button.cell[data-row='r001'][data-scorer='refund_outcome']")
            trials = page.locator("#detail .picker:not(.reruns) button")
            assert trials.all_inner_texts() == ["0 ✗"] and trials.first.get_attribute("title") == "seed 0"
            again = page.locator("#detail .picker.reruns button")
            assert again.all_inner_texts() == [f"{i + 1} {'✗' if i in (1, 4, 6) else '✓'}" for i in range(8)]
            assert str(RERUN_SEED) not in page.inner_text("#detail .picker.reruns")  # the seed is in the tooltip
            assert again.nth(1).get_attribute("title") == f"seed {RERUN_SEED + 1}"
            assert "confirmation reruns (fresh seeds): 3/8 fail refund_outcome" in page.inner_text("#detail")
            assert "refund_outcome (v3, trial 0): fail" in page.inner_text("#detail")

            again.nth(1).click()
            detail = page.inner_text("#detail")
            assert "refund_outcome (v3, rerun 2 of 8): fail" in detail and f"seed {RERUN_SEED + 1}," in detail
            # the rerun count opens the first failing rerun
            page.click("#grid button.cell[data-row='r000'][data-scorer='refund_outcome']")
            page.click("#grid button.reruns[data-row='r001']")
            assert "refund_outcome (v3, rerun 2 of 8): fail" in page.inner_text("#detail")
        finally:
            browser.close()
    assert problems == [], problems
