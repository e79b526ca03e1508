"""The emulator's model processes: big bodies cannot take every worker, and a client that leaves
has its work stopped (the process killed and replaced). Synchronised on futures, never on time:
a job that blocks forever stands for a huge body."""
from __future__ import annotations

import asyncio
import os
import threading

import httpx
import pytest

from app.refund_agent.serve_workers import SMALL_BODY_BYTES, ClientGone, Workers
from tests.serve_helpers import served

BOUND_S = 60  # bounds each wait so a broken pool fails the test instead of hanging it
BIG = SMALL_BODY_BYTES + 1


def fake_work(kind: str, body: dict) -> dict:
    if body.get("block"):
        threading.Event().wait()  # never returns: only a kill ends it
    return {"kind": kind, "echo": body["n"], "pid": os.getpid()}


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


async def _scenario():
    pool = Workers(1, reserved=1, work=fake_work)
    try:
        loop = asyncio.get_running_loop()
        gone_a, never = loop.create_future(), loop.create_future()
        a = asyncio.ensure_future(pool.run("chat", {"block": True, "n": 1}, BIG, gone_a))
        await asyncio.sleep(0)  # one step of the loop: a takes a worker and sends its job
        (a_pid,) = pool.busy
        b = asyncio.ensure_future(pool.run("chat", {"n": 2}, BIG, never))  # big too: must wait for a's worker
        small = await asyncio.wait_for(pool.run("chat", {"n": 3}, 100, never), BOUND_S)
        assert small["echo"] == 3 and small["pid"] != a_pid  # answered by the reserved worker
        assert not b.done() and alive(a_pid)  # the only general worker is still a's
        gone_a.set_result(None)  # a's client disconnects
        with pytest.raises(ClientGone):
            await asyncio.wait_for(a, BOUND_S)
        assert not alive(a_pid) and pool.stopped == 1  # its work was stopped, not left running
        got_b = await asyncio.wait_for(b, BOUND_S)  # the fresh worker takes b
        assert got_b["echo"] == 2 and got_b["pid"] not in (a_pid, small["pid"])
        assert len(pool.idle) == 2 and not pool.busy
    finally:
        pool.terminate()


def test_small_requests_are_answered_while_big_ones_hold_the_workers_and_leaving_stops_the_work():
    asyncio.run(_scenario())


async def _errors():
    pool = Workers(1, reserved=0, work=lambda kind, body: (_ for _ in ()).throw(ValueError(f"bad {body['n']}")))
    try:
        never = asyncio.get_running_loop().create_future()
        with pytest.raises(ValueError, match="bad 7"):
            await asyncio.wait_for(pool.run("chat", {"n": 7}, 10, never), BOUND_S)
        assert len(pool.idle) == 1  # a request's error keeps the worker
    finally:
        pool.terminate()


def test_a_request_error_comes_back_as_itself():
    asyncio.run(_errors())


def chat_body(content: str) -> bytes:
    import json

    return json.dumps({"model": "offline", "messages": [{"role": "user", "content": content}]}).encode()


def next_line(proc, wanted: str) -> str:
    """The server's next stdout line containing `wanted` (--log-requests), waiting at most BOUND_S."""
    import select
    import time

    deadline = time.monotonic() + BOUND_S
    while (left := deadline - time.monotonic()) > 0:
        ready, _, _ = select.select([proc.stdout], [], [], left)
        if not ready:
            break
        line = proc.stdout.readline()
        if not line:
            break
        if wanted in line:
            return line
    raise AssertionError(f"the server never printed {wanted!r}")


AUTH = {"Authorization": "Bearer local", "Content-Type": "application/json"}


def test_a_64kb_chat_and_a_small_one_from_another_client_are_both_answered():
    with served("--workers", "1", "--log-requests") as server:
        url = f"{server.url}/chat/completions"
        big: dict = {}
        body = chat_body("Please refund A-1001, it arrived broken. " * 1600)
        assert len(body) > SMALL_BODY_BYTES  # so it may not take the reserved worker
        poster = threading.Thread(target=lambda: big.update(r=httpx.post(url, headers=AUTH, content=body,
                                                                         timeout=BOUND_S)), daemon=True)
        poster.start()
        next_line(server.proc, "request 1 offline working")  # the big one holds the general worker
        small = httpx.post(url, headers=AUTH, content=chat_body("What's the status of order A-1002?"),
                           timeout=BOUND_S)
        poster.join(BOUND_S)
    assert small.status_code == 200 and small.json()["choices"][0]["message"]["content"]
    assert big["r"].status_code == 200


def test_a_client_that_leaves_mid_work_has_its_worker_replaced():
    """Over HTTP: a 3 MB chat (a minute of model work) whose client hangs up once the model has
    it is stopped (logged 499), and the one general worker is replaced: a second big request is
    answered. Without the replacement it would wait for a worker forever."""
    import socket
    from urllib.parse import urlsplit

    with served("--workers", "1", "--log-requests") as server:
        where = urlsplit(server.url)
        body = chat_body("Please refund A-1001, it arrived broken. Where is A-1002? " * 52_000)
        head = (f"POST {where.path}/chat/completions HTTP/1.1\r\nHost: {where.netloc}\r\n"
                f"Authorization: Bearer local\r\nContent-Type: application/json\r\n"
                f"Content-Length: {len(body)}\r\n\r\n").encode()
        with socket.create_connection((where.hostname, where.port), timeout=BOUND_S) as sock:
            sock.sendall(head + body)
            next_line(server.proc, "request 1 offline working")
        next_line(server.proc, "request 1 offline 499")  # the client left: its work was stopped
        again = httpx.post(f"{server.url}/chat/completions", headers=AUTH,
                           content=chat_body("Please refund A-1001, it arrived broken. " * 1700), timeout=BOUND_S)
    assert again.status_code == 200 and again.json()["choices"][0]["message"]
