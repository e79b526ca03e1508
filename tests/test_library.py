"""The package as a library: its public names, its one command and its subcommands, how its
modules import each other, and output a script or a pipe can read."""
import ast
import importlib
import json
import os
import pkgutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests import prefork
from turngate.cli import COMMANDS as COMMAND_MODULES

REPO = Path(__file__).resolve().parent.parent
EVALS = REPO / "evals"  # Northwind's suite and its launchers
LIBRARY = REPO / "turngate"
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
COMMANDS = set(COMMAND_MODULES.values())  # turngate.commands.regression, turngate.commands.compare, ... (turngate/cli.py)


def run(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True,
                          check=True, timeout=60).stdout


def test_import_turngate_loads_nothing_heavy():
    loaded = json.loads(run("import sys, json, turngate, turngate.plugin; print(json.dumps(sorted(m for m in sys.modules "
                            "if m.startswith(('turngate.', 'evals', 'app', 'evaluatorq', 'langchain', 'pydantic', 'rich')) "
                            "and m != 'turngate.plugin')))"))
    assert loaded == []


def test_every_public_name_resolves():
    import turngate

    assert set(turngate.__all__) == set(turngate._EXPORTS)
    for name in turngate.__all__:
        assert getattr(turngate, name) is not None, name
    assert turngate.Turn is importlib.import_module("turngate.core.turn").Turn
    with pytest.raises(AttributeError):
        turngate.not_a_name  # noqa: B018


def test_one_console_script_whose_subcommands_are_command_mains():
    assert SCRIPTS == {"evals": "turngate.cli:run"}
    assert set(COMMAND_MODULES) == {"gate", "compare", "show", "regrade", "report", "calibrate", "calibrate-judge",
                                    "simulate", "merge", "review", "mutate"}
    for name, module in COMMAND_MODULES.items():
        assert callable(importlib.import_module(module).main), name


