"""--workers N: run agent conversations in N worker processes.

One event loop runs every conversation of a gate on one core: LangGraph steps and MCP round
trips cost ~10 ms of CPU per conversation, which is noise against a hosted model's seconds
but becomes the bottleneck at high parallelism with a fast (or emulated) model. Workers
spread that CPU over the machine's cores. Each worker is a process with its own event loop,
in-process targets (an agent and, say, its in-memory MCP server) and model cache; conversations are independent (one server
world each), so where a conversation runs never changes its Turn. evaluatorq, the scorers
and the results record stay in the parent. The pool is one of the executors of
turngate/jobs/executors.py (the other is Ray's); each process keeps its own provider limits (for one
shared limit use --executor ray), its counts are gathered for the record, and
--max-model-calls is one counter in shared memory.
"""
from __future__ import annotations

import asyncio
import itertools
import multiprocessing as mp
import os
import signal
import threading
from typing import Any


class SharedBudget:
    """--max-model-calls across the worker processes: one counter in shared memory."""

    def __init__(self, used, limit: int | None):
        self.value, self.limit, self.refused = used, limit, 0

    @property
    def used(self) -> int:
        return self.value.value

    def take(self) -> bool:
        with self.value.get_lock():
            if self.limit is not None and self.value.value >= self.limit:
                self.refused += 1
                return False
            self.value.value += 1
            return True


