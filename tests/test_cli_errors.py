"""Unusable input is one line and exit 2 before any agent call; results files never
overwrite anything (--force to allow), never the command's own input; an incomplete record
stays incomplete when regraded."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import prefork
from turngate.commands import compare, regrade, regression, report
from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.gate import run as gate

REPO = Path(__file__).resolve().parents[1]
DATASET = REPO / "datasets" / "northwind.jsonl"


@pytest.fixture
def no_agent(monkeypatch):
    """Any agent call or gate run fails the test loudly (AssertionError is not a user error)."""
    async def agent_ran(*a, **k):
        raise AssertionError("an agent ran")

    def gate_ran(*a, **k):
        raise AssertionError("the gate started running")

    import app.refund_agent.client as client

    monkeypatch.setattr(client, "aask_agent", agent_ran)
    monkeypatch.setattr(gate, "execute", gate_ran)
    monkeypatch.setattr(gate, "execute_and_confirm", gate_ran)
    monkeypatch.setattr(regression, "execute_and_confirm", gate_ran)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ORQ_API_KEY", raising=False)


def one_error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), err
    return lines[0]


def gate_args(out, *extra):
    return ["--only", "status", "--no-upload", "--quiet", "--out", str(out), *extra]


@pytest.mark.parametrize("args, message", [
    (["--model", "openai:gpt-4o-mini"], "--model openai:gpt-4o-mini: OPENAI_API_KEY is not set"),
    (["--model", "orq:openai/gpt-4o"], "--model orq:openai/gpt-4o: ORQ_API_KEY is not set"),
    (["--judge", "openai:gpt-4o-mini"], "--judge openai:gpt-4o-mini: OPENAI_API_KEY is not set"),
    (["--judge", "orq:anthropic/claude"], "--judge orq:anthropic/claude: ORQ_API_KEY is not set"),
    (["--fault", "agent-raises:nope_row"], "no selected row has id 'nope_row'"),
    (["--fault", "run-hangs:refund_full_a1001"], "no selected row has id 'refund_full_a1001'"),  # not selected
    (["--fault", "not-a-turn:stats"], "(did you mean 'status'?)"),
    (["--fault", "tool-hangs:nope_tool"], "the server has no tool 'nope_tool'"),
    (["--fault", "tool-hangs:refund_ordr"], "(did you mean 'refund_order'?)"),
    (["--fault", "server-dies:0"], "server-dies takes a tool-call count"),
    (["--fault", "judge-raises:x"], "judge-raises takes no argument"),
    (["--baseline", "v3"], "--baseline v3 is the version under test"),  # v3 is the default version
    (["--version", "v2", "--baseline", "v2"], "--baseline v2 is the --version itself"),
    (["--timeout", "0"], "--timeout must be a positive number of seconds, got 0"),
    (["--timeout", "-1"], "--timeout must be a positive number of seconds"),
    (["--timeout", "nan"], "--timeout must be a positive number of seconds"),
    (["--judge-timeout", "0"], "--judge-timeout must be a positive number of seconds, got 0"),
    (["--judge-timeout", "-0.5"], "--judge-timeout must be a positive number of seconds"),
    (["--report", str(REPO / "evals")], "is a directory; give a file name"),
    (["--report", str(DATASET)], "that is this command's input"),
    (["--report", str(DATASET), "--force"], "that is this command's input"),  # --force never allows that
    (["--report", str(REPO / "README.md")], "already exists; use --force to replace it"),
    (["--cache", str(REPO / "README.md")], "not a cache file (not SQLite)"),
    (["--cache", str(REPO / "evals")], "is a directory"),
])
def test_unusable_gate_input_is_one_line_and_exit_2_before_any_agent_call(tmp_path, capsys, no_agent, args,
                                                                          message):
    assert regression.main(gate_args(tmp_path / "out", *args)) == 2
    assert message in one_error_line(capsys)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_an_out_that_is_a_file_or_cannot_be_created_is_refused(tmp_path, capsys, no_agent):
    a_file = tmp_path / "README.md"
    a_file.write_text("not a directory")
    assert regression.main(gate_args(a_file)) == 2
    assert "not a directory" in one_error_line(capsys)
    assert regression.main(gate_args(a_file / "sub")) == 2
    assert "cannot create directory" in one_error_line(capsys)
    assert regression.main(gate_args(tmp_path / "out", "--cache", str(a_file / "c.sqlite"))) == 2
    assert "--cache" in one_error_line(capsys)
    assert a_file.read_text() == "not a directory"


def test_a_version_whose_own_model_needs_a_missing_key_is_refused(tmp_path, monkeypatch, capsys, no_agent):
    from app.refund_agent import versions

    vdir = tmp_path / "versions"
    vdir.mkdir()
    original = (versions.VERSIONS_DIR / "v3.toml").read_text()
    (vdir / "v3.toml").write_text(original)
    assert 'model = "offline"' in original
    (vdir / "v9.toml").write_text(original.replace('model = "offline"', 'model = "openai:gpt-4o-mini"'))
    monkeypatch.setattr(versions, "VERSIONS_DIR", vdir)
    versions.load_version.cache_clear()
    try:
        assert regression.main(gate_args(tmp_path / "out", "--version", "v9")) == 2
    finally:
        versions.load_version.cache_clear()
    assert "version v9's model openai:gpt-4o-mini: OPENAI_API_KEY is not set" in one_error_line(capsys)


def test_a_missing_key_exits_2_with_one_line_from_the_command_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("OPENAI_API_KEY", "ORQ_API_KEY")}
    res = subprocess.run([prefork.python(), str(REPO / "evals" / "regression.py"), "--model", "openai:gpt-4o-mini",
                          "--out", str(tmp_path)], capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 2
    assert res.stderr.splitlines() == ["error: --model openai:gpt-4o-mini: OPENAI_API_KEY is not set "
                                       "(or use --model offline)"]
    assert not list(tmp_path.iterdir())


# --- results files ---------------------------------------------------------------------------

def test_results_names_are_unique_and_created_exclusively(tmp_path, monkeypatch):
    paths = {cli.new_results_path(tmp_path, "v3") for _ in range(50)}  # all within a second or two
    assert len(paths) == 50 and all(p.exists() for p in paths)
    # the same random suffix twice in one second: the second call moves on, the first file is untouched
    first = cli.new_results_path(tmp_path / "x", "v3")
    first.write_text("run one")
    suffixes = iter([first.stem.rsplit("-", 1)[1], "beef"])
    monkeypatch.setattr(__import__("secrets"), "token_hex", lambda n: next(suffixes))  # imported where used
    monkeypatch.setattr(cli, "datetime", type("Frozen", (), {"now": staticmethod(
        lambda: __import__("datetime").datetime.strptime(first.stem.split("-", 1)[1][:15], "%Y%m%d-%H%M%S"))}))
    second = cli.new_results_path(tmp_path / "x", "v3")
    assert second != first and second.name.endswith("-beef.json") and first.read_text() == "run one"


def test_two_gate_runs_in_the_same_second_keep_two_files(tmp_path, monkeypatch):
    import datetime as dt

    frozen = dt.datetime(2026, 12, 1, 9, 0, 0)
    monkeypatch.setattr(cli, "datetime", type("Frozen", (), {"now": staticmethod(lambda: frozen)}))
    codes = [regression.main(gate_args(tmp_path)) for _ in range(2)]
    files = sorted(tmp_path.glob("v3-20261201-090000-*.json"))
    assert codes == [0, 0] and len(files) == 2
    assert all(json.loads(f.read_text())["meta"]["complete"] for f in files)


@pytest.fixture(scope="module")
def results(small_gate_record):
    """One small complete gate record (real runs), copied fresh for each test."""
    return small_gate_record


@pytest.fixture
def record_file(tmp_path, results):
    path = tmp_path / "v3-run.json"
    path.write_text(results)
    return path


def test_regrade_never_overwrites_unless_forced_and_never_its_input(tmp_path, record_file, capsys):
    before = record_file.read_text()
    existing = tmp_path / "old.json"
    existing.write_text("keep me")
    assert regrade.main([str(record_file), "--out", str(existing)]) == 2
    assert "already exists; use --force" in one_error_line(capsys)
    assert existing.read_text() == "keep me"
    for extra in ([], ["--force"]):
        assert regrade.main([str(record_file), "--out", str(record_file), *extra]) == 2
        assert "this command's input" in one_error_line(capsys)
    assert regrade.main([str(record_file), "--report", str(tmp_path)]) == 2
    assert "is a directory" in one_error_line(capsys)
    assert record_file.read_text() == before
    assert regrade.main([str(record_file), "--out", str(existing), "--force"]) == 0
    assert json.loads(existing.read_text())["meta"]["regraded_from"] == str(record_file)


def test_regrade_by_default_writes_a_new_file_each_time(tmp_path, record_file):
    before = record_file.read_text()
    assert regrade.main([str(record_file)]) == 0
    assert regrade.main([str(record_file)]) == 0
    made = sorted(tmp_path.glob("v3-run-regraded-*.json"))
    assert len(made) == 2 and record_file.read_text() == before


def test_regrading_an_interrupted_record_keeps_it_incomplete(tmp_path, record_file, capsys):
    from turngate.record.results import load_record, save_record

    data = load_record(record_file)
    data.runs = data.runs[:1]  # half the runs, as an interrupt leaves them
    data.meta.complete, data.meta.interrupted = False, True
    data.summary, data.verdict = {}, None
    save_record(data, record_file)
    out = tmp_path / "regraded.json"
    assert regrade.main([str(record_file), "--out", str(out)]) == 2
    assert "incomplete: 1 of 2 runs" in capsys.readouterr().out
    got = json.loads(out.read_text())
    assert got["meta"]["complete"] is False and got["meta"]["interrupted"] is True
    assert got["verdict"] is None and len(got["runs"]) == 1


def test_compare_and_report_never_overwrite_unless_forced(tmp_path, record_file, capsys):
    existing = tmp_path / "taken.json"
    existing.write_text("keep me")
    assert compare.main([str(record_file), str(record_file), "--out", str(existing)]) == 2
    assert "already exists; use --force" in one_error_line(capsys)
    assert compare.main([str(record_file), str(record_file), "--out", str(record_file), "--force"]) == 2
    assert "this command's input" in one_error_line(capsys)
    assert compare.main([str(record_file), str(record_file), "--report", str(tmp_path)]) == 2
    assert "is a directory" in one_error_line(capsys)
    assert existing.read_text() == "keep me"
    assert compare.main([str(record_file), str(record_file), "--out", str(existing), "--force"]) == 0
    assert json.loads(existing.read_text())["comparison"]

    html = record_file.with_suffix(".html")
    html.write_text("an older report")
    assert report.main([str(record_file)]) == 2
    assert "already exists; use --force" in one_error_line(capsys)
    assert html.read_text() == "an older report"
    assert report.main([str(record_file), "--out", str(record_file)]) == 2
    assert "this command's input" in one_error_line(capsys)
    assert report.main([str(record_file), "--force"]) == 0
    assert html.read_text().startswith("<!doctype html") or "<html" in html.read_text()[:500]


def test_claim_file_refuses_a_file_that_appeared_since_the_check(tmp_path):
    path = tmp_path / "out.json"
    cli.check_new_file(path, "--out")
    path.write_text("someone else's")  # appeared in between
    with pytest.raises(ConfigError, match="already exists"):
        cli.claim_file(path, "--out")
    assert path.read_text() == "someone else's"


@pytest.mark.parametrize("command", ["regrade", "report", "show", "compare", "resume"])
@pytest.mark.parametrize("bad", ["missing.json", "a_dir", "binary.json", "not_a_record.json"])
def test_an_unreadable_results_file_is_one_line_and_exit_2(tmp_path, capsys, no_agent, command, bad):
    (tmp_path / "a_dir").mkdir()
    (tmp_path / "binary.json").write_bytes(b"\xff\xfe\x00garbage")
    (tmp_path / "not_a_record.json").write_text('{"runs": []}')
    path = str(tmp_path / bad)
    from turngate.commands import show
    mains = {"regrade": lambda: regrade.main([path]), "report": lambda: report.main([path]),
             "show": lambda: show.main([path, "status"]), "compare": lambda: compare.main([path, path]),
             "resume": lambda: regression.main(["--resume", path, "--no-upload"])}
    assert mains[command]() == 2
    assert path in one_error_line(capsys)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a_dir", "binary.json", "not_a_record.json"]


def test_two_simulations_in_the_same_second_get_two_directories(tmp_path, monkeypatch):
    import datetime as dt

    from turngate.commands import simulate
    frozen = dt.datetime(2026, 12, 1, 9, 0, 0)
    monkeypatch.setattr(simulate, "datetime", type("Frozen", (), {"now": staticmethod(lambda: frozen)}))
    first, second = simulate.out_dir(str(tmp_path), "v2"), simulate.out_dir(str(tmp_path), "v2")
    assert first != second and first.is_dir() and second.is_dir()
    assert [first.name, second.name] == ["sim-v2-20261201-090000", "sim-v2-20261201-090000-2"]


@pytest.mark.parametrize("args, message", [
    (["--judge", "openai:gpt-4o-mini"], "--judge openai:gpt-4o-mini: OPENAI_API_KEY is not set"),
    (["--model", "orq:x/y"], "--model orq:x/y: ORQ_API_KEY is not set"),
    (["--timeout", "0"], "--timeout must be a positive number"),
])
def test_simulate_refuses_unusable_input_before_any_conversation(tmp_path, capsys, no_agent, args, message):
    from turngate.commands import simulate
    assert simulate.main([*args, "--out", str(tmp_path / "out")]) == 2
    assert message in one_error_line(capsys)
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())


def test_a_command_called_from_python_leaves_the_callers_signal_handlers_as_they_were(tmp_path, capsys, no_agent):
    """An exit 2 holds off Ctrl-C and SIGTERM while it prints its last line; called from Python
    (a notebook, a test) the caller's handlers are back afterwards, not SIG_IGN for the rest of
    the session."""
    import signal

    # a handler of the caller's own, whatever this test process started with (a shell's background
    # job starts with SIGINT ignored)
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
        assert regression.main(["--version", "v3", "--dataset", str(tmp_path / "missing.jsonl"),
                                "--out", str(tmp_path / "o")]) == 2
        assert "error: " in capsys.readouterr().err
        assert {sig: signal.getsignal(sig) for sig in before} == before
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    finally:
        signal.signal(signal.SIGINT, previous)
