"""How a command ends is the truth: a reader of its output that leaves (`| head -1`) never
changes its exit code nor leaves its record unfinished; SIGTERM and SIGINT at any moment, start-up
and shutdown included, are exit 2 and one line, leaving no file or a resumable one, never a
0-byte file or a stray temporary; every output is written whole or not at all, its path in the
error (turngate/core/atomic_write.py)."""
from __future__ import annotations

import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import prefork
from tests.serve_helpers import REPO
from turngate.commands import calibrate, regression, report
from turngate.core import atomic_write
from turngate.core.atomic_write import WriteError, signals_held, write_atomic
from turngate.record.results import load_record

GATE = [str(REPO / "evals" / "regression.py"), "--version", "v3", "--no-upload", "--quiet"]  # after an interpreter
HANGS = "status"  # a row of the first few whose run never finishes: the gate cannot end before the signal


@pytest.fixture
def record_file(tmp_path, small_gate_record):
    path = tmp_path / "in" / "v3-run.json"
    path.parent.mkdir()
    path.write_text(small_gate_record)
    return path


def _leftovers(folder: Path) -> list[str]:
    """What a cut command must never leave: a 0-byte file or a writer's temporary."""
    return [p.name for p in folder.rglob("*") if p.is_file() and (p.name.startswith(".tmp-") or not p.stat().st_size)]


def _resumable_or_nothing(out: Path) -> None:
    for path in out.glob("*.json"):
        record = load_record(path)  # whole, sealed, its runs matching its plan
        assert not record.meta.complete or record.verdict is not None, path


def _wait_for(ready, proc, what: str) -> None:
    """Until the child makes `ready` true (a file appears); never a fixed sleep. The limit only
    stops a broken run from hanging the suite."""
    deadline = time.monotonic() + 120
    while not ready():
        assert proc.poll() is None, f"the command exited ({proc.returncode}) before {what}: {proc.stderr.read()[-1500:]}"
        assert time.monotonic() < deadline, f"no {what}"
        time.sleep(0.02)


# --- a reader that leaves ------------------------------------------------------------------

@pytest.mark.parametrize("streams", ["stdout", "stdout and stderr"])
def test_a_closed_output_keeps_the_verdicts_exit_code_and_a_complete_record(tmp_path, streams):
    """`| head -0`: the reader is gone before the first line, so every print meets a closed pipe
    (rich's own handling made that SystemExit(1), 'regressed', the record left without its verdict)."""
    read, write = os.pipe()
    os.close(read)
    out = tmp_path / "out"
    try:
        proc = subprocess.run([prefork.python(), *GATE, "--limit", "3", "--out", str(out), "--report", str(tmp_path / "r.html")],
                              stdout=write, stderr=write if streams != "stdout" else subprocess.PIPE, timeout=300)
    finally:
        os.close(write)
    assert proc.returncode == 0, proc.stderr
    (path,) = out.glob("v3-*.json")
    record = load_record(path)
    assert record.meta.complete and record.verdict is not None and record.verdict.exit_code == 0
    assert (tmp_path / "r.html").stat().st_size > 0 and not _leftovers(tmp_path)


def test_head_1_on_a_passing_gate_is_exit_0(tmp_path):
    proc = subprocess.Popen([prefork.python(), *GATE, "--limit", "3", "--out", str(tmp_path)], stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL)
    first = proc.stdout.readline()
    proc.stdout.close()  # as head does after its line
    assert proc.wait(timeout=300) == 0 and first
    (path,) = tmp_path.glob("v3-*.json")
    assert load_record(path).verdict.exit_code == 0


# --- SIGTERM and SIGINT ----------------------------------------------------------------------

def _start_up_moments() -> list[int]:
    return [1, 5, 20, 60]  # the n-th module import reported after turngate.cli's: early to late start-up


