"""calibrate.py: a run without --write prints the exact command that writes from it, --from a
stored run writes what a direct --write would have, an incomplete record is refused, --out
says where the run goes, and the progress display (bar / lines / off)."""
from __future__ import annotations

import io
import json
import shlex
import sys
import time
from pathlib import Path

import pytest
from rich.console import Console

from turngate.commands import calibrate
from turngate.core import cli_support as cli
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
    # the exact command, on one line, named as the user ran calibrate (here: evals calibrate)
    ran = shlex.split(cli.command("calibrate"))
    [command] = [line.strip() for line in out.splitlines() if shlex.split(line.strip() or "-")[:2] == ran]
    argv = shlex.split(command)
    assert argv[argv.index("--from") + 1] == str(stored) and "--write" in argv
    assert calibrate.main(argv[len(ran):]) == 0  # runs no agent: the record is all it reads
    assert "wrote" in capsys.readouterr().out
    # the same as a direct --write of the same run (the offline agent is seeded)
    assert calibrate.main(_args(small, tmp_path, "direct") + ["--out", str(out_dir), "--write", "--quiet"]) == 0
    quiet = capsys.readouterr().out
    assert not [line for line in quiet.splitlines() if " runs (" in line]  # --quiet: no progress
    for name in ("thresholds.toml", "reference.json"):
        assert (tmp_path / "printed" / name).read_text() == (tmp_path / "direct" / name).read_text()
    assert len(list(out_dir.glob("calibrate-v3-*.json"))) == 2
    # policy_judge is calibrated: the bars and the reference name the judge that scored it
    # (this repository's [tool.turngate] judge), not None
    assert 'judge = "offline"' in (tmp_path / "direct" / "thresholds.toml").read_text()
    assert json.loads((tmp_path / "direct" / "reference.json").read_text())["provenance"]["judge"] == "offline"


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


def test_the_write_command_names_only_what_differs_from_the_defaults(tmp_path, monkeypatch):
    import argparse

    from turngate.verdict.thresholds import DEFAULT_PATH

    a = argparse.Namespace(thresholds=str(DEFAULT_PATH), reference=None, scorers=None)
    assert calibrate.write_command(tmp_path / "run 1.json", a, "v1", False) == \
        f"evals calibrate --from '{tmp_path / 'run 1.json'}' --write"
    a = argparse.Namespace(thresholds="bars.toml", reference="ref.json", scorers=["tool_use"])
    assert calibrate.write_command("r.json", a, None, True) == (
        "evals calibrate --from r.json --write --thresholds bars.toml --reference ref.json "
        "--scorers tool_use --against none")
    # through a launcher, the launcher (python evals/calibrate.py) is the command it names
    monkeypatch.setattr(sys, "argv", ["evals/calibrate.py"])
    assert calibrate.write_command("r.json", a, None, True).startswith("python evals/calibrate.py --from r.json ")


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


# -- --write never replaces bars or a reference without --force --------------------------------

def _stored(tmp_path: Path, name: str, failing: int = 0) -> Path:
    """A complete 10-row x 3-trial record; `failing` runs fail policy_judge."""
    from tests.record_helpers import record, row, run

    ids = [f"r{k:03d}" for k in range(10)]
    runs = [run("v3", rid, s, {"refund_outcome": True, "policy_judge": not (k < failing)})
            for k, (rid, s) in enumerate((rid, s) for rid in ids for s in range(3))]
    return save_record(record("v3", runs, [row(rid) for rid in ids], trials=3), tmp_path / name)


def _write(source: Path, bars: Path, *extra: str) -> int:
    return calibrate.main(["--from", str(source), "--write", "--thresholds", str(bars), "--against", "none",
                           "--scorers", "refund_outcome", "policy_judge", *extra])


def test_write_refuses_to_replace_bars_or_a_reference_without_force_and_says_what_would_change(tmp_path, capsys):
    bars, ref = tmp_path / "t" / "bars.toml", tmp_path / "t" / "reference.json"
    assert _write(_stored(tmp_path, "first.json"), bars) == 0  # new files: no --force needed
    assert "wrote" in capsys.readouterr().out
    before = bars.read_text(), ref.read_text()
    second = _stored(tmp_path, "second.json", failing=1)
    assert _write(second, bars) == 2
    captured = capsys.readouterr()
    assert (bars.read_text(), ref.read_text()) == before  # untouched
    [line] = captured.err.splitlines()
    assert line.startswith(f"error: calibrate: --write: {bars} and {ref} already exist; to replace them: "
                           f"evals calibrate --from {second} --write --thresholds {bars}") and line.endswith(" --force")
    out = captured.out
    assert "--write would replace:" in out
    assert "refund_outcome: 1.00 -> 1.00  (unchanged)" in out
    [changed] = [s.strip() for s in out.splitlines() if s.strip().startswith("policy_judge: 1.00 -> ")]
    assert not changed.endswith("(unchanged)")
    assert f"{ref}: 10 rows x 3 runs -> 10 rows x 3 runs" in out
    # --force writes, and says what it replaced
    assert _write(second, bars, "--force") == 0
    out = capsys.readouterr().out
    assert "--write replaces:" in out and changed in out and f"wrote {bars} and {ref}" in out
    assert bars.read_text() != before[0] and ref.read_text() != before[1]


def test_write_refuses_when_only_the_reference_exists_and_writes_neither(tmp_path, capsys):
    bars, ref = tmp_path / "bars.toml", tmp_path / "reference.json"
    ref.write_text("not a reference\n")
    assert _write(_stored(tmp_path, "run.json"), bars) == 2
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line.startswith(f"error: calibrate: --write: {ref} already exists; to replace it: ")
    assert f"{bars}: new (2 bars)" in captured.out
    assert f"{ref}: replaces a file that is not a readable reference" in captured.out
    assert not bars.exists() and ref.read_text() == "not a reference\n"


def test_an_unreadable_old_bars_file_is_named_and_replaced_only_with_force(tmp_path, capsys):
    bars = tmp_path / "bars.toml"
    bars.write_text("# the committed bars\n")
    source = _stored(tmp_path, "run.json")
    assert _write(source, bars) == 2
    captured = capsys.readouterr()
    assert f"{bars}: replaces a file that is not a readable bars file" in captured.out
    assert f"{bars} already exists; to replace it" in captured.err and bars.read_text() == "# the committed bars\n"
    assert _write(source, bars, "--force") == 0 and "[scorers.policy_judge]" in bars.read_text()


def test_write_checks_where_it_writes_before_anything_runs(tmp_path, capsys):
    source = _stored(tmp_path, "run.json")
    assert _write(source, tmp_path / "same.json", "--reference", str(tmp_path / "same.json")) == 2
    assert "is the --thresholds file" in capsys.readouterr().err
    (tmp_path / "a_dir").mkdir()
    assert _write(source, tmp_path / "a_dir") == 2
    err = capsys.readouterr().err
    assert err.startswith(f"error: --thresholds {tmp_path / 'a_dir'}: is a directory") and err.count("\n") == 1
