"""A results record proves itself (issue 19): it stores its plan and a digest; every reader
(regrade, compare, report, show, --resume) refuses runs that do not match the plan with one line
and exit 2, recomputes the verdict instead of trusting the stored one, says `incomplete: N of M
runs`, and never imports an agent named in the file. Two --resume of one file cannot both run;
an interrupt before the first run leaves nothing, or names what it left."""
from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests import prefork
from tests.shared_gates import whole_gate
from turngate.commands import compare, regrade, regression, report, show
from turngate.gate import run as gate
from turngate.gate.recheck import headline, recompute
from turngate.record.results import (
    LEGACY_SCHEMAS,
    holding,
    load_record,
    lock_path,
    save_record,
    seal_holds,
    seal_text,
)

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def v2_text(tmp_path_factory):
    """A real v2 gate record (evals gate --version v2 on the whole dataset)."""
    return whole_gate(tmp_path_factory, "v2").path.read_text()


@pytest.fixture
def v2(tmp_path, v2_text):
    path = tmp_path / "v2.json"
    path.write_text(v2_text)
    return path


def incomplete_copy(src: Path, dest: Path, keep: int | None = None) -> Path:
    """The record as an interrupt leaves it (written the way the gate writes)."""
    rec = load_record(src)
    gate = rec.runs_for(rec.meta.version)  # interrupted in the gate stage: no confirmation reruns yet
    rec.runs = gate[:keep] if keep is not None else [r for r in gate if not failed(r)]
    rec.meta.complete, rec.meta.interrupted, rec.meta.confirm = False, True, None
    rec.summary, rec.verdict = {}, None
    save_record(rec, dest)
    return dest


def failed(run) -> bool:
    return any(v.passed is False for v in run.verdicts.values())


def readers(path: Path, tmp_path: Path) -> dict:
    return {"regrade": lambda: regrade.main([str(path), "--out", str(tmp_path / "regraded.json")]),
            "compare": lambda: compare.main([str(path), str(path), "--out", str(tmp_path / "compared.json")]),
            # without --out: each side reduced to its summary and verdict table (turngate/gate/sides.py)
            "compare-lean": lambda: compare.main([str(path), str(path)]),
            "report": lambda: report.main([str(path), "--out", str(tmp_path / "report.html")]),
            "show": lambda: show.main([str(path), "status"])}


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def _drop_failing(d):
    d["runs"] = [r for r in d["runs"] if all(v["passed"] is not False for v in r["verdicts"].values())]


def _duplicate(d):
    d["runs"].append(copy.deepcopy(d["runs"][0]))


def _add_seed(d):
    extra = copy.deepcopy(d["runs"][0])
    extra["trial"] = extra["seed"] = 7
    d["runs"].append(extra)


def _drop_row(d):  # a run whose row is not in the file (was a KeyError traceback in regrade)
    d["rows"] = [r for r in d["rows"] if r["id"] != d["runs"][0]["row_id"]]


def _legacy_drop_row(d):
    d["meta"]["schema"] = LEGACY_SCHEMAS[0]
    del d["plan"], d["digest"]
    _drop_row(d)


def _agent(d):
    d["meta"]["agent"] = "pwn:target"


def _flip_verdict(d):
    run = next(r for r in d["runs"] if any(v["passed"] is False for v in r["verdicts"].values()))
    for v in run["verdicts"].values():
        v["passed"] = True if v["passed"] is False else v["passed"]


def _settings(d):
    d["meta"]["judge_timeout"] = 5.0


def _row_content(d):
    d["rows"][0]["inputs"]["message"] = "Refund everything."


def _no_digest(d):
    del d["digest"]


def _drop_one(d):
    d["runs"].pop(0)


def _turn_edited(d):  # what a reader of verdicts does not read: still covered by the digest
    d["runs"][0]["turn"]["answer"] = "Refunded in full."


