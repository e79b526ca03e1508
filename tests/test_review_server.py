"""`evals review`'s server: the token on every route, writes only from its own page, the answers'
security headers, hostile text kept as data, the API over the sidecar, one-line errors before
anything is served, Ctrl-C/SIGTERM and kill -9 (nothing acknowledged is lost; the page resumes
where the reviewer stopped). The page itself in Chromium: test_review_browser.py."""
from __future__ import annotations

import importlib.util
import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests import prefork
from tests.review_helpers import HOSTILE, HOSTILE_USER, REPO, Review, evals_review, review_record
from turngate.review.items import load_items
from turngate.review.server import CSP, PAGE, Session, build_app
from turngate.review.store import ReviewStore

starlette = pytest.importorskip("starlette")
from starlette.testclient import TestClient  # noqa: E402

HOST = "testserver"  # TestClient's Host
HAVE_EXPORT = importlib.util.find_spec("turngate.review.export") is not None
HAVE_GROUPING = importlib.util.find_spec("turngate.review.grouping") is not None


@pytest.fixture
def served(tmp_path):
    path = review_record(tmp_path)
    items = load_items([path])
    store = ReviewStore(tmp_path / "v2.review.jsonl")
    store.load()
    session = Session(items, store, sample=20, export_dir=tmp_path / "export")
    session.hosts = {HOST}
    client = TestClient(build_app(session), base_url=f"http://{HOST}")
    client.session = session
    yield client
    store.close()


def auth(client, **headers):
    return {"X-Review-Token": client.session.token, **headers}


def first(client) -> dict:
    q = client.get("/api/queue", headers=auth(client)).json()
    it = q["items"][0]
    return {"source": q["sources"][it["s"]]["digest"], "run": it["run"]}


ROUTES = [("GET", "/"), ("GET", "/static/app.js"), ("GET", "/static/app.css"), ("GET", "/api/queue"),
          ("GET", "/api/run"), ("GET", "/api/state"), ("GET", "/api/taxonomy"), ("POST", "/api/event"),
          ("POST", "/api/suggest"), ("POST", "/api/export"), ("GET", "/nope"), ("GET", "/api/nope")]


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_refuses_a_request_without_the_token(served, method, path):
    token = served.session.token
    body = {"json": {}} if method == "POST" else {}
    page = not path.startswith("/api/")
    wrong = ("y" if token[0] == "x" else "x") + token[1:]  # one character off
    for headers, query in [({}, ""), ({"X-Review-Token": wrong}, "?t=" + wrong),
                           ({"X-Review-Token": ""}, "?t=")]:
        r = served.request(method, path + (query if page else ""), headers=headers, **body)
        assert r.status_code == 403, (path, headers, r.text)
        assert r.headers["content-security-policy"] == CSP and r.headers["x-content-type-options"] == "nosniff"
    # the token where the other kind of request carries it is refused too: a query on the API
    # (addresses end up in logs), a header on the page (a browser navigation has none)
    if page:
        assert served.request(method, path, headers={"X-Review-Token": token}, **body).status_code == 403
    else:
        assert served.request(method, f"{path}?t={token}", **body).status_code == 403


@pytest.mark.parametrize(("method", "path"), ROUTES)
def test_every_route_answers_with_the_token(served, method, path):
    token = served.session.token
    page = not path.startswith("/api/")
    url = path + (f"?t={token}" if page else "")
    if path == "/api/run":
        url += "?" + "&".join(f"{k}={v}" for k, v in first(served).items())
    body = {"json": {"op": "position", **first(served)}} if path == "/api/event" else \
        {"json": {}} if method == "POST" else {}
    r = served.request(method, url, headers={} if page else auth(served), **body)
    expected = {"/nope": 404, "/api/nope": 404,
                "/api/suggest": 200 if HAVE_GROUPING else 501, "/api/export": 200 if HAVE_EXPORT else 501}
    assert r.status_code == expected.get(path, 200), (path, r.text)
    assert r.headers["content-security-policy"] == CSP and r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["cache-control"] == "no-store" and r.headers["referrer-policy"] == "no-referrer"


