"""Proof as a stranger: the wheel built from this repository, installed into a fresh venv in a
temporary folder with no repository anywhere on its path, gates a project of a stranger's own.

That project has its own `evals/` and `app/` packages (the names of this repository's
Northwind suite and agent: the wheel must not bring or need either) and the FAQ bot
(examples/faq_bot/__init__.py, copied as it stands) as `app/agent.py`. From its folder, with
the fresh venv's `evals` only: it calibrates, gates (exit 0), gates the broken bot (exit 1) and
an agent with a syntax error (exit 2, one line), compares, reports, regrades with no extra flags
and simulates a scenario of its own; the gate steps with plug-in autoload on and off. No output
names a Northwind scorer, tool, file or version. This is how the FAQ example runs in CI: these
tests are in testpaths, so the README's `pytest -q` runs them.

Setting up takes one wheel build and one fresh venv per session (tests/standalone_helpers.py:
how, and why the dependencies come from the index); nothing asserts on time.
"""
from __future__ import annotations

import json
import re
import shutil
import subprocess
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.standalone_helpers import (
    FAQ,
    REPO,
    RUN_TIMEOUT,
    StrangerVenv,
    hits,
    northwind_scorers,
    northwind_tools,
    output_terms,
    shared_venv,
    shared_wheel,
    stranger_env,
    wheel_terms,
    wheel_texts,
    wheel_top_level,
)

AUTOLOAD = pytest.mark.parametrize("autoload", ["on", "off"])  # TURNGATE_DISABLE_PLUGIN_AUTOLOAD unset / =1

# The project's own plug-in, named in its [tool.turngate] plugins: a user's `evals` package.
OWN_EVALS = '''"""This shop's own eval suite: one failure mode of its own, on turngate's public plug-in API."""
from turngate.plugin import Case, Outcome, register_scorer


@register_scorer(reads={"max_words": int})
async def short_answer(case: Case) -> Outcome:
    """The answer has at most expect.max_words words (n/a on a row without it)."""
    limit = case.row.expect.value("max_words")
    if limit is None:
        return None
    words = len(case.turn.answer.split())
    return words <= limit, f"{words} words (at most {limit})"
'''

# An installed distribution offering a scorer through the turngate.plugins entry-point group.
ENTRY_POINT_PLUGIN = '''"""Shop extras, installed: found through the turngate.plugins entry point."""
from turngate.plugin import Case, Outcome, register_scorer


@register_scorer()
async def no_shouting(case: Case) -> Outcome:
    """The final answer is not written in capitals."""
    loud = case.turn.answer.isupper()
    return (not loud), ("shouts" if loud else "calm")
'''
PLUGIN = ("shop_extras", "shop_extras", ENTRY_POINT_PLUGIN)  # (distribution, module, source)

BAD_AGENT = '''"""An agent with a syntax error on line 4."""


async def target(inputs, seed)
    return None
'''

PYPROJECT = '''[project]
name = "faq-shop"
version = "0.1.0"

[tool.turngate]
agent = "app.agent:target"
dataset = "rows.jsonl"
thresholds = "bars.toml"
scenarios = "scenarios.toml"
personas = "personas.toml"
plugins = ["evals"]
'''

SCENARIOS = '''[[scenario]]
id = "return_window"
title = "Asks how long returns are accepted"
goal = "Find out how many days they have to return a jacket."
context = "Bought a jacket last week; it does not fit."
script = ["Hi there", "How many days do I have to return a jacket?"]
expected_output = "Within 30 days of delivery, from the FAQ."
[scenario.expect]
calls = ["search_faq"]
answer = [["30 days"]]
[scenario.goal_reached]
description = "the answer gives the return window"
answer = [["30 days"]]
'''

PERSONAS = '''[[persona]]
id = "brief"
name = "Brief customer"
background = "Wants a quick answer and leaves."
patience = 0.2
assertiveness = 0.2
politeness = 0.8
communication_style = "terse"
'''

CALIBRATED = ["tool_use", "answer_facts", "no_forbidden_action", "no_pii_leak", "short_answer"]


# --- the wheel and the fresh venv ---------------------------------------------------------

@pytest.fixture(scope="session")
def wheel(tmp_path_factory) -> Path:
    """The wheel, built once (tests/standalone_helpers.py:build_wheel), holding exactly one
    top-level package, turngate (and its dist-info): nothing named evals or app, whose names a
    stranger's own packages take. What its files say is test_the_wheel_names_nothing_of_northwind."""
    path = shared_wheel(tmp_path_factory)
    dist_info = "-".join(path.name.split("-")[:2]) + ".dist-info"  # turngate-0.1.0.dist-info
    assert wheel_top_level(path) == {"turngate", dist_info}
    with zipfile.ZipFile(path) as z:
        assert z.read(f"{dist_info}/top_level.txt").decode().split() == ["turngate"]
    return path


