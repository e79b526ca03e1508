"""regrade judges a record against the bars and the reference it was judged with (its meta: the
bars and its own copy of the reference), so it needs no bars file or reference file and runs from
any folder; --thresholds / --reference override, and the output says which bars and which
reference it used. A record of an earlier layout (no copy) is judged against the file it names."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.record_helpers import as_layout_4
from turngate.commands import regrade
from turngate.record.results import load_record, save_record
from turngate.verdict.rule import judged_with

REPO = Path(__file__).resolve().parents[1]
REFERENCE = REPO / "evals" / "reference.json"


@pytest.fixture(scope="module")
def gate_record(small_gate_record):
    return small_gate_record


@pytest.fixture
def record_file(tmp_path, gate_record):
    path = tmp_path / "results" / "v3-run.json"
    path.parent.mkdir()
    path.write_text(gate_record)
    return path


def regraded(folder: Path) -> dict:
    (path,) = folder.glob("*-regraded-*.json")
    return json.loads(path.read_text())


def edit(path: Path, **meta) -> None:
    record = load_record(path)
    for key, value in meta.items():
        setattr(record.meta, key, value)
    record.replan()
    save_record(record, path)


def test_the_record_names_the_bars_and_reference_it_was_judged_with(gate_record):
    meta = json.loads(gate_record)["meta"]
    assert meta["thresholds"] and meta["reference"] == str(REFERENCE)


def test_no_flags_use_the_records_own_bars_and_reference_from_a_folder_without_a_bars_file(tmp_path, record_file):
    """The reported bug: from a folder with no thresholds.toml (and no pyproject.toml), regrade
    failed with 'thresholds.toml: no thresholds file'. The scorers come from the plug-in named in
    TURNGATE_PLUGINS; the bars and the reference from the record."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALS_", "ORQ_", "OPENAI_", "TURNGATE_"))}
    env.update(PYTHONPATH=str(REPO), TURNGATE_PLUGINS="evals", TURNGATE_DISABLE_PLUGIN_AUTOLOAD="1")
    code = "from turngate.cli import run; run()"
    res = subprocess.run([sys.executable, "-c", code, "regrade", str(record_file)], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "no thresholds file" not in res.stderr
    assert "bars: the record's own (meta.thresholds" in res.stdout
    assert f"reference: the copy the record carries (taken from {REFERENCE})" in res.stdout
    got, before = regraded(record_file.parent)["meta"], json.loads(record_file.read_text())["meta"]
    assert got["thresholds"] == before["thresholds"] and got["reference"] == before["reference"]
    assert got["thresholds_path"] == before["thresholds_path"]
    assert not list(elsewhere.iterdir())  # the new record goes beside its input

    # without the plug-in, the bars name scorers nobody registered: one line saying what to load
    env.pop("TURNGATE_PLUGINS")
    res = subprocess.run([sys.executable, "-c", code, "regrade", str(record_file)], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=300)
    assert res.returncode == 2 and "Traceback" not in res.stderr
    [line] = res.stderr.splitlines()
    assert line.startswith(f"error: {record_file}: meta.thresholds: scorer(s) refund_outcome") and \
        "TURNGATE_PLUGINS" in line


def test_a_relative_reference_is_found_from_the_results_files_project(tmp_path, record_file, monkeypatch, capsys):
    """A record of an earlier layout carries no copy: its reference is the file it names."""
    project = record_file.parent.parent  # <project>/results/v3-run.json, <project>/bars/reference.json
    (project / "bars").mkdir()
    shutil.copy(REFERENCE, project / "bars" / "reference.json")
    # as a gate run from <project> stores it
    record_file.write_text(as_layout_4(record_file.read_text(), reference="bars/reference.json"))
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert regrade.main([str(record_file)]) == 0
    found = project / "bars" / "reference.json"
    out = capsys.readouterr().out
    assert f"reference: {found} (the file the record names)" in out and "judged by an earlier rule" in out
    assert regraded(record_file.parent)["meta"]["reference"] == str(found)


def test_a_reference_that_is_gone_is_one_line_naming_reference_and_reference_overrides(tmp_path, record_file,
                                                                                        capsys):
    gone = tmp_path / "gone" / "reference.json"
    edit(record_file, reference=str(gone))  # a current record: judged from its own copy, the file unread
    assert regrade.main([str(record_file)]) == 0
    assert "reference: the copy the record carries" in capsys.readouterr().out
    for old in record_file.parent.glob("*-regraded-*"):
        old.unlink()
    record_file.write_text(as_layout_4(record_file.read_text()))  # an earlier layout: the file, which is gone
    assert regrade.main([str(record_file)]) == 2
    captured = capsys.readouterr()
    [line] = captured.err.splitlines()
    assert line == (f"error: {record_file}: judged by an earlier rule (results@4), it carries no copy of its "
                    f"reference, and the file it names, {gone}, is not there; name one: evals regrade "
                    f"{record_file} --reference PATH (or --reference current)")
    assert not list(record_file.parent.glob("*-regraded-*"))
    assert regrade.main([str(record_file), "--reference", str(REFERENCE)]) == 0
    assert f"reference: --reference {REFERENCE}" in capsys.readouterr().out
    assert regraded(record_file.parent)["meta"]["reference"] == str(REFERENCE)


def test_a_record_judged_by_the_bars_only_is_regraded_by_the_bars_only(record_file, capsys):
    edit(record_file, reference=None, judged_with=judged_with())
    assert regrade.main([str(record_file)]) == 0
    assert "reference: none (the record was judged by the bars only)" in capsys.readouterr().out
    assert regraded(record_file.parent)["meta"]["reference"] is None


def test_thresholds_regrades_with_a_files_bars_and_says_so(tmp_path, record_file, capsys):
    own = json.loads(record_file.read_text())["meta"]["thresholds"]
    text = (REPO / "evals" / "thresholds.toml").read_text()
    bars = tmp_path / "stricter.toml"
    bars.write_text(text.replace(f"[scorers.answer_facts]\nbar = {own['answer_facts']}",
                                 "[scorers.answer_facts]\nbar = 0.99"))
    assert "bar = 0.99" in bars.read_text()
    assert regrade.main([str(record_file), "--thresholds", str(bars)]) == 0
    assert f"bars: {bars} (--thresholds)" in capsys.readouterr().out
    meta = regraded(record_file.parent)["meta"]
    assert meta["thresholds"]["answer_facts"] == 0.99 and meta["thresholds_path"] == str(bars)
    assert regrade.main([str(record_file), "--thresholds", str(tmp_path / "none.toml")]) == 2
    assert "none.toml: no thresholds file" in capsys.readouterr().err


def test_a_record_without_bars_needs_thresholds(record_file, capsys):
    edit(record_file, thresholds={})
    assert regrade.main([str(record_file)]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line == (f"error: {record_file}: the record holds no bars (a calibration run is judged by none); "
                    f"give a bars file: evals regrade {record_file} --thresholds PATH")
