"""Benchmark the v3 gate over the whole dataset, in-process (start-up excluded).

    python scripts/bench.py [--latency 200ms] [--jitter 0.1] [--parallelism 8 32] [--trials 1 3] [--workers 1 2]
    python scripts/bench.py --provider [--rpm 600] [--provider-latency 300ms] [--error-rate 0.02] [--parallelism 32]
    python scripts/bench.py --compare [--pairs 100000] [--discordant 20000]

1. No latency: the agent alone (ask_agent over every row, sequentially) against the full gate at
   parallelism 1 (evaluatorq, 8 scorers, the results record). Harness overhead per run =
   (gate wall - agent wall) / runs. Target: <= 5 ms.
2. With emulated model latency (offline:latency=..., seeded jitter; an async sleep per model
   call): wall time at each parallelism next to the ideal, i.e. total emulated model time /
   parallelism, and ideal/wall. Target at parallelism 32: ideal/wall >= 0.9. Measured with
   the agent in the gate's process (workers 1) and in 2 worker processes (--workers 2);
   workers are started and warmed once, outside the timed part, as the rest of start-up is.
   Default grid (about a minute): (workers, trials, parallelism) = (1,1,8) (1,1,32) (1,3,32)
   (2,3,32); giving --parallelism/--trials/--workers runs their full cross product instead.
3. --provider: starts `python -m app.refund_agent.serve` with a provider's rate limit, latency
   and 5xx, runs the v3 gate through it (`--model openai:offline`, the real HTTP path) and
   prints the model calls, 429s, 5xx, retries, failed runs and wall time against the rate
   limit's floor (calls / rate). Target: no run lost to rate limits or 5xx, and
   wall <= 1.15 x (calls / rate). About 40 s.
4. --compare: the comparison's statistics on two in-memory versions of --pairs matched
   (row, trial) pairs x 8 scorers, --discordant of them split at random on one scorer: the
   exact McNemar p (log space) and the whole of turngate.verdict.comparison.compare (counting, Newcombe,
   McNemar, Holm, flips). Target: compare() well under 1 s at 100,000 pairs.
5. --compare-files: two results files of --pairs (row, seed) pairs each (default 22,200: the 74
   rows x 300 seeds), --discordant of them (default 20,000) split at random on one scorer,
   written by save_record from a real v3 gate run's Turns (--content real, the default) or
   from empty Turns (--content empty); then load_record of one file is timed in this process
   (its bytes parsed, every value validated, plan and seal checked), and
   `python evals/compare.py A B` end to end as a command (start-up, both files read by
   load_record, the comparison), sealed and re-indented (no seal: the digest recomputed).
   Target: under 2 s.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from turngate.core.project import make_importable

REPO = Path(__file__).resolve().parents[1]
make_importable(REPO)  # app/ (the system under test) is not packaged: run from any directory

from app.refund_agent.client import aask_agent  # noqa: E402
from turngate.gate.run import DEFAULT_DATASET, agents_for, execute, new_record  # noqa: E402
from turngate.jobs.runner import Settings  # noqa: E402
from turngate.jobs.target import TargetOptions  # noqa: E402
from turngate.jobs.workers import AgentPool  # noqa: E402
from turngate.scoring.scorers import make_evaluators  # noqa: E402
from turngate.sources.dataset import load_rows  # noqa: E402
from turngate.sources.row_sources import JsonlSource  # noqa: E402


def gate(rows, model: str | None, parallelism: int, tmp: Path, trials: int = 1, pool=None) -> tuple[float, list]:
    agents = agents_for("app.refund_agent:target", TargetOptions(version="v3", model=model, timeout=120.0))
    settings = Settings(model=model, trials=trials, parallelism=parallelism, upload=False, print_table=False,
                        pool=pool)
    record = new_record(agents, JsonlSource(DEFAULT_DATASET).load(), rows, settings, {}, ["bench"])
    t0 = time.perf_counter()
    assert execute(record, [(r, t) for r in rows for t in range(trials)], settings, tmp / f"bench-{parallelism}.json",
                   agents, make_evaluators("offline"))
    return time.perf_counter() - t0, record.runs


async def agent_alone(rows) -> float:
    t0 = time.perf_counter()
    for r in rows:
        await aask_agent(r.user_turns(), "v3")
    return time.perf_counter() - t0


DEFAULT_GRID = [(1, 1, 8), (1, 1, 32), (1, 3, 32), (2, 3, 32)]  # (workers, trials, parallelism)


def provider(a: argparse.Namespace) -> int:
    """The v3 gate through the local OpenAI-compatible server with a provider's limits."""
    serve = [sys.executable, "-m", "app.refund_agent.serve", "--port", "0", "--rpm", str(a.rpm),
             "--latency", a.provider_latency, "--jitter", a.provider_jitter, "--error-rate", str(a.error_rate),
             "--seed", "1"]
    print("server: python -m app.refund_agent.serve " + " ".join(serve[3:]))
    server = subprocess.Popen(serve, stdout=subprocess.PIPE, text=True, cwd=REPO)
    try:
        ready = server.stdout.readline()  # one line when it listens, or EOF if it failed
        if not ready.startswith("serving on "):
            print(f"server did not start: {ready!r}")
            return 2
        url = ready.split()[-1]
        par = a.parallelism[0] if a.parallelism else 32
        with tempfile.TemporaryDirectory() as out:
            gate_cmd = [sys.executable, str(REPO / "evals" / "regression.py"), "--version", "v3", "--model",
                        "openai:offline", "--parallelism", str(par), "--no-upload", "--out", out]
            print(f"gate:   OPENAI_BASE_URL={url} python evals/regression.py --version v3 --model openai:offline "
                  f"--parallelism {par}")
            t0 = time.perf_counter()
            res = subprocess.run(gate_cmd, capture_output=True, text=True, cwd=REPO,
                                 env={**os.environ, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "local"})
            command_wall = time.perf_counter() - t0
            files = list(Path(out).glob("*.json"))
            if not files:
                print(f"the gate wrote no results (exit {res.returncode}):\n{res.stderr[-2000:]}")
                return 2
            record = json.loads(files[0].read_text())
    finally:
        server.terminate()
        server.wait(30)
    calls = record["meta"]["model_calls"]
    st = calls["models"]["openai:offline"]
    runs = record["runs"]
    failed = [r for r in runs if r["turn"].get("error")]
    by_limits = [r for r in failed if any(w in r["turn"]["error"] for w in ("429", " 50", "server_error"))]
    floor = st["ok"] / (a.rpm / 60)
    wall = calls["wall_s"]
    print(f"\nexit {res.returncode}; {len(runs)} runs, {len(failed)} failed ({len(by_limits)} by rate limits or 5xx)")
    print(f"  model calls answered     : {st['ok']} ({st['requests']} requests: {st['rate_limited']} x 429, "
          f"{st['server_errors']} x 5xx, {st['connection_errors']} connection errors; {st['retries']} retries, "
          f"{st['gave_up']} given up)")
    print(f"  concurrency limit        : {st['start_limit']} -> min {st['min_limit']}, end {st['final_limit']}")
    print(f"  calls / rate limit       : {floor:6.1f} s  ({st['ok']} calls / {a.rpm / 60:g} per second)")
    print(f"  gate run wall            : {wall:6.1f} s  = {wall / floor:.2f} x   (target <= 1.15)")
    print(f"  gate elapsed (+ set-up)  : {record['meta']['elapsed_s']:6.1f} s  = "
          f"{record['meta']['elapsed_s'] / floor:.2f} x")
    print(f"  command wall (+ start-up): {command_wall:6.1f} s")
    return 0 if not by_limits and wall <= 1.15 * floor else 1


