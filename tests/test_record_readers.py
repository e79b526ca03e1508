"""One reader (issue 32): every command reads a results file through load_record, so any single
edit of a sealed record (a value changed, deleted, retyped or added anywhere in meta, plan, rows
or runs, its digest and seal recomputed so the integrity checks pass) is refused by every reader
with the same line, or accepted by every reader with the same verdict, recomputed as
turngate/gate/recheck.py does. The readers: load_record (show, report, regrade, --resume),
compare's reading of a side (lean, here and in a forked process as for big files, and with its
runs), merge's reading of a shard; and the commands themselves, end to end."""
from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from turngate.commands import compare, merge, regrade, regression, report, show
from turngate.core.errors import ConfigError, RecordError
from turngate.gate import sides
from turngate.gate.recheck import headline, recompute
from turngate.record.results import digest_of, load_record, seal_holds, seal_text

PARTS = ("meta", "plan", "rows", "runs")


@pytest.fixture(scope="module")
def shard_text(tmp_path_factory) -> str:
    """A small complete gate record with a baseline, run as shard 1/1 (so merge reads it too):
    real runs of this repository's agent, judged with its bars and reference, confirmation on."""
    out = tmp_path_factory.mktemp("shard")
    assert regression.main(["--only", "status", "refund_full_a1001", "--baseline", "v2", "--shard", "1/1",
                            "--no-upload", "--quiet", "--out", str(out)]) == 0
    (path,) = out.glob("*.json")
    return path.read_text()


@pytest.fixture(scope="module")
def base(shard_text) -> dict:
    return json.loads(shard_text)


def nodes(data: dict) -> list[tuple]:
    """Every value's path inside meta, plan, rows and runs, containers included."""
    out = []

    def walk(value, path):
        out.append(path)
        items = value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
        for k, v in items:
            walk(v, (*path, k))

    for part in PARTS:
        walk(data[part], (part,))
    return out


TYPED = {type(None): st.none(), bool: st.booleans(), int: st.integers(-3, 2**70),
         float: st.floats(allow_nan=False, allow_infinity=False),
         str: st.sampled_from(["", "x", "v2", "v3", "confirm", "gate", "status", "0", "true", "offline"]) | st.text(max_size=8),
         list: st.just([]) | st.lists(st.integers(0, 3), min_size=1, max_size=2),
         dict: st.just({}) | st.dictionaries(st.sampled_from(["name", "passed", "explanation", "x"]), st.booleans(),
                                             min_size=1, max_size=2)}
ANY_JSON = st.one_of(*TYPED.values())


def other_type(value) -> st.SearchStrategy:
    """A JSON value of any type but value's."""
    return st.one_of(*(s for t, s in TYPED.items() if t is not type(value)))


@st.composite
def edits(draw, data: dict):
    """(path, kind, value): one edit of one value of the record."""
    path = draw(st.sampled_from(nodes(data)))
    at = data
    for k in path:
        at = at[k]
    choices = ["retype", "change"] + ["delete"] + (["add"] if isinstance(at, dict | list) else [])
    kind = draw(st.sampled_from(choices))
    if kind == "delete":
        return path, kind, None
    if kind == "add":
        return path, kind, draw(ANY_JSON)
    if kind == "retype":
        return path, kind, draw(other_type(at))
    # the same type, another value
    if isinstance(at, bool):
        value = not at
    elif isinstance(at, int):
        value = at + draw(st.sampled_from([-1, 1, 2, 1000, 2**64]))
    elif isinstance(at, float):
        value = draw(st.floats(allow_nan=False, allow_infinity=False).filter(lambda v: v != at))
    elif isinstance(at, str):
        value = draw(st.sampled_from(["", "v2", "v3", "confirm", at + "x", at.upper(), at[:-1]]).filter(lambda v: v != at))
    elif isinstance(at, list):
        value = at[::-1] if len(at) > 1 else at * 2  # reordered, or one element twice
    elif isinstance(at, dict):
        value = dict(list(at.items())[:-1]) if at else {"x": 1}
    else:  # None
        value = draw(other_type(None))
    return path, kind, value


