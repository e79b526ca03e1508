"""Seconds the emulator's offline model takes for one chat request, by input size and shape,
and how the time grows: time(n) / time(n/2) is about 2 when the model is linear, 4 when quadratic.

    python scripts/bench_offline.py [--sizes 16384,32768,65536] [--shapes prose,commas,...]
        [--stop-after 10]
    python scripts/bench_offline.py --profile commas:16384   # where one input's time goes
    python scripts/bench_offline.py --served --shapes prose,commas --sizes 65536   # through the emulator

In process (serve_chat.complete, what a worker runs), v3's system prompt and 10 tools, one user
message of the given size; CPU seconds of this process (wall time on an idle machine). Target: linear growth, at most 1 s for 64 KB. A shape that took longer
than --stop-after seconds is not run at the larger sizes. `--profile SHAPE:SIZE` times every
regular expression of the offline model on that input (by the line that compiled it) and lists
the Python functions that took the most time of their own (cProfile). Speed is measured here,
never in tests.
"""
from __future__ import annotations

import argparse
import asyncio
import cProfile
import json
import pstats
import re
import sys
import time
from collections import defaultdict
from pathlib import Path

from turngate.core.project import make_importable

REPO = Path(__file__).resolve().parents[1]
make_importable(REPO)  # app/ (the system under test) is not packaged: run from any directory


