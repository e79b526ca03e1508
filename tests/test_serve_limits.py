"""The provider emulator stays responsive: the offline model works in other processes, bodies
are bounded in size and nesting, every error has a JSON body, SIGTERM stops it promptly."""
from __future__ import annotations

import json
import select
import signal
import threading
import time

import httpx
from starlette.testclient import TestClient

from app.refund_agent.serve import MAX_BODY_BYTES, MAX_NESTING, ChatServer, Options, nesting
from tests.serve_helpers import START_TIMEOUT_S, served

AUTH = {"Authorization": "Bearer local", "Content-Type": "application/json"}
BOUND_S = 60  # bounds a wait for a signal so a broken server fails the test instead of hanging it


def client() -> TestClient:
    return TestClient(ChatServer(Options()).app(), raise_server_exceptions=False)


def chat_body(content: str) -> bytes:
    return json.dumps({"model": "offline", "messages": [{"role": "user", "content": content}]}).encode()


def assert_openai_error(response, status: int) -> dict:
    assert response.status_code == status
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"} and error["message"]
    return error


def test_unknown_paths_and_methods_get_json_errors():
    c = client()
    assert "/nowhere" in assert_openai_error(c.get("/nowhere"), 404)["message"]
    assert_openai_error(c.get("/v1/chat/completions"), 405)
    assert_openai_error(c.post("/v1/models"), 405)


def test_a_body_over_the_limit_gets_413_declared_or_streamed():
    c = client()
    big = chat_body("x" * (MAX_BODY_BYTES + 1))
    error = assert_openai_error(c.post("/v1/chat/completions", headers=AUTH, content=big), 413)
    assert error["code"] == "request_too_large"

    def chunks():  # no Content-Length: counted as it arrives
        for i in range(0, len(big), 65536):
            yield big[i:i + 65536]
    assert_openai_error(c.post("/v1/chat/completions", headers=AUTH, content=chunks()), 413)


def test_deep_nesting_is_a_400_not_a_recursion_error():
    c = client()
    for depth in (MAX_NESTING + 1, 100_000):
        deep = b'{"model": "offline", "messages": ' + b"[" * depth + b"]" * depth + b"}"
        assert "nests deeper" in assert_openai_error(c.post("/v1/chat/completions", headers=AUTH, content=deep),
                                                     400)["message"]
    assert_openai_error(c.post("/v1/chat/completions", headers=AUTH, content=b"\xff\xfe not json"), 400)
    assert nesting(b'{"a": "[[[[{{{{", "b": [[1], {"c": "\\"]]"}]}') == 3  # brackets in strings do not count


def test_a_model_error_is_a_json_500(monkeypatch):
    def broken(kind, body):
        raise RuntimeError("boom")
    monkeypatch.setattr("app.refund_agent.serve.model_work", broken)
    error = assert_openai_error(client().post("/v1/chat/completions", headers=AUTH, content=chat_body("hi")), 500)
    assert error["type"] == "server_error" and "boom" not in error["message"]


def wait_for_line(proc, wanted: str) -> str:
    """The server's next stdout line starting with `wanted` (the signal), within BOUND_S."""
    deadline = time.monotonic() + BOUND_S
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], deadline - time.monotonic())
        line = proc.stdout.readline() if ready else ""
        if line.startswith(wanted):
            return line
        assert line or not ready, "the server closed stdout"
    raise AssertionError(f"no {wanted!r} line within {BOUND_S} s")


def test_models_answer_while_a_1mb_chat_is_worked_on_and_sigterm_stops_it(capsys):
    with served("--log-requests", "--workers", "1") as server:
        base = server.url.removesuffix("/v1")
        outcome: dict = {}

        def post_big():
            try:
                outcome["response"] = httpx.post(f"{base}/v1/chat/completions", headers=AUTH,
                                                 content=chat_body("refund A-1001 " + "x" * 1_000_000),
                                                 timeout=600)
            except httpx.HTTPError as exc:
                outcome["error"] = exc

        poster = threading.Thread(target=post_big, daemon=True)
        poster.start()
        wait_for_line(server.proc, "request 1 offline working")  # the model has the 1 MB message
        started = time.monotonic()
        models = httpx.get(f"{base}/v1/models", timeout=BOUND_S)
        answered_in = time.monotonic() - started
        assert models.status_code == 200 and [m["id"] for m in models.json()["data"]] == ["offline", "offline-judge"]
        assert poster.is_alive() and not outcome  # the chat is still being worked on
        too_big = httpx.post(f"{base}/v1/chat/completions", headers=AUTH, content=b"x" * 10_000_000,
                             timeout=BOUND_S)
        assert_openai_error(too_big, 413)
        server.proc.send_signal(signal.SIGTERM)
        stopping = time.monotonic()
        server.proc.wait(START_TIMEOUT_S)
        stopped_in = time.monotonic() - stopping
        poster.join(BOUND_S)
    assert "error" in outcome or outcome["response"].status_code >= 500  # the chat in flight was cut off
    with capsys.disabled():
        print(f"\nGET /v1/models during a 1 MB chat: {answered_in * 1000:.0f} ms; SIGTERM to exit: {stopped_in:.2f} s")
    assert answered_in < 5  # in practice milliseconds; before, it waited behind the whole chat
    assert stopped_in < 10  # in practice about SHUTDOWN_GRACE_S; before, minutes
