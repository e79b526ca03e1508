"""`python evals/review.py`: `evals review` run from this repository (Northwind's own entry point)."""
import sys

try:
    from turngate.cli import run
except ImportError as exc:  # a shell without the project's environment: one line and exit 2, never 1
    sys.stderr.write(f"error: cannot import {exc.name} ({exc}): run this with the project's environment "
                     "(. .venv/bin/activate, or pip install -e '.[dev,demo,review]')\n")
    raise SystemExit(2) from None

if __name__ == "__main__":  # worker processes (--workers) import this file: they must not run it
    run(["review", *sys.argv[1:]])