def edited(data: dict, edit) -> dict:
    data = copy.deepcopy(data)
    path, kind, value = edit
    parent = data
    for k in path[:-1]:
        parent = parent[k]
    at = parent[path[-1]]
    if kind == "delete":
        del parent[path[-1]]
    elif kind == "add":
        if isinstance(at, dict):
            at["extra" if "extra" not in at else "extra2"] = value
        else:
            at.append(copy.deepcopy(at[0]) if at else value)
    else:
        parent[path[-1]] = value
    if isinstance(data.get("runs", []), list):  # the integrity checks pass: only the models and the plan can refuse
        data["digest"] = digest_of(data)
    return data


def write(data: dict, directory: Path) -> tuple[Path, Path]:
    """The record sealed (as save_record writes it), and re-formatted without a seal (the digest decides)."""
    sealed, plain = directory / "sealed.json", directory / "plain.json"
    sealed.write_text(seal_text(json.dumps(data, indent=1, ensure_ascii=False)))
    plain.write_text(json.dumps(data))  # on one line: json's C encoder (an indent takes its pure-Python one)
    assert seal_holds(sealed.read_bytes()) and not seal_holds(plain.read_bytes())
    return sealed, plain


def _judged(record, path: Path) -> tuple:
    """A record as every reader judges it: its verdict recomputed, or `incomplete: N of M runs`."""
    if line := record.incomplete():
        return ("incomplete", line)
    verdict = recompute(record, path)
    return ("verdict", verdict.model_dump(), {v: s.model_dump() for v, s in record.summary.items()})


def _refused(exc: Exception, path: Path) -> tuple:
    line = str(exc).replace(str(path), "PATH")
    if isinstance(exc, ConfigError) and "incomplete: " in line:  # compare and merge refuse part of the runs
        return ("incomplete", "incomplete: " + line.split("incomplete: ", 1)[1].split(";")[0])
    return ("refused", line)


def _counts(summary: dict) -> dict:
    """What a summary counts from the runs (not what the verdict adds to it: ok, accepted, p...)."""
    return {"runs": summary["runs"], "rows": summary["rows"], "agent_errors": summary["agent_errors"],
            "cells": summary["cells"], "failed_runs": summary["failed_runs"],
            "scorers": {n: {k: s[k] for k in ("mean", "low", "high", "n", "passed", "na")}
                        for n, s in summary["scorers"].items()}}


def _lean(path: Path, forked: bool = False) -> tuple:
    side = sides._in_processes([str(path)])[0] if forked else sides.read_side(path, lean=True)
    return ("lean", _counts(side.summary.model_dump()), side.table)


READERS = {
    "load_record": lambda p: _judged(load_record(p), p),
    "compare (with its runs)": lambda p: _judged(sides.read_side(p, lean=False).record, p),
    "merge": lambda p: _judged(merge.load_shards([str(p)])[0][1], p),
}


def outcomes(path: Path) -> dict[str, tuple]:
    out = {}
    for name, read in READERS.items():
        try:
            out[name] = read(path)
        except (RecordError, ConfigError) as exc:
            out[name] = _refused(exc, path)
    return out


def lean_outcome(path: Path, truth: tuple, forked: bool = False) -> tuple:
    """compare's lean reading (here, or in a process of its own as for big files): refused as the
    others are, or its summary the recomputed one's."""
    try:
        got = _lean(path, forked)
    except (RecordError, ConfigError) as exc:
        return _refused(exc, path)
    if truth[0] != "verdict":
        return got
    version = load_record(path).meta.version
    return truth if got[1] == _counts(truth[2][version]) else got


def _shard_edited(data: dict, new: dict) -> bool:
    # merge's own rule: it takes only shard K/N of one plan (meta.shard, which no other reader reads)
    meta = new.get("meta")
    # as JSON, not ==: a retyped value (1 -> true) is an edit though Python calls them equal
    return isinstance(meta, dict) and json.dumps(meta.get("shard")) != json.dumps(data["meta"]["shard"])


