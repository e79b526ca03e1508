"""Every regular expression of the offline model against repetitive text, to find the ones whose
time grows faster than the text (a pattern retried from every position of a long run, or nested
quantifiers that backtrack exponentially).

    python scripts/fuzz_offline_regex.py [--units 400] [--timeout 3] [--only WHERE]

Patterns are collected as the app's code compiles them (on import and while the model answers a
few messages), each with where it was compiled. Each runs (finditer, to the end) over a unit
repeated --units times and twice as many: single characters, separators, numbers, and each word
the pattern itself names followed by one or two spaces or a comma. A pattern is listed when the
time more than triples while doubling the text (and the larger took over 20 ms, the faster of two tries), or when one text
takes over --timeout seconds (the worker is killed and the fuzz goes on). Speed is measured here,
never in tests; exit 1 when something is listed. A listed pattern is a lead, not a verdict: one
the model only uses with `match` at one position (read once, not from every position), the plain
form inside a scan.RunStarts, or a gap still shorter than its bound at these sizes grows linearly
in use; `python scripts/bench_offline.py` shows what the model as a whole does.
"""
from __future__ import annotations

import argparse
import multiprocessing as mp
import re
import sys
import time
from pathlib import Path

from turngate.core.project import make_importable

REPO = Path(__file__).resolve().parents[1]
make_importable(REPO)

BASE_UNITS = [" ", "  ", ",", ", ", ",,", "\t", "\n", "\n ", ".", ". ", "-", " - ", "$1 ", "1", "1 ", "1.", "1,",
              "12,000 ", "a", "x ", "A", "A-1001 ", "A-1001, ", "a@", "a.", "é", "!", "? ", "'", '"', "#", ": ",
              "(", "*", "%", "/", "Ana ", "ABC ", "C-101 "]


def collect() -> list[tuple[str, str, int]]:
    """(where, pattern, flags) of every pattern the app's code compiles."""
    seen: dict[tuple[str, int], str] = {}
    real = re._compile

    def hook(pattern, flags):
        frame = sys._getframe(1)
        while frame and frame.f_code.co_filename.endswith(("re/__init__.py", "functools.py")):
            frame = frame.f_back
        where = frame.f_code.co_filename if frame else "?"
        if "/refund_agent/" in where and isinstance(pattern, str):
            seen.setdefault((pattern, flags), f"{Path(where).name}:{frame.f_lineno}")
        return real(pattern, flags)

    import langchain_core.messages  # noqa: F401
    re._compile = hook
    try:
        import asyncio

        from app.refund_agent.serve_chat import complete
        from scripts.bench_offline import SHAPES, body
        for shape in ("prose", "dataset", "keywords", "amounts"):
            asyncio.run(complete(body(SHAPES[shape](3000))))
    finally:
        re._compile = real
    return [(where, p, f) for (p, f), where in seen.items()]


def units_for(pattern: str) -> list[str]:
    words = sorted(set(re.findall(r"[a-z]{2,}", re.sub(r"\\[a-zA-Z]", " ", pattern))))
    return BASE_UNITS + [w + tail for w in words for tail in (" ", "  ", ", ")]


def _work(jobs, out, reps: int) -> None:
    for where, pattern, flags in iter(jobs.get, None):
        rx = re.compile(pattern, flags)
        for unit in units_for(pattern):
            took = []
            for k in (reps, 2 * reps):
                text = unit * k
                out.put(("start", where, pattern, unit))
                best = float("inf")
                for _ in range(2):  # the faster of two: a busy machine's pauses are not the pattern's
                    start = time.perf_counter()
                    for _ in rx.finditer(text):
                        pass
                    best = min(best, time.perf_counter() - start)
                took.append(best)
            out.put(("done", where, pattern, unit, took))
        out.put(("pattern", where))


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--units", type=int, default=600, help="repeats of a unit in the smaller text")
    p.add_argument("--timeout", type=float, default=3.0)
    p.add_argument("--only", help="only patterns compiled at this file[:line]")
    a = p.parse_args()
    patterns = [x for x in collect() if not a.only or x[0].startswith(a.only)]
    print(f"{len(patterns)} patterns", flush=True)
    todo = list(patterns)
    found = []
    ctx = mp.get_context("fork")
    while todo:
        jobs, out = ctx.Queue(), ctx.Queue()
        for job in todo:
            jobs.put(job)
        jobs.put(None)
        worker = ctx.Process(target=_work, args=(jobs, out, a.units), daemon=True)
        worker.start()
        current = None
        while True:
            try:
                msg = out.get(timeout=a.timeout)
            except Exception:  # queue.Empty: the current text takes too long
                worker.kill()
                worker.join()
                where, pattern, unit = current[1:]
                found.append((where, pattern, unit, "timeout"))
                print(f"TIMEOUT  {where:18s} unit {unit!r:14s} {pattern[:80]!r}", flush=True)
                todo = todo[1:]  # the worker takes patterns in order: this one's other units are skipped
                break
            if msg[0] == "start":
                current = msg
            elif msg[0] == "done":
                _, where, pattern, unit, (small, big) = msg
                if big > 0.02 and big > 3 * small:
                    found.append((where, pattern, unit, f"{small:.3f}s -> {big:.3f}s"))
                    print(f"{big / max(small, 1e-9):6.1f}x  {where:18s} unit {unit!r:14s} {small:.3f}s -> {big:.3f}s"
                          f"  {pattern[:80]!r}", flush=True)
            elif msg[0] == "pattern":
                todo = todo[1:]
                if not todo:
                    break
        worker.join(1)
        if worker.is_alive():
            worker.kill()
    print(f"{len(found)} super-linear (pattern, unit) pairs in {len({(w, p) for w, p, _, _ in found})} patterns")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
