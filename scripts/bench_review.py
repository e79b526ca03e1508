"""How fast `evals review` opens a big record and moves from run to run.

    python scripts/bench_review.py [--record results/v2-....json] [--runs 22200] [--fetches 300]

Builds a record of about --runs runs from a real v2 gate record (made here with
`python evals/regression.py --version v2` unless --record names one): its gate runs replicated
over more trials (seeds 0..N-1), resealed with the record layer's save_record, so every reader's
checks pass. Then it starts `evals review BIG --no-browser --port 0` as a user would and times:

  open-to-served  from the process start to the page answering 200 (target <= 2 s)
  first queue     the page's first /api/queue and /api/state (what it waits for before showing)
  next run        /api/run of successive queue entries: what j costs (target <= 100 ms, p95)
  one event       POST /api/event of a note (written and fsynced before the answer)

A figure, not a test (this machine's load changes it): exit 1 when a target is missed.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import selectors
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
OPEN_TARGET, NEXT_TARGET = 2.0, 0.100


def real_record(folder: Path) -> Path:
    done = subprocess.run([sys.executable, "evals/regression.py", "--version", "v2", "--out", str(folder),
                           "--no-upload", "--quiet"], cwd=REPO, capture_output=True, text=True)
    if done.returncode not in (0, 1):
        raise SystemExit(f"the v2 gate failed to run: {done.stderr[-2000:]}")
    (path,) = folder.glob("v2-*.json")
    return path


def big_record(source: Path, runs: int, out: Path) -> tuple[Path, int]:
    """source's gate runs of trial 0, replicated over trials 0..T-1 (T = runs / rows), resealed."""
    from turngate.record.results import load_record, save_record

    rec = load_record(source)
    base = [r for r in rec.runs if r.stage == "gate" and r.trial == 0 and r.version == rec.meta.version]
    trials = max(1, round(runs / len(base)))
    rec.runs = [r.model_copy(update={"trial": t, "seed": t}) for t in range(trials) for r in base]
    rec.meta.trials, rec.meta.seeds, rec.meta.confirm = trials, list(range(trials)), None
    rec.meta.baseline = None
    rec.replan()
    save_record(rec, out)
    return out, len(rec.runs)


def call(base: str, token: str, path: str, body=None):
    headers = {"X-Review-Token": token}
    data = None
    if body is not None:
        data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
    req = urllib.request.Request(base + path, data=data, headers=headers)
    t0 = time.perf_counter()
    with urllib.request.urlopen(req, timeout=60) as res:
        raw = res.read()
    return time.perf_counter() - t0, json.loads(raw) if raw[:1] in (b"{", b"[") else raw


def first_line(proc, pattern: str, timeout: float) -> str:
    deadline, buf = time.monotonic() + timeout, b""
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ)
    while time.monotonic() < deadline:
        if not sel.select(timeout=deadline - time.monotonic()):
            continue
        chunk = os.read(proc.stdout.fileno(), 65536)
        if not chunk:
            break
        buf += chunk
        for line in buf.decode(errors="replace").splitlines():
            if re.search(pattern, line):
                return line
    raise SystemExit(f"evals review printed no address: {buf.decode(errors='replace')} {proc.stderr.read().decode()}")


def ms(x: float) -> str:
    return f"{1000 * x:.1f} ms"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--record", type=Path, help="a real gate record to replicate (default: run the v2 gate)")
    p.add_argument("--runs", type=int, default=22_200)
    p.add_argument("--fetches", type=int, default=300, help="successive runs fetched for the next-run figure")
    a = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        source = a.record or real_record(tmp)
        t0 = time.perf_counter()
        big, n = big_record(source, a.runs, tmp / "big.json")
        print(f"record: {n} runs, {big.stat().st_size / 1e6:.1f} MB (built and sealed in {time.perf_counter() - t0:.1f} s)")

        start = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "evals/review.py", str(big), "--no-browser", "--port", "0"], cwd=REPO,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            url = re.search(r"http://\S+", first_line(proc, r"^review: http", 120)).group(0)
            base, token = url.split("/?t=")
            with urllib.request.urlopen(url, timeout=60) as res:
                assert res.status == 200
            opened = time.perf_counter() - start
            tq, q = call(base, token, "/api/queue")
            ts, _ = call(base, token, "/api/state")
            items, digest = q["items"], q["sources"][0]["digest"]
            times = []
            for it in items[:a.fetches]:
                t, data = call(base, token, f"/api/run?source={digest}&run={urllib.parse.quote(it['run'])}")
                assert data["run"] == it["run"]
                times.append(t)
            te = [call(base, token, "/api/event", {"op": "note", "source": digest, "run": it["run"],
                                                   "text": f"bench note {i}"})[0] for i, it in enumerate(items[:50])]
        finally:
            proc.send_signal(signal.SIGTERM)
            proc.communicate(timeout=30)
        p95 = statistics.quantiles(times, n=20)[-1] if len(times) >= 20 else max(times)
        print(f"queue: {len(items)} runs to read ({q['failing']} failing of {q['runs']}), "
              f"/api/queue {ms(tq)}, {len(json.dumps(q)) / 1e3:.0f} kB; /api/state {ms(ts)}")
        print(f"open-to-served: {opened:.2f} s (target <= {OPEN_TARGET:.0f} s) "
              f"{'OK' if opened <= OPEN_TARGET else 'MISSED'}")
        print(f"next run: median {ms(statistics.median(times))}, p95 {ms(p95)}, max {ms(max(times))} over "
              f"{len(times)} fetches (target <= {ms(NEXT_TARGET)}) {'OK' if p95 <= NEXT_TARGET else 'MISSED'}")
        print(f"one event (written, fsynced): median {ms(statistics.median(te))}, max {ms(max(te))}")
        print(f"session ended: exit {proc.returncode}")
        return 0 if opened <= OPEN_TARGET and p95 <= NEXT_TARGET else 1


if __name__ == "__main__":
    raise SystemExit(main())