def test_the_page_loads_only_its_own_files_with_the_token(served):
    token = served.session.token
    html = served.get(f"/?t={token}").text
    assert html.count(f"?t={token}") == 2  # its script and style sheet carry it
    scripts = re.findall(r"<script\b([^>]*)>(.*?)</script>", html, re.S)
    assert scripts and all(re.search(r'\bsrc="/static/', attrs) and not body.strip() for attrs, body in scripts)
    assert not re.search(r"\son[a-z]+\s*=", html, re.I)  # no inline handler (the CSP would refuse it anyway)
    assert not re.search(r"(?:src|href)\s*=\s*\"(?:https?:)?//", html)  # nothing from elsewhere
    assert served.get(f"/static/app.js?t={token}").headers["content-type"].startswith("text/javascript")
    assert served.get(f"/static/../server.py?t={token}").status_code == 404
    assert served.get(f"/static/index.html?t={token}").status_code == 404
    csp = served.get(f"/?t={token}").headers["content-security-policy"]
    assert "script-src 'self'" in csp and "default-src 'none'" in csp and "unsafe-inline" not in csp


def test_the_script_never_writes_markup():
    """Record text reaches the page through textContent only: the script has no sink that parses
    HTML or code, and makes no link from data."""
    js = (PAGE / "app.js").read_text()
    for sink in ("innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval(", "new Function",
                 "setAttribute(\"href\"", ".href =", "srcdoc", "DOMParser", "createContextualFragment"):
        assert sink not in js, sink


def test_a_request_to_another_host_name_is_refused(served):
    """A page of another site whose name resolves to 127.0.0.1 (DNS rebinding) cannot read the API."""
    r = served.get("/api/queue", headers=auth(served, Host="evil.example:8000"))
    assert r.status_code == 403 and "own address" in r.json()["error"]


def test_a_write_from_another_page_is_refused(served):
    ev = {"op": "note", **first(served), "text": "forged"}
    for headers in [{"Origin": "http://evil.example"}, {"Origin": "null"}, {"Origin": "http://127.0.0.1:1"},
                    {"Sec-Fetch-Site": "cross-site"}, {"Sec-Fetch-Site": "same-site"}]:
        r = served.post("/api/event", json=ev, headers=auth(served, **headers))
        assert r.status_code == 403, headers
    r = served.post("/api/event", content=json.dumps(ev), headers=auth(served, **{"Content-Type": "text/plain"}))
    assert r.status_code == 415  # what a form of another page could send without a preflight
    assert served.get("/api/event", headers=auth(served)).status_code == 405
    assert served.post("/api/queue", json={}, headers=auth(served)).status_code == 405
    assert served.session.store.state.notes == {}  # none of them was written
    r = served.post("/api/event", json=ev, headers=auth(served, Origin=f"http://{HOST}", **{"Sec-Fetch-Site": "same-origin"}))
    assert r.status_code == 200 and served.session.store.state.notes


def test_hostile_text_is_served_as_json_data(served):
    q = served.get("/api/queue", headers=auth(served)).json()
    it = next(i for i in q["items"] if i["row"] == "r5" and i["failed"])
    r = served.get("/api/run", params={"source": q["sources"][0]["digest"], "run": it["run"]}, headers=auth(served))
    assert r.headers["content-type"] == "application/json" and r.headers["x-content-type-options"] == "nosniff"
    t = r.json()
    assert t["answer"] == HOSTILE and t["messages"][0]["content"] == HOSTILE_USER
    assert t["tool_calls"][0]["error"] == "<i>timeout</i>" and t["tool_calls"][1]["result"]["ok"] is False
    assert HOSTILE not in served.get(f"/?t={served.session.token}").text  # the page holds no record text


def test_the_queue_is_small_items_failing_first(served):
    q = served.get("/api/queue", headers=auth(served)).json()
    assert (q["runs"], q["failing"], len(q["items"])) == (12, 6, 12)
    assert [i["failed"] for i in q["items"]] == [True] * 6 + [False] * 6
    assert set(q["items"][0]) == {"s", "run", "row", "version", "trial", "stage", "failed", "failing", "label",
                                  "noted", "mode"}


