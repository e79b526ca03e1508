"""The generic library on its own: a copy of evals/ with no app/ (an `app` that cannot be
imported) gates, compares, regrades, reports, calibrates, judges with its own judge and
simulates a small agent written here, from an empty folder outside the repo; the results
land in that folder. The agent's scorer is one decorated function plus one bar."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

AGENT = '''
"""A one-tool shop helper, not Northwind: looks up opening hours and answers."""
from turngate.core.turn import Message, ToolCall, Turn
from turngate.jobs.target import user_turns
from turngate.scoring.judges import register_judge
from turngate.scoring.registry import register_scorer

HOURS = {"monday": "9-17", "saturday": "10-14", "sunday": "closed"}


async def target(inputs, seed):
    said = user_turns(inputs)
    text = said[-1].lower()
    day = next((d for d in HOURS if d in text), None)
    calls, answer = [], "Ask me about our opening hours."
    if day:
        calls.append(ToolCall(name="opening_hours", arguments={"day": day}, result={"ok": True, "hours": HOURS[day]}))
        answer = f"On {day.title()} we are open {HOURS[day]}."
    messages = [m for s in said for m in (Message(role="user", content=s),)] + [Message(role="assistant", content=answer)]
    return Turn(version="shop-1", model="rules", seed=seed, answer=answer, messages=messages, tool_calls=calls)


@register_scorer(reads={"max_words": int})
async def short_answer(case):
    """The answer has at most expect.max_words words."""
    limit = case.row.expect.value("max_words")
    if limit is None:
        return None
    words = len(case.turn.answer.split())
    return words <= limit, f"{words} words (at most {limit})"


class PolicyJudge:
    """A judge of this shop's one-line policy: never promise Sunday opening."""

    def __init__(self, *, timeout=60.0):
        self.name = "shop-policy"

    async def __call__(self, case):
        bad = "sunday" in case.turn.answer.lower() and "closed" not in case.turn.answer.lower()
        return (not bad), ("promised Sunday opening" if bad else "keeps the policy")


