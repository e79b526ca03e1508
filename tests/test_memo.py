"""The sensitivity statement's disk memo (turngate/gate/memo.py): a second process finds the
statement made, and an entry that is corrupt, from other code or unwritable only costs time."""
from __future__ import annotations

import json
import tomllib
from pathlib import Path

import pytest

from turngate.gate import memo, sight
from turngate.verdict import sensitivity as simulation
from turngate.verdict.reference import load_reference

REPO = Path(__file__).resolve().parents[1]
BARS = {n: s["bar"] for n, s in tomllib.loads((REPO / "evals" / "thresholds.toml").read_text())["scorers"].items()}
ROWS = ["status", "refund_full_a1001", "refund_expired"]


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A memo folder of this test's own and an empty in-process table (a new process, as it were);
    counts the simulations actually made."""
    monkeypatch.setenv("TURNGATE_CACHE_DIR", str(tmp_path / "memo"))
    monkeypatch.setattr(sight, "_MADE", {})
    made = []
    real = simulation.sensitivity

    def counted(*a, **k):
        made.append(1)
        return real(*a, **k)

    monkeypatch.setattr(simulation, "sensitivity", counted)
    return made


def statement():
    sight._MADE.clear()  # each call as a new process would make it
    return sight.statement(load_reference(), ROWS, 1, BARS)


def entries(tmp_path) -> list[Path]:
    return sorted((tmp_path / "memo" / "sensitivity").glob("*.json"))


def test_a_second_process_reads_the_statement_the_first_made(fresh, tmp_path):
    first = statement()
    assert len(fresh) == 1 and len(entries(tmp_path)) == 1
    assert statement() == first and len(fresh) == 1  # read, not simulated again
    assert not list((tmp_path / "memo" / "sensitivity").glob(".tmp-*"))
    other_trials = sight.statement(load_reference(), ROWS, 2, BARS)  # other inputs: another entry
    assert len(fresh) == 2 and len(entries(tmp_path)) == 2 and other_trials != first


def test_a_corrupt_or_forged_entry_is_made_again_and_written_over(fresh, tmp_path):
    first = statement()
    (entry,) = entries(tmp_path)
    for bad in ("{not json", json.dumps({"line": 3}), ""):
        entry.write_text(bad)
        assert statement() == first
    assert len(fresh) == 4 and json.loads(entry.read_text())["line"] == first.line


def test_other_code_never_meets_an_old_entry(fresh, tmp_path, monkeypatch):
    statement()
    monkeypatch.setattr(memo, "code_digest", lambda: "an edited verdict module")
    statement()
    assert len(fresh) == 2 and len(entries(tmp_path)) == 2


def test_off_keeps_nothing_and_an_unwritable_folder_is_skipped(fresh, tmp_path, monkeypatch):
    monkeypatch.setenv("TURNGATE_CACHE_DIR", "off")
    first = statement()
    assert statement() == first and len(fresh) == 2 and not (tmp_path / "memo").exists()
    blocked = tmp_path / "a-file"
    blocked.write_text("not a folder")
    monkeypatch.setenv("TURNGATE_CACHE_DIR", str(blocked))
    assert statement() == first and len(fresh) == 3


def test_the_default_folder_follows_xdg(monkeypatch, tmp_path):
    monkeypatch.delenv("TURNGATE_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert memo.folder() == tmp_path / "turngate"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert memo.folder() == Path.home() / ".cache" / "turngate"