def comparison_speed(pairs: int, discordant: int) -> int:
    import random

    from turngate.core.turn import Turn
    from turngate.record.results import RunResult, ScorerVerdict
    from turngate.verdict.comparison import compare
    from turngate.verdict.stats import mcnemar_exact

    names = [f"scorer_{j}" for j in range(8)]
    ok, bad = ScorerVerdict(passed=True, explanation="pass"), ScorerVerdict(passed=False, explanation="fail")
    rng, sides = random.Random(0), ([], [])
    for k in range(pairs):
        was, now = dict.fromkeys(names, ok), dict.fromkeys(names, ok)
        if k < discordant:
            (was if rng.random() < 0.5 else now)["scorer_0"] = bad
        for side, version, verdicts in ((0, "v2", was), (1, "v3", now)):
            sides[side].append(RunResult(row_id=f"r{k // 10:05d}", trial=k % 10, seed=k % 10, version=version,
                                         job=version, turn=Turn(version=version, model="offline", seed=k % 10),
                                         verdicts=verdicts))
    t0 = time.perf_counter()
    out = compare(sides[0], sides[1], names, baseline="v2", candidate="v3")
    whole = time.perf_counter() - t0
    s = out["scorers"]["scorer_0"]
    t0 = time.perf_counter()
    for _ in range(100):
        mcnemar_exact(s["b"], s["c"])
    print(f"{pairs} pairs x 8 scorers, {s['b']} pass->fail vs {s['c']} fail->pass on one (p = {s['p_value']:.4g})")
    print(f"  exact McNemar p : {(time.perf_counter() - t0) / 100 * 1000:8.3f} ms")
    print(f"  compare()       : {whole * 1000:8.1f} ms   (target < 1000 ms)")
    return 0 if whole < 1 else 1


