"""Gating one's own agent from Python (turngate.run_gate): the same gate, record and verdict as
evals/regression.py, without argument parsing or sys.exit; bad input is a ConfigError."""
import asyncio
import json
import subprocess
import sys
from pathlib import Path

import pytest

import examples.faq_bot as faq_bot
import turngate
from turngate.commands import compare, regrade, regression
from turngate.core.errors import ConfigError
from turngate.core.turn import Message, ToolCall, Turn
from turngate.jobs.target import target_factory, user_turns
from turngate.record.results import load_record
from turngate.verdict.thresholds import load_thresholds

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "faq_bot"
FAQ = {"rows": str(EXAMPLE / "dataset.jsonl"), "thresholds": str(EXAMPLE / "thresholds.toml")}
FAQ_ROW = json.loads((EXAMPLE / "dataset.jsonl").read_text().splitlines()[0])
FAQ_SCORERS = {"tool_use", "answer_facts", "no_forbidden_action", "no_pii_leak"}


def results(directory: Path) -> list[Path]:
    return sorted(p for p in directory.glob("*.json") if not p.name.startswith("."))


def test_the_faq_bot_passes_its_gate_through_the_api(tmp_path):
    result = turngate.run_gate(faq_bot.target, **FAQ, out=tmp_path, quiet=True)
    assert isinstance(result, turngate.GateResult)
    assert result.passed and result.exit_code == 0 and result.verdict.line.startswith("PASS")
    assert result.path == results(tmp_path)[0]
    m = result.record.meta
    assert (m.agent, m.job, m.complete, m.seeds) == ("examples.faq_bot:target", "faq-bot", True, [0])
    assert m.reference == str(EXAMPLE / "reference.json")  # the accepted run beside the bars, as the CLI
    assert len(result.record.runs) == 10 and all(set(r.verdicts) == FAQ_SCORERS for r in result.record.runs)
    assert set(result.verdict.scorers) == FAQ_SCORERS and all(s.ok for s in result.verdict.scorers.values())


def test_the_broken_faq_bot_fails_and_the_verdict_names_what_failed(tmp_path):
    result = turngate.run_gate(faq_bot.broken_target, **FAQ, out=tmp_path, quiet=True)
    assert not result.passed and result.exit_code == 1
    v = result.verdict
    assert v.line.startswith("FAIL")
    failed = {n for n, s in v.scorers.items() if s.ok is False}
    assert {"tool_use", "answer_facts", "no_pii_leak"} <= failed and "no_forbidden_action" not in failed
    assert all(any(r.startswith(f"{n}:") for r in v.reasons) for n in failed)
    # the verdict returned is the verdict stored: the one finish() made
    stored = load_record(result.path).verdict
    assert stored.line == v.line and stored.exit_code == 1 and stored.reasons == v.reasons


def test_the_record_is_the_one_the_cli_writes(tmp_path, capsys):
    api = turngate.run_gate(faq_bot.broken_target, **FAQ, out=tmp_path / "api", quiet=True)
    assert regression.main(["--agent", "examples.faq_bot:broken_target", "--dataset", FAQ["rows"],
                            "--thresholds", FAQ["thresholds"], "--no-upload", "--out", str(tmp_path / "cli")]) == 1
    cli = load_record(results(tmp_path / "cli")[0])
    from_disk = load_record(api.path)
    assert from_disk.model_dump() == api.record.model_dump()  # what the result holds is what the file holds
    raw_api, raw_cli = json.loads(api.path.read_text()), json.loads(results(tmp_path / "cli")[0].read_text())
    assert raw_api.keys() == raw_cli.keys() and raw_api["meta"].keys() == raw_cli["meta"].keys()
    assert raw_api["meta"]["schema"] == raw_cli["meta"]["schema"]
    assert from_disk.summary == cli.summary and from_disk.rows == cli.rows
    assert [r.model_dump() for r in from_disk.runs] == [r.model_dump() for r in cli.runs]
    differ = {k for k, v in from_disk.meta.model_dump().items() if cli.meta.model_dump()[k] != v}
    assert differ <= {"argv", "started", "elapsed_s", "git_commit"}
    # later commands read it as they read the CLI's: compare finds no flip between the two runs,
    assert compare.main([str(results(tmp_path / "cli")[0]), str(api.path)]) == 0
    assert "regressed (0): none" in capsys.readouterr().out
    # and regrade re-scores its stored Turns exactly as it does the CLI's
    regraded = []
    for n, path in enumerate([api.path, results(tmp_path / "cli")[0]]):
        out = tmp_path / f"regraded-{n}.json"
        code = regrade.main([str(path), "--thresholds", FAQ["thresholds"], "--out", str(out)])
        regraded.append((code, load_record(out).summary))
    assert regraded[0] == regraded[1]
    # with the bot's own bars, regrade judges only the scorers they name (as the gate ran them)
    assert regraded[0][0] == api.exit_code and set(regraded[0][1][api.record.meta.version].scorers) == set(
        load_thresholds(FAQ["thresholds"]).bars())


