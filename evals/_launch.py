"""What the launcher scripts beside this file share. Python puts this folder, not the repository
root, on sys.path when it runs `python evals/regression.py`; the root goes first so that the
project's own packages (app/, evals/) import, as they do for `evals gate` run from the root."""
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def run(sub: str) -> None:
    here = str(Path(__file__).resolve().parent)
    sys.path[:] = [str(ROOT), *(p for p in sys.path if p and Path(p).resolve() != Path(here))]
    try:
        from turngate.cli import main
    except ImportError as exc:  # run without the project's environment: one line and exit 2, never 1
        sys.stderr.write(f"error: cannot import {exc.name or 'turngate'} ({exc}): run this with the project's "
                         "environment (. .venv/bin/activate, or pip install -e .)\n")
        raise SystemExit(2) from None
    raise SystemExit(main([sub, *sys.argv[1:]]))