TAMPERED = {
    "failing runs deleted": (_drop_failing, "planned run(s) are missing"),
    "a run deleted": (_drop_one, "planned run(s) are missing"),
    "a run duplicated": (_duplicate, "stored more than once"),
    "a run added on another seed": (_add_seed, "the record's plan has no place for"),
    "a run's row deleted": (_drop_row, "in the record's plan but not in its rows"),
    "a run's row deleted (results@1)": (_legacy_drop_row, "the record's plan has no place for"),
    "meta.agent edited": (_agent, "meta.agent is 'pwn:target', the record's plan says 'app.refund_agent:target'"),
    "a failed run made to pass": (_flip_verdict, "digest mismatch"),
    "a setting edited": (_settings, "meta.judge_timeout is 5.0, the record's plan says 60.0"),
    "a row edited": (_row_content, "its content changed"),
    "the digest removed": (_no_digest, "no digest"),
    "a Turn's answer edited": (_turn_edited, "digest mismatch"),
}


@pytest.mark.parametrize("command", ["regrade", "compare", "compare-lean", "report", "show"])
@pytest.mark.parametrize("tamper", list(TAMPERED))
def test_a_record_whose_runs_do_not_match_its_plan_is_refused_by_every_reader(tmp_path, v2, capsys, command, tamper):
    edit, message = TAMPERED[tamper]
    data = json.loads(v2.read_text())
    edit(data)
    v2.write_text(json.dumps(data))
    capsys.readouterr()
    assert readers(v2, tmp_path)[command]() == 2
    line = one_error_line(capsys)
    assert str(v2) in line and message in line, line
    assert "Traceback" not in line
    assert not any((tmp_path / n).exists() for n in ("regraded.json", "compared.json", "report.html"))


RESEALED = [t for t, (_, message) in TAMPERED.items() if message != "digest mismatch"]


@pytest.mark.parametrize("command", ["regrade", "compare", "compare-lean", "report", "show"])
@pytest.mark.parametrize("tamper", RESEALED)
def test_a_resealed_record_whose_runs_do_not_match_its_plan_is_refused_with_the_same_line(
        tmp_path, v2, capsys, command, tamper):
    """The same edits with the file sealed again (its bytes as save_record would write them, the
    digest left stale): read the sealed way, without the digest, every check but the digest
    refuses them with the same line."""
    edit, message = TAMPERED[tamper]
    data = json.loads(v2.read_text())
    edit(data)
    v2.write_text(seal_text(json.dumps(data, indent=1)))
    assert seal_holds(v2.read_bytes())
    capsys.readouterr()
    assert readers(v2, tmp_path)[command]() == 2
    line = one_error_line(capsys)
    assert str(v2) in line and message in line, line


def test_a_saved_record_is_sealed_and_any_changed_byte_breaks_the_seal(v2):
    raw = v2.read_bytes()
    assert seal_holds(raw) and raw.rstrip().endswith(b"}")
    middle = len(raw) // 2
    changed = [raw[:middle] + bytes([raw[middle] ^ 1]) + raw[middle + 1:],  # one bit in the middle
               raw[:-120] + raw[-119:],  # one byte of the digest's line gone
               raw + b"\n",  # an editor's final newline
               json.dumps(json.loads(raw), indent=2).encode()]  # re-indented: the seal kept, the bytes not
    assert not any(seal_holds(c) for c in changed)


def test_a_reindented_record_reads_as_the_sealed_one(tmp_path, v2, monkeypatch):
    """Without a seal that holds, the digest decides: a re-indented file reads the same, in full
    and lean; the sealed one is read without recomputing its digest."""
    from turngate.gate import sides
    from turngate.record import results

    again = tmp_path / "reindented.json"
    again.write_text(json.dumps(json.loads(v2.read_text()), indent=2))
    digests = []
    real = results.digest_matches
    monkeypatch.setattr(results, "digest_matches", lambda data, digest: digests.append(1) or real(data, digest))
    assert load_record(v2) == load_record(again) and len(digests) == 1
    lean = [sides.read_side(p, lean=True) for p in (v2, again)]
    assert len(digests) == 2
    a, b = lean
    assert a.record == b.record and a.summary == b.summary and a.table == b.table
    assert a.summary.runs == len(load_record(v2).runs_for("v2"))


