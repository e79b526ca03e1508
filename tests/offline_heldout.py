"""Score a gate record of the held-out customer messages (tests/data/heldout_messages*.jsonl).

A row passes when every code scorer that applies passes (the policy judge is left out:
the figure is about understanding, and the judge has its own calibration). Rows tagged
`negated` or `question-only` must cause no write at all: any attempted write tool
(whatever its reply) or any entry in the server's write log counts.

    python evals/regression.py --version v3 --model offline:temperature=0 \
        --dataset tests/data/heldout_messages.jsonl --no-upload --quiet --out /tmp/h
    python -m tests.offline_heldout /tmp/h/v3-*.json          # score a gate record
    python -m tests.offline_heldout --run tests/data/heldout_messages.jsonl [--trials 5] [--temperature 0.25]

`--run` goes through the real agent (aask_agent, in-process MCP server) and the code
scorers directly, without the gate's command, so it also serves the tests.
"""
from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

HELDOUT = Path(__file__).resolve().parent / "data" / "heldout_messages.jsonl"
BLIND = Path(__file__).resolve().parent / "data" / "heldout_messages_blind.jsonl"
# Written before the round-3 model changes (blind2) and after them, never tuned on (blind3).
BLIND2 = Path(__file__).resolve().parent / "data" / "heldout_messages_blind2.jsonl"
BLIND3 = Path(__file__).resolve().parent / "data" / "heldout_messages_blind3.jsonl"
BLIND4 = Path(__file__).resolve().parent / "data" / "heldout_messages_blind4.jsonl"  # after the second batch
BLIND5 = Path(__file__).resolve().parent / "data" / "heldout_messages_blind5.jsonl"  # after the third batch
BLIND6 = Path(__file__).resolve().parent / "data" / "heldout_messages_blind6.jsonl"  # after the eighth batch
WRITE_TOOLS = frozenset({"refund_order", "cancel_order", "update_shipping_address", "apply_discount_code",
                         "create_ticket", "escalate_to_human", "send_email"})
NO_WRITE_TAGS = frozenset({"negated", "question-only", "no-write", "ask"})
JUDGES = frozenset({"policy_judge"})


@dataclass
class Score:
    runs: int = 0
    passed: int = 0
    failures: list[tuple[str, int, str, str]] = field(default_factory=list)  # row, trial, scorer, why
    no_write_runs: int = 0
    no_write_violations: list[tuple[str, int, list[str]]] = field(default_factory=list)

    @property
    def rate(self) -> float:
        return self.passed / self.runs if self.runs else 0.0


def score_record(record: dict) -> Score:
    tags = {r["id"]: set(r["inputs"].get("tags", [])) for r in record["rows"]}
    out = Score()
    for run in record["runs"]:
        out.runs += 1
        bad = [(name, v.get("explanation", "")) for name, v in run["verdicts"].items()
               if name not in JUDGES and v.get("passed") is False]
        if bad:
            out.failures.append((run["row_id"], run["trial"], bad[0][0], bad[0][1]))
        else:
            out.passed += 1
        if tags.get(run["row_id"], set()) & NO_WRITE_TAGS:
            out.no_write_runs += 1
            turn = run.get("turn") or {}
            wrote = [c["name"] for c in turn.get("tool_calls") or [] if c.get("name") in WRITE_TOOLS]
            wrote += [str(w.get("action")) for w in turn.get("writes") or []]
            if wrote:
                out.no_write_violations.append((run["row_id"], run["trial"], wrote))
    return out


async def run_file(path: str | Path, *, version: str = "v3", temperature: float = 0.0, trials: int = 1,
                   parallelism: int = 8) -> dict:
    """Run every row of a JSONL dataset through the real agent (seeds 0..trials-1) and
    score it with the code scorers; returns a record shaped like the gate's."""
    import asyncio

    from app.refund_agent.client import aask_agent
    from turngate.scoring.scorers import code_scorers
    from turngate.sources.dataset import load_rows, row_to_datapoint

    rows = load_rows(path)
    model = f"offline:temperature={temperature:g}"
    gate = asyncio.Semaphore(parallelism)

    async def one(row, seed):
        async with gate:
            try:
                turn = await aask_agent(row.user_turns(), version, model=model, seed=seed, timeout=60)
            except Exception as exc:  # fail closed: a crashed run is a failed row, not a missing one
                return {"row_id": row.id, "trial": seed, "turn": None,
                        "verdicts": {"run": {"passed": False, "explanation": f"{type(exc).__name__}: {exc}"}}}
        params = {"data": row_to_datapoint(row), "output": turn}
        verdicts = {}
        for fn in code_scorers():
            r = await fn(params)
            verdicts[fn.scorer_name] = {"passed": r.pass_, "explanation": r.explanation}
        return {"row_id": row.id, "trial": seed, "turn": turn.model_dump(), "verdicts": verdicts}

    runs = await asyncio.gather(*(one(r, seed) for seed in range(trials) for r in rows))
    return {"rows": [{"id": r.id, "inputs": {"tags": list(r.inputs.tags)}} for r in rows], "runs": list(runs)}


def report(name: str, s: Score) -> None:
    print(f"{name}: {s.passed}/{s.runs} runs pass every code scorer ({s.rate:.1%}); "
          f"writes on negated/question-only: {len(s.no_write_violations)} of {s.no_write_runs} runs")
    for row, trial, scorer, why in s.failures:
        print(f"  FAIL {row} [trial {trial}] {scorer}: {why[:160]}")
    for row, trial, wrote in s.no_write_violations:
        print(f"  WROTE {row} [trial {trial}]: {', '.join(wrote)}")


def main(argv: list[str]) -> int:
    import argparse
    import asyncio

    ap = argparse.ArgumentParser(prog="python -m tests.offline_heldout")
    ap.add_argument("paths", nargs="+", help="gate records (JSON), or datasets (JSONL) with --run")
    ap.add_argument("--run", action="store_true")
    ap.add_argument("--trials", type=int, default=1)
    ap.add_argument("--temperature", type=float, default=0.0)
    ap.add_argument("--version", default="v3")
    args = ap.parse_args(argv)
    for path in args.paths:
        if args.run:
            record = asyncio.run(run_file(path, version=args.version, temperature=args.temperature,
                                          trials=args.trials))
        else:
            record = json.loads(Path(path).read_text())
        report(path, score_record(record))
        from tests.offline_trail import trail_figures
        t = trail_figures(record)
        print(f"  clarifying questions: {t['clarify']}, of which also answer what was asked: {t['clarify_answers']}; "
              f"on rows asking no write: {len(t['clarify_unasked'])}; misstating the trail: {len(t['misstated'])}")
        for row, why in t["misstated"]:
            print(f"  MISSTATES {row}: {why[:160]}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
