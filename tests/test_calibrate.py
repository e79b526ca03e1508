"""calibrate.py: a run without --write prints the exact command that writes from it, --from a
stored run writes what a direct --write would have, an incomplete record is refused, --out
says where the run goes, and the progress display (bar / lines / off)."""
from __future__ import annotations

import io
import shlex
import time
from pathlib import Path

import pytest
from rich.console import Console

from turngate.commands import calibrate
from turngate.record.results import load_record, save_record

# rows whose verdicts cover these scorers (refund_outcome and escalation need other rows)
SCORERS = ["tool_use", "answer_facts", "no_pii_leak", "policy_judge"]
ROWS = 5


@pytest.fixture
def small(tmp_path):
    lines = Path("datasets/northwind.jsonl").read_text().splitlines()[:ROWS]
    dataset = tmp_path / "rows.jsonl"
    dataset.write_text("\n".join(lines) + "\n")
    return dataset


def _args(dataset: Path, tmp_path: Path, name: str) -> list[str]:
    return ["--dataset", str(dataset), "--seeds", "0-2", "--against", "none", "--scorers", *SCORERS,
            "--thresholds", str(tmp_path / name / "thresholds.toml")]


def test_a_run_without_write_prints_the_command_that_writes_from_it(small, tmp_path, monkeypatch, capsys):
    out_dir = tmp_path / "runs"
    (tmp_path / "printed").mkdir()
    (tmp_path / "direct").mkdir()
    monkeypatch.setattr(calibrate, "LINES_FROM", 10)  # a 15-run calibration counts as long here
    assert calibrate.main(_args(small, tmp_path, "printed") + ["--out", str(out_dir)]) == 0
    out = capsys.readouterr().out
    assert not (tmp_path / "printed" / "thresholds.toml").exists()
    # the run went to --out, complete
    [stored] = list(out_dir.glob("calibrate-v3-*.json"))
    assert load_record(stored).incomplete() is None
    # not a terminal: plain progress lines, at most one per 10%, the last at 100%
    progress = [line for line in out.splitlines() if line.startswith("calibration: ") and " runs (" in line]
    assert 1 <= len(progress) <= 10 and progress[-1].startswith(f"calibration: {ROWS * 3} of {ROWS * 3} runs (100%)")
    assert "critical" not in out and "row test at" not in out  # no block-based critical p any more
    # the exact command, on one line
    [command] = [line.strip() for line in out.splitlines() if line.strip().startswith("python evals/calibrate.py")]
    argv = shlex.split(command)
    assert argv[:2] == ["python", "evals/calibrate.py"]
    assert argv[argv.index("--from") + 1] == str(stored) and "--write" in argv
    assert calibrate.main(argv[2:]) == 0  # runs no agent: the record is all it reads
    assert "wrote" in capsys.readouterr().out
    # the same as a direct --write of the same run (the offline agent is seeded)
    assert calibrate.main(_args(small, tmp_path, "direct") + ["--out", str(out_dir), "--write", "--quiet"]) == 0
    quiet = capsys.readouterr().out
    assert not [line for line in quiet.splitlines() if " runs (" in line]  # --quiet: no progress
    for name in ("thresholds.toml", "reference.json"):
        assert (tmp_path / "printed" / name).read_text() == (tmp_path / "direct" / name).read_text()
    assert len(list(out_dir.glob("calibrate-v3-*.json"))) == 2


def test_from_an_incomplete_record_is_one_line_and_exit_2(small, tmp_path, monkeypatch, capsys):
    from tests.record_helpers import record, row, run

    rec = record("v3", [run("v3", "r000", s, {"tool_use": True}) for s in range(3)],
                 [row("r000"), row("r001")], trials=3)
    rec.meta.complete = False
    path = save_record(rec, tmp_path / "partial.json")
    thresholds = tmp_path / "thresholds.toml"
    code = calibrate.main(["--from", str(path), "--write", "--thresholds", str(thresholds)])
    captured = capsys.readouterr()
    assert code == 2 and not thresholds.exists() and not (tmp_path / "reference.json").exists()
    assert captured.err.count("\n") == 1 and "incomplete: 3 of 6 runs" in captured.err
    assert captured.err.startswith(f"error: calibrate: --from {path}")