# A second agent nobody calibrated here: rows and bars written in Python, no files.
ROWS = [
    {"id": "open", "inputs": {"message": "When are you open?", "expect": {"calls": ["lookup"], "answer": [["9 to 5"]]}},
     "expected_output": "9 to 5 on weekdays"},
    {"id": "weekend", "inputs": {"turns": ["hi", "Are you open on Sunday?"], "tags": ["multi-turn"],
                                 "expect": {"calls": ["lookup"], "answer": [["closed"]]}},
     "expected_output": "closed on Sundays"},
]
BARS = {"tool_use": 1.0, "answer_facts": 1.0}


def make_bot(answers: dict[str, str], *, search: bool = True):
    calls = []

    async def hours_bot(inputs, seed):
        calls.append(seed)
        text = user_turns(inputs)[-1]
        answer = answers["sun" if "sunday" in text.lower() else "week"]
        tools = [ToolCall(name="lookup", arguments={"q": text}, result={"ok": True})] if search else []
        return Turn(version="hours", model="rules", seed=seed, answer=answer, tool_calls=tools,
                    messages=[Message(role="user", content=text), Message(role="assistant", content=answer)])

    hours_bot.tool_names = frozenset({"lookup"})
    return hours_bot, calls


GOOD = {"week": "We are open 9 to 5 on weekdays.", "sun": "We are closed on Sundays."}


def test_an_agent_written_in_python_with_rows_and_bars_in_python(tmp_path):
    good, calls = make_bot(GOOD)
    result = turngate.run_gate(good, rows=ROWS, thresholds=BARS, seeds=[0, 1], out=tmp_path, quiet=True)
    assert result.passed, result.verdict.line
    assert sorted(calls) == [0, 0, 1, 1] and result.record.meta.reference is None  # bars only: none given
    assert result.record.meta.thresholds == BARS and set(result.verdict.scorers) == set(BARS)

    wrong, _ = make_bot({**GOOD, "sun": "Sunday hours are 10 to 4."})
    failed = turngate.run_gate(wrong, rows=ROWS, thresholds=BARS, seeds="0-1", out=tmp_path, quiet=True)
    assert failed.exit_code == 1 and "answer_facts" in failed.verdict.line and "tool_use" not in failed.verdict.line
    bad = [(r.row_id, n) for r in failed.record.runs for n, v in r.verdicts.items() if v.passed is False]
    assert sorted(bad) == [("weekend", "answer_facts")] * 2

    lazy, _ = make_bot(GOOD, search=False)
    assert "tool_use" in turngate.run_gate(lazy, rows=ROWS, thresholds=BARS, out=tmp_path, quiet=True).verdict.line


def test_a_factory_gets_its_version(tmp_path):
    @target_factory
    def hours(options):
        bot, _ = make_bot(GOOD if options.version == "good" else {**GOOD, "week": "Open 8 to 4."})
        bot.name, bot.version = f"hours@{options.version}", options.version
        return bot

    assert turngate.run_gate(hours, version="good", rows=ROWS, thresholds=BARS, out=tmp_path, quiet=True).passed
    bad = turngate.run_gate(hours, version="bad", rows=ROWS, thresholds=BARS, out=tmp_path, quiet=True)
    assert bad.exit_code == 1 and bad.record.meta.version == "bad"


