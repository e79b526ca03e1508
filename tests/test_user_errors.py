"""An agent module (or a plug-in) that cannot be imported is the user's to fix: `evals gate` and
`evals calibrate` exit 2 with exactly one line on stderr, naming the file and line where it broke,
never a traceback and never exit 1 (which CI reads as a regression). Run as a user runs them: the
installed `evals` command, from a project folder of its own with a tiny agent."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import prefork

REPO = Path(__file__).resolve().parents[1]

GOOD_AGENT = '''
from turngate.core.turn import Message, Turn


async def target(inputs, seed):
    text = inputs.get("message") or ""
    return Turn(version="echo", model="rules", seed=seed, answer=text,
                messages=[Message(role="user", content=text), Message(role="assistant", content=text)])
'''

# module name -> (its source, the line the error is reported at, what the line says)
BROKEN = {
    "syntax_bot": ("async def target(inputs, seed)\n    return None\n", 1, "SyntaxError: expected ':'"),
    "raising_bot": ("X = 1\n\n1 / 0\n", 3, "ZeroDivisionError: division by zero"),
    "runtime_bot": ('import os\nraise RuntimeError("no config for the bot")\n', 2,
                    "RuntimeError: no config for the bot"),
    "missing_bot": ('"""needs a package that is not installed"""\nimport nonexistent_pkg_xyz  # noqa\n', 2,
                    "ModuleNotFoundError: No module named 'nonexistent_pkg_xyz'"),
    # the agent imports a helper of its own that raises: the helper's file and line are named
    "nested_bot": ("import nested_helper  # noqa\n", None, "RuntimeError: boom in the helper"),
}
HELPER = 'def setup():\n    raise RuntimeError("boom in the helper")\n\n\nsetup()\n'


@pytest.fixture
def project(tmp_path):
    """A folder of the user's own: rows, bars, a working agent and the broken ones. No pyproject.toml,
    so nothing of this repository's (its plug-in, its defaults) is loaded."""
    (tmp_path / "rows.jsonl").write_text(
        '{"id": "hello", "inputs": {"message": "hi", "expect": {"forbid": ["refund_order"]}}, '
        '"expected_output": "A greeting."}\n')
    (tmp_path / "bars.toml").write_text('[provenance]\nscorers = ["no_forbidden_action"]\n\n'
                                        '[scorers.no_forbidden_action]\nbar = 1.0\n')
    (tmp_path / "echo_bot.py").write_text(GOOD_AGENT)
    for name, (source, _, _) in BROKEN.items():
        (tmp_path / f"{name}.py").write_text(source)
    (tmp_path / "nested_helper.py").write_text(HELPER)
    return tmp_path


def evals(folder: Path, *args: str, **env: str) -> subprocess.CompletedProcess:
    script = Path(prefork.evals())  # the console script, through the prefork server when there is one
    command = [str(script)] if script.exists() else [sys.executable, "-c", "from turngate.cli import run; run()"]
    clean = {k: v for k, v in os.environ.items()
             if not k.startswith(("EVALS_", "ORQ_", "OPENAI_", "TURNGATE_", "PYTHONPATH"))}
    clean.update(TURNGATE_DISABLE_PLUGIN_AUTOLOAD="1", **env)
    return subprocess.run([*command, *args], cwd=folder, env=clean, capture_output=True, text=True, timeout=300)


def one_line(res: subprocess.CompletedProcess) -> str:
    assert res.returncode == 2, f"exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    assert "Traceback" not in res.stderr + res.stdout, res.stderr
    lines = res.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), res.stderr
    return lines[0]


COMMANDS = {
    "gate": ["gate", "--dataset", "rows.jsonl", "--thresholds", "bars.toml", "--no-upload", "--no-reference"],
    "calibrate": ["calibrate", "--dataset", "rows.jsonl", "--thresholds", "new/bars.toml", "--trials", "3",
                  "--against", "none", "--write"],
    "mutate": ["mutate", "--dataset", "rows.jsonl", "--thresholds", "bars.toml", "--no-reference"],
}


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("module", list(BROKEN))
def test_an_agent_module_that_cannot_be_imported_is_one_line_naming_file_and_line(project, command, module):
    _, line, why = BROKEN[module]
    where = f"{project / 'nested_helper.py'}:2" if line is None else f"{project / f'{module}.py'}:{line}"
    got = one_line(evals(project, *COMMANDS[command], "--agent", f"{module}:target"))
    assert got.startswith(f"error: {where}: --agent {module}:target: importing {module} failed: {why}"), got
    assert not list(project.glob("results/*.json")) and not list(project.glob("new/*"))  # nothing written


@pytest.mark.parametrize("command", list(COMMANDS))
def test_an_agent_module_that_is_not_there_is_one_line(project, command):
    got = one_line(evals(project, *COMMANDS[command], "--agent", "no_such_bot:target"))
    assert "--agent 'no_such_bot:target': cannot import no_such_bot" in got


def test_the_working_agent_passes_so_the_cases_above_test_only_the_import(project):
    res = evals(project, *COMMANDS["gate"], "--agent", "echo_bot:target")
    assert res.returncode == 0, res.stdout + res.stderr


@pytest.mark.parametrize("command", list(COMMANDS))
@pytest.mark.parametrize("source, line, why", [
    ("from turngate.plugin import register_scorer  # noqa\n\nSCORES = (\n", 3, "SyntaxError: '(' was never closed"),
    ('raise RuntimeError("plug-in misconfigured")\n', 1, "RuntimeError: plug-in misconfigured"),
])
def test_a_plug_in_that_cannot_be_imported_is_one_line_naming_file_and_line(project, command, source, line, why):
    (project / "shop_scorers.py").write_text(textwrap.dedent(source))
    res = evals(project, *COMMANDS[command], "--agent", "echo_bot:target",
                TURNGATE_PLUGINS="shop_scorers", PYTHONPATH=str(project))
    got = one_line(res)
    assert got.startswith(f"error: {project / 'shop_scorers.py'}:{line}: plug-in shop_scorers: importing it failed: "
                          f"{why}"), got
