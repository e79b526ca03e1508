"""A second agent through the same gate: examples/faq_bot (one tool, no Northwind server).
Its gate passes as shipped, and a broken copy of it fails."""
import json
import subprocess
from pathlib import Path

import pytest

import examples.faq_bot as faq_bot
from tests import prefork
from turngate.commands import regression
from turngate.record.results import load_record, save_record

REPO = Path(__file__).resolve().parent.parent
EXAMPLE = REPO / "examples" / "faq_bot"
ARGS = ["--dataset", str(EXAMPLE / "dataset.jsonl"), "--thresholds", str(EXAMPLE / "thresholds.toml"), "--no-upload"]
SCORERS = {"tool_use", "answer_facts", "no_forbidden_action", "no_pii_leak"}


def gate(tmp_path, agent="examples.faq_bot:target", *extra) -> int:
    return regression.main(["--agent", agent, *ARGS, "--out", str(tmp_path), *extra])


def only_record(tmp_path):
    (path,) = [p for p in tmp_path.glob("*.json") if not p.name.startswith(".")]
    return load_record(path), path


def test_the_faq_bot_passes_its_own_gate_with_the_documented_command(tmp_path):
    res = subprocess.run([prefork.python(), "evals/regression.py", "--agent", "examples.faq_bot:target",
                          "--dataset", "examples/faq_bot/dataset.jsonl",
                          "--thresholds", "examples/faq_bot/thresholds.toml",
                          "--no-upload", "--out", str(tmp_path), "--json"],
                         cwd=REPO, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-2000:]
    summary = json.loads(res.stdout)  # --json: stdout is the JSON summary only
    assert summary["exit_code"] == 0 and summary["job"] == "faq-bot"
    assert "Traceback" not in res.stderr
    record, _ = only_record(tmp_path)
    assert record.meta.agent == "examples.faq_bot:target" and record.meta.model == "rules"
    assert len(record.runs) == 10 and {r.job for r in record.runs} == {"faq-bot"}
    # the bars file selects the scorers: Northwind's refund scorers do not run on this agent
    assert all(set(r.verdicts) == SCORERS for r in record.runs)
    assert all(v.passed is not False for r in record.runs for v in r.verdicts.values())


def test_a_broken_copy_of_the_bot_fails_the_gate(tmp_path):
    assert gate(tmp_path, "examples.faq_bot:broken_target") == 1
    record, _ = only_record(tmp_path)
    failed = {n for r in record.runs for n, v in r.verdicts.items() if v.passed is False}
    assert {"tool_use", "answer_facts", "no_pii_leak"} <= failed


def test_a_wrong_faq_entry_fails_the_gate(tmp_path, monkeypatch):
    """The same bot with one fact changed (a data regression, not a code one) exits 1."""
    monkeypatch.setitem(faq_bot.FAQ, "returns", (faq_bot.FAQ["returns"][0], "Returns are accepted for 14 days."))
    assert gate(tmp_path) == 1
    record, _ = only_record(tmp_path)
    bad = [(r.row_id, n) for r in record.runs_for(record.meta.version) for n, v in r.verdicts.items()
           if v.passed is False]
    assert bad == [("returns_window", "answer_facts")]
    # confirmed: the reruns of that row fail it too
    assert {r.row_id for r in record.runs_for(record.meta.version, "confirm")} == {"returns_window"}


def test_a_plain_target_has_no_versions(tmp_path, capsys):
    assert gate(tmp_path, "examples.faq_bot:target", "--version", "v2") == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("error: --agent examples.faq_bot:target: --version") and "\n" not in err


@pytest.mark.parametrize("agent, fragment", [
    ("examples.nope:target", "cannot import examples.nope"),
    ("examples.faq_bot:nothing", "has no attribute 'nothing'"),
    ("examples.faq_bot:FAQ", "not an async callable"),
    ("justaword", "expected 'package.module:callable'"),
])
def test_a_bad_agent_is_one_line_and_exit_2(tmp_path, capsys, agent, fragment):
    assert gate(tmp_path, agent) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in err and "\n" not in err and "Traceback" not in err
    assert not list(tmp_path.glob("*.json"))