def test_inside_a_running_event_loop(tmp_path):
    """A notebook cell or an async test: await the async variant, or call run_gate all the same."""
    good, _ = make_bot(GOOD)

    async def main():
        awaited = await turngate.run_gate_async(good, rows=ROWS, thresholds=BARS, out=tmp_path, quiet=True)
        called = turngate.run_gate(good, rows=ROWS, thresholds=BARS, out=tmp_path, quiet=True)
        return awaited, called

    awaited, called = asyncio.run(main())
    assert awaited.passed and called.passed and awaited.path != called.path


def test_quiet_prints_nothing_and_loud_prints_the_verdict(tmp_path, capsys):
    good, _ = make_bot(GOOD)
    turngate.run_gate(good, rows=ROWS, thresholds=BARS, out=tmp_path, quiet=True)
    assert capsys.readouterr().out == ""
    result = turngate.run_gate(good, rows=ROWS, thresholds=BARS, out=tmp_path)
    assert result.verdict.line in capsys.readouterr().out


def bad_row_file(tmp_path):
    row = json.loads(json.dumps(FAQ_ROW))
    row["inputs"]["expect"]["forbid"] = ["refund_order"]  # a tool the FAQ bot does not have
    path = tmp_path / "rows.jsonl"
    path.write_text(json.dumps(row) + "\n")
    return str(path)


@pytest.mark.parametrize("change, fragment", [
    ({"thresholds": {"tool_use": 1.0, "tool_usage": 1.0}}, "unknown scorer 'tool_usage'"),
    ({"thresholds": {}}, "no bar for scorer"),
    ({"thresholds": {"tool_use": 1.5}}, "outside (0, 1]"),
    ({"thresholds": {"tool_use": "high"}}, "tool_use"),
    ({"thresholds": "nowhere/bars.toml"}, "no thresholds file"),
    ({"rows": "nowhere.jsonl"}, "no such dataset file"),
    ({"rows": [{"id": "x", "inputs": {}}]}, "python row 1"),
    ({"rows": [FAQ_ROW, FAQ_ROW]}, "duplicate id 'returns_window'"),
    ({"rows": "BAD_ROW_FILE"}, "unknown tool 'refund_order'"),
    ({"rows": 42}, "expected a JSONL path"),
    ({"seeds": []}, "seeds"),
    ({"seeds": [0, 0]}, "repeats a seed"),
    ({"parallelism": 0}, "parallelism"),
    ({"timeout": 0}, "timeout must be a positive"),
    ({"reference": str(REPO / "evals" / "reference.json")}, "another dataset"),
    ({"version": "v2"}, "needs an agent factory"),
    ({"target": faq_bot.FAQ}, "not an async callable"),
    ({"target": "examples.faq_bot:nothing"}, "has no attribute 'nothing'"),
])
def test_bad_input_is_a_one_line_config_error_before_any_agent_call(tmp_path, change, fragment):
    called = []

    async def spy(inputs, seed):
        called.append(seed)
        return await faq_bot.target(inputs, seed)

    spy.name, spy.tool_names = "faq-bot", faq_bot.target.tool_names
    kwargs = {**FAQ, "out": tmp_path / "out", "quiet": True, **change}
    if kwargs["rows"] == "BAD_ROW_FILE":
        kwargs["rows"] = bad_row_file(tmp_path)
    with pytest.raises(ConfigError) as err:
        turngate.run_gate(kwargs.pop("target", spy), **kwargs)
    message = str(err.value)
    assert fragment in message and "\n" not in message
    assert called == [] and results(tmp_path / "out") == []  # nothing ran, no results file


def test_no_reference_beside_the_bars_is_an_error_unless_declined(tmp_path):
    bars = tmp_path / "bars.toml"
    bars.write_text((EXAMPLE / "thresholds.toml").read_text())
    with pytest.raises(ConfigError, match="reference=False"):
        turngate.run_gate(faq_bot.target, rows=FAQ["rows"], thresholds=bars, out=tmp_path, quiet=True)
    result = turngate.run_gate(faq_bot.target, rows=FAQ["rows"], thresholds=bars, reference=False, out=tmp_path,
                            quiet=True)
    assert result.passed and result.record.meta.reference is None


