"""--executor ray: a gate's conversations on Ray workers, one provider budget for all of them.

    RAY_ADDRESS=head:6379 evals gate --executor ray --workers 8 ...   # a cluster
    evals gate --executor ray --workers 2 ...                         # a local Ray

Each worker is an async Ray actor holding the targets it is asked for, built once (e.g.
an agent and its in-memory MCP server), many conversations in flight. Finished
runs come back to the driver as they finish (an awaited ObjectRef each), where evaluatorq,
the scorers and the record work exactly as in process: resume, Ctrl-C and fail-closed are the
runner's, unchanged. A worker that dies fails the runs it held and gets no more.

One provider budget: the adaptive concurrency limit, the pacing, the counts and the
--max-model-calls budget of turngate/jobs/model_calls.py live in one actor (`SharedLimits`, the same
LocalLimits code); every worker's provider calls, and the driver's (the judge), ask it for
a slot and report back, so N workers against one key share its rpm instead of each assuming
it owns the whole limit.

API keys are never shipped to the cluster (a runtime env is visible in Ray's dashboard and
logs): a local Ray inherits this process's environment; a remote cluster's nodes need their
own. Non-secret settings (OPENAI_BASE_URL, ...) are passed on.
"""
from __future__ import annotations

import itertools
import logging
import os
import sys
import uuid
from pathlib import Path
from typing import Any

from turngate.core.errors import ConfigError
from turngate.core.project import project

SHIPPED_ENV = ("OPENAI_BASE_URL", "ORQ_ROUTER_URL")  # never a key; plus a --fault's environment (core/faults.py)
LOCAL_OBJECT_STORE_BYTES = 100 * 1024 * 1024  # Runs are small JSON; Ray's minimum is ~75 MB
START_TIMEOUT_S = 300.0  # a bound on placing and starting the workers, not a guess at how long it takes


def _loopback(address: str) -> bool:
    host = address.rpartition(":")[0].strip("[]") if ":" in address else address
    return host in ("127.0.0.1", "localhost", "::1")


def _ray():
    address = os.environ.get("RAY_ADDRESS", "").strip()
    if not address or _loopback(address):
        # Ray swaps a loopback address for this machine's network IP, which a cluster bound to
        # 127.0.0.1 does not listen on; this (misnamed) switch keeps it on 127.0.0.1, and a
        # local Ray started here listens on 127.0.0.1 only. Read once, when ray is imported.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    try:
        import ray
    except ImportError:
        raise ConfigError("--executor ray: ray is not installed (pip install -e '.[ray]')") from None
    return ray


def connect(workers: int) -> None:
    """Join RAY_ADDRESS's cluster, else start a local Ray sized for the workers (never someone
    else's local cluster found on this machine)."""
    ray = _ray()
    if ray.is_initialized():
        return
    from turngate.core.faults import shipped_env

    env = {k: os.environ[k] for k in SHIPPED_ENV if os.environ.get(k)} | shipped_env()
    # the project's own modules (its agent, its plug-ins) import on the workers as they do here
    root = project().root or Path.cwd()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)
    kwargs: dict[str, Any] = dict(runtime_env={"env_vars": env}, logging_level=logging.WARNING, log_to_driver=False)
    address = os.environ.get("RAY_ADDRESS", "").strip()
    try:
        if address:
            ray.init(address=address, **kwargs)
        else:
            ray.init(address="local", num_cpus=max(1, workers), object_store_memory=LOCAL_OBJECT_STORE_BYTES,
                     include_dashboard=False, **kwargs)
    except (ConnectionError, RuntimeError, ValueError) as exc:
        where = f"RAY_ADDRESS={address}" if address else "a local Ray"
        raise ConfigError(f"--executor ray: cannot start or join {where}: {str(exc).splitlines()[0]}") from None


