"""Wall time of the gate split into N shards (--shard K/N) and merged, offline.

    python scripts/bench_shards.py [--version v3] [--seeds 0-1] [--shards 1 2 3 4]
                                   [--latency 200ms] [--hints]

In CI every shard runs on its own runner at the same time, so the gate's wall is the slowest
shard plus the merge. This machine cannot run N runners at once, so each shard is run alone,
one after the other, as the command CI runs (`python evals/regression.py ... --shard K/N`, its
start-up included), and timed; then `python evals/merge.py` over them. Printed per N: each
shard's wall, the slowest, the merge, their sum (the CI estimate: runner start-up, install and
artifact transfer excluded), the rows and expected model calls per shard (the split's own cost
figures, meta.shard.cost), the confirmation reruns each shard made and the merged record keeps,
and whether the merged verdict and exit code are the unsharded run's.

--latency: the offline model's emulated latency per model call (offline:latency=...), so runs
are waiting on "the provider" as with a real model; 0 for the CPU-bound offline model.
--hints: split by the model calls stored in the unsharded run's record (copied into each N's
results directory), instead of CI's fresh directory where the split guesses from user turns.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def timed(cmd: list[str]) -> tuple[float, int, str]:
    t0 = time.perf_counter()
    res = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO)
    return time.perf_counter() - t0, res.returncode, res.stderr[-1500:] + res.stdout[-1500:]


def newest(out: Path, before: set[Path]) -> Path:
    (path,) = set(out.glob("v*.json")) - before
    return path


def verdict_of(path: Path) -> tuple[int, str]:
    from turngate.gate.recheck import recompute
    from turngate.record.results import load_record

    v = recompute(load_record(path), path)
    return v.exit_code, v.line.splitlines()[0]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--version", default="v3")
    p.add_argument("--seeds", default="0-1")
    p.add_argument("--shards", type=int, nargs="+", default=[1, 2, 3, 4])
    p.add_argument("--latency", default="0", help="offline model latency per call, e.g. 200ms (default 0)")
    p.add_argument("--hints", action="store_true", help="split by the unsharded run's stored model calls")
    a = p.parse_args()
    model = ["--model", f"offline:latency={a.latency}"] if a.latency not in ("0", "0ms") else []
    base = [sys.executable, str(REPO / "evals" / "regression.py"), "--version", a.version, "--seeds", a.seeds,
            *model, "--no-upload", "--quiet"]
    tmp = Path(tempfile.mkdtemp(prefix="bench-shards-"))
    try:
        full_dir = tmp / "full"
        full_dir.mkdir()
        wall, code, log = timed([*base, "--out", str(full_dir)])
        if code not in (0, 1):
            print(f"the unsharded gate failed (exit {code}):\n{log}")
            return 2
        full = newest(full_dir, set())
        record = json.loads(full.read_text())
        want = verdict_of(full)
        print(f"{a.version}, {len(record['rows'])} rows x seeds {a.seeds}, model {record['meta']['model']}, "
              f"split by {'stored model calls' if a.hints else 'user turns (a fresh results directory, as CI)'}; "
              f"{os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the start")
        full_reruns = sum(r["stage"] == "confirm" for r in record["runs"])
        print(f"unsharded: {wall:.1f} s, {len(record['runs']) - full_reruns} gate runs + {full_reruns} confirmation "
              f"reruns, exit {want[0]}: {want[1]}\n")
        print(f"{'N':>2} {'each shard s':<28} {'slowest s':>9} {'merge s':>7} {'CI wall s':>9} {'speed-up':>8} "
              f"{'rows/shard':<14} {'calls/shard':<22} {'reruns/shard':<16} {'merged':>6} same verdict")
        for n in a.shards:
            out = tmp / f"n{n}"
            out.mkdir()
            if a.hints:
                shutil.copy(full, out / full.name)
            walls, files, costs, rows, reruns = [], [], [], [], []
            for k in range(1, n + 1):
                before = set(out.glob("v*.json"))
                w, code, log = timed([*base, "--shard", f"{k}/{n}", "--out", str(out)])
                if code not in (0, 1):
                    print(f"shard {k}/{n} failed (exit {code}):\n{log}")
                    return 2
                path = newest(out, before)
                meta = json.loads(path.read_text())
                walls.append(w)
                files.append(path)
                costs.append(meta["meta"]["shard"]["cost"])
                rows.append(len(meta["rows"]))
                reruns.append(sum(r["stage"] == "confirm" for r in meta["runs"]))
            merged = tmp / f"merged-{n}.json"
            mw, code, log = timed([sys.executable, str(REPO / "evals" / "merge.py"), *map(str, files), "--out",
                                   str(merged), "--version", a.version, "--no-upload"])
            if code not in (0, 1):
                print(f"merge of {n} shards failed (exit {code}):\n{log}")
                return 2
            got = verdict_of(merged)
            kept = sum(r["stage"] == "confirm" for r in json.loads(merged.read_text())["runs"])
            ci = max(walls) + mw
            print(f"{n:>2} {' '.join(f'{w:.1f}' for w in walls):<28} {max(walls):9.1f} {mw:7.1f} {ci:9.1f} "
                  f"{wall / ci:8.2f} {'/'.join(map(str, rows)):<14} {'/'.join(f'{c:.0f}' for c in costs):<22} "
                  f"{'/'.join(map(str, reruns)):<16} {kept:>6} {'yes' if got == want else f'NO: {got}'}")
        print("\nCI wall = slowest shard + merge (each shard timed alone, as on its own runner; runner start-up,\n"
              "install and artifact transfer not included). speed-up = unsharded wall / CI wall.\n"
              "reruns/shard: the confirmation reruns each shard made for the rows its own numbers flagged;\n"
              "merged: the reruns the merged record keeps (those its whole-plan numbers call for; the merge\n"
              "drops the others and runs any no shard made, which is most of its wall).")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
