"""Where a gate's conversations run: the one interface both `--workers N` (processes on this
machine, turngate/jobs/workers.py) and `--executor ray` (Ray workers, turngate/jobs/ray_executor.py) offer.

    executor = open_executor(settings, agents)     # None: in this process, the default
    turn = await executor.run_target(spec, options, inputs, seed)   # a Turn as a dict
    absorb(executor.take_call_stats()); executor.close()

Everything else stays in the driver: evaluatorq, the scorers, the judge and the results
record. A conversation's Turn never depends on where it ran (one server world each, seeded
model), so an executor only changes the wall time. A worker that dies fails its runs (a
failed Turn each), never drops them.
"""
from __future__ import annotations

import contextlib
import importlib.util
from dataclasses import replace
from typing import Any, Protocol

from turngate.core.errors import ConfigError

EXECUTORS = ("local", "ray")


class Executor(Protocol):
    async def run_target(self, agent: str, options: Any, inputs: dict, seed: int) -> dict:
        """`await load_target(agent, options)(inputs, seed)` in a worker: the Turn as a dict."""

    def take_call_stats(self) -> dict[str, dict]:
        """Provider-call counts made in the workers since the last take that this process's
        turngate.jobs.model_calls does not already see (the driver absorbs them)."""

    def cache_stats(self) -> dict | None:
        """Summed model-cache counters of the workers (None without --cache)."""

    def close(self) -> None: ...


def check_executor(name: str) -> None:
    """--executor: a known one whose package is installed (a missing package is exit 2)."""
    if name not in EXECUTORS:
        raise ConfigError(f"--executor {name}: unknown; use one of {', '.join(EXECUTORS)}")
    if name == "ray" and not ray_installed():
        raise ConfigError("--executor ray: ray is not installed (pip install -e '.[ray]')")


def ray_installed() -> bool:
    return importlib.util.find_spec("ray") is not None


def wants_executor(settings) -> bool:
    return settings.executor != "local" or settings.workers > 1


def open_executor(settings, agents: list) -> Executor | None:
    """The executor the settings ask for, started and ready; None: run in this process."""
    if settings.executor == "ray":
        from turngate.jobs.ray_executor import RayExecutor

        return RayExecutor(settings.workers, settings.parallelism, settings.cache_path, agents=agents)
    if settings.workers > 1:
        from turngate.jobs.workers import AgentPool

        return AgentPool(settings.workers, settings.cache_path, settings.parallelism)
    return None


@contextlib.contextmanager
def opened(settings, agents: list):
    """Settings whose `pool` is one executor for everything run inside (both stages of a gate),
    closed afterwards; its cache counters land in settings.cache_stats. Settings that already
    carry a pool, or ask for none, are yielded as they are."""
    if settings.pool is not None or not wants_executor(settings):
        yield settings
        return
    executor = open_executor(settings, agents)
    try:
        yield replace(settings, pool=executor)
    finally:
        try:
            settings.cache_stats = executor.cache_stats()
        finally:
            executor.close()


def is_budget_stop(text: str | None) -> bool:
    """A run cut by --max-model-calls (its error names the refusal), wherever it ran."""
    from turngate.jobs.model_calls import BUDGET_SPENT

    return bool(text) and BUDGET_SPENT in text