def test_a_sealed_file_is_validated_as_any_other(tmp_path, v2):
    """A sealed file's values go through the same models as any other's: a trial written as "0"
    reads as pydantic's lax mode reads it, by load_record and by compare's reading alike."""
    from turngate.gate import sides
    from turngate.record.results import digest_of

    data = json.loads(v2.read_text())
    data["runs"][0]["trial"] = str(data["runs"][0]["trial"])
    data["digest"] = digest_of(data)
    odd = tmp_path / "odd.json"
    odd.write_text(seal_text(json.dumps(data, indent=1)))
    assert seal_holds(odd.read_bytes())
    assert load_record(odd).runs == load_record(v2).runs
    a, b = sides.read_side(v2, lean=True), sides.read_side(odd, lean=True)
    assert a.summary == b.summary and a.table == b.table


@pytest.mark.parametrize("tamper", ["a run deleted", "a run added on another seed", "a run duplicated",
                                    "meta.agent edited", "a setting edited", "a row edited"])
def test_resume_refuses_a_record_that_does_not_match_its_plan(tmp_path, v2, capsys, tamper):
    path = incomplete_copy(v2, tmp_path / "cut.json", keep=20)
    data = json.loads(path.read_text())
    TAMPERED[tamper][0](data)
    path.write_text(json.dumps(data))
    capsys.readouterr()
    assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == 2
    line = one_error_line(capsys)
    assert str(path) in line
    assert json.loads(path.read_text()) == data and not lock_path(path).exists()  # untouched, no lock left


def test_an_edited_stored_verdict_is_never_shown(tmp_path, v2, capsys):
    truth = recompute(load_record(v2))
    assert truth.exit_code == 1 and headline(truth).startswith("FAIL")  # v2 fails the gate today
    data = json.loads(v2.read_text())
    data["verdict"] = {"exit_code": 0, "line": "PASS: edited by hand", "reasons": []}
    for s in data["summary"]["v2"]["scorers"].values():
        s["mean"], s["ok"] = 1.0, True
    v2.write_text(json.dumps(data))
    assert regrade.main([str(v2), "--out", str(tmp_path / "regraded.json")]) == truth.exit_code
    assert report.main([str(v2), "--out", str(tmp_path / "report.html")]) == 0
    html = (tmp_path / "report.html").read_text()
    assert "PASS: edited by hand" not in html and 'class="verdict fail"' in html
    assert headline(truth) in html
    capsys.readouterr()
    assert show.main([str(v2), "--verdict"]) == 0
    out = capsys.readouterr().out
    assert "PASS: edited by hand" not in out and headline(truth) in out
    assert all(r in out for r in truth.reasons)


def test_an_incomplete_record_says_so_wherever_it_is_shown(tmp_path, v2, capsys):
    path = incomplete_copy(v2, tmp_path / "cut.json")
    rec = load_record(path)
    line = f"incomplete: {len(rec.runs)} of {len(rec.rows)} runs"
    assert len(rec.runs) < len(rec.rows)
    capsys.readouterr()
    assert regrade.main([str(path), "--out", str(tmp_path / "regraded.json")]) == 2
    assert line in capsys.readouterr().out
    assert report.main([str(path), "--out", str(tmp_path / "report.html")]) == 0
    assert line in capsys.readouterr().out
    html = (tmp_path / "report.html").read_text()
    assert 'class="verdict unjudged"' in html and line in html
    assert show.main([str(path), "status"]) == 0
    assert line in capsys.readouterr().out.splitlines()[0]
    assert compare.main([str(path), str(v2)]) == 2
    err = one_error_line(capsys)
    assert line in err and f"--resume {path}" in err
    assert regression.json_summary(path, 2).incomplete == line


PWN = """import pathlib
pathlib.Path(__file__).with_name("PWNED").write_text("this module ran")


async def target(inputs, seed):
    raise RuntimeError("never called")
"""


