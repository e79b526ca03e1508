"""Start `python -m app.refund_agent.serve` on a free port and wait for its readiness line."""
from __future__ import annotations

import contextlib
import select
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests import prefork

REPO = Path(__file__).resolve().parents[1]
START_TIMEOUT_S = 60  # a bound on a wait for the readiness line, not a guess at how long it takes


@dataclass
class Served:
    url: str
    proc: subprocess.Popen


@contextlib.contextmanager
def served(*args: str):
    proc = subprocess.Popen([prefork.python(), "-m", "app.refund_agent.serve", "--port", "0", *args],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], START_TIMEOUT_S)
        line = proc.stdout.readline() if ready else ""
        if not line.startswith("serving on "):
            proc.kill()
            raise AssertionError(f"server did not start: {line!r} {proc.stderr.read()!r}")
        yield Served(url=line.split()[-1], proc=proc)
    finally:
        if proc.poll() is None:
            proc.terminate()
            proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()


def through(monkeypatch, server: Served) -> None:
    """Point the openai: provider at the local server."""
    monkeypatch.setenv("OPENAI_BASE_URL", server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "local")