def test_the_installed_command_lists_its_subcommands_and_refuses_an_unknown_one():
    evals = Path(sys.executable).with_name("evals")
    ok = subprocess.run([evals, "--help"], capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and all(name in ok.stdout for name in COMMAND_MODULES)
    bad = subprocess.run([evals, "gait"], capture_output=True, text=True, timeout=60)
    assert bad.returncode == 2 and bad.stderr.strip().startswith("error: evals: unknown command 'gait'")
    help_ = subprocess.run([evals, "show", "--help"], capture_output=True, text=True, timeout=60)
    assert help_.returncode == 0 and help_.stdout.startswith("usage: evals show")


def test_a_launcher_script_names_itself_in_usage_and_hints():
    res = subprocess.run([prefork.python(), "evals/show.py", "--help"], cwd=REPO, capture_output=True, text=True,
                         timeout=60)
    assert res.returncode == 0 and res.stdout.startswith("usage: python evals/show.py")


def imported_modules(path: Path) -> set[str]:
    """Every evals.* module a file imports, at top level or inside functions."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names}
    return found


def test_no_command_imports_another_command():
    for command in COMMANDS:
        path = REPO / (command.replace(".", "/") + ".py")
        others = (imported_modules(path) & COMMANDS) - {command}
        assert not others, f"{path.name} imports {sorted(others)}; move the shared code into a library module"


def test_library_modules_import_no_command():
    for path in sorted(LIBRARY.rglob("*.py")):
        module = ".".join(path.relative_to(REPO).with_suffix("").parts)
        if module in COMMANDS or module in ("turngate.__init__", "turngate.cli"):
            continue
        assert not (imported_modules(path) & COMMANDS), f"{module} imports a command module"


def test_no_module_in_evals_shadows_an_importable_module():
    """`python evals/x.py` puts evals/ first on sys.path: a file there named like a package the
    code imports (say `select.py` or `rich.py`) would be imported instead of it."""
    names = {p.stem for p in EVALS.glob("*.py")} | {p.name for p in EVALS.iterdir() if (p / "__init__.py").exists()}
    names.discard("__init__")
    others = {m.name for m in pkgutil.iter_modules([p for p in sys.path if Path(p or ".").resolve() != EVALS])}
    shadowing = names & (others | set(sys.stdlib_module_names) | set(sys.builtin_module_names))
    assert not shadowing


def test_commands_need_no_sys_path_patch():
    for path in [*EVALS.glob("*.py"), *(REPO / "scripts").glob("*.py")]:
        assert "sys.path[0] =" not in path.read_text() and "sys.path.insert" not in path.read_text(), path


def test_piped_gate_output_keeps_whole_names_and_no_evaluatorq_table(tmp_path):
    res = subprocess.run(f"{prefork.python()} evals/regression.py --version v3 --limit 6 --no-upload "
                         f"--no-reference --out {tmp_path} | cat", shell=True, cwd=REPO, capture_output=True,
                         text=True, timeout=120, env={k: v for k, v in os.environ.items() if k != "COLUMNS"})
    out = res.stdout
    for name in ("no_unauthorized_attempt", "no_forbidden_action", "policy_judge"):
        assert f" {name} " in out, out
    results = [line for line in out.splitlines() if line.startswith("results: ")]
    assert results and str(tmp_path) in results[0]  # the path on one line, not cut at 80 columns
    assert "EVALUATION RESULTS" not in out and "Detailed Results" not in out  # evaluatorq's table is opt-in


def test_agent_cli_over_stdio_prints_no_traceback():
    res = subprocess.run([prefork.python(), "-m", "app.refund_agent", "--transport", "stdio",
                          "What's the status of A-1002?"], cwd=REPO, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0, res.stderr
    assert "A-1002" in res.stdout
    assert "Traceback" not in res.stderr and "Task was destroyed" not in res.stderr, res.stderr


def test_a_new_scorer_needs_no_edit_in_the_simulation():
    """A registered scorer gets a simulation criterion from its docstring whenever a scenario
    sets an expect key it declares it reads; nothing in turngate/simulation names it."""
    from turngate.scoring import scorers

    @scorers.register_scorer(reads=("answer",))
    async def answer_is_short(case):
        """The final answer is at most three sentences."""
        return case.turn.answer.count(".") <= 3, "short"

    try:
        _criteria_of_a_new_scorer()
    finally:
        scorers.unregister("answer_is_short")


def _criteria_of_a_new_scorer():
    from turngate.simulation.convert import criteria
    from turngate.simulation.specs import load_scenarios

    scenarios = load_scenarios(REPO / "datasets" / "scenarios.toml")
    with_answer = next(s for s in scenarios if "answer" in s.expectation.model_fields_set)
    without = next(s for s in scenarios if "answer" not in s.expectation.model_fields_set)
    new = [c for c in criteria(with_answer) if c.evaluator == "answer_is_short"]
    assert [(c.type, c.description) for c in new] == [("must_happen", "The final answer is at most three sentences.")]
    assert not [c for c in criteria(without) if c.evaluator == "answer_is_short"]


def test_json_output_is_one_json_line_even_for_a_user_mistake(capsys):
    from turngate.commands import regression
    assert regression.main(["--json", "--agent", "examples.nope:target", "--no-upload"]) == 2
    out, err = capsys.readouterr()
    got = json.loads(out)  # the --json object (turngate/record/gate_json.py), with nothing but the error filled in
    assert got["exit_code"] == 2 and got["results"] is None and got["verdict"] is None and got["summary"] == {}
    assert "cannot import examples.nope" in got["error"] and err.startswith("error: ")


def test_the_three_layers_do_not_import_the_northwind_agent():
    """Sources, targets, the runner and the gate library work for any agent: importing them
    loads nothing from app/ (the Northwind agent comes in only when --agent names it)."""
    loaded = json.loads(run("import sys, json\nimport turngate.gate.run, turngate.jobs.runner, turngate.sources.row_sources, turngate.jobs.target, "
                            "turngate.core.scrubbing\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('app'))))"))
    assert loaded == []