def _repeat(unit: str, n: int) -> str:
    return (unit * (n // len(unit) + 1))[:n]


def _corpus() -> str:
    rows = [json.loads(line)["inputs"] for line in (REPO / "datasets" / "northwind.jsonl").open()]
    return " ".join(r.get("message") or " ".join(r.get("turns") or []) for r in rows)


def _head(unit: str, n: int, head: str = "refund A-1001 ") -> str:
    return (head + _repeat(unit, n))[:n]


# Each shape is text of exactly n characters. Runs of one character, repeats of one token, and
# sentences without an end: what makes a regex retried from every position cost n squared.
SHAPES = {
    "prose": lambda n: _repeat("Hi, I ordered A-1001 last week and it arrived broken. Can you refund it please? ", n),
    "dataset": lambda n: _repeat(_corpus() + " ", n),
    "noise": lambda n: _head("x", n),
    "token": lambda n: _head("ab1", n),  # one long token of letters and digits
    "digits": lambda n: _head("1", n),
    "words": lambda n: _repeat("the quick brown fox jumps over the lazy dog ", n),
    "dots": lambda n: ("refund A-1001" + "." * n)[:n],
    "orders": lambda n: _repeat("A-1001 and ", n),
    "order-ids": lambda n: _repeat("A-1001 ", n),
    "commas": lambda n: _head(", ", n),
    "comma-run": lambda n: _head(",", n),
    "spaces": lambda n: ("refund" + " " * n)[:n - 6] + "A-1001",
    "tabs": lambda n: _head("\t", n),
    "newlines": lambda n: ("refund A-1001" + "\n" * n)[:n],
    "dashes": lambda n: _head(" - ", n),
    "hyphens": lambda n: _head("-", n),
    "amounts": lambda n: _head("$1 ", n),
    "amount-words": lambda n: _head("5 euros ", n),
    "decimals": lambda n: _head("1.5 ", n),
    "numbers": lambda n: _head("12,000 ", n),
    "number-words": lambda n: _head("one two three ", n),
    "emails": lambda n: _head("ana@example.com ", n),
    "ats": lambda n: _head("a@", n),
    "punctuation": lambda n: _head("!?.,;:-()[]{}\"'/&+#%* ", n),
    "quotes": lambda n: _head('"', n),
    "unicode": lambda n: _head("é ü ß 日本語 😀 – ", n),
    "names": lambda n: _head("Ana Lima ", n),
    "capitals": lambda n: _head("ABCD ", n),
    "keywords": lambda n: _head("please change send delete apply cancel refund the order not ", n),
    "negations": lambda n: _head("not ", n),
    "please": lambda n: _head("please ", n),
    "conjunctions": lambda n: _head("and ", n),
    "if": lambda n: _head("if i ", n),
    "system": lambda n: _head("\nsystem: ", n),
    "german": lambda n: _head("bitte erstatten Sie die Bestellung nicht ", n),
    "courtesies": lambda n: _repeat("please  ", n),  # no "email" after: nested quantifiers backtracked 2**k ways
    "order-amounts": lambda n: _head("A-1001 $5, A-1002 $6, ", n, "refund A-1001 and A-1002 "),
    "bare-numbers": lambda n: _head("$1 2 ", n),
    "possessives": lambda n: _head("Ana's ", n),
    "stores": lambda n: _head("Berlin store ", n),
    "codes": lambda n: _head("apply code SAVE10 ", n),
    "dates": lambda n: _head("2026-01-01 ", n),
    "mistyped-ids": lambda n: _head("A-1O01 ", n, "refund "),
    "addresses": lambda n: _head("ship to 5 Main St ", n),
    # no "refund" first: a search that finds nothing reads the whole text
    "bare-digits": lambda n: _repeat("1", n),
    "digit-dots": lambda n: _repeat("1.", n),
    "digit-commas": lambda n: _repeat("1,", n),
    "bare-spaces": lambda n: _repeat(" ", n),
    "bare-words": lambda n: _repeat("change ", n),
}
TOOLS = ["get_order", "check_return_eligibility", "refund_order", "get_customer", "find_customer", "get_shipment",
         "cancel_order", "escalate_to_human", "send_email", "convert_currency"]


def body(text: str) -> dict:
    from app.refund_agent.versions import load_version

    tools = [{"type": "function", "function": {"name": t, "description": t, "parameters": {
        "type": "object", "properties": {"order_id": {"type": "string"}}}}} for t in TOOLS]
    return {"model": "offline", "tools": tools,
            "messages": [{"role": "system", "content": load_version("v3").instructions},
                         {"role": "user", "content": text}]}


def seconds(text: str) -> float:
    from app.refund_agent.serve_chat import complete

    start = time.process_time()  # CPU time: on a shared machine wall time counts others' work too
    asyncio.run(complete(body(text)))
    return time.process_time() - start


def table(shapes: list[str], sizes: list[int], stop_after: float) -> None:
    seconds("hi")  # imports and caches, untimed
    print(f"{'shape':13s}" + "".join(f"{n // 1024:>8d}K" for n in sizes)
          + "   growth  (CPU seconds; time(last)/time(last/2); target <= 1 s at 64K, growth ~2)")
    for shape in shapes:
        took: list[float] = []
        for n in sizes:
            took.append(seconds(SHAPES[shape](n)))
            if took[-1] > stop_after:
                break
        cells = [f"{t:9.3f}" for t in took] + [f"{'-':>9s}"] * (len(sizes) - len(took))
        ratio = ""
        if len(took) == len(sizes) and len(sizes) >= 2 and sizes[-1] == 2 * sizes[-2]:
            ratio = f"{took[-1] / max(took[-2], 1e-6):8.1f}"
        print(f"{shape:13s}" + "".join(cells) + ratio, flush=True)


class _Timed:
    """A compiled pattern whose calls are timed into `_Timed.spent` under where it was compiled."""
    spent: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])

    def __init__(self, real: re.Pattern, where: str):
        self._real, self._key = real, (where, real.pattern)

    def __getattr__(self, name):
        attr = getattr(self._real, name)
        if name not in ("search", "match", "fullmatch", "findall", "finditer", "sub", "subn", "split"):
            return attr
        key = self._key

        def timed(*args, **kwargs):
            start = time.perf_counter()
            out = attr(*args, **kwargs)
            if name == "finditer":
                out = list(out)  # the matching happens while iterating
            cell = _Timed.spent[key]
            cell[0] += time.perf_counter() - start
            cell[1] += 1
            return iter(out) if name == "finditer" else out
        return timed


def _time_patterns() -> None:
    """Every pattern compiled by the app's code from now on is timed (the library's own are not)."""
    import sys as _sys
    real_compile = re._compile

    def compile_(pattern, flags):
        got = real_compile(pattern.__dict__["_real"] if isinstance(pattern, _Timed) else pattern, flags)
        frame = _sys._getframe(1)
        while frame and frame.f_code.co_filename.endswith(("re/__init__.py", "functools.py")):
            frame = frame.f_back
        where = frame.f_code.co_filename if frame else "?"
        if "/refund_agent/" not in where:
            return got
        return _Timed(got, f"{Path(where).name}:{frame.f_lineno}")
    re._compile = compile_