@pytest.fixture(scope="session")
def venv(wheel, tmp_path_factory) -> StrangerVenv:
    """A fresh venv with only the wheel and its dependencies (StrangerVenv.create: how and why),
    plus an installed entry-point plug-in (`shop-extras`: the `no_shouting` scorer), checked to
    see nothing of this repository: its turngate is the installed one, and `app`, `evals` and
    `examples` (Northwind's agent and suite, the FAQ example) are not importable."""
    venv = shared_venv(tmp_path_factory, wheel, PLUGIN)
    assert REPO not in venv.root.parents
    seen = venv.py("import json, sys, turngate; print(json.dumps([turngate.__file__, sys.path]))")
    assert seen.returncode == 0, seen.stderr
    where, path = json.loads(seen.stdout)
    assert Path(where).is_relative_to(venv.site), where
    deps = {Path(x) for x in venv.deps_paths}  # STANDALONE_DEPS=project-venv: this venv's site-packages
    assert not [p for p in path if p and Path(p).resolve().is_relative_to(REPO) and Path(p) not in deps], path
    for module in ("app.refund_agent", "app", "evals", "examples.faq_bot"):
        res = venv.py(f"import {module}")
        assert res.returncode != 0 and "ModuleNotFoundError" in res.stderr, (module, res.stdout, res.stderr)
    print(f"\nstandalone venv ({venv.mode}): venv {venv.timings['venv']:.1f} s, install {venv.timings['install']:.1f} s")
    return venv


class Project:
    """A stranger's project folder and the fresh venv's `evals`, run from that folder."""

    def __init__(self, root: Path, venv: StrangerVenv, autoload: str = "on"):
        assert REPO not in root.parents and not any((p / "pyproject.toml").exists() for p in root.parents)
        self.root, self.venv, self.outputs = root, venv, []
        self.env = stranger_env(root / ".cache", **({"TURNGATE_DISABLE_PLUGIN_AUTOLOAD": "1"} if autoload == "off" else {}))

    def write(self, rel: str, text: str) -> Path:
        path = self.root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def evals(self, *args: str, code: int | None = 0) -> subprocess.CompletedProcess:
        res = subprocess.run([str(self.venv.evals), *args], cwd=self.root, env=self.env, capture_output=True,
                             text=True, timeout=RUN_TIMEOUT)
        said = f"evals {' '.join(args)}: exit {res.returncode}\n--- stdout\n{res.stdout}\n--- stderr\n{res.stderr}"
        self.outputs.append((f"evals {' '.join(args)}", res.stdout + res.stderr))
        if code is not None:
            assert res.returncode == code, said
        assert "Traceback" not in res.stdout + res.stderr, said
        return res

    def northwind(self) -> list[str]:
        """Every line of every output so far naming something of Northwind's."""
        terms = output_terms()
        return [h for what, text in self.outputs for h in hits(text, terms, what)]


def results_path(res: subprocess.CompletedProcess) -> str:
    """The results file a gate names: `results: results/<job>-<stamp>.json   elapsed: ...`."""
    found = re.findall(r"^results: (\S+\.json)", res.stdout + res.stderr, re.MULTILINE)
    assert found, res.stdout + res.stderr
    return found[-1]


def plain(root: Path, venv: StrangerVenv, autoload: str) -> Project:
    """The folder the issue describes: its own evals/__init__.py, app/__init__.py and
    app/agent.py (the FAQ bot as it stands), the FAQ rows, bars and reference; no pyproject."""
    p = Project(root, venv, autoload)
    p.write("evals/__init__.py", "")
    p.write("app/__init__.py", "")
    shutil.copy(FAQ / "__init__.py", p.write("app/agent.py", ""))
    shutil.copy(FAQ / "dataset.jsonl", root / "rows.jsonl")
    shutil.copy(FAQ / "thresholds.toml", root / "bars.toml")
    shutil.copy(FAQ / "reference.json", root / "reference.json")
    p.write("app/bad.py", BAD_AGENT)
    return p


def project(root: Path, venv: StrangerVenv, autoload: str) -> Project:
    """A project with [tool.turngate] defaults, its own `evals` plug-in (the short_answer
    scorer) and the FAQ rows, two of them with a max_words for it; no bars yet."""
    p = Project(root, venv, autoload)
    p.write("pyproject.toml", PYPROJECT)
    p.write("evals/__init__.py", OWN_EVALS)
    p.write("app/__init__.py", "")
    shutil.copy(FAQ / "__init__.py", p.write("app/agent.py", ""))
    p.write("app/bad.py", BAD_AGENT)
    rows = [json.loads(line) for line in (FAQ / "dataset.jsonl").read_text().splitlines() if line.strip()]
    for row in rows:
        if row["id"] in ("thanks_only", "paypal"):
            row["inputs"]["expect"]["max_words"] = 12
    p.write("rows.jsonl", "".join(json.dumps(r) + "\n" for r in rows))
    p.write("scenarios.toml", SCENARIOS)
    p.write("personas.toml", PERSONAS)
    return p


