"""Median warm ask_agent latency of the offline model on the 40 seed tasks.

    python scripts/bench_agent.py [--version v3] [--repeats 3]

Warm: one untimed pass first (imports, server, graph compile, MCP connection), then each
task is timed `repeats` times through the sync ask_agent. Target: median under 50 ms.
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from app.refund_agent.client import ask_agent
from turngate.sources.dataset import load_rows

REPO = Path(__file__).resolve().parents[1]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--version", default="v3")
    p.add_argument("--repeats", type=int, default=3)
    a = p.parse_args()
    rows = [r for r in load_rows(REPO / "datasets" / "northwind.jsonl") if r.inputs.source == "seed"]
    t0 = time.perf_counter()
    for r in rows:
        ask_agent(r.user_turns(), a.version)
    cold = time.perf_counter() - t0
    times = []
    for _ in range(a.repeats):
        for r in rows:
            t = time.perf_counter()
            turn = ask_agent(r.user_turns(), a.version)
            times.append((time.perf_counter() - t) * 1000)
            assert turn.error is None, f"{r.id}: {turn.error}"
    times.sort()
    print(f"offline ask_agent@{a.version}: {len(rows)} seed tasks x {a.repeats} warm runs")
    print(f"  first pass (cold, all tasks): {cold:.2f} s")
    print(f"  median {statistics.median(times):.1f} ms   p90 {times[int(len(times) * 0.9)]:.1f} ms   "
          f"max {times[-1]:.1f} ms   (target: median < 50 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