class SharedLimits:
    """The one provider budget of a gate (a Ray actor): turngate.jobs.model_calls.LocalLimits, asked
    remotely. Slots are held on behalf of a caller's token, as acquire and release arrive as
    different actor calls."""

    def __init__(self, parallelism: int, limit: int | None, used: int, stats: dict[str, dict]):
        from turngate.jobs import model_calls
        self.mc = model_calls
        model_calls.configure(parallelism=parallelism)
        model_calls.absorb(stats)  # the counts go on from the driver's (one record, one tally)
        self.limits = model_calls.LocalLimits(model_calls.Budget(limit, used))
        self.held: dict[str, object] = {}
        self.abandoned: set[str] = set()

    async def acquire(self, key: str, budgeted: bool, token: str) -> bool:
        """True: a slot is held for `token`; False: --max-model-calls refused the call."""
        borrower = object()
        try:
            await self.limits.acquire(key, budgeted, borrower)
        except self.mc.ModelBudgetSpent:
            return False
        if token in self.abandoned:  # the caller gave up waiting (cancelled): the slot goes back
            self.abandoned.discard(token)
            self.limits.release(key, borrower)
            return False
        self.held[token] = borrower
        return True

    async def release(self, key: str, token: str) -> None:
        borrower = self.held.pop(token, None)
        if borrower is None:
            self.abandoned.add(token)
        else:
            self.limits.release(key, borrower)

    async def failed(self, key: str, token: str, failure, gave_up: bool) -> None:
        await self.limits.failed(key, self.held.pop(token), failure, gave_up)

    async def answered(self, key: str, token: str, latency: float, clean: bool, headers: dict, tokens: int) -> None:
        await self.limits.answered(key, self.held.pop(token), latency, clean, headers, tokens)

    async def snapshot(self) -> dict[str, dict]:
        return self.limits.snapshot()

    async def reset(self) -> None:
        self.limits.reset()

    async def budget(self) -> tuple[int | None, int, int]:
        b = self.limits.budget
        return b.limit, b.used, b.refused


class RemoteLimits:
    """turngate.jobs.model_calls' limits backend in a worker (and the driver): every call asks the
    SharedLimits actor."""

    def __init__(self, actor, limit: int | None):
        self.actor, self.limit = actor, limit

    async def acquire(self, key: str, budgeted: bool, borrower: object = None) -> str:
        from turngate.jobs.model_calls import budget_refusal

        token = uuid.uuid4().hex
        try:
            granted = await self.actor.acquire.remote(key, budgeted, token)
        except BaseException:  # cancelled while waiting: the slot, once granted, is handed back
            self.actor.release.remote(key, token)
            raise
        if not granted:
            raise budget_refusal(self.limit)
        return token

    def release(self, key: str, token: str) -> None:
        self.actor.release.remote(key, token)  # no wait: this runs on cancellation too

    async def failed(self, key: str, token: str, failure, gave_up: bool) -> None:
        await self.actor.failed.remote(key, token, failure, gave_up)

    async def answered(self, key: str, token: str, latency: float, clean: bool, headers: dict, tokens: int) -> None:
        await self.actor.answered.remote(key, token, latency, clean, headers, tokens)

    def snapshot(self) -> dict[str, dict]:
        return _ray().get(self.actor.snapshot.remote())

    def reset(self) -> None:
        _ray().get(self.actor.reset.remote())


class ConversationWorker:
    """One Ray worker (an async actor): targets built once, conversations run concurrently."""

    def __init__(self, limits, limit: int | None, parallelism: int, cache_path: str | None):
        from turngate.core.cli_support import quiet_logs
        from turngate.jobs import model_calls

        quiet_logs()
        model_calls.configure(parallelism=parallelism)
        model_calls.install(RemoteLimits(limits, limit))
        self.cache = None
        if cache_path:  # a file on this worker's node
            from turngate.jobs.model_cache import enable_cache

            self.cache = enable_cache(cache_path)
        self.targets: dict = {}

    def _target(self, agent: str, options):
        from turngate.jobs.target import load_target

        key = (agent, options)
        if key not in self.targets:
            self.targets[key] = load_target(agent, options)
        return self.targets[key]

    async def build(self, agent: str, options) -> str | None:
        """Build the target here now (a missing key or package on this node is found before
        any run); the error line, or None."""
        try:
            self._target(agent, options)
        except Exception as exc:
            return f"{type(exc).__name__}: {exc}"
        return None

    async def run(self, agent: str, options, inputs: dict, seed: int) -> dict:
        """{"turn": the Turn as JSON} or {"error": what went wrong}."""
        from turngate.jobs.target import as_turn

        try:
            return {"turn": as_turn(await self._target(agent, options)(inputs, seed)).model_dump(mode="json")}
        except Exception as exc:  # the driver fails the run with this text
            return {"error": f"{type(exc).__name__}: {exc}"}

    async def cache_stats(self) -> dict | None:
        return self.cache.stats() if self.cache is not None else None

    async def node(self) -> str:
        import ray

        return ray.get_runtime_context().get_node_id()


