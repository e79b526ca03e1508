"""What the review workbench's tests share: a small record with a hostile run in it, and an
`evals review` process started, read and stopped without sleeping (deadlines on its output)."""
from __future__ import annotations

import json
import os
import re
import selectors
import signal
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path

from tests import prefork
from tests.record_helpers import record, row, run
from turngate.record.results import ScorerVerdict, save_record

REPO = Path(__file__).resolve().parents[1]
HOSTILE = "<img src=x onerror=alert(1)><script>window.pwned=1</script>"
HOSTILE_USER = 'Refund "><svg onload=alert(2)> <a href="javascript:alert(3)">me</a></textarea></pre>'


def hostile_run():
    """A failing run whose every text tries to become markup: answer, user message, tool reply, explanation."""
    r = run("v2", "r5", 0, {"refund_outcome": False, "policy_judge": False}, answer=HOSTILE, user=HOSTILE_USER)
    turn = r.turn.model_dump()
    turn["tool_calls"] = [
        {"name": "get_order", "arguments": {"order_id": "<b>A-1001</b>"}, "result": None, "error": "<i>timeout</i>"},
        {"name": "refund_order", "arguments": {"order_id": "A-1001", "amount": 129.0},
         "result": {"ok": False, "error": "<script>window.pwned=2</script>"}, "error": None}]
    verdicts = {n: ScorerVerdict(passed=v.passed, explanation=f"{n}: {HOSTILE}") for n, v in r.verdicts.items()}
    return r.model_copy(update={"turn": type(r.turn).model_validate(turn), "verdicts": verdicts})


def review_record(folder: Path, name: str = "v2.json") -> Path:
    """6 rows x 2 trials of v2: r0#0, r2#1 and r3#0 fail refund_outcome, r4 (both trials) fails
    policy_judge, and r5#0 is the hostile run (it fails both); the other 6 runs pass."""
    runs = [run("v2", f"r{k}", t, {"refund_outcome": (k + t) % 3 != 0, "policy_judge": k != 4})
            for k in range(5) for t in range(2)]
    runs += [hostile_run(), run("v2", "r5", 1, {"refund_outcome": True, "policy_judge": True})]
    return save_record(record("v2", runs, [row(f"r{k}") for k in range(6)], trials=2), folder / name)


def evals_review(*args: str) -> list[str]:
    return [prefork.python(), str(REPO / "evals" / "review.py"), *args]


class Review:
    """A running `evals review --no-browser --port 0`: its address, API calls to it, its end."""

    def __init__(self, *args: str, timeout: float = 60) -> None:
        env = {**os.environ, "PYTHONUNBUFFERED": "1"}
        self.proc = subprocess.Popen(evals_review(*args, "--no-browser", "--port", "0"), cwd=REPO, env=env,
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines: list[str] = []
        line = self.wait_for(r"^review: (http://\S+)", timeout)
        self.url = re.search(r"http://\S+", line).group(0)
        self.base, self.token = self.url.split("/?t=")

    def wait_for(self, pattern: str, timeout: float) -> str:
        """The first stdout line matching pattern, read until a deadline (never a fixed sleep)."""
        deadline = time.monotonic() + timeout
        sel = selectors.DefaultSelector()
        sel.register(self.proc.stdout, selectors.EVENT_READ)
        buf = b""
        try:
            while time.monotonic() < deadline:
                if not sel.select(timeout=max(0.0, deadline - time.monotonic())):
                    continue
                chunk = os.read(self.proc.stdout.fileno(), 65536)
                if not chunk:
                    break
                buf += chunk
                while b"\n" in buf:
                    raw, buf = buf.split(b"\n", 1)
                    line = raw.decode()
                    self.lines.append(line)
                    if re.search(pattern, line):
                        return line
        finally:
            sel.close()
        err = self.proc.stderr.read().decode() if self.proc.poll() is not None else ""
        raise AssertionError(f"no line {pattern!r} from evals review: {self.lines} {err}")

    def call(self, path: str, body=None, *, token: str | None = None, headers: dict | None = None):
        """(status, JSON) of one API call, with the session's token unless told otherwise."""
        h = {"X-Review-Token": self.token if token is None else token}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            h["Content-Type"] = "application/json"
        h.update(headers or {})
        req = urllib.request.Request(self.base + path, data=data, headers=h, method="POST" if data else "GET")
        try:
            with urllib.request.urlopen(req, timeout=30) as res:
                return res.status, json.loads(res.read())
        except urllib.error.HTTPError as exc:
            return exc.code, json.loads(exc.read() or b"null")

    def ok(self, path: str, body=None):
        status, data = self.call(path, body)
        assert status == 200, (status, data)
        return data

    def stop(self, sig=signal.SIGTERM, timeout: float = 30) -> tuple[int, str, str]:
        self.proc.send_signal(sig)
        out, err = self.proc.communicate(timeout=timeout)
        return self.proc.returncode, "\n".join(self.lines) + "\n" + out.decode(), err.decode()

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.communicate(timeout=30)
