"""The table of docs/gate.md "What this gate could see": the sensitivity statement of a gate of
every reference row at each number of trials, with and without reruns, and what it cost (CPU
seconds in a fresh process: the first statement pays for the statistics' in-memory caches).

    python scripts/sensitivity_table.py                 # trials 1 3 5 with reruns, 1 without
    python scripts/sensitivity_table.py --trials 1 10
"""
from __future__ import annotations

import argparse
import subprocess
import sys
import time
import tomllib
from pathlib import Path

from turngate.verdict.reference import load_reference
from turngate.verdict.sensitivity import sensitivity

REPO = Path(__file__).resolve().parents[1]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/sensitivity_table.py", description=__doc__.splitlines()[0])
    p.add_argument("--reference", default=str(REPO / "evals" / "reference.json"))
    p.add_argument("--thresholds", default=str(REPO / "evals" / "thresholds.toml"))
    p.add_argument("--trials", type=int, nargs="+", default=[1, 3, 5])
    p.add_argument("--cell", nargs=2, metavar=("TRIALS", "RERUNS"), help=argparse.SUPPRESS)  # one row, in its own process
    a = p.parse_args(argv)
    if a.cell:
        ref = load_reference(a.reference)
        bars = {n: s["bar"] for n, s in tomllib.loads(Path(a.thresholds).read_text())["scorers"].items()}
        start = time.process_time()
        s = sensitivity(ref, int(a.cell[0]), bars, confirm=a.cell[1] == "on")
        cost = time.process_time() - start
        cells = " | ".join(f"{b.caught}/{b.gates}" for b in s.breaks)
        rerun = "as planned" if a.cell[1] == "on" else "off (`--no-confirm`)"
        print(f"| {a.cell[0]} | {rerun} | {cells} | {cost:.1f} s |")
        return 0
    print("| trials | reruns | always failing row | row failing half its runs | scorer 5 points down | cost (CPU) |\n"
          "|---|---|---|---|---|---|", flush=True)
    for t, on in [(t, "on") for t in a.trials] + [(a.trials[0], "off")]:
        subprocess.run([sys.executable, __file__, "--reference", a.reference, "--thresholds", a.thresholds,
                        "--cell", str(t), on], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
