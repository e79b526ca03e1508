"""What every command shares: exit codes, one-line errors for user mistakes, provenance."""
from __future__ import annotations

import functools
import hashlib
import subprocess
import sys
from pathlib import Path

from app.refund_agent.secrets import scrub
from evals.dataset import DatasetError
from evals.errors import ConfigError
from evals.record import RecordError

EXIT_PASS, EXIT_FAIL, EXIT_UNJUDGED = 0, 1, 2
REPO = Path(__file__).resolve().parents[1]
USER_ERRORS = (ConfigError, DatasetError, RecordError)


def quiet_logs() -> None:
    """evaluatorq (and fastmcp) log through loguru; keep those logs to warnings and up, one line
    each, no tracebacks with local variables (loguru's diagnose would print request headers),
    and every secret scrubbed."""
    from loguru import logger

    def patch(record) -> None:
        exc = record["exception"]
        if exc is not None and exc.value is not None:
            record["message"] += f" ({type(exc.value).__name__}: {exc.value})"
            record["exception"] = None
        record["message"] = scrub(record["message"])

    logger.remove()
    logger.configure(patcher=patch)
    logger.add(sys.stderr, level="WARNING", format="{level}: {message}", backtrace=False, diagnose=False)


def guarded(main):
    """User mistakes become `error: <where>: <what>` and exit 2, never a traceback."""

    @functools.wraps(main)
    def run(argv=None) -> int:
        quiet_logs()
        try:
            return main(argv)
        except USER_ERRORS as exc:
            print(f"error: {scrub(str(exc))}", file=sys.stderr)
            return EXIT_UNJUDGED
        except KeyboardInterrupt:
            print("interrupted", file=sys.stderr)
            return EXIT_UNJUDGED

    return run


def sha256_file(path: str | Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
