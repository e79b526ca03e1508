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


def test_a_64kb_chat_and_a_small_one_from_another_client_are_both_answered():
    auth = {"Authorization": "Bearer local", "Content-Type": "application/json"}
    with served("--workers", "1") as server:
        url = f"{server.url}/chat/completions"
        big: dict = {}
        poster = threading.Thread(target=lambda: big.update(r=httpx.post(
            url, headers=auth, content=chat_body("Please refund A-1001, it arrived broken. " * 1600),
            timeout=BOUND_S)), daemon=True)
        poster.start()
        small = httpx.post(url, headers=auth, content=chat_body("What's the status of order A-1002?"),
                           timeout=BOUND_S)
        poster.join(BOUND_S)
    assert small.status_code == 200 and small.json()["choices"][0]["message"]["content"]
    assert big["r"].status_code == 200