def test_rows_naming_a_tool_the_agent_lacks_are_rejected_before_any_run(tmp_path, capsys):
    rows = (EXAMPLE / "dataset.jsonl").read_text().splitlines()
    bad = json.loads(rows[0])
    bad["id"] = "typo"
    bad["inputs"]["expect"]["forbid"] = ["refund_order"]  # a Northwind tool; the FAQ bot has only search_faq
    data = tmp_path / "rows.jsonl"
    data.write_text("\n".join([*rows[1:], json.dumps(bad)]) + "\n")
    code = regression.main(["--agent", "examples.faq_bot:target", "--dataset", str(data), "--thresholds",
                            str(EXAMPLE / "thresholds.toml"), "--no-upload", "--out", str(tmp_path / "out")])
    assert code == 2
    err = capsys.readouterr().err.strip()
    assert f"{data}:10: inputs.expect.forbid.0.name: unknown tool 'refund_order'" in err
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("*.json"))


def test_bars_for_an_unknown_scorer_are_an_error(tmp_path, capsys):
    bars = tmp_path / "bars.toml"
    bars.write_text((EXAMPLE / "thresholds.toml").read_text() + "\n[scorers.tool_usage]\nbar = 1.0\n")
    code = regression.main(["--agent", "examples.faq_bot:target", "--dataset", str(EXAMPLE / "dataset.jsonl"),
                            "--thresholds", str(bars), "--no-upload", "--out", str(tmp_path)])
    assert code == 2 and "tool_usage" in capsys.readouterr().err


def test_resume_restores_the_run_settings_and_refuses_new_ones(tmp_path, capsys):
    assert gate(tmp_path / "a", "examples.faq_bot:target", "--max-retries", "5", "--judge-timeout", "7",
                "--timeout", "30") == 0
    record, path = only_record(tmp_path / "a")
    whole = [(r.row_id, r.verdicts) for r in record.runs]
    record.runs = record.runs[:4]  # as if interrupted after 4 rows
    record.meta.complete, record.meta.interrupted = False, True
    save_record(record, path)
    assert regression.main(["--resume", str(path), "--trials", "3"]) == 2
    assert "drop --trials" in capsys.readouterr().err
    # the agent comes from the command line, never from the file: without --agent, the default differs
    assert regression.main(["--resume", str(path), "--no-upload"]) == 2
    err = capsys.readouterr().err
    assert "made by agent 'examples.faq_bot:target'" in err and err.count("\n") == 1
    assert regression.main(["--resume", str(path), "--no-upload", "--agent", "examples.faq_bot:target"]) == 0
    done = load_record(path)
    m = done.meta
    assert (m.agent, m.max_retries, m.judge_timeout, m.timeout) == ("examples.faq_bot:target", 5, 7.0, 30.0)
    assert sorted((r.row_id, r.verdicts) for r in done.runs) == sorted(whole, key=lambda x: x[0])
    assert len(m.resumed) == 1


def test_rows_from_python_through_the_public_api():
    import turngate

    rows = [json.loads(line) for line in (EXAMPLE / "dataset.jsonl").read_text().splitlines()]
    loaded = turngate.ListSource(rows, name="faq-in-python").load(tool_names=faq_bot.target.tool_names)
    assert [r.id for r in loaded.rows] == [r["id"] for r in rows] and loaded.name == "faq-in-python"
    with pytest.raises(turngate.DatasetError, match="faq-in-python row 2: duplicate id"):
        turngate.ListSource([rows[0], rows[0]], name="faq-in-python").load()