def test_an_agent_named_in_a_results_file_is_never_imported(tmp_path, v2, monkeypatch, capsys):
    (tmp_path / "pwn.py").write_text(PWN)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))  # an `import pwn` anywhere would find it and run it
    rec = load_record(incomplete_copy(v2, tmp_path / "cut.json"))
    rec.meta.agent = "pwn:target"
    rec.replan()  # consistent, as someone else's tool could write it: only "never import" stops it
    sealed = save_record(rec, tmp_path / "shared-results.json")
    edited = tmp_path / "edited.json"  # and a hand edit of a complete record
    data = json.loads(v2.read_text())
    data["meta"]["agent"] = "pwn:target"
    edited.write_text(json.dumps(data))
    for path in (sealed, edited):
        capsys.readouterr()
        assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == 2
        line = one_error_line(capsys)
        if path == sealed:
            assert "made by agent 'pwn:target', this command uses 'app.refund_agent:target'" in line
        for command, main in readers(path, tmp_path).items():
            # the hand edit is refused; the consistent incomplete record is shown (regrade: no verdict, exit 2;
            # compare: refuses part of the runs)
            want = 2 if path == edited else {"regrade": 2, "compare": 2, "compare-lean": 2, "report": 0, "show": 0}[command]
            assert main() == want, command
            for name in ("regraded.json", "compared.json", "report.html"):
                (tmp_path / name).unlink(missing_ok=True)
    capsys.readouterr()
    assert show.main([str(sealed), "status"]) == 0
    assert "agent pwn:target (as the file names it; not loaded)" in capsys.readouterr().out
    # the command as a user types it, in the directory holding pwn.py
    res = subprocess.run([prefork.python(), str(REPO / "evals" / "regression.py"), "--resume", str(sealed),
                          "--no-upload"], cwd=tmp_path, capture_output=True, text=True, timeout=120)
    assert res.returncode == 2 and "made by agent 'pwn:target'" in res.stderr and "Traceback" not in res.stderr
    assert not (tmp_path / "PWNED").exists() and "pwn" not in sys.modules


def test_resume_refuses_when_the_version_file_changed(tmp_path, capsys):
    version = tmp_path / "v2x.toml"
    version.write_text((REPO / "app" / "refund_agent" / "versions" / "v2.toml").read_text())
    out = tmp_path / "out"
    assert regression.main(["--version", str(version), "--only", "status", "refund_full_a1001", "--no-upload",
                            "--quiet", "--out", str(out)]) in (0, 1)
    (full,) = out.glob("*.json")
    assert load_record(full).plan.version_files["v2x"]["path"] == str(version)
    path = incomplete_copy(full, tmp_path / "cut.json", keep=1)
    before = version.read_text()
    version.write_text(before + "\n# an edit: another agent now\n")
    capsys.readouterr()
    assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == 2
    line = one_error_line(capsys)
    assert f"v2x's version file {version} changed since the run" in line and "start a new run" in line
    assert len(load_record(path).runs) == 1  # nothing ran, nothing mixed
    version.write_text(before)  # the same file again: resumable
    assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) in (0, 1)
    done = load_record(path)
    assert done.meta.complete and done.incomplete() is None and len(done.runs) == 2


def test_resume_takes_the_agent_from_the_command_line_and_refuses_another(tmp_path, v2, capsys):
    path = incomplete_copy(v2, tmp_path / "cut.json", keep=10)
    capsys.readouterr()
    assert regression.main(["--resume", str(path), "--agent", "examples.faq_bot:target", "--no-upload"]) == 2
    line = one_error_line(capsys)
    assert "made by agent 'app.refund_agent:target', this command uses 'examples.faq_bot:target'" in line


