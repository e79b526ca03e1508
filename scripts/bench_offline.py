"""Seconds the emulator's offline model takes for one chat request, by input size and shape.

    python scripts/bench_offline.py [--sizes 4096,16384,65536,262144,1048576] [--shapes prose,noise,...]
        [--stop-after 30]

In process (serve_chat.complete, what a worker runs), v3's system prompt and 22 tools, one user
message of the given size. Target: linear growth, at most 1 s for 64 KB. A shape that took longer
than --stop-after seconds is not run at the larger sizes. Speed is measured here, never in tests.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path

from turngate.core.project import make_importable

REPO = Path(__file__).resolve().parents[1]
make_importable(REPO)  # app/ (the system under test) is not packaged: run from any directory

from app.refund_agent.serve_chat import complete  # noqa: E402
from app.refund_agent.versions import load_version  # noqa: E402


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _corpus() -> str:
    rows = [json.loads(line)["inputs"] for line in (REPO / "datasets" / "northwind.jsonl").open()]
    return " ".join(r.get("message") or " ".join(r.get("turns") or []) for r in rows)


SHAPES = {
    "prose": lambda n: _repeat("Hi, I ordered A-1001 last week and it arrived broken. Can you refund it please? ", n),
    "dataset": lambda n: _repeat(_corpus() + " ", n),
    "noise": lambda n: ("refund A-1001 " + "x" * n)[:n],
    "digits": lambda n: ("refund A-1001 " + "1" * n)[:n],
    "words": lambda n: _repeat("the quick brown fox jumps over the lazy dog ", n),
    "dots": lambda n: ("refund A-1001" + "." * n)[:n],
    "orders": lambda n: _repeat("A-1001 and ", n),
    "commas": lambda n: ("refund A-1001 " + _repeat(", ", n))[:n],
    "spaces": lambda n: ("refund" + " " * n)[:n - 6] + "A-1001",
    "newlines": lambda n: ("refund A-1001" + "\n" * n)[:n],
}
TOOLS = ["get_order", "check_return_eligibility", "refund_order", "get_customer", "find_customer", "get_shipment",
         "cancel_order", "escalate_to_human", "send_email", "convert_currency"]


def body(text: str) -> dict:
    tools = [{"type": "function", "function": {"name": t, "description": t, "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}} for t in TOOLS]
    return {"model": "offline", "tools": tools,
            "messages": [{"role": "system", "content": load_version("v3").instructions},
                         {"role": "user", "content": text}]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="4096,16384,65536,262144,1048576")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--stop-after", type=float, default=30.0)
    a = p.parse_args()
    sizes = [int(s) for s in a.sizes.split(",")]
    shapes = a.shapes.split(",")
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        print(f"error: unknown shape {unknown[0]!r}; shapes: {', '.join(SHAPES)}", file=sys.stderr)
        return 2
    asyncio.run(complete(body("hi")))  # imports and caches, untimed
    print(f"{'shape':10s}" + "".join(f"{n // 1024:>9d}K" for n in sizes) + "   (seconds; target: <= 1 s at 64K)")
    for shape in shapes:
        cells = []
        for n in sizes:
            start = time.perf_counter()
            asyncio.run(complete(body(SHAPES[shape](n))))
            took = time.perf_counter() - start
            cells.append(f"{took:10.3f}")
            if took > a.stop_after:
                cells += [f"{'-':>10s}"] * (len(sizes) - len(cells))
                break
        print(f"{shape:10s}" + "".join(cells), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