def _usage(line: str) -> None:
    print(f"error: {line}", file=sys.stderr)
    raise SystemExit(2)


def big_records(out: Path, pairs: int, discordant: int, content: str = "real") -> tuple[Path, Path]:
    """Two results files (baseline, candidate) of `pairs` v3 runs each, `discordant` of the pairs
    disagreeing on one scorer (half each way, at random): a small real gate run's rows, meta and
    Turns, its seeds widened to cover `pairs`; no reference and no confirmation stage."""
    import random

    from turngate.core.turn import Turn
    from turngate.record.results import RunResult, load_record, plan_of, save_record
    from turngate.record.results import ScorerVerdict as Verdict

    out.mkdir(parents=True, exist_ok=True)
    template_dir = out / "template"
    if not list(template_dir.glob("v3-*.json")):
        subprocess.run([sys.executable, str(REPO / "evals" / "regression.py"), "--version", "v3", "--seeds", "0-1",
                        "--no-confirm", "--no-reference", "--no-upload", "--quiet", "--out", str(template_dir)],
                       check=False, capture_output=True, cwd=REPO)
    template = load_record(sorted(template_dir.glob("v3-*.json"))[-1])
    turns = {(r.row_id, r.trial): r.turn for r in template.runs}
    names = sorted({n for r in template.runs for n in r.verdicts})
    ids = [r["id"] for r in template.rows]
    if pairs % len(ids):  # every row at every seed: a record holds its whole plan
        _usage(f"--pairs {pairs}: a multiple of the {len(ids)} rows, e.g. "
               f"{pairs // len(ids) * len(ids) or len(ids)} or {(pairs // len(ids) + 1) * len(ids)}")
    if not 0 <= discordant <= pairs:
        _usage(f"--discordant {discordant}: between 0 and --pairs ({pairs})")
    seeds = list(range(pairs // len(ids)))
    keys = [(rid, s) for s in seeds for rid in ids]
    ok, bad = Verdict(passed=True, explanation="pass"), Verdict(passed=False, explanation="fail")
    rng, flip = random.Random(0), {}
    for k in rng.sample(range(len(keys)), discordant):
        flip[k] = rng.random() < 0.5  # True: fails on the baseline, False: fails on the candidate
    paths = []
    for side, name in ((0, "v3-20260101-000000-base.json"), (1, "v3-20260101-000000-cand.json")):
        runs = []
        for k, (rid, s) in enumerate(keys):
            verdicts = dict.fromkeys(names, ok)
            if k in flip and flip[k] == (side == 0):
                verdicts[names[0]] = bad
            turn = turns[(rid, s % 2)] if content == "real" else Turn(version="v3", model="offline")
            runs.append(RunResult(row_id=rid, trial=s, seed=s, version="v3", job=template.meta.job,
                                  turn=turn.model_copy(update={"seed": s}), verdicts=verdicts))
        meta = template.meta.model_copy(update={"seeds": seeds, "trials": len(seeds), "reference": None,
                                                "confirm": None, "complete": True})
        record = template.model_copy(update={"meta": meta, "runs": runs, "summary": {}, "digest": None})
        # a full plan over the widened seeds: every (row, seed) of the last seed is kept only if
        # --pairs covers it, so keep the rows x seeds square
        record.plan = plan_of(record, version_files=template.plan.version_files)
        paths.append(save_record(record, out / name))
    return paths[0], paths[1]


def compare_files_speed(pairs: int, discordant: int, content: str, times: int = 5) -> int:
    import gc
    import statistics

    from turngate.record.results import load_record

    out = REPO / "results" / "bench" / f"compare-{pairs}-{discordant}-{content}"
    if not (out / "v3-20260101-000000-cand.json").exists():
        big_records(out, pairs, discordant, content)
    a, b = out / "v3-20260101-000000-base.json", out / "v3-20260101-000000-cand.json"
    loads = []
    for _ in range(3):  # one reading, in this process: parse, validate, plan and seal
        t0 = time.perf_counter()
        record = load_record(b)
        loads.append(time.perf_counter() - t0)
        del record
        gc.collect()

    def timed(files: list[Path]) -> tuple[list[float], list[float]] | None:
        walls, cpus = [], []
        for _ in range(times):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t0 = time.perf_counter()
            res = subprocess.run([sys.executable, str(REPO / "evals" / "compare.py"), *map(str, files)],
                                 capture_output=True, text=True, cwd=REPO)
            walls.append(time.perf_counter() - t0)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpus.append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
            if res.returncode not in (0, 1):
                print(f"compare failed (exit {res.returncode}):\n{res.stderr[-2000:]}{res.stdout[-2000:]}")
                return None
        return walls, cpus

    sealed = timed([a, b])
    with tempfile.TemporaryDirectory() as tmp:  # the same content re-indented: no seal, the digest decides
        plain = [Path(tmp) / f.name for f in (a, b)]
        for f, to in zip((a, b), plain, strict=True):
            to.write_text(json.dumps(json.loads(f.read_bytes()), indent=2))
        unsealed = timed(plain)
    if sealed is None or unsealed is None:
        return 2
    size = (a.stat().st_size + b.stat().st_size) / 1e6
    print(f"two results files of {pairs} runs each ({content} Turns, {size:.0f} MB together), "
          f"{discordant} discordant pairs on one scorer; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
    print(f"  load_record of one file (in process)  {min(loads):6.2f} s (best of {len(loads)})")
    for label, (walls, cpus) in (("sealed", sealed), ("re-indented (digest)", unsealed)):
        print(f"  python evals/compare.py A B, {label:21s} wall {min(walls):6.2f} s best, "
              f"{statistics.median(walls):6.2f} s median, CPU {min(cpus):6.2f} s "
              f"({', '.join(f'{w:.2f}' for w in walls)})")
    print("  target: < 2 s")
    return 0 if min(sealed[0]) < 2 else 1


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--latency", default="200ms")
    p.add_argument("--jitter", default="0.1")
    p.add_argument("--parallelism", type=int, nargs="+", help="parallelism for the latency runs")
    p.add_argument("--trials", type=int, nargs="+", help="trials for the latency runs")
    p.add_argument("--workers", type=int, nargs="+", help="agent worker processes for the latency runs")
    p.add_argument("--provider", action="store_true",
                   help="run the v3 gate through the local OpenAI-compatible server with provider limits")
    p.add_argument("--rpm", type=float, default=600, help="--provider: requests per minute (default 600)")
    p.add_argument("--provider-latency", default="300ms", help="--provider: latency per call (default 300ms)")
    p.add_argument("--provider-jitter", default="0.2", help="--provider: latency jitter (default 0.2)")
    p.add_argument("--error-rate", type=float, default=0.02, help="--provider: share of 500/503 (default 0.02)")
    p.add_argument("--compare", action="store_true", help="time the comparison's statistics (no agent runs)")
    p.add_argument("--pairs", type=int, help="--compare: matched pairs (default 100000); --compare-files: "
                                                     "runs per file (default 22200)")
    p.add_argument("--discordant", type=int, default=20_000, help="--compare: discordant pairs (default 20000)")
    p.add_argument("--compare-files", action="store_true",
                   help="time `python evals/compare.py` on two generated results files (see 5. above)")
    p.add_argument("--content", choices=["real", "empty"], default="real",
                   help="--compare-files: the runs' Turns: a real v3 gate run's, or empty")
    a = p.parse_args()
    if a.compare_files:
        return compare_files_speed(a.pairs or 22_200, a.discordant, a.content)
    if a.compare:
        return comparison_speed(a.pairs or 100_000, a.discordant)
    if a.provider:
        return provider(a)
    if a.parallelism or a.trials or a.workers:
        grid = [(w, t, par) for w in a.workers or [1, 2] for t in a.trials or [1, 3] for par in a.parallelism or [8, 32]
                if not (w > 1 and par == 1)]  # one conversation at a time gains nothing from workers
    else:
        grid = DEFAULT_GRID
    rows = load_rows(DEFAULT_DATASET)
    tmp = REPO / "results" / "bench"
    tmp.mkdir(parents=True, exist_ok=True)
    n = len(rows)
    print(f"v3 gate, {n} rows x 1 trial, offline model, 2-core machine\n")

    asyncio.run(agent_alone(rows))  # warm: imports, server, graphs
    gate(rows, None, 1, tmp)
    agent = min(asyncio.run(agent_alone(rows)) for _ in range(3))
    wall = min(gate(rows, None, 1, tmp)[0] for _ in range(3))
    print("no latency (best of 3):")
    print(f"  agent alone, sequential : {agent:7.3f} s  ({agent / n * 1000:6.2f} ms per run)")
    print(f"  gate, parallelism 1     : {wall:7.3f} s  ({wall / n * 1000:6.2f} ms per run)")
    print(f"  harness overhead        : {(wall - agent) / n * 1000:6.2f} ms per run   (target <= 5 ms)")
    for par in (8, 32):
        w, _ = gate(rows, None, par, tmp)
        print(f"  gate, parallelism {par:<5} : {w:7.3f} s")

    model = f"offline:latency={a.latency},jitter={a.jitter}"
    print(f"\nwith {model}:")
    print(f"  {'workers':>7} {'trials':>6} {'runs':>5} {'parallelism':>11} {'wall s':>8} {'ideal s':>8} "
          f"{'ideal/wall':>10} {'longest run s':>13}")
    for workers in sorted({w for w, _, _ in grid}):
        pool = AgentPool(workers) if workers > 1 else None
        if pool is not None:
            gate(rows, model, 32, tmp, 1, pool)  # warm the workers (imports, graphs), untimed
        for _, trials, par in [g for g in grid if g[0] == workers]:
            w, runs = gate(rows, model, par, tmp, trials, pool)
            times = [r.turn.seconds for r in runs]  # the offline model's emulated time per run
            ideal = sum(times) / par
            print(f"  {workers:>7} {trials:>6} {len(runs):>5} {par:>11} {w:8.2f} {ideal:8.2f} {ideal / w:10.2f} "
                  f"{max(times):13.2f}" + ("   (target >= 0.90)" if par == 32 else ""))
        if pool is not None:
            pool.close()
    print("\nA run's model calls are sequential, so wall >= the longest run; when that exceeds\n"
          "ideal/0.9 (few runs per slot), no scheduler can reach the target.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
