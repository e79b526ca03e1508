"""A stranger's project simulates offline with nothing of Northwind: a folder outside the repo
with its own pyproject `[tool.turngate]`, a one-tool shop bot and a scenario file that uses
the built-in scripted user and the generic goals. `evals simulate` (the installed command,
plug-in autoload off) finds the failure when the bot guesses and none when it looks it up."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import prefork

SHOPBOT = '''
"""A one-tool shop helper, not Northwind: answers questions about opening hours."""
from turngate.plugin import Message, ToolCall, Turn, user_turns

HOURS = {"monday": "9-17", "saturday": "10-14", "sunday": "closed"}


def _reply(text, careful):
    day = next((d for d in HOURS if d in text.lower()), None)
    if day is None:
        return None, "Ask me about our opening hours."
    if not careful:  # guesses instead of looking it up
        return None, f"On {day.title()} we are open 9-17."
    call = ToolCall(name="opening_hours", arguments={"day": day}, result={"ok": True, "hours": HOURS[day]})
    return call, f"On {day.title()} we are {'closed' if HOURS[day] == 'closed' else 'open ' + HOURS[day]}."


def _agent(careful):
    async def target(inputs, seed):
        said, calls, messages, answer = user_turns(inputs), [], [], ""
        for text in said:
            call, answer = _reply(text, careful)
            calls += [call] if call else []
            messages += [Message(role="user", content=text), Message(role="assistant", content=answer)]
        return Turn(version="careful" if careful else "guessing", model="rules", seed=seed, answer=answer,
                    messages=messages, tool_calls=calls)
    return target


good, bad = _agent(True), _agent(False)
'''

SCENARIOS = '''
[[scenario]]
id = "weekend_hours"
title = "Asks about the weekend"
goal = "Find out when the shop opens on Saturday."
context = "The customer wants to visit at the weekend."
script = ["Are you open on Sunday?", "And on Saturday?", "Thanks, and on Monday?"]
expected_output = "Closed on Sunday; Saturday 10-14."
[scenario.expect]
calls = [{ name = "opening_hours", args = { day = "saturday" } }]
answer = [["10-14"]]
[scenario.goal_reached]
description = "the Saturday hours were looked up and given"
calls = [{ name = "opening_hours", args = { day = "saturday" } }]
answer = [["10-14"]]
'''

PERSONAS = '''
[[persona]]
id = "brief"
name = "Brief customer"
background = "Wants a quick answer."
patience = 0.2
assertiveness = 0.2
politeness = 0.8
communication_style = "terse"
'''


@pytest.fixture(scope="module")
def shop(tmp_path_factory):
    work = tmp_path_factory.mktemp("shop")
    (work / "shopbot.py").write_text(SHOPBOT)
    (work / "scenarios.toml").write_text(SCENARIOS)
    (work / "personas.toml").write_text(PERSONAS)
    (work / "rows.jsonl").write_text(json.dumps({"id": "monday", "inputs": {"message": "Open on Monday?", "expect": {
        "calls": ["opening_hours"]}}, "expected_output": "9-17."}) + "\n")
    (work / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.turngate]
        agent = "shopbot:good"
        dataset = "rows.jsonl"
        scenarios = "scenarios.toml"
        personas = "personas.toml"
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALS_", "ORQ_", "OPENAI_", "TURNGATE_"))}
    env.update(TURNGATE_DISABLE_PLUGIN_AUTOLOAD="1")
    env.pop("PYTHONPATH", None)

    def run(*args: str, code: int = 0) -> subprocess.CompletedProcess:
        res = subprocess.run([prefork.evals(), "simulate", "--seeds", "1", *args], cwd=work, env=env,
                             capture_output=True, text=True, timeout=600)
        assert res.returncode == code, f"{args}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"
        assert "Traceback" not in res.stderr, res.stderr
        return res

    # nothing of Northwind can be imported there: no suite, no agent
    probe = subprocess.run([sys.executable, "-c", "import importlib.util as u; print(u.find_spec('evals'), "
                            "u.find_spec('app'))"], cwd=work, env=env, capture_output=True, text=True, timeout=60)
    assert probe.stdout.split() == ["None", "None"], probe.stdout + probe.stderr
    return work, run


def _record(work: Path, out: str) -> dict:
    (path,) = (work / out).glob("sim-*/weekend_hours--brief--s0.json")
    return json.loads(path.read_text())


def test_a_behaving_agent_reaches_the_goal_and_fails_nothing(shop):
    work, run = shop
    res = run("--out", "good")
    assert "no failures" in res.stdout
    rec = _record(work, "good")
    assert rec["schema"] == "turngate/simulation@1"
    # the script, in order, until the goal held: the third message was never needed
    assert rec["turns"] == ["Are you open on Sunday?", "And on Saturday?"]
    assert rec["ended"] == "goal_reached" and rec["goal_reached"] is True and rec["failure"] is None
    assert rec["verdicts"]["tool_use"]["passed"] is True and rec["verdicts"]["goal_reached"]["passed"] is True
    assert "policy_judge" not in rec["verdicts"]  # no judge given: the judge-backed scorer is not run


def test_a_misbehaving_agent_is_found_after_the_turn_that_provoked_it(shop):
    work, run = shop
    res = run("--agent", "shopbot:bad", "--out", "bad")
    rec = _record(work, "bad")
    assert rec["turns"] == ["Are you open on Sunday?", "And on Saturday?", "Thanks, and on Monday?"]
    assert rec["ended"] == "script_done" and rec["goal_reached"] is False
    assert rec["failure"]["scorer"] == "tool_use" and rec["failure"]["after_turn"] == 3
    assert {f["scorer"] for f in rec["failures"]} == {"tool_use", "answer_facts", "goal_reached"}
    assert "FAIL weekend_hours--brief--s0" in res.stdout and "1 of 1 conversations failed" in res.stdout


def test_a_tactic_no_user_knows_is_a_one_line_error(shop):
    work, run = shop
    (work / "tactful.toml").write_text(PERSONAS + 'tactics = ["plead"]\n')
    res = run("--personas", "tactful.toml", "--out", "tactful", code=2)
    assert "tactics.0: unknown tactic 'plead'" in res.stderr and res.stderr.count("\n") == 1
    (work / "named.toml").write_text('user = "northwind"\n' + SCENARIOS)
    res = run("--scenarios", "named.toml", "--out", "named", code=2)
    assert "no simulated user 'northwind' is registered" in res.stderr and res.stderr.count("\n") == 1
