"""The emulator's model processes: each request's model work in a process of its own, stopped
when the client goes away, and never all of them taken by big bodies.

A multiprocessing.Pool cannot stop one task: a client that sent a 1 MB body and left kept a
worker busy for minutes, and two such bodies left nothing for anyone else. Here each worker
is a forked process with a pipe; a request takes an idle one, and if its client disconnects
(or the request is cancelled) the worker is killed and a fresh one forked in its place.
`workers` processes take any request; `reserved` more take only bodies up to SMALL_BODY_BYTES
(an agent turn is a few KB), so a small request is answered however many big ones are in work.
"""
from __future__ import annotations

import asyncio
import os
import signal
from dataclasses import dataclass
from multiprocessing.connection import Connection, Pipe

SMALL_BODY_BYTES = 64 * 1024  # bodies up to this may use the reserved workers


class WorkerDied(RuntimeError):
    pass


def _job_loop(conn: Connection, work) -> None:
    """A worker: (kind, body) in, ("ok", reply) or ("error", exception) out, until the pipe closes."""
    while True:
        try:
            kind, body = conn.recv()
        except (EOFError, OSError):
            return
        try:
            out = ("ok", work(kind, body))
        except Exception as exc:  # the request's error (a ValueError is its 400), sent back whole
            out = ("error", exc)
        conn.send(out)


@dataclass
class Worker:
    pid: int
    conn: Connection
    reserved: bool


def _fork(reserved: bool, work) -> Worker:
    parent, child = Pipe()
    pid = os.fork()
    if pid == 0:  # the worker: nothing of the server's (socket, connections, loop, signal handlers)
        code = 0
        try:
            keep = child.fileno()
            os.closerange(3, keep)
            os.closerange(keep + 1, os.sysconf("SC_OPEN_MAX"))
            signal.set_wakeup_fd(-1)
            signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the server's to handle
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            _job_loop(child, work)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    child.close()
    return Worker(pid, parent, reserved)


class ClientGone(Exception):
    """The client disconnected before its answer: the work was stopped."""


class Workers:
    """`workers` general processes plus `reserved` ones for small bodies. Forked at once, so
    start them before the server binds its socket; replacements close what they inherit."""

    def __init__(self, workers: int, reserved: int = 1, work=None):
        """`work(kind, body) -> reply` is what a worker runs: serve.model_work unless a test says."""
        if work is None:
            from . import serve_chat  # noqa: F401  (imported once here, so no worker pays for it)
            from .offline import OfflineChatModel  # noqa: F401
            from .serve import model_work as work
        self.work = work
        self.idle = [_fork(False, work) for _ in range(workers)] + [_fork(True, work) for _ in range(reserved)]
        self.busy: dict[int, Worker] = {}
        self.waiters: list[asyncio.Future] = []
        self.closed = False
        self.stopped = 0  # workers killed because their client left

    def _take(self, small: bool) -> Worker | None:
        # a small body takes a general worker first, keeping the reserved ones for when those are busy
        for w in sorted(self.idle, key=lambda w: w.reserved):
            if small or not w.reserved:
                self.idle.remove(w)
                self.busy[w.pid] = w
                return w
        return None

    async def _acquire(self, small: bool, gone: asyncio.Future) -> Worker:
        while (worker := self._take(small)) is None:
            if self.closed:
                raise WorkerDied("the server is shutting down")
            freed = asyncio.get_running_loop().create_future()
            self.waiters.append(freed)
            try:
                await asyncio.wait({freed, gone}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                self.waiters.remove(freed)
            if gone.done():
                raise ClientGone
        return worker

    async def run(self, kind: str, body: dict, size: int, gone: asyncio.Future) -> dict:
        """model_work(kind, body) in a worker. If `gone` completes first (the client left), the
        worker is killed and replaced and ClientGone is raised."""
        worker = await self._acquire(size <= SMALL_BODY_BYTES, gone)
        loop = asyncio.get_running_loop()
        finished = False
        try:
            worker.conn.send((kind, body))
            reply = loop.create_future()
            loop.add_reader(worker.conn.fileno(), self._read, worker, reply)
            done, _ = await asyncio.wait({reply, gone}, return_when=asyncio.FIRST_COMPLETED)
            if reply not in done:
                self.stopped += 1
                raise ClientGone
            status, value = reply.result()
            finished = True
        finally:
            if not worker.conn.closed:
                loop.remove_reader(worker.conn.fileno())
            self._release(worker, keep=finished)
        if status == "error":
            raise value
        return value

    @staticmethod
    def _read(worker: Worker, reply: asyncio.Future) -> None:
        asyncio.get_running_loop().remove_reader(worker.conn.fileno())
        if reply.done():
            return
        try:
            reply.set_result(worker.conn.recv())
        except (EOFError, OSError):
            reply.set_exception(WorkerDied(f"model worker {worker.pid} died"))

    def _release(self, worker: Worker, keep: bool) -> None:
        self.busy.pop(worker.pid, None)
        if self.closed:
            self._stop(worker)
            return
        if not keep:  # stopped mid-work (or dead): a fresh process takes its place
            self._stop(worker)
            worker = _fork(worker.reserved, self.work)
        self.idle.append(worker)
        for freed in self.waiters:
            if not freed.done():
                freed.set_result(None)

    @staticmethod
    def _stop(worker: Worker) -> None:
        try:
            os.kill(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        worker.conn.close()
        try:
            os.waitpid(worker.pid, 0)
        except ChildProcessError:
            pass

    def terminate(self) -> None:
        """Stop every worker, idle or busy (server shutdown)."""
        self.closed = True
        for w in self.idle + list(self.busy.values()):
            try:
                os.kill(w.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for w in self.idle:
            self._stop(w)
        self.idle = []
