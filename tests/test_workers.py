"""Worker processes: a conversation there gives the Turn it gives here; a dead worker fails
its calls at once instead of leaving them to time out."""
from __future__ import annotations

import asyncio

import pytest

from app.refund_agent.client import aask_agent
from evals.jobs.workers import AgentPool


@pytest.fixture
def pool():
    p = AgentPool(1)
    yield p
    p.close()


async def test_a_worker_turn_equals_the_in_process_turn(pool):
    args = dict(message_or_turns=["Can I return A-1005?", "Refund it anyway"], version="v2", seed=3)
    assert await pool.aask_agent(**args) == (await aask_agent(**args)).model_dump(mode="json")


async def test_a_dead_worker_fails_fast(pool):
    await pool.aask_agent(message_or_turns="What's the status of A-1002?", version="v3")  # up and warm
    pool._procs[0].kill()
    pool._procs[0].join()
    # "fast" means: it fails on its own instead of waiting forever for a reply; the limit only
    # keeps a regression from hanging the suite (it would raise TimeoutError, not RuntimeError)
    with pytest.raises(RuntimeError, match="exited|gone"):
        await asyncio.wait_for(pool.aask_agent(message_or_turns="hi", version="v3"), 120)