@pytest.mark.parametrize("nth", _start_up_moments())
def test_sigterm_during_start_up_is_one_line_and_exit_2(tmp_path, nth):
    # -X importtime reports each import as it completes: the readiness signal for a moment of start-up
    proc = subprocess.Popen([sys.executable, "-X", "importtime", *GATE, "--out", str(tmp_path / "out")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, armed = [], None
    for line in proc.stderr:
        seen.append(line)
        if armed is not None:
            armed += 1
            if armed >= nth:
                break
        elif line.rstrip().endswith("| turngate.cli"):
            armed = 0
    proc.send_signal(signal.SIGTERM)
    out, err = proc.communicate(timeout=120)
    said = [line for line in "".join(seen + [err]).splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2, (out[-500:], said)
    assert len(said) == 1 and said[0].startswith("interrupted"), said
    assert not _leftovers(tmp_path)
    _resumable_or_nothing(tmp_path / "out")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("moment", ["results file created", "runs on disk"])
def test_a_signal_during_the_run_leaves_no_file_or_a_resumable_one(tmp_path, sig, moment):
    out = tmp_path / "out"
    proc = subprocess.Popen([prefork.python(), *GATE, "--limit", "4", "--parallelism", "2", "--fault", f"run-hangs:{HANGS}",
                             "--out", str(out), "--report", str(tmp_path / "r.html")],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def ready() -> bool:
        files = list(out.glob("v3-*.json"))
        if moment == "results file created":
            return bool(files)
        try:
            return bool(files) and bool(json.loads(files[0].read_text())["runs"])
        except (OSError, ValueError):
            return False

    _wait_for(ready, proc, moment)
    proc.send_signal(sig)
    stdout, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (stdout[-500:], err[-1500:])
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("interrupted"), lines
    assert not _leftovers(tmp_path) and not (tmp_path / "r.html").exists()
    _resumable_or_nothing(out)
    if moment == "runs on disk":
        (path,) = out.glob("v3-*.json")
        assert lines[0] == f"interrupted: {len(load_record(path).runs)} run(s) kept in {path} " \
                           f"(complete it with --resume {path})"


def test_sigterm_while_the_process_shuts_down_is_exit_2_not_143(tmp_path):
    """After the command: Python's own shutdown puts the OS default back (SIGTERM: killed, 143).
    turngate.cli.run ends the process itself, its handlers in place through the exit handlers."""
    script = tmp_path / "launcher.py"
    script.write_text("import atexit, sys\nfrom turngate.cli import run\n"
                      "atexit.register(lambda: (print('shutting down', flush=True), sys.stdin.readline()))\n"
                      "run(['show', '--help'])\n")
    proc = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, cwd=REPO)
    for line in proc.stdout:
        if line.strip() == "shutting down":
            break
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 2 and err == "interrupted\n", err


def test_signals_held_delivers_them_after_the_block():
    got = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: got.append(signum))
    try:
        with signals_held():
            os.kill(os.getpid(), signal.SIGTERM)
            assert got == []  # not inside
        assert got == [signal.SIGTERM]  # once, at the end
        os.kill(os.getpid(), signal.SIGTERM)
        assert got == [signal.SIGTERM] * 2  # the handler is back
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_a_sigterm_mid_write_finishes_the_file_first(tmp_path, monkeypatch):
    real, got = atomic_write._write_and_sync, []

    def write_then_term(fd, data):
        os.kill(os.getpid(), signal.SIGTERM)
        real(fd, data)

    monkeypatch.setattr(atomic_write, "_write_and_sync", write_then_term)
    previous = signal.signal(signal.SIGTERM, lambda s, f: got.append((tmp_path / "a.html").read_text()))
    try:
        write_atomic(tmp_path / "a.html", "<html>whole</html>")
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert got == ["<html>whole</html>"] and [p.name for p in tmp_path.iterdir()] == ["a.html"]


# --- outputs written whole or not at all -----------------------------------------------------

def disk_full(monkeypatch, suffix: str | None = None):
    """The writer's write half done, then ENOSPC, as a disk filling up (for files ending in suffix)."""
    real = atomic_write._write_and_sync

    def write(fd, data):
        if suffix is not None and not os.readlink(f"/proc/self/fd/{fd}").endswith(suffix):
            return real(fd, data)
        os.write(fd, data[: len(data) // 2])
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic_write, "_write_and_sync", write)


def test_report_on_a_full_disk_names_the_path_and_leaves_no_partial_file(tmp_path, monkeypatch, capsys, record_file):
    out = tmp_path / "o" / "r.html"
    disk_full(monkeypatch)
    assert report.main([str(record_file), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"error: cannot write the report {out}: No space left on device; nothing was written\n"
    assert list(out.parent.iterdir()) == []
    monkeypatch.undo()  # room again: the next run is not refused over a half file
    assert report.main([str(record_file), "--out", str(out)]) == 0 and "</html>" in out.read_text()


@pytest.mark.parametrize("flag, suffix", [("--report", ".html"), ("--junit", ".xml"), ("--markdown", ".md")])
def test_gate_outputs_on_a_full_disk_are_exit_2_with_the_path(tmp_path, monkeypatch, capsys, flag, suffix):
    target = tmp_path / f"ci{suffix}"
    disk_full(monkeypatch, suffix)
    code = regression.main(["--version", "v3", "--limit", "2", "--no-upload", "--quiet", "--out", str(tmp_path / "out"),
                            flag, str(target)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and err[0].startswith("error: cannot write the ")
    assert f" {target}: No space left on device; nothing was written" in err[0]
    assert not target.exists() and not _leftovers(tmp_path)
    (path,) = (tmp_path / "out").glob("*.json")
    assert load_record(path).verdict is not None  # the verdict itself was saved before


def test_a_file_that_appeared_meanwhile_is_never_replaced_without_force(tmp_path):
    path = tmp_path / "r.html"
    path.write_text("someone else's")
    with pytest.raises(WriteError, match="already exists"):
        write_atomic(path, "ours", what="the report", exclusive=True)
    assert path.read_text() == "someone else's" and [p.name for p in tmp_path.iterdir()] == ["r.html"]
    write_atomic(path, "ours")  # --force
    assert path.read_text() == "ours"


def test_modes_private_files_stay_0600_and_reports_get_the_usual_mode(tmp_path):
    mask = os.umask(0o022)
    try:
        assert stat.S_IMODE(write_atomic(tmp_path / "a.json", "{}", private=True).stat().st_mode) == 0o600
        assert stat.S_IMODE(write_atomic(tmp_path / "r.html", "x").stat().st_mode) == 0o644
    finally:
        os.umask(mask)


def test_calibrate_writes_both_files_or_neither(tmp_path, monkeypatch):
    bars, ref = tmp_path / "bars.toml", tmp_path / "reference.json"
    disk_full(monkeypatch, ".json")
    with pytest.raises(WriteError, match=f"cannot write the reference {ref}: No space left on device"):
        calibrate.write_new({bars: "x = 1\n", ref: "{}"}, force=False)
    assert list(tmp_path.iterdir()) == []  # the bars written first are removed again
