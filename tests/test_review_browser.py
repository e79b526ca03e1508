"""The review page in headless Chromium (the system's, through Playwright), driven by the keyboard
as a reviewer would: label and note runs, reload and find them, make modes and assign notes
(keys and mouse), export, read a hostile transcript that must stay text, and be refused
without the token. Skipped without a chromium binary (Debian package `chromium`)."""
from __future__ import annotations

import importlib.util
import time

import pytest

from tests.review_helpers import HOSTILE, HOSTILE_USER, Review, review_record
from tests.test_report_browser import chromium, headless_browser

HAVE_EXPORT = importlib.util.find_spec("turngate.review.export") is not None


def until(check, timeout=15.0, what="the condition"):
    """check() until it is truthy or the deadline passes (a deadline loop, no fixed sleep)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if got := check():
            return got
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def test_a_review_session_by_keyboard(tmp_path):
    binary = chromium()
    if binary is None:
        pytest.skip("no chromium binary (Debian package 'chromium'); .ci/run installs it")
    pytest.importorskip("starlette")
    from playwright.sync_api import expect

    # each assertion waits for the page up to 30 s, not Playwright's 5: in the whole suite on two
    # loaded cores an edit's round trip to the server (its write synced to disk) once took longer
    expect.set_options(timeout=30_000)

    review = Review(str(review_record(tmp_path)), "--coverage", "recorded")  # its hand-made verdicts
    problems, requests, dialogs = [], [], []
    try:
        with headless_browser(binary) as browser:
            page = browser.new_page()
            page.on("console", lambda m: m.type == "error" and problems.append(m.text))
            page.on("pageerror", lambda e: problems.append(str(e)))
            page.on("request", lambda r: requests.append(r.url))
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(review.url)
            page.wait_for_selector("body[data-ready='1']")
            head = page.locator("#run-head .row-id")
            expect(head).to_have_text("r0")
            expect(page.locator("#progress")).to_have_text("0 of 12 reviewed · 0 labelled · 0 noted")

            def annotate(label_key: str, label: str, note: str) -> None:
                page.keyboard.press(label_key)
                expect(page.locator("#label-now")).to_have_text(f"labelled {label}")
                page.keyboard.press("n")
                expect(page.locator("#note")).to_be_focused()
                page.keyboard.type(note)
                page.keyboard.press("Enter")
                expect(page.locator("#note-status")).to_have_text("note saved")
                expect(page.locator("#note")).not_to_be_focused()

            # three failing runs, keys only: a label and a note each
            annotate("f", "fail", "refunded outside the window")
            page.keyboard.press("j")
            expect(head).to_have_text("r2")
            annotate("p", "pass", "asked for the order number twice")
            page.keyboard.press("ArrowDown")
            expect(head).to_have_text("r3")
            annotate("f", "fail", "refunded outside the window again")
            page.keyboard.press("n")  # Esc leaves the box without saving what was typed
            page.keyboard.type(" DRAFT")
            page.keyboard.press("Escape")
            expect(page.locator("#note")).to_have_value("refunded outside the window again")
            expect(page.locator("#progress")).to_have_text("3 of 12 reviewed · 3 labelled · 3 noted")
            digest = review.ok("/api/queue")["sources"][0]["digest"]
            until(lambda: review.ok("/api/state")["position"] == [digest, "v2/r3/gate/0"], what="the position")

            # a reload: the notes are there and the page is back where the reviewer stopped
            page.reload()
            page.wait_for_selector("body[data-ready='1']")
            expect(head).to_have_text("r3")
            expect(page.locator("#note")).to_have_value("refunded outside the window again")
            page.keyboard.press("k")
            expect(head).to_have_text("r2")
            expect(page.locator("#note")).to_have_value("asked for the order number twice")
            expect(page.locator("#label-now")).to_have_text("labelled pass")

            # a second tab writes; the first sees it when it comes back to the front
            other = browser.new_page()
            other.on("pageerror", lambda e: problems.append(str(e)))
            other.goto(review.url)
            other.wait_for_selector("body[data-ready='1']")
            other.keyboard.press("Home")
            expect(other.locator("#run-head .row-id")).to_have_text("r0")
            other.keyboard.press("n")
            other.keyboard.type(" (seen twice)")
            other.keyboard.press("Enter")
            expect(other.locator("#note-status")).to_have_text("note saved")
            other.close()
            page.bring_to_front()
            page.evaluate("window.dispatchEvent(new Event('focus'))")
            page.keyboard.press("k")
            expect(head).to_have_text("r0")
            expect(page.locator("#note")).to_have_value("refunded outside the window (seen twice)")
            page.keyboard.press("j")
            expect(head).to_have_text("r2")

            # modes from the picker: a new name creates one, a number picks one
            page.keyboard.press("m")
            expect(page.locator("#picker-input")).to_be_focused()
            page.keyboard.type("asks twice")
            page.keyboard.press("Enter")
            expect(page.locator("#mode-now")).to_have_text("asks twice")
            page.keyboard.press("k")
            expect(head).to_have_text("r0")
            page.keyboard.press("m")
            page.keyboard.type("refund outside the window")
            page.keyboard.press("Enter")
            expect(page.locator("#mode-now")).to_have_text("refund outside the window")
            page.keyboard.press("j")
            page.keyboard.press("j")
            expect(head).to_have_text("r3")
            page.keyboard.press("m")
            page.keyboard.type("2")
            page.keyboard.press("Enter")
            expect(page.locator("#mode-now")).to_have_text("refund outside the window")

            # the modes view: every note, the modes with counts and coverage
            page.keyboard.press("g")
            expect(page.locator("#modes-view")).to_be_visible()
            expect(page.locator("#notes-list li.note")).to_have_count(3)
            modes = page.locator("#modes-list li.mode")
            expect(modes).to_have_count(2)
            named = lambda name: modes.filter(has=page.locator(".name", has_text=name))  # noqa: E731
            outside = named("refund outside the window")
            expect(outside.locator(".coverage")).to_have_text("covered by refund_outcome")
            expect(outside.locator(".count")).to_contain_text("2 runs · 67% of 3 reviewed")
            # a third mode by keyboard (c), the first note assigned to it by its number
            page.keyboard.press("c")
            expect(page.locator("#new-mode-name")).to_be_focused()
            page.keyboard.type("misc")
            page.keyboard.press("Enter")
            expect(modes).to_have_count(3)
            page.keyboard.press("Escape")
            page.keyboard.press("3")
            first_note = page.locator("#notes-list li.note").first
            expect(first_note.locator("select")).to_have_value(review.ok("/api/state")["modes"][2]["id"])
            # the mouse: another note to mode 1 from its menu, then merge misc into mode 2
            modes_now = review.ok("/api/state")["modes"]
            page.locator("#notes-list li.note").nth(2).locator("select").select_option(modes_now[0]["id"])
            until(lambda: sum(m == modes_now[0]["id"] for *_, m in review.ok("/api/state")["assigned"]) == 2,
                  what="the assignment by mouse")
            misc = named("misc")
            misc.locator("select").select_option(modes_now[1]["id"])
            expect(modes).to_have_count(2)
            st = review.ok("/api/state")
            assert [m["name"] for m in st["modes"]] == ["asks twice", "refund outside the window"]
            assert len(st["notes"]) == 3 and len(st["assigned"]) == 3
            # split: select a note (x) of "asks twice", split it out; then delete that mode (two clicks)
            page.keyboard.press("Escape")
            page.keyboard.press("j")
            page.keyboard.press("j")
            page.keyboard.press("x")
            expect(page.locator("#notes-list li.note.selected")).to_have_count(1)
            named("asks twice").get_by_role("button", name="split 1 selected").click()
            page.keyboard.type("refund twice")
            page.keyboard.press("Enter")
            expect(modes).to_have_count(3)
            expect(named("refund twice").locator(".count")).to_contain_text("1 run")
            named("refund twice").get_by_role("button", name="delete").click()
            named("refund twice").get_by_role("button", name="delete: click again").click()
            expect(modes).to_have_count(2)
            assert len(review.ok("/api/state")["assigned"]) == 2  # its run is in no mode now

            # rename, by keyboard from the mode's own button; the list drawn again under it (x
            # selects a note; the deletion's taxonomy refresh may land now too) keeps the focus
            rename = named("asks twice").get_by_role("button", name="rename")
            rename.focus()
            page.keyboard.press("x")
            expect(page.locator("#notes-list li.note.selected")).to_have_count(1)
            expect(rename).to_be_focused()
            page.keyboard.press("x")
            expect(page.locator("#notes-list li.note.selected")).to_have_count(0)
            expect(rename).to_be_focused()
            page.keyboard.press("Enter")
            page.keyboard.press("Control+a")
            page.keyboard.type("asks for what it has")
            page.keyboard.press("Enter")
            expect(named("asks for what it has")).to_have_count(1)

            if HAVE_EXPORT:
                page.click("#export-button")
                expect(page.locator("#export-result h3")).to_contain_text("Exported to")

            # the hostile run: its text is text, nothing of it runs
            page.keyboard.press("r")
            page.select_option("#f-row", "r5")
            expect(head).to_have_text("r5")
            expect(page.locator("#answer .answer-text")).to_have_text(HOSTILE)
            expect(page.locator("#conversation .msg.user .content")).to_have_text(HOSTILE_USER)
            expect(page.locator("#tools .call.error")).to_contain_text("<i>timeout</i>")
            expect(page.locator("#tools .call.notok")).to_contain_text("window.pwned=2")
            expect(page.locator("#verdicts")).to_contain_text(HOSTILE)
            assert page.locator("#run img, #run script, #run svg, #run a, #run b, #run i").count() == 0
            assert page.evaluate("typeof window.pwned") == "undefined"
            page.keyboard.press("?")
            expect(page.locator("#help")).to_be_visible()
            page.keyboard.press("Escape")
            expect(page.locator("#help")).to_be_hidden()
            assert problems == [], problems
            assert dialogs == [], dialogs
            assert all(u.startswith(review.base + "/") for u in requests if not u.startswith("data:")), requests

            # without the token: refused, the page and the API alike
            assert page.request.get(review.base + "/api/queue").status == 403
            bare = browser.new_page()
            assert bare.goto(review.base + "/").status == 403
            assert bare.goto(review.base + "/static/app.js").status == 403
            assert "token" in bare.inner_text("body")
        code, _, err = review.stop()
        assert code == 0, err
    finally:
        review.kill()
