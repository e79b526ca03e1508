"""load_record's one reading (msgspec's parse, the cyclic GC paused) reads what json reads: a
value orjson writes otherwise than json (1e-07, a 70-bit int) still loads and keeps its digest; a
changed run is still refused; what msgspec cannot parse (NaN) is read by json or refused in one
line; and summarise/cell_counts count as before."""
from __future__ import annotations

import gc
import json

import pytest

from tests.record_helpers import record, row, run
from turngate.record.results import RecordError, load_record, save_record
from turngate.verdict.reference import cell_counts
from turngate.verdict.summary import summarise


def saved(tmp_path, *, seconds: float = 0.0, result=None):
    runs = [run("v3", "r0", 0, {"refund_outcome": True, "policy_judge": None}),
            run("v3", "r1", 0, {"refund_outcome": False, "policy_judge": True})]
    runs[0].turn.seconds = seconds
    if result is not None:
        runs[1].turn.tool_calls[0].result = result
    path = tmp_path / "v3.json"
    save_record(record("v3", runs, [row("r0"), row("r1")]), path)
    return path


@pytest.mark.parametrize("kw", [{"seconds": 1e-07}, {"result": {"big": 2**70}}, {}])
def test_loads_whatever_orjson_writes_differently(tmp_path, kw):
    path = saved(tmp_path, **kw)
    loaded = load_record(path)
    assert [r.row_id for r in loaded.runs] == ["r0", "r1"]
    assert loaded.runs[0].turn.seconds == kw.get("seconds", 0.0)
    if "result" in kw:  # an int, as json reads it (orjson would read a float)
        assert loaded.runs[1].turn.tool_calls[0].result == {"big": 2**70}
        assert type(loaded.runs[1].turn.tool_calls[0].result["big"]) is int
    assert gc.isenabled()  # paused only while it loads


@pytest.mark.parametrize("kw", [{"seconds": 1e-07}, {"result": {"big": 2**70}}, {}])
def test_a_changed_run_is_refused_on_either_path(tmp_path, kw):
    path = saved(tmp_path, **kw)
    data = json.loads(path.read_text())
    data["runs"][1]["verdicts"]["refund_outcome"]["passed"] = True  # a failure turned into a pass
    path.write_text(json.dumps(data, indent=1))
    with pytest.raises(RecordError, match="digest mismatch"):
        load_record(path)
    assert gc.isenabled()


def test_what_msgspec_cannot_parse_is_read_by_json_or_refused_in_one_line(tmp_path):
    path = saved(tmp_path)
    text = path.read_text()
    nan = text.replace('"seconds": 0.0', '"seconds": NaN', 1)  # json reads it; the digest then decides
    assert nan != text
    path.write_text(nan)
    with pytest.raises(RecordError, match="digest mismatch"):
        load_record(path)
    path.write_text(text[:len(text) // 2])
    with pytest.raises(RecordError, match=rf"^{path}:\d+: not valid JSON"):
        load_record(path)
    path.write_bytes(b'{"meta": "\xff"}')
    with pytest.raises(RecordError, match="not text"):
        load_record(path)
    assert gc.isenabled()


def test_summarise_counts_every_verdict():
    runs = [run("v3", "r0", 0, {"refund_outcome": True, "policy_judge": None}),
            run("v3", "r0", 1, {"refund_outcome": False, "policy_judge": False}),
            run("v3", "r1", 0, {"refund_outcome": True})]
    s = summarise(runs, {"r0": row("r0"), "r1": row("r1")}, {"refund_outcome": 0.5}, 2)
    assert (s.scorers["refund_outcome"].n, s.scorers["refund_outcome"].passed) == (3, 2)
    assert (s.scorers["policy_judge"].n, s.scorers["policy_judge"].na) == (1, 1)
    assert {rid: {n: [c.passed, c.failed, c.na] for n, c in per.items()} for rid, per in s.cells.items()} == \
        {"r0": {"refund_outcome": [1, 1, 0], "policy_judge": [0, 1, 1]}, "r1": {"refund_outcome": [1, 0, 0]}}
    assert {rid: [c.runs, c.failed] for rid, c in s.failed_runs.items()} == {"r0": [2, 1], "r1": [1, 0]}
    assert [(f.row_id, f.trial, f.failed_scorers) for f in s.failing] == \
        [("r0", 1, ["refund_outcome", "policy_judge"])]
    cells = cell_counts(runs)
    assert (cells["r0"]["refund_outcome"].failed_seeds, cells["r0"]["policy_judge"].na) == ([1], 1)
