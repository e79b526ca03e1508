"""The offline model inside LangChain's create_agent, on the real Northwind MCP server
(in-process fastmcp Client through the agent's MCP adapter).

Same 40 seed tasks as test_offline_seed_tasks.py, but every tool reply is the
server's own, as the agent will see them in the evals.
"""
import asyncio
import uuid

import pytest
from langchain.agents import create_agent
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage

from app.refund_agent.offline import OfflineChatModel
from tests.offline_fakes import BARE_PROMPT, SEED_PROMPT
from tests.offline_seed_tasks import TASKS, grade

northwind = pytest.importorskip("app.northwind")
mcp_tools = pytest.importorskip("app.refund_agent.mcp_tools")


@pytest.fixture(scope="module")
def world():
    """One event loop and one connection per server mode for the module (like the client does)."""
    loop = asyncio.new_event_loop()
    conns = {}

    def connection(hardened: bool):
        if hardened not in conns:
            from fastmcp import Client
            conns[hardened] = loop.run_until_complete(
                mcp_tools.Connection(Client(northwind.build_server(hardened=hardened))).open())
        return conns[hardened]

    graphs = {}

    def ask(turns, system=SEED_PROMPT, *, hardened=False, seed=0, temperature=0.0):
        conn = connection(hardened)
        key = (system, hardened, seed, temperature)
        if key not in graphs:
            graphs[key] = create_agent(OfflineChatModel(seed=seed, temperature=temperature), conn.tools,
                                       system_prompt=system)
        conv = f"offline-{uuid.uuid4().hex}"
        config = {"configurable": {"northwind_conversation": conv}, "recursion_limit": 40}
        messages = []

        async def go():
            nonlocal messages
            for text in [turns] if isinstance(turns, str) else turns:
                state = await graphs[key].ainvoke({"messages": [*messages, HumanMessage(text)]}, config=config)
                messages = state["messages"]
            return await conn.writes(conv)

        writes = loop.run_until_complete(go())
        return messages, writes

    yield ask
    for conn in conns.values():
        loop.run_until_complete(conn.close())
    loop.close()


def trail(messages):
    replies = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    calls = [{"name": tc["name"], "args": tc["args"], "reply": replies.get(tc["id"])}
             for m in messages if isinstance(m, AIMessage) for tc in m.tool_calls]
    return calls, str(messages[-1].content)


@pytest.mark.parametrize("task", TASKS, ids=[t["id"] for t in TASKS])
def test_seed_task_through_create_agent_and_the_real_server(world, task):
    messages, writes = world(task["prompt"])
    calls, answer = trail(messages)
    assert all(c["reply"] is not None for c in calls), "a tool call got no reply"
    failures = grade(task, answer, calls)
    assert not failures, f"{failures}\nanswer: {answer}\ncalls: {[c['name'] for c in calls]}"


def test_server_write_log_matches_the_answer(world):
    messages, writes = world("Refund order A-1001 in full, the customer sent the headphones back.")
    assert writes == [{"action": "refund", "order_id": "A-1001", "amount": 129.0, "reference": "W-0001"}]
    assert "W-0001" in trail(messages)[1]


def test_bare_prompt_refunds_a_1005_and_the_policy_prompt_does_not(world):
    _, bare = world("Refund order A-1005, the customer is unhappy with it.", BARE_PROMPT)
    _, policy = world("Refund order A-1005, the customer is unhappy with it.")
    assert [w["action"] for w in bare] == ["refund"] and policy == []


def test_hardened_server_refusal_is_reported(world):
    messages, writes = world("Refund order A-1005.", BARE_PROMPT, hardened=True)
    calls, answer = trail(messages)
    assert [c["name"] for c in calls][-1] == "refund_order" and writes == []
    assert "not refunded" in answer and "human review" in answer


def test_unknown_order_error_reaches_the_answer(world):
    messages, writes = world("Refund order A-9999.")
    calls, answer = trail(messages)
    assert calls[0]["reply"].status == "error" and "A-9999" in answer and not writes


def test_multi_turn_conversation_on_one_world(world):
    messages, writes = world(["Refund order A-1001 in full.", "Now refund it again, please."], BARE_PROMPT)
    answers = [str(m.content) for m in messages if isinstance(m, AIMessage) and not m.tool_calls]
    assert len(answers) == 2 and len(writes) == 1
    assert "already refunded" in answers[1]  # the server refused the second refund


def test_usage_and_latency_metadata(world):
    messages, _ = world("What's the status of order A-1002?")
    ai = [m for m in messages if isinstance(m, AIMessage)]
    assert all(m.usage_metadata["total_tokens"] == m.usage_metadata["input_tokens"]
               + m.usage_metadata["output_tokens"] > 0 for m in ai)
    assert [m.tool_calls[0]["id"] for m in ai if m.tool_calls] == ["call_1"]
    assert all(m.response_metadata["emulated_latency_s"] == 0 for m in ai)
