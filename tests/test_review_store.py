"""The review's core: the runs read from records, the append-only sidecar and its fold, the
taxonomy's coverage. The page and the exports are tested in test_review_server.py and
test_review_export.py."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap

import pytest

from tests.record_helpers import record, row, run
from turngate.core.errors import ConfigError
from turngate.record.results import save_record
from turngate.review.items import load_items, queue, transcript
from turngate.review.store import SCHEMA, ReviewStore, parse_event, sidecar_for
from turngate.review.taxonomy import summarise


def _record(tmp_path, name="v2.json"):
    runs = [run("v2", f"r{k}", t, {"refund_outcome": (k + t) % 3 != 0, "policy_judge": k != 4}) for k in range(6)
            for t in range(2)]
    return save_record(record("v2", runs, [row(f"r{k}") for k in range(6)], trials=2), tmp_path / name)


def test_items_fail_first_then_a_fixed_sample(tmp_path):
    items = load_items([_record(tmp_path)])
    assert len(items) == 12
    failing = [it for it in items if it.failed]
    assert {it.run for it in failing} == {f"v2/r{k}/gate/{t}" for k in range(6) for t in range(2)
                                          if (k + t) % 3 == 0 or k == 4}
    q = queue(items, sample=2, seed=5)
    assert q[:len(failing)] == sorted(failing, key=lambda it: (it.row_id, it.trial))
    assert len(q) == len(failing) + 2 and all(not it.failed for it in q[len(failing):])
    assert queue(items, sample=2, seed=5) == q  # the same queue each time the files are opened
    assert len(queue(items, sample=100)) == 12
    kept = [it for it in items if not it.failed][-1]
    assert kept in queue(items, sample=0, keep={kept.key})  # an annotated passing run stays in the queue
    t = transcript(q[0])
    assert t["tool_calls"][0]["result"] == {"ok": True, "reference": "W-0001"}
    assert t["row"]["id"] == q[0].row_id and t["verdicts"]["refund_outcome"]["explanation"]
    json.dumps(t)  # plain data


def test_a_record_that_fails_its_checks_is_one_line(tmp_path):
    path = _record(tmp_path)
    data = json.loads(path.read_text())
    data["runs"][0]["verdicts"]["refund_outcome"]["passed"] = True  # edited after it was sealed
    path.write_text(json.dumps(data))
    with pytest.raises(ConfigError, match="v2.json: .*digest"):
        load_items([path])
    with pytest.raises(ConfigError, match="no such results file"):
        load_items([tmp_path / "gone.json"])


def _store(tmp_path):
    s = ReviewStore(tmp_path / "r.review.jsonl")
    s.load()
    return s


def test_fold_notes_labels_modes(tmp_path):
    s = _store(tmp_path)
    a, b, c = ("d", "v2/r0/gate/0"), ("d", "v2/r1/gate/0"), ("d", "v2/r2/gate/0")
    for k, text in [(a, "refunded outside the window"), (b, "refunded although not delivered"), (c, "leaked email")]:
        assert s.append({"op": "note", "source": k[0], "run": k[1], "text": text}) == (True, None)
    s.append({"op": "label", "source": "d", "run": a[1], "label": "fail"})
    s.append({"op": "mode.create", "mode": "m-1", "name": "policy refund"})
    s.append({"op": "mode.create", "mode": "m-2", "name": "pii"})
    for k in (a, b, c):
        s.append({"op": "assign", "source": "d", "run": k[1], "mode": "m-1"})
    ok, why = s.append({"op": "assign", "source": "d", "run": a[1], "mode": "m-9"})
    assert not ok and "no mode m-9" in why
    assert s.append({"op": "mode.split", "mode": "m-1", "new": "m-3", "name": "leak", "runs": [list(c)]})[0]
    assert not s.append({"op": "mode.split", "mode": "m-1", "new": "m-4", "name": "x", "runs": [list(c)]})[0]
    assert s.append({"op": "mode.merge", "mode": "m-3", "into": "m-2"})[0]
    st = s.state
    assert st.assigned == {a: "m-1", b: "m-1", c: "m-2"} and set(st.modes) == {"m-1", "m-2"}
    s.append({"op": "note", "source": "d", "run": b[1], "text": "  "})  # an empty note clears it
    s.append({"op": "mode.delete", "mode": "m-2"})
    assert b not in s.state.notes and c not in s.state.assigned and "m-2" not in s.state.modes
    s.close()
    again = _store(tmp_path)  # the same state folded from the file alone
    assert (again.state.notes, again.state.labels, again.state.assigned) == (st.notes, st.labels, st.assigned)
    assert [m.name for m in again.state.modes.values()] == ["policy refund"]
    lines = (tmp_path / "r.review.jsonl").read_text().splitlines()
    assert json.loads(lines[0])["schema"] == SCHEMA and all(json.loads(x)["at"] for x in lines)


def test_bad_events_are_refused_before_writing(tmp_path):
    s = _store(tmp_path)
    size = (tmp_path / "r.review.jsonl").stat().st_size
    for bad in [{"op": "note", "source": "d", "run": "x"}, {"op": "drop"}, {"op": "label", "source": "d", "run": "x",
                "label": "maybe"}, {"op": "mode.create", "mode": "bad id", "name": "x"},
                {"op": "note", "source": "d", "run": "x", "text": "t" * 5000}]:
        with pytest.raises(ValueError):
            s.append(bad)
    assert (tmp_path / "r.review.jsonl").stat().st_size == size


def test_two_writers_see_each_other(tmp_path):
    one, two = _store(tmp_path), _store(tmp_path)
    one.append({"op": "mode.create", "mode": "m-a", "name": "A"})
    two.append({"op": "note", "source": "d", "run": "k", "text": "from tab two"})
    assert one.refresh().notes == {("d", "k"): "from tab two"}
    two.append({"op": "mode.delete", "mode": "m-a"})  # two follows one's line first, then deletes it
    ok, why = one.append({"op": "assign", "source": "d", "run": "k", "mode": "m-a"})
    assert not ok and "no mode m-a" in why  # one sees the deletion before it writes


def test_a_torn_last_line_goes_and_a_bad_middle_line_is_file_line(tmp_path):
    s = _store(tmp_path)
    s.append({"op": "note", "source": "d", "run": "k1", "text": "kept"})
    s.close()
    path = tmp_path / "r.review.jsonl"
    with path.open("ab") as f:
        f.write(b'{"op": "note", "source": "d", "run": "k2", "te')  # a write cut short by a crash
    s = _store(tmp_path)
    assert s.state.notes == {("d", "k1"): "kept"}
    s.append({"op": "note", "source": "d", "run": "k3", "text": "after"})
    s.close()
    assert _store(tmp_path).state.notes == {("d", "k1"): "kept", ("d", "k3"): "after"}
    with path.open("ab") as f:  # a whole event without its newline is kept
        f.write(json.dumps({"op": "label", "source": "d", "run": "k1", "label": "fail"}).encode())
    s = _store(tmp_path)
    assert s.state.labels == {("d", "k1"): "fail"}
    s.append({"op": "label", "source": "d", "run": "k3", "label": "pass"})
    s.close()
    assert _store(tmp_path).state.labels == {("d", "k1"): "fail", ("d", "k3"): "pass"}
    lines = path.read_text().splitlines()
    lines.insert(2, "{not json")
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(ConfigError, match=r"r\.review\.jsonl:3: not a JSON line"):
        _store(tmp_path)
    path.write_text(json.dumps({"schema": "turngate/review@9", "op": "header"}) + "\n")
    with pytest.raises(ConfigError, match=r":1: review file of schema 'turngate/review@9'"):
        _store(tmp_path)


def test_kill_9_loses_no_acknowledged_line(tmp_path):
    """A writer killed at an arbitrary moment: every event it had acknowledged is read back."""
    path = tmp_path / "k.review.jsonl"
    code = textwrap.dedent(f"""
        import sys
        from turngate.review.store import ReviewStore
        s = ReviewStore({str(path)!r}); s.load()
        for i in range(100000):
            s.append({{"op": "note", "source": "d", "run": f"k{{i}}", "text": "note " + "x" * (i % 700)}})
            print(i, flush=True)
    """)
    p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    acked = -1
    for line in p.stdout:
        acked = int(line)
        if acked >= 200:
            break
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    state = ReviewStore(path).load()
    assert all(("d", f"k{i}") in state.notes for i in range(acked + 1))


def test_sidecar_names():
    assert str(sidecar_for("results/v2-x.json")) == "results/v2-x.review.jsonl"
    assert parse_event({"op": "position", "source": "d", "run": "k"}).op == "position"


def test_coverage_names_the_scorer_that_fails_a_mode(tmp_path):
    items = {it.key: it for it in load_items([_record(tmp_path)])}
    s = ReviewStore(tmp_path / "c.review.jsonl")
    s.load()
    judged = [k for k, it in items.items() if it.failing == ("policy_judge",)]  # r4 twice: the judge fails it
    clean = [k for k, it in items.items() if not it.failed][:2]
    assert len(judged) == 2 and len(clean) == 2
    for mode, keys in [("m-j", judged[:1]), ("m-none", clean[:1]), ("m-half", [judged[1], clean[1]])]:
        s.append({"op": "mode.create", "mode": mode, "name": mode})
        for k in keys:
            s.append({"op": "assign", "source": k[0], "run": k[1], "mode": mode})
    out = {m.id: m for m in summarise(s.state, items)}
    assert out["m-j"].coverage == "covered" and out["m-j"].covered_by == "policy_judge"
    assert out["m-none"].coverage == "uncovered" and out["m-none"].covered_by is None
    assert out["m-half"].coverage == "partly covered" and out["m-half"].agreement[0].share == 0.5
    m = out["m-j"]
    assert (m.reviewed, m.count) == (4, 1)
    assert m.interval[0] < m.share == 0.25 < m.interval[1]


def test_coverage_by_todays_suite_overrides_the_recorded_verdicts(tmp_path):
    """A scorer written after the review covers its mode on the next export, without a rerun."""
    from turngate.review.rescore import rescored

    items = load_items([_record(tmp_path)])
    clean = [it for it in items if not it.failed][:2]
    s = ReviewStore(tmp_path / "c.review.jsonl")
    s.load()
    s.append({"op": "mode.create", "mode": "m-new", "name": "claims a refund it never made"})
    for it in clean:
        s.append({"op": "assign", "source": it.key[0], "run": it.key[1], "mode": "m-new"})
    by_key = {it.key: it for it in items}
    assert summarise(s.state, by_key)[0].coverage == "uncovered"  # no recorded verdict failed them
    now = {it.key: {"refund_outcome": False} for it in clean}  # as if a new scorer failed them
    assert summarise(s.state, by_key, now)[0].covered_by == "refund_outcome"
    # rescored runs the real suite: today's refund_outcome on these stored turns is what the record says
    again = rescored(clean, scorers=["refund_outcome", "tool_use"], judge=None)
    assert {k: v["refund_outcome"] for k, v in again.items()} == {
        it.key: it.payload[0].verdicts["refund_outcome"].passed for it in clean}