def test_a_second_resume_of_one_file_is_refused_while_the_first_runs(tmp_path, v2, capsys):
    path = incomplete_copy(v2, tmp_path / "cut.json")
    with holding(path, "the first --resume"):  # as a --resume in progress holds it
        assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == 2
        line = one_error_line(capsys)
        assert f"in use by pid {os.getpid()} " in line and "(the first --resume)" in line
        assert str(lock_path(path)) in line
    assert not lock_path(path).exists()
    # another process holding it: an OS lock, not a pid file someone polls
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys\nfrom turngate.record.results import holding\n"
         "with holding(sys.argv[1], 'held by a test'):\n    print('locked', flush=True)\n    sys.stdin.read()\n",
         str(path)], cwd=REPO, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"
        assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == 2
        assert f"in use by pid {holder.pid} " in one_error_line(capsys)
    finally:
        holder.stdin.close()
        assert holder.wait(timeout=60) == 0
    lock_path(path).write_text("pid 1 on nowhere since yesterday (killed -9)")  # a stale lock file locks nothing
    assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) in (0, 1)
    assert load_record(path).incomplete() is None and not lock_path(path).exists()


def _gate(out):
    return ["--only", "status", "refund_full_a1001", "--no-upload", "--quiet", "--out", str(out)]


def test_an_interrupt_before_the_first_run_leaves_no_file(tmp_path, monkeypatch, capsys):
    async def ctrl_c(*a, **k):  # Ctrl-C after the results file exists, before the run's own handler is in place
        raise KeyboardInterrupt

    monkeypatch.setattr(gate, "execute_async", ctrl_c)
    assert regression.main(_gate(tmp_path)) == 2
    err = capsys.readouterr().err
    assert err.startswith("interrupted before any run finished: removed ") and err.count("\n") == 1
    assert list(tmp_path.glob("*.json")) == [] and list(tmp_path.glob(".tmp-*")) == []


def test_an_interrupt_after_some_runs_names_the_file_it_kept(tmp_path, monkeypatch, capsys):
    real = gate.execute_async

    async def one_run_then_ctrl_c(record, pairs, settings, path, agents, evaluators, **kw):
        await real(record, pairs[:1], settings, path, agents, evaluators)
        save_record(record, path)
        raise KeyboardInterrupt

    monkeypatch.setattr(gate, "execute_async", one_run_then_ctrl_c)
    assert regression.main(_gate(tmp_path)) == 2
    (path,) = tmp_path.glob("*.json")
    assert capsys.readouterr().err == f"interrupted: 1 run(s) kept in {path} (complete it with --resume {path})\n"
    monkeypatch.setattr(gate, "execute_async", real)
    assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) in (0, 1)
    assert load_record(path).incomplete() is None


@pytest.mark.parametrize("schema", [LEGACY_SCHEMAS[0], "northwind-evals/results@1"])  # and its former name
def test_a_results_1_record_loads_with_its_runs_checked_against_rows_and_seeds(tmp_path, v2, capsys, schema):
    data = json.loads(v2.read_text())
    data["meta"]["schema"] = schema
    del data["plan"], data["digest"]
    v2.write_text(json.dumps(data))
    rec = load_record(v2)
    assert rec.plan is None and rec.incomplete() is None
    assert show.main([str(v2), "status"]) == 0
    assert regrade.main([str(v2), "--out", str(tmp_path / "regraded.json")]) in (0, 1)
    again = load_record(tmp_path / "regraded.json")  # a regrade writes a sealed record
    assert again.plan is not None and again.digest is not None


def test_a_redacted_record_and_a_compare_record_read_back(tmp_path, capsys):
    out = tmp_path / "out"
    assert regression.main(["--only", "pii_friend_email", "status", "--redact-results", "--baseline", "v2",
                            "--no-upload", "--quiet", "--out", str(out)]) in (0, 1)
    (path,) = out.glob("*.json")
    rec = load_record(path)
    assert rec.meta.redacted and rec.progress() == (4, 4) and set(rec.plan.seeds) == {"v3", "v2"}
    assert show.main([str(path), "status", "--version", "v2"]) == 0
    cmp = tmp_path / "cmp.json"
    assert compare.main([str(path), str(path), "--out", str(cmp)]) == 0
    combined = load_record(cmp)
    assert combined.meta.compared_files["fail_on_regression"] == "false" and combined.incomplete() is None
    assert report.main([str(cmp), "--out", str(tmp_path / "cmp.html")]) == 0
    assert show.main([str(cmp), "--verdict"]) == 0
