"""Score stored Turns directly (no agent, no evaluatorq run): used by regrade, calibration
and simulation. Same evaluators, same fail-closed wrapper as the gate."""
from __future__ import annotations

import asyncio

from turngate.record.results import ScorerVerdict as Verdict
from turngate.sources.dataset import Row, row_to_datapoint


async def grade(row: Row, turn: dict, evaluators: list[dict]) -> dict[str, Verdict]:
    params = {"data": row_to_datapoint(row), "output": turn}

    async def one(ev) -> Verdict:
        try:
            res = await ev["scorer"](params)
        except Exception as exc:  # the wrapper already fails closed; this guards foreign scorers
            return Verdict(passed=False, explanation=f"scorer raised {type(exc).__name__}: {exc}")
        return Verdict(passed=res.pass_, explanation=res.explanation or "")

    verdicts = await asyncio.gather(*(one(ev) for ev in evaluators))
    return {ev["name"]: v for ev, v in zip(evaluators, verdicts, strict=True)}


async def grade_many(items: list[tuple[Row, dict]], evaluators: list[dict], parallelism: int = 16):
    gate = asyncio.Semaphore(parallelism)

    async def bounded(row, turn):
        async with gate:
            return await grade(row, turn, evaluators)

    return await asyncio.gather(*(bounded(r, t) for r, t in items))