def given_bars() -> str:
    """The FAQ bot's bars file and a bar for the project's own scorer."""
    text = (FAQ / "thresholds.toml").read_text()
    declared = re.search(r"^scorers = (\[.*\])$", text, re.MULTILINE)
    names = json.loads(declared.group(1)) + ["short_answer"]
    return text.replace(declared.group(0), f"scorers = {json.dumps(names)}") + "\n[scorers.short_answer]\nbar = 1.0\n"


def assert_one_line_syntax_error(res: subprocess.CompletedProcess) -> None:
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and not res.stdout.strip(), res.stdout + res.stderr
    assert re.search(r"app/bad\.py:4\b", lines[0]) and "SyntaxError" in lines[0], lines[0]


# --- the tests ----------------------------------------------------------------------------

def test_the_wheel_names_nothing_of_northwind(wheel):
    """No file of the wheel (code, docstrings, schemas, metadata) mentions "northwind" or a
    Northwind scorer or tool (read from evals/scorers.py and app/northwind/server.py)."""
    assert {"refund_outcome", "no_unauthorized_attempt"} <= northwind_scorers()
    assert {"refund_order", "escalate_to_human"} <= northwind_tools()
    terms = wheel_terms()
    found = [h for name, text in wheel_texts(wheel) for h in hits(text, terms, name)]
    assert not found, f"{len(found)} line(s) of the wheel name Northwind:\n" + "\n".join(found)


def test_the_fresh_venv_sees_nothing_of_the_repository(venv):
    """The fixture's checks, as a test of their own; and the one console script is there."""
    res = subprocess.run([str(venv.evals), "--help"], cwd=venv.root, env=stranger_env(venv.root / "cache"),
                         capture_output=True, text=True, timeout=RUN_TIMEOUT)
    assert res.returncode == 0 and "gate" in res.stdout, res.stdout + res.stderr


@AUTOLOAD
def test_the_faq_bot_as_the_issue_checks_it(venv, tmp_path, autoload):
    """From a folder of the stranger's own: pass (0), the broken bot (1), a syntax error (2,
    one line naming the file and line, no traceback); nothing names Northwind."""
    p = plain(tmp_path / "shop", venv, autoload)
    flags = ["--dataset", "rows.jsonl", "--thresholds", "bars.toml"]
    passed = p.evals("gate", "--agent", "app.agent:target", *flags)
    assert "PASS" in passed.stdout and (p.root / results_path(passed)).is_file()
    failed = p.evals("gate", "--agent", "app.agent:broken_target", *flags, code=1)
    assert "FAIL" in failed.stdout and "tool_use" in failed.stdout
    assert_one_line_syntax_error(p.evals("gate", "--agent", "app.bad:target", *flags, code=2))
    assert not p.northwind(), "\n".join(p.northwind())
    ours = {x.name for x in (p.root / "results").iterdir()}  # the results land in the project's folder
    assert len(ours) == 2 and not ours & {x.name for x in (REPO / "results").glob("*")}


@AUTOLOAD
def test_a_project_calibrates_then_gates_with_no_flags(venv, tmp_path, autoload):
    """A project with [tool.turngate] and its own `evals` plug-in and no bars yet: calibrate
    writes the bars (its own scorer among them, no policy_judge: there is no judge) and the
    reference beside them; the gate with no flags at all then passes on them, the broken bot
    fails; nothing names Northwind, in the outputs or in the bars file a stranger reads."""
    p = project(tmp_path / "shop", venv, autoload)
    p.evals("calibrate", "--trials", "3", "--scorers", *CALIBRATED, "--write")
    bars = (p.root / "bars.toml").read_text()
    assert "[scorers.short_answer]" in bars and "[scorers.policy_judge]" not in bars
    assert set(json.loads((p.root / "reference.json").read_text())["provenance"]["scorers"]) == set(CALIBRATED)
    assert "PASS" in p.evals("gate").stdout
    assert "FAIL" in p.evals("gate", "--agent", "app.agent:broken_target", code=1).stdout
    p.outputs.append(("bars.toml", bars))
    assert not p.northwind(), "\n".join(p.northwind())