def _worker_main(conn, cache_path: str | None, used=None, limit: int | None = None,
                 parallelism: int | None = None) -> None:
    """A worker: requests (id, kwargs) in, (id, turn dict | error text) out, many in flight."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the parent decides when work stops
    from turngate.core.cli_support import quiet_logs
    from turngate.jobs import model_calls

    quiet_logs()
    if parallelism:
        model_calls.configure(parallelism=parallelism)
    if used is not None:  # this process's provider limits, the pool's one model-call budget
        model_calls.install(model_calls.LocalLimits(SharedBudget(used, limit)))
    cache = None
    if cache_path:
        from turngate.jobs.model_cache import enable_cache

        cache = enable_cache(cache_path)
    loop = asyncio.new_event_loop()
    send_lock = threading.Lock()

    def send(message) -> None:
        with send_lock:
            conn.send(message)

    targets: dict = {}  # (agent spec, options) -> the target, built once per worker

    async def serve(req_id: int, kwargs: dict) -> None:
        try:
            from turngate.jobs.target import as_turn, load_target  # any --agent, rebuilt here from its spec

            key = (kwargs["agent"], kwargs["options"])
            if key not in targets:
                targets[key] = load_target(*key)
            turn = as_turn(await targets[key](kwargs["inputs"], kwargs["seed"]))
            send((req_id, turn.model_dump(mode="json"), None))
        except Exception as exc:  # the parent turns this into a failed Turn
            send((req_id, None, f"{type(exc).__name__}: {exc}"))

    def read() -> None:
        while True:
            try:
                message = conn.recv()
            except EOFError:
                break
            if message is None:
                break
            if message == "stats":
                send(("stats", cache.stats() if cache else None, None))
                continue
            if message == "calls":  # this process's provider-call counts, for the gate's record
                send(("calls", model_calls.call_stats(), None))
                continue
            loop.call_soon_threadsafe(lambda m=message: loop.create_task(serve(*m)))
        loop.call_soon_threadsafe(loop.stop)

    threading.Thread(target=read, daemon=True).start()
    loop.run_forever()


class AgentPool:
    """Send agent calls (aask_agent, or any target by its --agent spec) to worker processes;
    least-busy worker first."""

    def __init__(self, workers: int, cache_path: str | None = None, parallelism: int | None = None):
        from turngate.jobs import model_calls
        ctx = mp.get_context("spawn")  # a clean interpreter: no inherited event loop or connections
        self._conns, self._procs = [], []
        budget = model_calls.budget()  # the gate's --max-model-calls, continued from what is spent
        self._budget, self._used = budget, ctx.Value("q", budget.used)
        self._calls_seen: list[dict] = [{} for _ in range(workers)]
        for _ in range(workers):
            parent, child = ctx.Pipe()
            proc = ctx.Process(target=_worker_main, args=(child, cache_path, self._used, budget.limit, parallelism),
                               daemon=True)
            proc.start()
            self._conns.append(parent)
            self._procs.append(proc)
        self._busy = [0] * workers
        self._alive = [True] * workers
        self._ids = itertools.count()
        self._pending: dict[int, tuple[asyncio.AbstractEventLoop, asyncio.Future, int]] = {}
        self._replies: dict[str, list[Any]] = {"stats": [], "calls": []}
        self._lock = threading.Lock()
        for i, conn in enumerate(self._conns):
            threading.Thread(target=self._read, args=(i, conn), daemon=True).start()

    def _read(self, index: int, conn) -> None:
        while True:
            try:
                req_id, turn, error = conn.recv()
            except (EOFError, OSError):
                break
            if req_id in self._replies:
                self._replies[req_id].append((index, turn))
                continue
            with self._lock:
                self._busy[index] -= 1
                loop, fut, _ = self._pending.pop(req_id, (None, None, None))
            if fut is not None:
                loop.call_soon_threadsafe(_settle, fut, turn, error)
        with self._lock:  # the worker died: every call waiting on it fails, and it gets no more
            self._alive[index] = False
            for req_id, (loop, fut, worker) in list(self._pending.items()):
                if worker == index:
                    self._pending.pop(req_id)
                    loop.call_soon_threadsafe(_settle, fut, None, f"agent worker {index} exited")

    async def run_target(self, agent: str, options, inputs: dict, seed: int) -> dict:
        """`await load_target(agent, options)(inputs, seed)` in a worker; the Turn as a dict."""
        return await self.aask_agent(agent=agent, options=options, inputs=inputs, seed=seed)

    async def aask_agent(self, **kwargs) -> dict:
        """The Turn as the worker dumped it (JSON-ready; the scorers validate it)."""
        loop = asyncio.get_running_loop()
        fut = loop.create_future()
        with self._lock:
            alive = [i for i, ok in enumerate(self._alive) if ok]
            if not alive:
                raise RuntimeError("every agent worker process has exited")
            index = min(alive, key=self._busy.__getitem__)
            req_id = next(self._ids)
            try:
                self._conns[index].send((req_id, kwargs))
            except OSError as exc:
                self._alive[index] = False
                raise RuntimeError(f"agent worker {index} is gone: {exc}") from exc
            self._busy[index] += 1
            self._pending[req_id] = (loop, fut, index)
        try:
            return await fut
        finally:
            with self._lock:
                if self._pending.pop(req_id, None) is not None:
                    self._busy[index] -= 1

    def _ask(self, what: str) -> list[tuple[int, Any]]:
        """Every live worker's answer to `what` ("stats", "calls"): (worker index, answer)."""
        replies = self._replies[what]
        replies.clear()
        asked = 0
        for i, conn in enumerate(self._conns):
            if self._alive[i]:
                try:
                    conn.send(what)
                    asked += 1
                except OSError:
                    pass
        deadline = 50
        while len(replies) < asked and deadline:
            threading.Event().wait(0.05)
            deadline -= 1
        return list(replies)

    def cache_stats(self) -> dict | None:
        """Summed cache counters of the workers (None without --cache)."""
        parts = [s for _, s in self._ask("stats") if s]
        if not parts:
            return None
        return {k: sum(p[k] for p in parts) for k in parts[0]}

    def take_call_stats(self) -> dict[str, dict]:
        """The workers' provider-call counts since the last take, summed per model."""
        from turngate.jobs.model_calls import CallStats, merge_into, stats_between

        total: dict[str, CallStats] = {}
        for index, calls in self._ask("calls"):
            for key, st in stats_between(self._calls_seen[index], calls).items():
                merge_into(total.setdefault(key, CallStats(model=key)), st)
            self._calls_seen[index] = calls
        return {k: v.to_dict() for k, v in total.items()}

    def close(self) -> None:
        self._budget.used = self._used.value  # what the workers spent counts on (the next stage)
        for conn in self._conns:
            try:
                conn.send(None)
            except OSError:
                pass
        for proc in self._procs:
            proc.join(timeout=5)
            if proc.is_alive():
                proc.terminate()


def _settle(fut: asyncio.Future, turn: dict | None, error: str | None) -> None:
    if fut.done():
        return
    if error is not None:
        fut.set_exception(RuntimeError(error))
    else:
        fut.set_result(turn)


def default_workers() -> int:
    return max(1, min(os.cpu_count() or 1, 8))
