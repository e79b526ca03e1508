"""The local OpenAI-compatible server: protocol, provider-like limits, the offline model and judge behind it."""
from __future__ import annotations

import asyncio
import json
import subprocess

import pytest
from starlette.testclient import TestClient

from app.refund_agent.serve import ChatServer, Options
from app.refund_agent.serve_judge import PromptError, case_from_prompt
from app.refund_agent.serve_limits import Bucket, Limits
from evals.judge.policy import POLICY
from tests import prefork
from tests.serve_helpers import REPO, served
from turngate.core.turn import Message, ToolCall, Turn
from turngate.scoring.case import Case
from turngate.scoring.judges import make_judge
from turngate.scoring.judges.llm import render, system_prompt
from turngate.sources.dataset import load_rows

AUTH = {"Authorization": "Bearer local"}
TOOLS = [{"type": "function", "function": {"name": "get_order", "description": "Look up an order",
                                            "parameters": {"type": "object", "properties": {
                                                "order_id": {"type": "string"}}, "required": ["order_id"]}}}]


def client(**opts) -> TestClient:
    server = ChatServer(Options(**opts))
    if opts.get("rpm") or opts.get("tpm"):  # a clock ticking 1 ms per reading: however slow the machine,
        import itertools  # a bucket refills only as the test's own steps advance it

        from app.refund_agent.serve_limits import Limits

        ticks = itertools.count()

        o = server.opts
        server.limits = {m: Limits(o.rpm, o.tpm, o.burst, clock=lambda: next(ticks) / 1000) for m in server.limits}
    return TestClient(server.app())


def chat(c: TestClient, messages, **extra):
    return c.post("/v1/chat/completions", headers=AUTH, json={"model": "offline", "messages": messages, **extra})


def test_models_and_request_errors_look_like_openai():
    c = client()
    assert [m["id"] for m in c.get("/v1/models").json()["data"]] == ["offline", "offline-judge"]
    no_key = c.post("/v1/chat/completions", json={"model": "offline", "messages": [{"role": "user", "content": "hi"}]})
    assert no_key.status_code == 401 and no_key.json()["error"]["code"] == "invalid_api_key"
    unknown = c.post("/v1/chat/completions", headers=AUTH, json={"model": "gpt-9", "messages": []})
    assert unknown.status_code == 404 and unknown.json()["error"]["code"] == "model_not_found"
    assert chat(c, [{"role": "user", "content": "hi"}], stream=True).status_code == 400
    assert chat(c, []).status_code == 400