def check_one_edit(data: dict, edit) -> tuple:
    with tempfile.TemporaryDirectory() as tmp:
        new = edited(data, edit)
        sealed, plain = write(new, Path(tmp))
        results = {}
        for label, path in (("sealed", sealed), ("re-formatted", plain)):
            for name, outcome in outcomes(path).items():
                if name == "merge" and _shard_edited(data, new):
                    continue
                results[f"{name}, {label}"] = outcome
        truth = results["load_record, sealed"]
        for label, path in (("sealed", sealed), ("re-formatted", plain)):
            results[f"compare (lean), {label}"] = lean_outcome(path, truth)
        results["compare (lean, forked), sealed"] = lean_outcome(sealed, truth, forked=True)
        assert all(o == truth for o in results.values()), \
            f"readers disagree on {edit}:\n" + "\n".join(f"  {k}: {str(v)[:300]}" for k, v in results.items())
        return truth


# -- the property --------------------------------------------------------------------------------

FRESH = "TURNGATE_READERS_PROPERTY"  # set in the fresh process that runs the property


def test_the_property_holds_in_a_fresh_process():
    """The property below, run in an interpreter of its own: late in the whole suite's one
    process (after ~1,470 other tests) it once grew that process past 24 GB, which it never does
    on its own or after either half of the tests before it (noted as an open finding); its 300
    edits and every reader are the same either way."""
    import os
    import subprocess

    if os.environ.get(FRESH):
        pytest.skip("this is the fresh process")
    test = f"{__file__}::test_any_single_edit_is_refused_by_every_reader_or_judged_alike_by_all"
    from tests import prefork  # an interpreter of its own, the agent's third-party stack preloaded

    done = subprocess.run([prefork.python(), "-m", "pytest", "-q", "-p", "no:cacheprovider", test],
                          env={**os.environ, FRESH: "1"}, capture_output=True, text=True)
    assert done.returncode == 0 and "1 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]


