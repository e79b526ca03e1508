"""Faults of the machine, not the agent, are exit 2 (cannot judge), never 1 (regressed): a full
disk, a read-only or vanished --out mid-run, a dependency that cannot be imported. One line
names what failed; no truncated `.tmp-*.json` stays behind; runs already on disk are kept and
named as resumable."""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys

import pytest

from tests.serve_helpers import REPO
from turngate.commands import regression
from turngate.core import atomic_write
from turngate.core import cli_support as cli
from turngate.gate import run as gate_module
from turngate.record.results import load_record

GATE = ["--version", "v3", "--limit", "6", "--no-upload", "--quiet"]


def failing_writer(monkeypatch, *, after: int, errno_: int, before_write=None):
    """The atomic writer's write (turngate/core/atomic_write.py) that writes the first `after` saves
    and then fails with errno_ half-way through, as a disk filling up does (the truncated
    temporary file exists then)."""
    real = atomic_write._write_and_sync
    calls = []

    def write(fd: int, data: bytes) -> None:
        calls.append(len(data))
        if len(calls) <= after:
            return real(fd, data)
        if before_write is not None:
            before_write()
        os.write(fd, data[: len(data) // 2])
        raise OSError(errno_, os.strerror(errno_))

    monkeypatch.setattr(atomic_write, "_write_and_sync", write)
    return calls


def gate(out, capsys, *extra) -> tuple[int, list[str]]:
    code = regression.main([*GATE, "--out", str(out), *extra])
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return code, err.strip().splitlines()


@pytest.mark.parametrize("errno_", [errno.ENOSPC, errno.EROFS, errno.EDQUOT])
def test_a_write_failing_mid_run_is_exit_2_keeps_the_saved_runs_and_says_how_to_resume(
        tmp_path, monkeypatch, capsys, errno_):
    out = tmp_path / "out"
    monkeypatch.setattr(gate_module, "CHECKPOINT_EVERY_S", 0)  # every finished run is saved: fail mid-run
    calls = failing_writer(monkeypatch, after=2, errno_=errno_)  # the empty record, the first runs
    code, lines = gate(out, capsys)
    assert code == 2 and len(calls) >= 3  # runs finishing meanwhile may try (and fail) to save too
    [results] = out.glob("*.json")
    assert lines == [f"error: cannot write the results file {results}: {os.strerror(errno_)}; the "
                     f"{len(load_record(results).runs)} run(s) saved before are kept in {results}: finish the run "
                     f"with `evals gate --resume {results}`"]
    assert [p.name for p in out.iterdir()] == [results.name]  # no .tmp-*.json left
    kept = load_record(results)  # the last complete checkpoint, intact
    assert kept.runs and not kept.meta.complete
    monkeypatch.undo()
    assert regression.main(["--resume", str(results), "--no-upload", "--quiet"]) in (0, 1)  # it resumes
    assert load_record(results).meta.complete


def test_a_disk_full_before_any_run_leaves_nothing(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    failing_writer(monkeypatch, after=0, errno_=errno.ENOSPC)
    code, lines = gate(out, capsys)
    assert code == 2 and len(lines) == 1
    assert lines[0].startswith("error: cannot write the results file ") and "No space left on device" in lines[0]
    assert "nothing was saved (removed the empty " in lines[0]
    assert list(out.iterdir()) == []


def test_an_out_directory_that_vanishes_mid_run_is_exit_2_and_not_recreated(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    failing_writer(monkeypatch, after=2, errno_=errno.ENOENT, before_write=lambda: shutil.rmtree(out))
    code, lines = gate(out, capsys)
    assert code == 2 and len(lines) == 1
    assert f"(the directory {out} is gone); nothing was saved" in lines[0]
    assert not out.exists()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory anyway "
                                               "(the monkeypatched EROFS case above covers it)")
def test_a_read_only_out_directory_mid_run_is_exit_2(tmp_path, monkeypatch, capsys):
    out = tmp_path / "out"
    failing_writer(monkeypatch, after=2, errno_=errno.EACCES, before_write=lambda: out.chmod(0o555))
    try:
        code, lines = gate(out, capsys)
    finally:
        out.chmod(0o755)
    assert code == 2 and len(lines) == 1 and "kept in" in lines[0]
    assert not list(out.glob(".tmp-*"))


def test_guarded_maps_os_errors_and_import_errors_to_one_line_and_exit_2(capsys):
    def full():
        raise OSError(errno.ENOSPC, "No space left on device", "/mnt/full/report.html")

    def missing():
        raise ModuleNotFoundError("No module named 'rich'", name="rich")

    def bug():
        raise KeyError("a bug keeps its traceback")

    assert cli.guarded(lambda argv: full())([]) == 2
    assert cli.guarded(lambda argv: missing())([]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "error: /mnt/full/report.html: No space left on device"
    assert err[1].startswith("error: cannot import rich (No module named 'rich'): run this with the project's")
    with pytest.raises(KeyError):
        cli.guarded(lambda argv: bug())([])


def test_a_cache_the_disk_refuses_costs_entries_not_runs(tmp_path, monkeypatch, capsys):
    import sqlite3

    from turngate.jobs.model_cache import CountingCache, _sqlite_cache_class

    cache = CountingCache(tmp_path / "c.sqlite")

    def refuse(self, *args):
        raise sqlite3.OperationalError("database or disk is full")

    monkeypatch.setattr(_sqlite_cache_class(), "update", refuse)
    cache.update("prompt", "llm", [])
    cache.update("prompt", "llm", [])
    assert cache.stats()["not_stored"] == 2
    [warning] = capsys.readouterr().err.splitlines()
    assert "cannot store model calls (database or disk is full)" in warning


@pytest.mark.parametrize("script", ["evals/regression.py", "evals/simulate.py", "evals/calibrate_judge.py",
                                    "evals/calibrate.py", "evals/compare.py", "evals/regrade.py", "evals/report.py",
                                    "evals/show.py"])
def test_a_command_run_without_the_environment_is_one_line_and_exit_2(script):
    # -S -I: no site-packages, no PYTHONPATH: as a shell without the venv (the package is not importable)
    bare = subprocess.run([sys.executable, "-S", "-I", script, "--help"], cwd=REPO, capture_output=True, text=True)
    assert (bare.returncode, bare.stdout) == (2, "")
    assert bare.stderr.startswith("error: cannot import turngate (No module named 'turngate')")
    assert len(bare.stderr.splitlines()) == 1
    # the package importable but not its dependencies: the first third-party import fails
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    deps = subprocess.run([sys.executable, "-S", script, "--help"], cwd=REPO, env=env, capture_output=True, text=True)
    assert deps.returncode == 2 and len(deps.stderr.splitlines()) == 1, deps.stderr
    assert deps.stderr.startswith("error: cannot import ") and "Traceback" not in deps.stderr