register_judge("shop-policy", PolicyJudge)
'''

ROWS = [
    {"id": "monday", "inputs": {"message": "When are you open on Monday?", "expect": {
        "calls": [{"name": "opening_hours", "args": {"day": "monday"}}], "answer": [["9-17"]], "max_words": 12}},
     "expected_output": "Monday 9-17."},
    {"id": "sunday", "inputs": {"message": "Are you open on Sunday?", "expect": {
        "calls": ["opening_hours"], "answer": [["closed"]]}}, "expected_output": "Closed on Sunday."},
    {"id": "hello", "inputs": {"message": "hi", "expect": {"forbid": ["opening_hours"], "max_words": 10}},
     "expected_output": "A greeting."},
]

BARS = """[provenance]
scorers = ["tool_use", "answer_facts", "no_forbidden_action", "short_answer", "policy_judge"]

[scorers.tool_use]
bar = 1.0
[scorers.answer_facts]
bar = 1.0
[scorers.no_forbidden_action]
bar = 1.0
[scorers.short_answer]
bar = 1.0
[scorers.policy_judge]
bar = 1.0
"""

SCENARIOS = """
[[scenario]]
id = "sunday_hours"
title = "Asks about Sunday"
goal = "Find out whether the shop opens on Sunday."
context = "The customer wants to visit on Sunday."
expected_output = "Closed on Sunday."
[scenario.expect]
calls = ["opening_hours"]
"""

PERSONAS = """
[[persona]]
id = "brief"
name = "Brief customer"
patience = 0.2
assertiveness = 0.2
politeness = 0.8
technical_level = 0.2
emotional_arc = "stable"
communication_style = "terse"
background = "Wants a quick answer."
tactics = []
"""


@pytest.fixture(scope="module")
def world(tmp_path_factory):
    root = tmp_path_factory.mktemp("standalone")
    lib = root / "lib"
    shutil.copytree(REPO / "evals", lib / "evals", ignore=shutil.ignore_patterns("__pycache__"))
    (lib / "app").mkdir()  # an `app` that is not there: any import of it fails loudly
    (lib / "app" / "__init__.py").write_text('raise ImportError("app/ is not part of the generic library")\n')
    (lib / "shopbot.py").write_text(AGENT)
    work = root / "work"  # an empty folder outside the repo: the results land here
    work.mkdir()
    (work / "rows.jsonl").write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    (work / "bars.toml").write_text(BARS)
    (work / "scenarios.toml").write_text(SCENARIOS)
    (work / "personas.toml").write_text(PERSONAS)
    # the project's defaults, as an adopter writes them
    (work / "pyproject.toml").write_text(textwrap.dedent("""
        [tool.turngate]
        agent = "shopbot:target"
        dataset = "rows.jsonl"
        thresholds = "bars.toml"
        scenarios = "scenarios.toml"
        personas = "personas.toml"
        plugins = ["shopbot"]
    """))
    env = {k: v for k, v in os.environ.items() if not k.startswith(("EVALS_", "ORQ_", "OPENAI_"))}
    env.update(PYTHONPATH=str(lib), TURNGATE_DISABLE_PLUGIN_AUTOLOAD="1")

    def run(command: str, *args: str, code: int | None = 0) -> subprocess.CompletedProcess:
        res = subprocess.run([sys.executable, str(lib / "evals" / f"{command}.py"), *args], cwd=work, env=env,
                             capture_output=True, text=True, timeout=600)
        if code is not None:
            assert res.returncode == code, f"{command} {args}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"
        assert "Traceback" not in res.stderr, res.stderr
        return res

    return work, run


def results(work: Path) -> list[Path]:
    return sorted((work / "results").glob("*.json"), key=lambda p: p.stat().st_mtime)


def test_the_copy_really_lacks_app(world):
    work, run = world
    res = subprocess.run([sys.executable, "-c", "import app"], cwd=work, env={**os.environ, "PYTHONPATH": str(
        work.parent / "lib")}, capture_output=True, text=True)
    assert res.returncode != 0 and "not part of the generic library" in res.stderr


def test_gate_compare_regrade_report_calibrate_and_simulate(world):
    work, run = world
    gate = run("regression", "--judge", "shop-policy", "--no-reference", "--trials", "2")
    assert "PASS" in gate.stdout + gate.stderr
    first = results(work)[-1]
    record = json.loads(first.read_text())
    verdicts = {(r["row_id"], r["trial"]): r["verdicts"] for r in record["runs"]}
    assert verdicts[("monday", 0)]["short_answer"]["passed"] is True
    assert verdicts[("sunday", 0)]["short_answer"]["passed"] is None  # no max_words: n/a
    assert verdicts[("sunday", 0)]["policy_judge"]["passed"] is True

    run("regression", "--judge", "shop-policy", "--no-reference", "--trials", "2")
    second = results(work)[-1]
    assert second != first
    run("compare", str(first), str(second))
    run("regrade", str(first), "--judge", "shop-policy")
    run("report", str(first), "--out", str(work / "report.html"))
    assert "short_answer" in (work / "report.html").read_text()
    run("calibrate", "--trials", "3", "--judge", "shop-policy", "--thresholds", str(work / "proposed.toml"),
        "--write", "--against", "none")
    assert "[scorers.short_answer]" in (work / "proposed.toml").read_text()
    assert (work / "reference.json").exists() or (work / "proposed.toml").with_name("reference.json").exists()
    sim = run("simulate", "--seeds", "1", "--max-turns", "2", "--judge", "shop-policy", code=None)
    assert sim.returncode in (0, 1), sim.stderr
    assert list((work / "results").glob("sim-*"))
    assert not (REPO / "results" / first.name).exists()  # nothing landed in the repo


def test_a_broken_scorer_fails_the_gate(world, tmp_path):
    work, run = world
    rows = [dict(ROWS[0]), *ROWS[1:]]
    rows[0] = json.loads(json.dumps(ROWS[0]))
    rows[0]["inputs"]["expect"]["max_words"] = 2  # the Monday answer is longer: short_answer fails
    bad = work / "tight.jsonl"
    bad.write_text("".join(json.dumps(r) + "\n" for r in rows))
    res = run("regression", "--dataset", str(bad), "--judge", "shop-policy", "--no-reference", code=1)
    assert "short_answer" in res.stdout + res.stderr
