"""Console-script entry points ([project.scripts] in pyproject.toml). Each makes Ctrl-C during
start-up one line and exit 2 first (cli.exit_quietly_on_interrupt), then imports its command,
the slow part, and runs it; pointing a script at `evals.regression:main` directly would import
everything before any handler exists."""
from __future__ import annotations

import importlib

from evals import cli

# entry point -> the command module whose main() it runs
MODULES = {"gate": "evals.regression", "regrade": "evals.regrade", "show": "evals.show",
           "compare": "evals.compare", "report": "evals.report", "calibrate": "evals.calibrate",
           "calibrate_judge": "evals.calibrate_judge", "simulate": "evals.simulate",
           "merge": "evals.merge"}


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