def test_events_states_and_refusals(served):
    k = first(served)
    post = lambda ev: served.post("/api/event", json=ev, headers=auth(served))  # noqa: E731
    assert post({"op": "note", **k, "text": "refunded outside the window"}).json() == {"ok": True, "events": 1}
    assert post({"op": "label", **k, "label": "fail"}).json()["events"] == 2
    r = post({"op": "assign", **k, "mode": "m-nope"})
    assert r.status_code == 409 and r.json() == {"error": "no mode m-nope", "events": 2}
    for bad in [{"op": "label", **k, "label": "maybe"}, {"op": "drop"}, {"op": "note", **k}]:
        r = post(bad)
        assert r.status_code == 400 and r.json()["error"].startswith("not a review event"), bad
    r = post({"op": "note", "source": k["source"], "run": "v2/r9/gate/0", "text": "x"})
    assert r.status_code == 400 and "no run" in r.json()["error"]  # only runs of the files read
    r = served.post("/api/event", content=b"[1, 2]", headers=auth(served, **{"Content-Type": "application/json"}))
    assert r.status_code == 400
    r = served.post("/api/event", content=b"{not json", headers=auth(served, **{"Content-Type": "application/json"}))
    assert r.status_code == 400
    assert post({"op": "mode.create", "mode": "m-1", "name": "refund outside the window"}).status_code == 200
    assert post({"op": "assign", **k, "mode": "m-1"}).status_code == 200
    assert post({"op": "position", **k}).status_code == 200
    st = served.get("/api/state", headers=auth(served)).json()
    assert st["events"] == 5
    assert st["notes"] == [[k["source"], k["run"], "refunded outside the window"]]
    assert st["labels"] == [[k["source"], k["run"], "fail"]] and st["assigned"] == [[k["source"], k["run"], "m-1"]]
    assert st["modes"] == [{"id": "m-1", "name": "refund outside the window", "definition": ""}]
    assert st["position"] == [k["source"], k["run"]]
    assert served.get("/api/state?events=5", headers=auth(served)).json() == {"events": 5, "same": True}
    q = served.get("/api/queue", headers=auth(served)).json()["items"][0]
    assert (q["label"], q["noted"], q["mode"]) == ("fail", True, "m-1")
    assert served.get("/api/run", params={"source": "x", "run": "y"}, headers=auth(served)).status_code == 404


def test_another_writer_moves_the_count(served, tmp_path):
    """Two tabs (or two servers) on one review file: each answer carries the events count, so
    a page sees when it moved by more than its own write."""
    k = first(served)
    other = ReviewStore(tmp_path / "v2.review.jsonl")
    other.load()
    other.append({"op": "note", **k, "text": "from the other tab"})
    assert served.post("/api/event", json={"op": "label", **k, "label": "fail"},
                       headers=auth(served)).json()["events"] == 2
    assert served.get("/api/state?events=0", headers=auth(served)).json()["notes"][0][2] == "from the other tab"
    other.close()


def test_the_taxonomy_counts_modes_and_their_coverage(served):
    q = served.get("/api/queue", headers=auth(served)).json()
    digest = q["sources"][0]["digest"]
    judged = [i["run"] for i in q["items"] if i["failing"] == ["policy_judge"]]
    post = lambda ev: served.post("/api/event", json=ev, headers=auth(served))  # noqa: E731
    post({"op": "mode.create", "mode": "m-j", "name": "judged"})
    post({"op": "mode.create", "mode": "m-u", "name": "nobody catches it"})
    for run in judged:
        post({"op": "assign", "source": digest, "run": run, "mode": "m-j"})
    passing = next(i["run"] for i in q["items"] if not i["failed"])
    post({"op": "assign", "source": digest, "run": passing, "mode": "m-u"})
    tax = served.get("/api/taxonomy", headers=auth(served)).json()
    modes = {m["id"]: m for m in tax["modes"]}
    assert modes["m-j"]["coverage"] == "covered" and modes["m-j"]["covered_by"] == "policy_judge"
    assert modes["m-j"]["count"] == 2 and modes["m-j"]["reviewed"] == 3
    lo, hi = modes["m-j"]["interval"]
    assert lo < 2 / 3 < hi
    assert modes["m-u"]["coverage"] == "uncovered" and modes["m-u"]["covered_by"] is None