@pytest.mark.skipif(not __import__("os").environ.get(FRESH), reason="run in a fresh process by the test above")
@settings(max_examples=300, deadline=None, derandomize=True,  # the same edits in CI as here
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_any_single_edit_is_refused_by_every_reader_or_judged_alike_by_all(base, data):
    truth = check_one_edit(base, data.draw(edits(base)))
    event(truth[0] if truth[0] != "refused" else "refused: " + truth[1].split(":")[1].split("(")[0].strip()[:40])


def test_the_record_itself_is_judged_alike_by_every_reader(base):
    truth = check_one_edit(base, (("meta", "version_description"), "change", base["meta"]["version_description"] + "x"))
    assert truth[0] == "verdict" and truth[1]["exit_code"] == 0


# -- the edits the property must cover: some refused, some accepted (the test can fail both ways) --

def _run_path(base, *rest) -> tuple:
    return ("runs", 0, *rest)


def test_a_turn_retyped_is_refused_by_every_reader_sealed_or_not(base):
    """The outside probe's record: turn.tool_calls a string, digest and seal recomputed."""
    truth = check_one_edit(base, (_run_path(base, "turn", "tool_calls"), "retype", "get_order"))
    assert truth[0] == "refused" and "not a results record" in truth[1] and "tool_calls" in truth[1]


@pytest.mark.parametrize(("where", "kind", "value", "says"), [
    (("turn", "messages", 0, "role"), "change", "system", "role"),
    (("turn", "usage", "llm_calls"), "retype", "many", "llm_calls"),
    (("turn", "surprise"), "add", 1, "extra"),  # added to the Turn: an unknown field
    (("verdicts",), "retype", [], "verdicts"),
    (("stage",), "change", "rerun", "no place for"),
])
def test_what_a_verdict_reader_never_reads_is_refused_alike(base, where, kind, value, says):
    where = where[:-1] if kind == "add" else where
    truth = check_one_edit(base, (_run_path(base, *where), kind, value))
    assert truth[0] == "refused" and says in truth[1], truth


def test_an_accepted_edit_changes_the_verdict_for_every_reader_alike(base):
    """A baseline run's verdict turned to a failure: accepted (the digest recomputed), and every
    reader counts it."""
    i = next(k for k, r in enumerate(base["runs"]) if r["version"] == base["meta"]["baseline"])
    name = next(n for n, v in base["runs"][i]["verdicts"].items() if v["passed"])
    truth = check_one_edit(base, (("runs", i, "verdicts", name, "passed"), "change", False))
    assert truth[0] == "verdict" and truth[2][base["meta"]["baseline"]]["scorers"][name]["passed"] == 0
    assert check_one_edit(base, (("runs", i, "verdicts", name, "passed"), "change", True))[2] != truth[2]


def test_an_incomplete_record_is_incomplete_to_every_reader(base):
    truth = check_one_edit(base, (("runs", 0), "delete", None))  # marked complete, a run missing
    assert truth[0] == "refused" and "planned run(s) are missing" in truth[1]
    truth = check_one_edit(edited(base, (("meta", "complete"), "change", False)), (("runs", 0), "delete", None))
    assert truth[0] == "incomplete" and truth[1].startswith("incomplete: ")


def test_readers_that_disagree_are_caught(base, monkeypatch):
    """The check itself: a reader that lets a retyped Turn through (as compare's lean reading did)
    is a disagreement."""
    real = READERS["compare (with its runs)"]

    def lenient(path):
        data = json.loads(Path(path).read_text())
        data["runs"][0]["turn"]["tool_calls"] = []
        fixed = Path(path).with_name("lenient.json")
        fixed.write_text(json.dumps({**data, "digest": digest_of(data)}, indent=1))
        return real(fixed)

    monkeypatch.setitem(READERS, "compare (with its runs)", lenient)
    with pytest.raises(AssertionError, match="readers disagree"):
        check_one_edit(base, (_run_path(base, "turn", "tool_calls"), "retype", "get_order"))


# -- the commands, end to end ---------------------------------------------------------------------

def commands(path: Path, out: Path) -> dict[str, int]:
    return {"show": lambda: show.main([str(path), "--verdict"]),
            "report": lambda: report.main([str(path), "--out", str(out / "r.html"), "--force"]),
            "regrade": lambda: regrade.main([str(path), "--out", str(out / "g.json"), "--force"]),
            "compare": lambda: compare.main([str(path), str(path)]),
            "compare --out": lambda: compare.main([str(path), str(path), "--out", str(out / "c.json"), "--force"])}


def _command_outcomes(path: Path, out: Path, capsys) -> dict[str, tuple]:
    got = {}
    for name, main in commands(path, out).items():
        capsys.readouterr()
        code = main()
        io = capsys.readouterr()
        got[name] = (code, io.err.strip().replace(str(path), "PATH"), io.out)
    return got


@settings(max_examples=40, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_command_refuses_what_load_record_refuses_with_its_line(base, data, capsys):
    edit = data.draw(edits(base))
    with tempfile.TemporaryDirectory() as tmp:
        sealed, _ = write(edited(base, edit), Path(tmp))
        truth = outcomes(sealed)["load_record"]
        got = _command_outcomes(sealed, Path(tmp), capsys)
    if truth[0] == "refused":
        for name, (code, err, _) in got.items():
            assert (code, err) == (2, f"error: {truth[1]}"), (name, edit, err)
    elif truth[0] == "verdict":
        for name, (_, err, _) in got.items():
            assert not err.startswith("error: PATH"), (name, edit, err)  # no reading refused it
        assert got["show"][0] == 0 and headline_of(truth) in got["show"][2]


def headline_of(truth: tuple) -> str:
    return truth[1]["line"].splitlines()[0]


def test_the_probe_record_is_refused_by_every_command(base, tmp_path, capsys):
    data = edited(base, (("runs", 0, "turn", "tool_calls"), "retype", "get_order"))
    sealed, plain = write(data, tmp_path)
    for path in (sealed, plain):
        for name, (code, err, _) in _command_outcomes(path, tmp_path, capsys).items():
            assert code == 2 and err.startswith("error: PATH: not a results record") and "tool_calls" in err, (name, err)
    good, _ = write(base, tmp_path)
    got = _command_outcomes(good, tmp_path, capsys)
    assert all(code == 0 and not err for code, err, _ in got.values()), got
    assert headline(recompute(load_record(good))) in got["show"][2]
