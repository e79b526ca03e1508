"""Console-script entry points ([project.scripts] in pyproject.toml). Each makes Ctrl-C during
start-up one line and exit 2 first (cli.exit_quietly_on_interrupt), then imports its command,
the slow part, and runs it; pointing a script at `evals.commands.regression:main` directly would import
everything before any handler exists."""
from __future__ import annotations

import importlib

from evals.core import cli_support as cli  # entry point -> the command module whose main() it runs

MODULES = {"gate": "evals.commands.regression", "regrade": "evals.commands.regrade", "show": "evals.commands.show",
           "compare": "evals.commands.compare", "report": "evals.commands.report", "calibrate": "evals.commands.calibrate",
           "calibrate_judge": "evals.commands.calibrate_judge", "simulate": "evals.commands.simulate",
           "merge": "evals.commands.merge"}


def _run(name: str) -> int:
    cli.exit_quietly_on_interrupt()
    return importlib.import_module(MODULES[name]).main()


def gate() -> int:
    return _run("gate")


def regrade() -> int:
    return _run("regrade")


def show() -> int:
    return _run("show")


def compare() -> int:
    return _run("compare")


def report() -> int:
    return _run("report")


def calibrate() -> int:
    return _run("calibrate")


def calibrate_judge() -> int:
    return _run("calibrate_judge")


def simulate() -> int:
    return _run("simulate")


def merge() -> int:
    return _run("merge")