@pytest.mark.skipif(not HAVE_GROUPING, reason="turngate/review/grouping.py is not merged yet")
def test_suggest_groups_the_notes(served):
    q = served.get("/api/queue", headers=auth(served)).json()
    digest = q["sources"][0]["digest"]
    for i, text in zip(q["items"][:4], ["refunded outside the return window", "refunded outside the window",
                                        "leaked the customer's email", "leaked an email address"], strict=True):
        served.post("/api/event", json={"op": "note", "source": digest, "run": i["run"], "text": text},
                    headers=auth(served))
    r = served.post("/api/suggest", json={}, headers=auth(served))
    assert r.status_code == 200
    for g in r.json()["suggestions"]:
        assert g["name"] and g["runs"] and all(len(k) == 2 for k in g["runs"])


@pytest.mark.skipif(not HAVE_EXPORT, reason="turngate/review/export.py is not merged yet")
def test_the_export_button_writes_into_the_export_folder(served):
    k = first(served)
    served.post("/api/event", json={"op": "note", **k, "text": "refunded outside the window"}, headers=auth(served))
    served.post("/api/event", json={"op": "mode.create", "mode": "m-1", "name": "refund outside the window"},
                headers=auth(served))
    served.post("/api/event", json={"op": "assign", **k, "mode": "m-1"}, headers=auth(served))
    r = served.post("/api/export", json={}, headers=auth(served))
    assert r.status_code == 200, r.text
    paths = [Path(p) for p in r.json()["paths"]]
    assert paths and all(p.exists() and served.session.export_dir in p.parents for p in paths)


# --- the command ---------------------------------------------------------------------------------