def readme_block() -> str:
    """The Python block of the README's "Gate your own agent" section."""
    section = (REPO / "README.md").read_text().split("## Gate your own agent", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n")[2].split("```", 1)[0]  # [1] is the target's sketch


def test_the_readme_example_runs_as_written(tmp_path, monkeypatch):
    code = readme_block()
    assert "turngate.run_gate(target" in code
    (tmp_path / "examples").symlink_to(REPO / "examples")  # its relative paths; results/ lands in tmp_path
    monkeypatch.chdir(tmp_path)
    namespace = {}
    exec(compile(code, "README.md", "exec"), namespace)  # its asserts are the test
    assert namespace["result"].passed and len(namespace["result"].record.runs) == 30
    assert len(results(tmp_path / "results")) == 2


def test_the_faq_bot_example_tests_pass(tmp_path):
    from examples.faq_bot import test_faq_bot_gate as example

    example.test_the_bot_passes_its_gate(tmp_path / "a")
    example.test_a_broken_bot_fails_it(tmp_path / "b")
    asyncio.run(example.test_the_gate_from_async_code(tmp_path / "c"))


INTERRUPTED = """
import asyncio, json, os, signal, sys
import turngate
from examples.faq_bot import target

async def bot(inputs, seed):  # Ctrl-C while the third row runs
    if "password" in str(inputs).lower():
        os.kill(os.getpid(), signal.SIGINT)
        await asyncio.sleep(30)
    return await target(inputs, seed)

bot.name, bot.tool_names = "faq-bot", target.tool_names
r = turngate.run_gate(bot, rows="examples/faq_bot/dataset.jsonl", thresholds="examples/faq_bot/thresholds.toml",
                   out=sys.argv[1], quiet=True, parallelism=1)
print(json.dumps([r.exit_code, r.passed, r.verdict.line, str(r.path)]))
"""


def test_an_interrupted_run_is_exit_2_and_kept(tmp_path):
    """In a process of its own: the signal must not reach the test runner."""
    res = subprocess.run([sys.executable, "-c", INTERRUPTED, str(tmp_path)], cwd=REPO, capture_output=True,
                         text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    code, passed, line, path = json.loads(res.stdout.strip().splitlines()[-1])
    assert (code, passed, line) == (2, False, "interrupted: the run did not finish")
    record = load_record(path)
    assert record.meta.interrupted and record.verdict is None and len(record.runs) < 10


def test_workers_run_a_target_named_by_its_import_path_and_refuse_an_object(tmp_path):
    """workers=2: the conversations in two processes that import the target; the same Turns as in
    process. An object cannot be rebuilt in a worker: one ConfigError before any call."""
    import turngate
    from tests import mutate_bot

    bars = {"no_forbidden_action": 1.0}
    local = turngate.run_gate("tests.mutate_bot:target", rows=mutate_bot.ROWS, thresholds=bars, seeds=[0, 1],
                              out=tmp_path / "a", quiet=True)
    pooled = turngate.run_gate("tests.mutate_bot:target", rows=mutate_bot.ROWS, thresholds=bars, seeds=[0, 1],
                               out=tmp_path / "b", quiet=True, workers=2)
    assert pooled.record.meta.workers == 2 and pooled.exit_code == local.exit_code == 0
    answers = {(r.row_id, r.trial): r.turn.answer for r in local.record.runs}
    assert {(r.row_id, r.trial): r.turn.answer for r in pooled.record.runs} == answers
    with pytest.raises(turngate.ConfigError, match="a worker rebuilds the target from its import path"):
        turngate.run_gate(mutate_bot.target, rows=mutate_bot.ROWS, thresholds=bars, out=tmp_path / "c", workers=2)
    with pytest.raises(turngate.ConfigError, match="workers must be a whole number of at least 1"):
        turngate.run_gate("tests.mutate_bot:target", rows=mutate_bot.ROWS, thresholds=bars, out=tmp_path, workers=0)
