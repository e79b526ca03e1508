"""What the launcher scripts beside this file share: each runs one subcommand of `evals`, the
installed command, from this repository. The repository root is found through its
pyproject.toml like any project's, so nothing here touches sys.path."""
import sys


def run(sub: str) -> None:
    try:
        from turngate.cli import main
    except ImportError as exc:  # run without the project's environment: one line and exit 2, never 1
        sys.stderr.write(f"error: cannot import {exc.name or 'turngate'} ({exc}): run this with the project's "
                         "environment (. .venv/bin/activate, or pip install -e '.[dev,ray,demo]')\n")
        raise SystemExit(2) from None
    raise SystemExit(main([sub, *sys.argv[1:]]))
