"""`python evals/calibrate.py`: runs the command in evals/commands/calibrate.py (kept here so the documented path works)."""
import runpy
import sys

try:
    import evals  # noqa: F401  (the installed package; this folder is on sys.path only as a script's home)
except ImportError as exc:  # run without the project's environment: one line and exit 2, never 1
    sys.stderr.write(f"error: cannot import {exc.name or 'evals'} ({exc}): run this with the project's "
                     "environment (. .venv/bin/activate, or pip install -e .)\n")
    raise SystemExit(2) from None

if __name__ == "__main__":
    runpy.run_module("evals.commands.calibrate", run_name="__main__", alter_sys=True)
