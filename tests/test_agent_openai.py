"""The openai: model path end to end through ChatOpenAI against a local server."""
from __future__ import annotations

import pytest

from app.refund_agent.client import aask_agent
from tests.fakes.openai_server import FakeOpenAI, text_completion, tool_call_completion
from turngate.core.errors import ConfigError


async def test_openai_path_runs_tools_and_records_results(openai_env):
    replies = [tool_call_completion([("check_return_eligibility", {"order_id": "A-1001"}),
                                     ("get_order", {"order_id": "A-1001"})]),
               tool_call_completion([("refund_order", {"order_id": "A-1001", "amount": 129.0})]),
               text_completion("Refunded 129.00 EUR for A-1001 (W-0001).")]
    with FakeOpenAI(replies) as server:
        openai_env(server)
        turn = await aask_agent("Refund order A-1001 in full.", "v2", model="openai:gpt-test")
    assert turn.error is None, turn.error
    assert turn.model == "openai:gpt-test"
    assert [c.name for c in turn.tool_calls] == ["check_return_eligibility", "get_order", "refund_order"]
    assert turn.tool_calls[0].result["eligible"] is True
    assert turn.tool_calls[2].result["ok"] is True and turn.tool_calls[2].result["reference"] == "W-0001"
    assert turn.writes == [{"action": "refund", "order_id": "A-1001", "amount": 129.0, "reference": "W-0001"}]
    assert turn.answer.startswith("Refunded 129.00 EUR")
    assert turn.usage.llm_calls == 3 and turn.usage.prompt_tokens == 33
    # the model saw the system prompt, the tools, and the tool replies as tool messages
    first = server.requests[0]
    assert first["messages"][0]["role"] == "system" and "Policy" in first["messages"][0]["content"]
    assert {t["function"]["name"] for t in first["tools"]} >= {"refund_order", "escalate_to_human"}
    assert any(m["role"] == "tool" and "eligible" in m["content"] for m in server.requests[1]["messages"])


async def test_tool_errors_reach_the_model_and_the_turn(openai_env):
    replies = [tool_call_completion([("get_order", {"order_id": "A-9999"})]),
               text_completion("There is no order A-9999.")]
    with FakeOpenAI(replies) as server:
        openai_env(server)
        turn = await aask_agent("Where is A-9999?", "v3", model="openai:gpt-test")
    call = turn.tool_calls[0]
    assert call.result is None and "No order A-9999" in call.error
    tool_msg = next(m for m in server.requests[1]["messages"] if m["role"] == "tool")
    assert tool_msg["content"].startswith("Error: No order A-9999")


async def test_missing_key_is_a_config_error_naming_the_variable(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        await aask_agent("hi", "v2", model="openai:gpt-test")
    monkeypatch.delenv("ORQ_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="ORQ_API_KEY"):
        await aask_agent("hi", "v2", model="orq:openai/gpt-4o")


async def test_server_errors_are_retried_then_succeed(openai_env):
    with FakeOpenAI([text_completion("Hello.")], fail_first=2, fail_status=429) as server:
        openai_env(server)
        turn = await aask_agent("hi", "v2", model="openai:gpt-test", max_retries=2)
    assert turn.error is None and turn.answer == "Hello."
    assert len(server.requests) == 3  # 429, 429, 200


async def test_exhausted_retries_become_a_failed_turn_without_the_key(openai_env):
    with FakeOpenAI([text_completion("never")], fail_first=5, fail_status=503) as server:
        openai_env(server)
        turn = await aask_agent("hi", "v2", model="openai:gpt-test", max_retries=1)
    assert turn.error is not None and "sk-test-not-a-real-key" not in turn.model_dump_json()
    assert len(server.requests) == 2