@AUTOLOAD
def test_a_project_gates_compares_reports_and_regrades(venv, tmp_path, autoload):
    """The same project given its bars (the FAQ bot's and one for its own scorer) and the FAQ
    bot's reference: the gate with no flags passes, the broken bot fails, a syntax error is one
    line; compare, report and regrade (with the record's own bars: no flags) read the two
    results files; nothing names Northwind."""
    p = project(tmp_path / "shop", venv, autoload)
    p.write("bars.toml", given_bars())
    shutil.copy(FAQ / "reference.json", p.root / "reference.json")

    good = results_path(p.evals("gate"))
    broken = p.evals("gate", "--agent", "app.agent:broken_target", code=1)
    assert "tool_use" in broken.stdout and "answer_facts" in broken.stdout
    bad = results_path(broken)
    assert_one_line_syntax_error(p.evals("gate", "--agent", "app.bad:target", code=2))

    compared = p.evals("compare", good, bad)
    assert "faq-bot-broken vs baseline faq-bot" in compared.stdout and "worse" in compared.stdout
    p.evals("report", good, "--out", "report.html")
    assert "short_answer" in (p.root / "report.html").read_text()
    assert "0 verdict(s) changed" in p.evals("regrade", good).stdout
    assert "FAIL" in p.evals("regrade", bad, code=1).stdout
    assert not p.northwind(), "\n".join(p.northwind())


@AUTOLOAD
def test_an_installed_plugin_loads_only_with_autoload(venv, tmp_path, autoload):
    """shop-extras' `no_shouting` (turngate.plugins entry point) is there with autoload on; with
    TURNGATE_DISABLE_PLUGIN_AUTOLOAD=1 a bars file naming it is a one-line error (exit 2)."""
    p = plain(tmp_path / "shop", venv, autoload)
    p.write("extras.toml", textwrap.dedent("""
        [provenance]
        scorers = ["tool_use", "no_shouting"]
        [scorers.tool_use]
        bar = 1.0
        [scorers.no_shouting]
        bar = 1.0
    """))
    flags = ["--agent", "app.agent:target", "--dataset", "rows.jsonl", "--thresholds", "extras.toml", "--no-reference"]
    if autoload == "on":
        assert "no_shouting" in p.evals("gate", *flags).stdout
    else:
        res = p.evals("gate", *flags, code=2)
        assert len(res.stderr.splitlines()) == 1 and "no_shouting" in res.stderr, res.stderr
    assert not p.northwind(), "\n".join(p.northwind())


@AUTOLOAD
def test_a_strangers_first_mistakes_are_one_line(venv, tmp_path, autoload):
    """What a stranger meets first, each exit 2 with one line naming nothing of Northwind's:
    no bars file yet, bars but no reference beside them, an agent module that is not there."""
    p = plain(tmp_path / "shop", venv, autoload)
    (p.root / "reference.json").unlink()
    flags = ["--agent", "app.agent:target", "--dataset", "rows.jsonl"]
    for args in ([*flags, "--thresholds", "none.toml"], [*flags, "--thresholds", "bars.toml"],
                 ["--agent", "app.nothing:target", "--dataset", "rows.jsonl", "--thresholds", "bars.toml"]):
        res = p.evals("gate", *args, code=2)
        assert len(res.stderr.splitlines()) == 1 and res.stderr.startswith("error: "), res.stderr
    assert not p.northwind(), "\n".join(p.northwind())


def test_the_help_names_nothing_of_northwind(venv, tmp_path):
    """`evals --help` and each subcommand's --help, read from a stranger's folder."""
    p = plain(tmp_path / "shop", venv, "on")
    listed = p.evals("--help").stdout
    commands = re.findall(r"^  (\S+)  ", listed, re.MULTILINE)
    assert {"gate", "compare", "regrade", "report", "calibrate", "simulate"} <= set(commands), listed
    for command in commands:
        p.evals(command, "--help")
    assert not p.northwind(), "\n".join(p.northwind())


def test_a_project_simulates_its_own_scenario(venv, tmp_path):
    """`evals simulate` with the project's own scenario and persona (the built-in scripted user
    says the scenario's script): the bot reaches the goal, the broken bot is a finding naming
    the scorer (still exit 0: failures are findings); each run writes its conversations and
    summary under results/; no output names Northwind."""
    p = project(tmp_path / "shop", venv, "on")
    ok = p.evals("simulate", "--seeds", "1", "--max-turns", "2")
    assert "goal_reached" in ok.stdout and "no failures" in ok.stdout, ok.stdout
    found = p.evals("simulate", "--seeds", "1", "--max-turns", "2", "--agent", "app.agent:broken_target")
    assert "tool_use" in found.stdout, found.stdout
    runs = sorted((p.root / "results").glob("sim-*"))
    assert len(runs) == 2
    summaries = [json.loads((run / "summary.json").read_text()) for run in runs]
    assert sorted(s["failed"] for s in summaries) == [0, 1] and all(s["conversations"] == 1 for s in summaries)
    assert all(len(list(run.glob("return_window--brief--s0*.json"))) == 1 for run in runs)
    assert not p.northwind(), "\n".join(p.northwind())