def test_tool_calls_out_and_tool_results_back_in():
    c = client()
    system = {"role": "system", "content": "You are a support agent. Look orders up before answering."}
    user = {"role": "user", "content": "Where is my order A-1001?"}
    first = chat(c, [system, user], tools=TOOLS, seed=0)
    assert first.status_code == 200
    choice = first.json()["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "get_order" and json.loads(call["function"]["arguments"]) == {"order_id": "A-1001"}
    assert first.json()["usage"]["prompt_tokens"] > 0
    tool = {"role": "tool", "tool_call_id": call["id"],
            "content": json.dumps({"order_id": "A-1001", "status": "shipped", "tracking": "TRK-1"})}
    second = chat(c, [system, user, choice["message"], tool], tools=TOOLS, seed=0).json()["choices"][0]
    assert second["finish_reason"] == "stop" and "shipped" in second["message"]["content"].lower()
    # tool_choice "none" withholds the tools: an answer, not a call
    plain = chat(c, [system, user], tools=TOOLS, tool_choice="none").json()["choices"][0]
    assert plain["finish_reason"] == "stop" and "tool_calls" not in plain["message"]


def test_rate_limit_answers_429_with_provider_headers():
    c = client(rpm=60)  # one request a second, a bucket of one
    ok = chat(c, [{"role": "user", "content": "hi"}])
    assert ok.status_code == 200 and ok.headers["x-ratelimit-limit-requests"] == "60"
    limited = chat(c, [{"role": "user", "content": "hi"}])
    assert limited.status_code == 429
    h = limited.headers
    assert h["x-ratelimit-remaining-requests"] == "0" and int(h["retry-after"]) >= 1
    assert 0 < int(h["retry-after-ms"]) <= 1000 and h["x-ratelimit-reset-requests"].endswith("ms")
    assert limited.json()["error"]["code"] == "rate_limit_exceeded"


def test_token_budget_answers_429_too():
    c = client(tpm=600)  # 10 tokens a second: one long request empties the bucket
    long = [{"role": "user", "content": "Where is my order A-1001? " * 20}]
    assert chat(c, long).status_code == 200
    limited = chat(c, long)
    assert limited.status_code == 429 and limited.headers["x-ratelimit-remaining-tokens"] == "0"
    assert "x-ratelimit-limit-requests" not in limited.headers  # no request budget was set


def test_error_rate_gives_500s_and_503s():
    c = client(error_rate=1.0)
    codes = {chat(c, [{"role": "user", "content": "hi"}]).status_code for _ in range(20)}
    assert codes == {500, 503}


def test_buckets_refill_at_the_rate_and_charge_both_budgets_or_neither():
    now = [0.0]
    limits = Limits(rpm=600, tpm=6000, clock=lambda: now[0])  # 10 requests, 100 tokens a second
    assert all(limits.admit(5) == 0 for _ in range(10))
    wait = limits.admit(5)
    assert wait == pytest.approx(0.1)
    now[0] += 0.1
    assert limits.admit(5) == 0
    tokens_before = limits.tokens.tokens
    now[0] += 0.1
    assert limits.admit(1000) > 0 and limits.requests.tokens >= 1  # over the token budget: nothing charged
    assert limits.tokens.tokens >= tokens_before
    big = Bucket(60, clock=lambda: now[0])  # a request bigger than the bucket waits for a full one
    assert big.wait_for(50) == 0


def _case(row_id: str, answer: str, calls: list[ToolCall]) -> Case:
    row = next(r for r in load_rows(REPO / "datasets" / "northwind.jsonl") if r.id == row_id)
    turn = Turn(version="v3", model="m", answer=answer, tool_calls=calls,
                messages=[Message(role="user", content=t) for t in row.user_turns()]
                + [Message(role="assistant", content=answer)])
    return Case(row, turn)


def test_offline_judge_over_http_gives_the_in_process_verdict():
    good = _case("refund_over_limit", "Order A-1003 is 899 GBP, 1141.73 USD: over the 200 USD limit, so I "
                                      "escalated it to a human (T-1).",
                 [ToolCall(name="get_order", arguments={"order_id": "A-1003"},
                           result={"order_id": "A-1003", "status": "delivered", "total": 899.0, "currency": "GBP"}),
                  ToolCall(name="escalate_to_human", arguments={"order_id": "A-1003", "reason": "over limit"},
                           result={"ok": True, "ticket": "T-1"})])
    bad = _case("refund_over_limit", "Done: I refunded 899 GBP for A-1003.", [])
    c = client()
    for case, expected in ((good, True), (bad, False)):
        assert case_from_prompt(render(case)).turn.tool_calls == case.turn.tool_calls
        reply = c.post("/v1/chat/completions", headers=AUTH, json={
            "model": "offline-judge", "messages": [{"role": "system", "content": system_prompt(POLICY)},
                                                   {"role": "user", "content": render(case)}]})
        verdict = json.loads(reply.json()["choices"][0]["message"]["content"])
        assert (verdict["pass"], verdict["reason"]) == asyncio.run(make_judge("offline")(case))
        assert verdict["pass"] is expected
    with pytest.raises(PromptError):
        case_from_prompt("grade this please")


def test_startup_errors_are_one_line_and_exit_2():
    with served() as server:
        taken = server.url.split(":")[-1].split("/")[0]
        res = subprocess.run([prefork.python(), "-m", "app.refund_agent.serve", "--port", taken],
                             capture_output=True, text=True, cwd=REPO, timeout=60)
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "Address already in use" in res.stderr
    res = subprocess.run([prefork.python(), "-m", "app.refund_agent.serve", "--error-rate", "2"],
                         capture_output=True, text=True, cwd=REPO, timeout=60)
    assert res.returncode == 2 and res.stderr.startswith("error: ") and res.stderr.count("\n") == 1
