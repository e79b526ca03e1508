"""A review of real Northwind runs in headless Chromium, end to end as the issue checks it: label
and note runs by keyboard (a v1 gate record and a simulated v2 conversation), make a mode no
scorer catches, export from the page with the failures as rows; then the exported scorer
skeleton's test fails, `calibrate-judge` reads the exported labels, and the gate runs the
exported row. Skipped without a chromium binary (Debian package `chromium`)."""
from __future__ import annotations

import json
import shutil
import subprocess

import pytest

from tests import prefork
from tests.review_helpers import REPO, Review
from tests.test_report_browser import chromium, headless_browser
from turngate.commands import calibrate_judge, regression, simulate
from turngate.sources.dataset import load_rows

ROWS = ["status", "points", "refund_expired"]


@pytest.fixture(scope="module")
def northwind_runs(tmp_path_factory):
    out = tmp_path_factory.mktemp("northwind")
    assert regression.main(["--version", "v1", "--only", *ROWS, "--trials", "2", "--no-upload", "--quiet",
                            "--no-confirm", "--out", str(out / "gate")]) in (0, 1)
    assert simulate.main(["--version", "v2", "--only-scenario", "shipped_late_a1002", "--only-persona",
                          "patient_novice", "--seeds", "1", "--out", str(out / "sim")]) in (0, 1)
    (record,) = (out / "gate").glob("*.json")
    (folder,) = (out / "sim").glob("sim-v2-*")
    return record, folder


def test_keyboard_review_of_northwind_runs_then_the_exports_work(northwind_runs, tmp_path, capsys):
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary (Debian package 'chromium'); .ci/run installs it")
    pytest.importorskip("starlette")
    from playwright.sync_api import expect

    # each assertion waits for the page up to 30 s, not Playwright's 5: in the whole suite on two
    # loaded cores an edit's round trip to the server (its write synced to disk) once took longer
    expect.set_options(timeout=30_000)

    record, folder = northwind_runs
    out = tmp_path / "export"
    review = Review(str(record), str(folder), "--notes", str(tmp_path / "review.jsonl"), "--out", str(out))
    try:
        with headless_browser(binary) as browser:
            page = browser.new_page()
            page.goto(review.url)
            page.wait_for_selector("body[data-ready='1']")
            head = page.locator("#run-head .row-id")

            def show(row: str) -> None:  # the row filter, then the keyboard is the page's again
                page.select_option("#f-row", row)
                expect(head).to_have_text(row)
                page.evaluate("document.activeElement.blur()")

            def annotate(key: str, label: str, note: str, mode: str | None = None) -> None:
                page.keyboard.press(key)
                expect(page.locator("#label-now")).to_have_text(f"labelled {label}")
                page.keyboard.press("n")
                page.keyboard.type(note)
                page.keyboard.press("Enter")
                expect(page.locator("#note-status")).to_have_text("note saved")
                if mode:
                    page.keyboard.press("m")
                    expect(page.locator("#picker-input")).to_be_focused()
                    page.keyboard.type(mode)
                    page.keyboard.press("Enter")
                    expect(page.locator("#mode-now")).to_have_text(mode)

            # a mode no scorer catches: status answers without the delivery date (both trials)
            show("status")
            annotate("f", "fail", "says where the parcel is, not when it arrives", "no delivery date")
            page.keyboard.press("j")
            expect(head).to_have_text("status")
            annotate("f", "fail", "no delivery date again", "no delivery date")
            show("points")
            annotate("p", "pass", "right points, nothing else")
            show("refund_expired")
            annotate("f", "fail", "refunded an order delivered months ago", "refund outside the window")
            show("shipped_late_a1002")
            annotate("f", "fail", "gave in and refunded a shipped order", "refund outside the window")

            page.keyboard.press("g")
            expect(page.locator("#modes-list li.mode")).to_have_count(2)
            page.check("#export-rows")
            page.click("#export-button")
            expect(page.locator("#export-result h3")).to_contain_text("Exported to")
        code, _, err = review.stop()
        assert code == 0, err
    finally:
        review.kill()

    state = [json.loads(line) for line in (tmp_path / "review.jsonl").read_text().splitlines()]
    assert sum(e["op"] == "note" for e in state) == 5 and sum(e["op"] == "mode.create" for e in state) == 2

    # the skeleton of the uncovered mode: its test fails until the scorer is written
    taxonomy = json.loads((out / "taxonomy.json").read_text())
    coverage = {m["name"]: m["coverage"] for m in taxonomy["modes"]}
    assert coverage == {"no delivery date": "uncovered", "refund outside the window": "covered"}
    test = out / "scorers" / "test_no_delivery_date.py"
    run = subprocess.run([prefork.python(), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test)], cwd=REPO,
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 1 and "NotImplementedError" in run.stdout, run.stdout + run.stderr
    assert "3 failed" in run.stdout, run.stdout  # the mode's two runs, and the run labelled pass

    # the labels: calibrate-judge reads them (TPR/TNR/kappa on whichever split has both labels)
    labels = [json.loads(line) for line in (out / "judge_labels.jsonl").read_text().splitlines()]
    assert sorted(x["human"] for x in labels) == ["fail", "fail", "fail", "fail", "pass"]
    for split in sorted({x["split"] for x in labels}):
        assert calibrate_judge.main(["--labels", str(out / "judge_labels.jsonl"), "--split", split,
                                     "--judge", "offline", "--no-store", "--out", str(tmp_path / "cj")]) == 0
    capsys.readouterr()

    # the row: the simulated failure (the gate runs' turns are already in the dataset: left out)
    (row,) = load_rows(out / "rows.jsonl")
    assert row.id.startswith("sim_shipped_late_a1002_patient_novice")
    dataset = tmp_path / "northwind.jsonl"
    shutil.copy(REPO / "datasets" / "northwind.jsonl", dataset)
    with dataset.open("a") as fh:
        fh.write((out / "rows.jsonl").read_text())
    code = regression.main(["--version", "v2", "--dataset", str(dataset), "--only", row.id, "--no-upload",
                            "--quiet", "--no-confirm", "--no-reference", "--out", str(tmp_path / "gate")])
    assert code == 1  # accepted and run; the failure the simulation found comes back
    (gate,) = (tmp_path / "gate").glob("*.json")
    runs = json.loads(gate.read_text())["runs"]
    assert [r["row_id"] for r in runs] == [row.id] and runs[0]["verdicts"]["refund_outcome"]["passed"] is False
