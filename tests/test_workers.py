"""Worker processes: a conversation there gives the Turn it gives here; a dead worker fails
its calls at once instead of leaving them to time out."""
from __future__ import annotations

import asyncio

import pytest

from app.refund_agent.client import aask_agent
from turngate.jobs.workers import AgentPool


@pytest.fixture
def pool():
    p = AgentPool(1)
    yield p
    p.close()


AGENT = "app.refund_agent:target"


def _options(version: str):
    from turngate.jobs.target import TargetOptions

    return TargetOptions(version=version)


async def test_a_worker_turn_equals_the_in_process_turn(pool):
    turns = ["Can I return A-1005?", "Refund it anyway"]
    from turngate.jobs.target import load_target

    here = await load_target(AGENT, _options("v2"))({"turns": turns}, 3)
    there = await pool.run_target(AGENT, _options("v2"), {"turns": turns}, 3)
    assert there == here.model_dump(mode="json")
    assert there == (await aask_agent(turns, "v2", seed=3)).model_dump(mode="json")


async def test_a_dead_worker_fails_fast(pool):
    await pool.run_target(AGENT, _options("v3"), {"message": "What's the status of A-1002?"}, 0)  # up and warm
    pool._procs[0].kill()
    pool._procs[0].join()
    # "fast" means: it fails on its own instead of waiting forever for a reply; the limit only
    # keeps a regression from hanging the suite (it would raise TimeoutError, not RuntimeError)
    with pytest.raises(RuntimeError, match="exited|gone"):
        await asyncio.wait_for(pool.run_target(AGENT, _options("v3"), {"message": "hi"}, 0), 120)