def test_adding_a_scorer_is_one_function_and_one_bar(tmp_path, request):
    """A new failure mode with a new expect key: one decorated scorer function and a bar. The
    dataset schema, the simulation and the gate need no edit."""
    from turngate.scoring.registry import register_scorer, unregister

    @register_scorer(reads={"max_words": int})
    async def short_answer(case):
        """The final answer has at most expect.max_words words."""
        limit = case.row.expect.value("max_words")
        if limit is None:
            return None
        words = len(case.turn.answer.split())
        return words <= limit, f"{words} words (at most {limit})"

    request.addfinalizer(lambda: unregister("short_answer"))
    rows = [json.loads(line) for line in (EXAMPLE / "dataset.jsonl").read_text().splitlines()]
    rows[0]["inputs"]["expect"]["max_words"] = 40  # "You can return an item within 30 days ..." passes
    rows[1]["inputs"]["expect"]["max_words"] = 5   # the shipping answer is longer: fails
    data = tmp_path / "rows.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    for bar, code in ((1.0, 1), (0.5, 0)):
        bars = tmp_path / f"bars-{bar}.toml"
        bars.write_text((EXAMPLE / "thresholds.toml").read_text() + f"\n[scorers.short_answer]\nbar = {bar}\n")
        out = tmp_path / f"out-{bar}"
        assert regression.main(["--agent", "examples.faq_bot:target", "--dataset", str(data), "--thresholds",
                                str(bars), "--no-upload", "--no-reference", "--out", str(out)]) == code
    record, _ = only_record(out)
    got = {r.row_id: r.verdicts["short_answer"].passed for r in record.runs}
    assert got["returns_window"] is True and got["shipping_time"] is False
    assert {v for k, v in got.items() if k not in ("returns_window", "shipping_time")} == {None}
    bad = tmp_path / "typo.jsonl"
    rows[0]["inputs"]["expect"]["max_wordz"] = 3
    bad.write_text(json.dumps(rows[0]) + "\n")
    from turngate.sources.dataset import DatasetError, load_rows

    with pytest.raises(DatasetError, match=r"typo.jsonl:1: inputs.expect.max_wordz: unknown key"):
        load_rows(bad)


BOT = '''
from turngate import Message, ToolCall, Turn, target_factory, user_turns
def reply(inputs, seed, version="good"):
    text = user_turns(inputs)[-1]
    answer = "Opening hours: 9 to 5." if version == "good" else "No idea."
    return Turn(version=version, model="rules", seed=seed, answer=answer,
                messages=[Message(role="user", content=text), Message(role="assistant", content=answer)],
                tool_calls=[ToolCall(name="lookup", arguments={"q": text}, result={"ok": True})])


class Bot:
    name = "hours-bot"
    tool_names = frozenset({"lookup"})

    async def __call__(self, inputs, seed):
        return reply(inputs, seed)


run = Bot()


@target_factory
def versions(options):
    async def call(inputs, seed):
        return reply(inputs, seed, options.version or "good")
    call.name, call.version = f"hours-bot@{options.version or 'good'}", options.version or "good"
    return call
'''


def test_someone_elses_package_from_the_current_directory(tmp_path, monkeypatch):
    """--agent mypkg.bot:run with mypkg in the working directory (not installed), an object target
    and a factory with versions of its own; --baseline runs two of them."""
    pkg = tmp_path / "hours_pkg_for_test"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bot.py").write_text(BOT)
    (tmp_path / "rows.jsonl").write_text(json.dumps(
        {"id": "hours", "inputs": {"message": "When are you open?", "expect": {"calls": ["lookup"], "answer": [["9 to 5"]]}},
         "expected_output": "9 to 5"}) + "\n")
    (tmp_path / "bars.toml").write_text('[provenance]\nscorers = ["tool_use", "answer_facts"]\n'
                                        "[scorers.tool_use]\nbar = 1.0\n[scorers.answer_facts]\nbar = 1.0\n")
    monkeypatch.chdir(tmp_path)
    common = ["--dataset", "rows.jsonl", "--thresholds", "bars.toml", "--no-reference", "--no-upload"]
    assert regression.main(["--agent", "hours_pkg_for_test.bot:run", *common, "--out", "a"]) == 0
    assert regression.main(["--agent", "hours_pkg_for_test.bot:versions", "--version", "bad", *common,
                            "--out", "b"]) == 1
    assert regression.main(["--agent", "hours_pkg_for_test.bot:versions", "--version", "good", "--baseline", "bad",
                            *common, "--out", "c"]) == 0
    record, _ = only_record(tmp_path / "c")
    assert {r.job for r in record.runs} == {"hours-bot@good", "hours-bot@bad"}
    assert (record.meta.version, record.meta.baseline, record.meta.job) == ("good", "bad", "hours-bot@good")