def one_line_exit_2(args, cwd=REPO):
    done = subprocess.run(evals_review(*args, "--no-browser"), cwd=cwd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert done.stdout == "" and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "Traceback" not in done.stderr
    return done.stderr.strip()


def test_a_record_that_fails_its_checks_is_one_line_before_anything_is_served(tmp_path):
    path = review_record(tmp_path)
    data = json.loads(path.read_text())
    data["runs"][0]["verdicts"]["refund_outcome"]["passed"] = True  # edited after it was sealed
    path.write_text(json.dumps(data))
    line = one_line_exit_2([str(path)])
    assert line.startswith(f"error: {path}: ") and "digest" in line
    assert not (tmp_path / "v2.review.jsonl").exists()  # nothing was opened for writing
    assert one_line_exit_2([str(tmp_path / "gone.json")]) == f"error: {tmp_path / 'gone.json'}: no such results file"
    (tmp_path / "text.json").write_text("not json\n")
    assert one_line_exit_2([str(tmp_path / "text.json")]).startswith(f"error: {tmp_path / 'text.json'}:1: ")


def test_a_bad_review_file_line_is_file_line(tmp_path):
    path = review_record(tmp_path)
    notes = tmp_path / "v2.review.jsonl"
    header = {"schema": "turngate/review@1", "op": "header", "at": "x", "sources": []}
    notes.write_text(json.dumps(header) + "\n" + '{"op": "note", "source": "d", "run": "k"}\n{"op": "x"}\n')
    line = one_line_exit_2([str(path)])
    assert line.startswith(f"error: {notes}:2: not a review event")
    line = one_line_exit_2([str(path), "--export", str(tmp_path / "out")])
    assert line.startswith(f"error: {notes}:2: ")


def test_argument_errors_are_one_line(tmp_path):
    path = review_record(tmp_path)
    assert "--sample -1" in one_line_exit_2([str(path), "--sample", "-1"])
    assert "--port 70000" in one_line_exit_2([str(path), "--port", "70000"])
    line = one_line_exit_2([str(path), "--export", str(tmp_path / "out")])
    assert line.startswith(f"error: {tmp_path / 'v2.review.jsonl'}: no such review file")
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        line = one_line_exit_2([str(path), "--port", str(port)])
    assert line.startswith(f"error: --port {port}: cannot listen on 127.0.0.1:{port}")


def test_a_browser_is_opened_only_where_there_is_a_display(monkeypatch):
    from turngate.commands.review import can_open_a_browser

    for var in ("DISPLAY", "WAYLAND_DISPLAY", "BROWSER"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(sys, "platform", "linux")
    assert not can_open_a_browser()  # webbrowser would start lynx or w3m in the server's terminal
    monkeypatch.setenv("DISPLAY", ":0")
    assert can_open_a_browser()


def test_without_the_review_extra_it_says_how_to_get_it(tmp_path):
    path = review_record(tmp_path)
    code = ("import sys; sys.modules['starlette'] = None; from turngate.cli import run; "
            f"run(['review', {str(path)!r}, '--no-browser'])")
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2
    assert done.stderr == "error: evals review needs the review extra: pip install 'turngate[review]'\n"


@pytest.mark.skipif(not HAVE_EXPORT, reason="turngate/review/export.py is not merged yet")
def test_export_flag_writes_and_serves_nothing(tmp_path):
    path = review_record(tmp_path)
    store = ReviewStore(tmp_path / "v2.review.jsonl")
    store.load()
    it = next(i for i in load_items([path]) if i.failed)
    store.append({"op": "note", "source": it.key[0], "run": it.run, "text": "refunded outside the window"})
    store.append({"op": "mode.create", "mode": "m-1", "name": "refund outside the window"})
    store.append({"op": "assign", "source": it.key[0], "run": it.run, "mode": "m-1"})
    store.close()
    done = subprocess.run(evals_review(str(path), "--export", str(tmp_path / "out")), cwd=REPO,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    printed = [Path(line) for line in done.stdout.splitlines()]
    assert printed and all(p.exists() for p in printed)
    assert "http://" not in done.stdout


def test_sigterm_ends_the_session_exit_0_with_every_note_saved(tmp_path):
    path = review_record(tmp_path)
    review = Review(str(path))
    try:
        q = review.ok("/api/queue")
        digest = q["sources"][0]["digest"]
        for i in q["items"][:3]:
            review.ok("/api/event", {"op": "note", "source": digest, "run": i["run"], "text": f"note on {i['run']}"})
        code, out, err = review.stop(signal.SIGTERM)
    finally:
        review.kill()
    assert code == 0, err
    assert "review ended: 3 event(s)" in out and "Traceback" not in err
    state = ReviewStore(tmp_path / "v2.review.jsonl").load()
    assert len(state.notes) == 3


def test_ctrl_c_ends_the_session_exit_0(tmp_path):
    review = Review(str(review_record(tmp_path)))
    try:
        code, out, err = review.stop(signal.SIGINT)
    finally:
        review.kill()
    assert code == 0 and "review ended" in out and "Traceback" not in err, (code, err)


@pytest.fixture(scope="module")
def real_gate_record(tmp_path_factory):
    """A real v2 gate record of this repository's agent (its reruns included), ~10 s."""
    out = tmp_path_factory.mktemp("v2")
    done = subprocess.run([prefork.python(), "evals/regression.py", "--version", "v2", "--out", str(out), "--no-upload",
                           "--quiet"], cwd=REPO, capture_output=True, text=True, timeout=600)
    assert done.returncode in (0, 1), done.stderr
    (path,) = out.glob("v2-*.json")
    return path


def test_kill_9_loses_nothing_and_the_page_resumes_where_it_stopped(real_gate_record, tmp_path):
    path = tmp_path / "v2.json"
    path.write_bytes(real_gate_record.read_bytes())
    review = Review(str(path))
    try:
        q = review.ok("/api/queue")
        digest = q["sources"][0]["digest"]
        runs = [i["run"] for i in q["items"]]
        assert [i["failed"] for i in q["items"]] == sorted((i["failed"] for i in q["items"]), reverse=True)
        sent = []
        review.ok("/api/event", {"op": "mode.create", "mode": "m-a", "name": "refund despite a refusal"})
        review.ok("/api/event", {"op": "mode.create", "mode": "m-b", "name": "leaks PII"})
        for n, run in enumerate(runs[:8]):
            review.ok("/api/event", {"op": "note", "source": digest, "run": run, "text": f"note {n}: {run}"})
            review.ok("/api/event", {"op": "label", "source": digest, "run": run, "label": "fail" if n % 3 else "pass"})
            review.ok("/api/event", {"op": "assign", "source": digest, "run": run, "mode": "m-a" if n % 2 else "m-b"})
            sent.append(run)
        last = review.ok("/api/event", {"op": "position", "source": digest, "run": runs[5]})
        assert last["events"] == 2 + 3 * 8 + 1
        review.proc.send_signal(signal.SIGKILL)
        review.proc.communicate(timeout=30)
        assert review.proc.returncode == -signal.SIGKILL
    finally:
        review.kill()

    again = Review(str(path))
    try:
        st = again.ok("/api/state")
        notes = {(s, r): t for s, r, t in st["notes"]}
        assert notes == {(digest, run): f"note {n}: {run}" for n, run in enumerate(sent)}
        assert {(s, r): v for s, r, v in st["labels"]} == {(digest, run): "fail" if n % 3 else "pass"
                                                           for n, run in enumerate(sent)}
        assert {(s, r): m for s, r, m in st["assigned"]} == {(digest, run): "m-a" if n % 2 else "m-b"
                                                             for n, run in enumerate(sent)}
        assert [m["name"] for m in st["modes"]] == ["refund despite a refusal", "leaks PII"]
        assert st["position"] == [digest, runs[5]] and st["events"] == 27
        assert [i["run"] for i in again.ok("/api/queue")["items"]] == runs  # the same queue, same order
        code, _, err = again.stop()
        assert code == 0, err
    finally:
        again.kill()


# --- the other modules' entry points, as this server calls them (stand-ins: the wiring only) -----

def test_suggest_and_export_call_the_review_modules_by_their_names(served, monkeypatch, tmp_path):
    import types
    from dataclasses import dataclass

    @dataclass
    class Suggestion:
        runs: list
        name: str
        notes: list

    seen = {}

    def suggest(notes):
        seen["suggest"] = dict(notes)
        return [Suggestion(runs=list(notes), name="refunds", notes=list(notes.values()))]

    class Name(str):
        definition = "a refund the policy forbids"

    def name_groups(groups, model, *, warn=None):
        seen["named"] = (len(groups), model)
        warn("the model named 1 of 1")
        return [Name("refund outside the window") for _ in groups]

    def export(state, items, out_dir, *, rows=None, dataset=None, verdicts=None, page="taxonomy.md"):
        seen["export"] = (state, len(items), out_dir, rows)
        assert page == "taxonomy.md"  # the session's --page
        out_dir.mkdir(parents=True, exist_ok=True)
        (out_dir / "taxonomy.md").write_text("# modes\n")
        return [out_dir / "taxonomy.md"]

    grouping = types.SimpleNamespace(suggest=suggest)
    monkeypatch.setitem(sys.modules, "turngate.review.grouping", grouping)
    monkeypatch.setattr(sys.modules["turngate.review"], "grouping", grouping, raising=False)
    monkeypatch.setitem(sys.modules, "turngate.review.export", types.SimpleNamespace(export=export))
    k = first(served)
    served.post("/api/event", json={"op": "note", **k, "text": "refunded outside the window"}, headers=auth(served))
    r = served.post("/api/suggest", json={}, headers=auth(served))
    assert r.status_code == 200
    assert r.json()["suggestions"] == [{"name": "refunds", "definition": "", "runs": [[k["source"], k["run"]]],
                                        "notes": ["refunded outside the window"], "score": None}]
    assert seen["suggest"] == {(k["source"], k["run"]): "refunded outside the window"} and "named" not in seen
    grouping.name_groups = name_groups  # with --model, a model names the groups
    served.session.model = "openai:gpt-x"
    got = served.post("/api/suggest", json={}, headers=auth(served)).json()
    assert seen["named"] == (1, "openai:gpt-x") and got["warnings"] == ["the model named 1 of 1"]
    assert (got["suggestions"][0]["name"], got["suggestions"][0]["definition"]) == \
        ("refund outside the window", "a refund the policy forbids")
    r = served.post("/api/export", json={"rows": [[k["source"], k["run"]]]}, headers=auth(served))
    assert r.status_code == 200 and r.json()["paths"] == [str(tmp_path / "export" / "taxonomy.md")]
    assert r.json()["report"] == []
    state, n, out_dir, rows = seen["export"]
    assert state is served.session.store.state and n == 12 and out_dir == tmp_path / "export"
    assert rows == {(k["source"], k["run"])}
    assert served.post("/api/export", json={"rows": "all"}, headers=auth(served)).status_code == 400


def test_the_export_flag_calls_export_and_prints_its_paths(tmp_path, monkeypatch, capsys):
    import types

    from turngate.commands import review

    path = review_record(tmp_path)
    ReviewStore(tmp_path / "v2.review.jsonl").load()
    calls = []

    def export(state, items, out_dir, *, rows=None, dataset=None, verdicts=None, page=None, command=None):
        calls.append((state.events, len(items), out_dir))
        assert page == "taxonomy.md" and command == f"evals review {path} --export {tmp_path / 'out'}"
        return [out_dir / "taxonomy.md", out_dir / "taxonomy.json"]

    monkeypatch.setitem(sys.modules, "turngate.review.export", types.SimpleNamespace(export=export))
    assert review.main([str(path), "--export", str(tmp_path / "out")]) == 0
    assert calls == [(0, 12, tmp_path / "out")]
    assert capsys.readouterr().out.splitlines() == [str(tmp_path / "out" / "taxonomy.md"),
                                                    str(tmp_path / "out" / "taxonomy.json")]
    assert review.default_export_dir(Path("results/v2.review.jsonl")) == Path("results/v2.review.export")


def test_simulated_conversations_are_served_too(tmp_path):
    """A results/sim-*/ folder: its review file inside it, each conversation a run of the queue."""
    done = subprocess.run([prefork.python(), "evals/simulate.py", "--seeds", "1", "--only-scenario", "late_return_a1005",
                           "--out", str(tmp_path)], cwd=REPO, capture_output=True, text=True, timeout=300)
    assert done.returncode in (0, 1), done.stderr
    (folder,) = tmp_path.glob("sim-*")
    items = load_items([folder])
    from turngate.review.store import sidecar_for

    assert sidecar_for(folder) == folder / "review.jsonl"
    store = ReviewStore(sidecar_for(folder))
    store.load()
    session = Session(items, store)
    session.hosts = {HOST}
    client = TestClient(build_app(session), base_url=f"http://{HOST}")
    q = client.get("/api/queue", headers={"X-Review-Token": session.token}).json()
    assert q["runs"] == len(items) and {i["stage"] for i in q["items"]} == {"simulation"}
    it = q["items"][0]
    t = client.get("/api/run", params={"source": q["sources"][it["s"]]["digest"], "run": it["run"]},
                   headers={"X-Review-Token": session.token}).json()
    assert t["stage"] == "simulation" and t["scenario"] == "late_return_a1005" and t["messages"]
    assert load_items([folder]) == items  # the review file beside them is not read as a conversation
    store.close()


def test_coverage_is_by_todays_suite_unless_asked_for_the_recorded_verdicts(tmp_path):
    """The record's refund_outcome verdicts are made up (its runs refund correctly): by the
    verdicts recorded refund_outcome covers the mode; today's refund_outcome, scoring the same
    turns, passes them (today's judge fails them: no eligibility check)."""
    path = review_record(tmp_path)
    items = load_items([path])
    failed = [it for it in items if it.failing == ("refund_outcome",)]
    store = ReviewStore(tmp_path / "v2.review.jsonl")
    store.load()
    store.append({"op": "mode.create", "mode": "m-1", "name": "refund wrong"})
    for it in failed:
        store.append({"op": "assign", "source": it.key[0], "run": it.key[1], "mode": "m-1"})
    store.close()
    out = {}
    for how in ("recorded", "today"):
        done = subprocess.run(evals_review(str(path), "--export", str(tmp_path / how), "--coverage", how),
                              cwd=REPO, capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        (mode,) = json.loads((tmp_path / how / "taxonomy.json").read_text())["modes"]
        out[how] = {a["scorer"]: a["failed"] for a in mode["agreement"]}
    assert out["recorded"]["refund_outcome"] == 3 and out["today"].get("refund_outcome", 0) == 0
    assert out["today"]["policy_judge"] == 3