class RayExecutor:
    """turngate.jobs.executors.Executor on Ray: `workers` ConversationWorker actors spread over the
    cluster, one SharedLimits actor; least-busy worker first."""

    def __init__(self, workers: int, parallelism: int, cache_path: str | None = None, *, agents: list = (),
                 worker_cpus: float = 1.0):
        from turngate.jobs import model_calls
        ray = _ray()
        connect(workers)
        budget = model_calls.budget()
        self._budget = budget
        limits_cls = ray.remote(num_cpus=0, max_concurrency=100_000)(SharedLimits)
        self.limits = limits_cls.remote(parallelism, budget.limit, budget.used, model_calls.call_stats())
        worker_cls = ray.remote(num_cpus=worker_cpus, max_concurrency=parallelism + 8)(ConversationWorker)
        self.workers = [worker_cls.options(scheduling_strategy="SPREAD").remote(
            self.limits, budget.limit, parallelism, cache_path) for _ in range(workers)]
        self._busy = [0] * workers
        self._alive = [True] * workers
        self._ids = itertools.count()
        try:
            self.nodes = ray.get([w.node.remote() for w in self.workers], timeout=START_TIMEOUT_S)
            for agent in agents:  # every worker builds every target before the first run
                errors = ray.get([w.build.remote(agent.spec, agent.options) for w in self.workers],
                                 timeout=START_TIMEOUT_S)
                if error := next((e for e in errors if e), None):
                    raise ConfigError(f"--executor ray: a worker cannot build {agent.spec}: {error}")
        except ray.exceptions.GetTimeoutError:
            self._kill()
            raise ConfigError(f"--executor ray: {workers} worker(s) not started within {START_TIMEOUT_S:.0f} s "
                              f"(each needs {worker_cpus:g} CPU of the cluster)") from None
        except BaseException:
            self._kill()
            raise
        where = os.environ.get("RAY_ADDRESS") or "a local Ray"
        # stderr, as every progress line (the job layer does not import the output layer)
        sys.stderr.write(f"ray: {workers} worker(s) on {len(set(self.nodes))} node(s) of {where}; one provider budget\n")
        model_calls.reset_call_stats()  # the actor holds the counts now: not twice
        model_calls.install(RemoteLimits(self.limits, budget.limit))  # the driver's calls (the judge) too

    async def run_target(self, agent: str, options, inputs: dict, seed: int) -> dict:
        ray = _ray()
        alive = [i for i, ok in enumerate(self._alive) if ok]
        if not alive:
            raise RuntimeError("every Ray worker has died")
        index = min(alive, key=self._busy.__getitem__)
        self._busy[index] += 1
        try:
            out = await self.workers[index].run.remote(agent, options, inputs, seed)
        except ray.exceptions.RayActorError as exc:
            self._alive[index] = False
            raise RuntimeError(f"Ray worker {index} died: {str(exc).splitlines()[0]}") from None
        finally:
            self._busy[index] -= 1
        if "error" in out:
            raise RuntimeError(out["error"])
        return out["turn"]

    def take_call_stats(self) -> dict[str, dict]:
        return {}  # this process reads the actor's counts directly while the executor is open

    def cache_stats(self) -> dict | None:
        ray = _ray()
        parts = []
        for i, w in enumerate(self.workers):
            if self._alive[i]:
                try:
                    parts.append(ray.get(w.cache_stats.remote(), timeout=30))
                except Exception:
                    continue
        parts = [p for p in parts if p]
        return {k: sum(p[k] for p in parts) for k in parts[0]} if parts else None

    def close(self) -> None:
        """The actor's counts and spent budget back into this process; the actors ended."""
        from turngate.jobs import model_calls
        ray = _ray()
        try:
            stats = ray.get(self.limits.snapshot.remote(), timeout=30)
            _, used, _ = ray.get(self.limits.budget.remote(), timeout=30)
        except Exception:  # the actor is gone: its counts with it
            stats, used = {}, self._budget.used
        model_calls.install(None)
        model_calls.reset_call_stats()
        model_calls.absorb(stats)
        self._budget.used = used
        self._kill()

    def _kill(self) -> None:
        ray = _ray()
        for actor in [*self.workers, self.limits]:
            try:
                ray.kill(actor)
            except Exception:
                pass