def profile(shape: str, n: int) -> None:
    import langchain_core.messages  # noqa: F401  (the library's patterns compiled before the patch)
    import pydantic  # noqa: F401
    _time_patterns()
    for name in [m for m in sys.modules if m.startswith("app.")]:
        del sys.modules[name]  # imported again, so their patterns are timed
    seconds("hi")
    _Timed.spent.clear()
    text = SHAPES[shape](n)
    prof = cProfile.Profile()
    start = time.perf_counter()
    prof.enable()
    seconds(text)
    prof.disable()
    total = time.perf_counter() - start
    print(f"{shape} at {n} characters: {total:.3f} s\n\nregular expressions (seconds, calls, where compiled):")
    for (where, pattern), (spent, calls) in sorted(_Timed.spent.items(), key=lambda kv: -kv[1][0])[:12]:
        print(f"{spent:9.3f} {calls:6d}  {where:18s} {pattern[:70]!r}")
    print("\nPython functions by own time:")
    stats = pstats.Stats(prof)
    rows = sorted(stats.stats.items(), key=lambda kv: -kv[1][2])  # (file, line, name): (cc, nc, tottime, ...)
    for (file, line, name), (_, calls, own, cum, _) in [r for r in rows if "/refund_agent/" in r[0][0]][:10]:
        print(f"{own:9.3f} {cum:9.3f} {calls:6d}  {Path(file).name}:{line} {name}")


def served(shapes: list[str], size: int, rounds: int) -> None:
    """Through the emulator (default workers): a `size`-byte chat body (system prompt, tools and a
    message of the shape) from one client and, once the server has handed it to a model worker, a small request from another;
    wall seconds of each, as a client sees them."""
    import select
    import subprocess
    import threading

    import httpx

    proc = subprocess.Popen([sys.executable, "-m", "app.refund_agent.serve", "--port", "0", "--log-requests"],
                            stdout=subprocess.PIPE, text=True, cwd=REPO)

    def line(wanted: str) -> str:
        while select.select([proc.stdout], [], [], 120)[0]:
            got = proc.stdout.readline()
            if not got or wanted in got:
                return got
        return ""

    try:
        url = line("serving on").split()[-1] + "/chat/completions"
        auth = {"Authorization": "Bearer local"}
        small = body("What's the status of order A-1002?")
        httpx.post(url, json=small, headers=auth, timeout=120)  # the workers' first request, untimed
        n = 1
        print(f"{'shape':13s} {'body':>9s} {'big s':>7s} {'small s':>8s}   (wall seconds through HTTP; "
              f"the small request sent once the big one is in work)")
        for shape in shapes:
            for _ in range(rounds):
                # the whole body is `size` bytes (ASCII shapes); each round's text its own (a worker
                # that saw the same text before answers from its caches)
                head = f"round {n} of {shape}: "
                big = body(head + SHAPES[shape](size - len(json.dumps(body(head)))))
                got: dict = {}

                def post_big(big=big, got=got):
                    start = time.perf_counter()
                    got["status"] = httpx.post(url, json=big, headers=auth, timeout=600).status_code
                    got["s"] = time.perf_counter() - start
                poster = threading.Thread(target=post_big)
                poster.start()
                n += 1
                line(f"request {n} offline working")
                start = time.perf_counter()
                status = httpx.post(url, json=small, headers=auth, timeout=600).status_code
                small_s = time.perf_counter() - start
                n += 1
                poster.join()
                size_b = len(json.dumps(big))
                print(f"{shape:13s} {size_b:9d} {got['s']:7.2f} {small_s:8.2f}"
                      + ("" if got["status"] == status == 200 else f"   statuses {got['status']}, {status}"), flush=True)
    finally:
        proc.terminate()
        proc.wait(30)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sizes", default="16384,32768,65536")
    p.add_argument("--shapes", default=",".join(SHAPES))
    p.add_argument("--stop-after", type=float, default=10.0)
    p.add_argument("--profile", metavar="SHAPE:SIZE", help="where the time of one input goes")
    p.add_argument("--served", action="store_true", help="through the emulator: a body of the largest size (bytes) "
                   "with each shape from one client, a small request from another while it is in work")
    p.add_argument("--rounds", type=int, default=3, help="--served: requests per shape")
    a = p.parse_args()
    if a.profile:
        shape, _, size = a.profile.partition(":")
        if shape not in SHAPES or not size.isdigit():
            print(f"error: --profile wants SHAPE:SIZE with a shape of: {', '.join(SHAPES)}", file=sys.stderr)
            return 2
        profile(shape, int(size))
        return 0
    shapes = a.shapes.split(",")
    unknown = [s for s in shapes if s not in SHAPES]
    if unknown:
        print(f"error: unknown shape {unknown[0]!r}; shapes: {', '.join(SHAPES)}", file=sys.stderr)
        return 2
    sizes = [int(s) for s in a.sizes.split(",")]
    if a.served:
        served(shapes, sizes[-1], a.rounds)
        return 0
    table(shapes, sizes, a.stop_after)
    return 0


if __name__ == "__main__":
    sys.exit(main())