def test_out_is_for_a_run_and_must_be_a_directory(tmp_path, capsys):
    assert calibrate.main(["--from", str(tmp_path / "x.json"), "--out", str(tmp_path)]) == 2
    assert "--from runs nothing" in capsys.readouterr().err
    (tmp_path / "file").write_text("")
    assert calibrate.main(["--out", str(tmp_path / "file"), "--trials", "3"]) == 2
    assert "not a directory" in capsys.readouterr().err


def test_the_write_command_names_only_what_differs_from_the_defaults(tmp_path):
    import argparse

    from turngate.verdict.thresholds import DEFAULT_PATH

    a = argparse.Namespace(thresholds=str(DEFAULT_PATH), reference=None, scorers=None)
    assert calibrate.write_command(tmp_path / "run 1.json", a, "v1", False) == \
        f"python evals/calibrate.py --from '{tmp_path / 'run 1.json'}' --write"
    a = argparse.Namespace(thresholds="bars.toml", reference="ref.json", scorers=["tool_use"])
    assert calibrate.write_command("r.json", a, None, True) == (
        "python evals/calibrate.py --from r.json --write --thresholds bars.toml --reference ref.json "
        "--scorers tool_use --against none")


# -- the progress display ------------------------------------------------------------------

def _drive(progress: calibrate.RunProgress, total: int) -> None:
    done = [0]
    progress.start(lambda: done[0])
    for k in range(total):
        done[0] = k + 1
        if k % 25 == 0:
            time.sleep(0.02)  # let the poller see some intermediate counts
    progress.stop()


def test_lines_mode_prints_at_most_one_line_per_tenth_and_ends_at_100_percent():
    buf = io.StringIO()
    _drive(calibrate.RunProgress(400, "lines", "calibration", out=Console(file=buf, width=200), poll_s=0.005), 400)
    lines = buf.getvalue().splitlines()
    assert 1 <= len(lines) <= 10 and lines[-1].startswith("calibration: 400 of 400 runs (100%)")
    assert all("\x1b" not in line for line in lines)  # no control codes in a CI log
    percents = [int(line.split("(")[1].split("%")[0]) for line in lines]
    assert percents == sorted(set(percents))


def test_a_short_run_gets_no_lines_and_quiet_gets_nothing():
    for mode, total in (("lines", calibrate.LINES_FROM - 1), ("off", 1000)):
        buf = io.StringIO()
        _drive(calibrate.RunProgress(total, mode, "calibration", out=Console(file=buf, width=200), poll_s=0.005), total)
        assert buf.getvalue() == ""


def test_bar_mode_draws_a_rich_bar_to_its_count():
    buf = io.StringIO()
    term = Console(file=buf, force_terminal=True, width=100)
    _drive(calibrate.RunProgress(120, "bar", "calibration", out=term, poll_s=0.005), 120)
    assert "120/120" in buf.getvalue() and "runs" in buf.getvalue()


def test_progress_mode_follows_quiet_and_the_terminal():
    assert calibrate.progress_mode(True, True) == calibrate.progress_mode(True, False) == "off"
    assert calibrate.progress_mode(False, True) == "bar" and calibrate.progress_mode(False, False) == "lines"


def test_a_calibration_run_is_remembered_for_compare(small, tmp_path, monkeypatch):
    """calibrate leaves its record remembered, as the gate and merge do: compare's first reading
    of it is a cache hit (the file counts as big here)."""
    from turngate.gate import sides

    monkeypatch.setattr(sides, "PARALLEL_FROM_BYTES", 1)
    monkeypatch.setenv("TURNGATE_CACHE_DIR", str(tmp_path / "cache"))
    out_dir = tmp_path / "runs"
    (tmp_path / "t").mkdir()
    assert calibrate.main(_args(small, tmp_path, "t") + ["--out", str(out_dir), "--quiet"]) == 0
    [stored] = list(out_dir.glob("calibrate-v3-*.json"))
    cache = sides.SideCache.default()
    side = cache.get(cache.key(stored.read_bytes()), str(stored))
    assert side is not None and side.record.meta.version == "v3"
    assert side.summary.runs == ROWS * 3
