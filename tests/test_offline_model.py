"""OfflineChatModel as a LangChain chat model: bind_tools inputs, sync/async, latency."""
import asyncio
import time

from langchain_core.messages import HumanMessage, SystemMessage
from langchain_core.tools import StructuredTool, tool

from app.refund_agent.offline import OfflineChatModel
from tests.offline_fakes import SEED_PROMPT, tool_specs

ASK = [SystemMessage(SEED_PROMPT), HumanMessage("What's the status of order A-1002?")]


def get_order(order_id: str) -> dict:
    """Get an order."""
    return {}


def test_bind_tools_accepts_functions_basetools_and_dicts():
    @tool
    def check_stock(sku: str) -> dict:
        """Check stock."""
        return {}

    structured = StructuredTool(name="get_shipment", description="shipment",
                                args_schema={"type": "object", "properties": {"order_id": {"type": "string"}}},
                                func=lambda **kw: kw)
    bound = OfflineChatModel(temperature=0).bind_tools([get_order, check_stock, structured, tool_specs({"find_customer"})[0]])
    names = [t["function"]["name"] for t in bound.kwargs["tools"]]
    assert names == ["get_order", "check_stock", "get_shipment", "find_customer"]
    ai = bound.invoke(ASK)
    assert ai.tool_calls == [{"name": "get_order", "args": {"order_id": "A-1002"}, "id": "call_1", "type": "tool_call"}]


def test_bind_tools_keeps_tool_choice_and_reuses_the_schema_list():
    model = OfflineChatModel()
    specs = tool_specs()
    a, b = model.bind_tools(specs, tool_choice="auto"), model.bind_tools(specs)
    assert a.kwargs["tool_choice"] == "auto" and a.kwargs["tools"] is b.kwargs["tools"]


def test_async_and_sync_give_the_same_message():
    bound = OfflineChatModel(seed=3, temperature=0.7).bind_tools(tool_specs())
    sync = bound.invoke(ASK)
    other = asyncio.run(bound.ainvoke(ASK))
    assert (sync.content, sync.tool_calls, sync.usage_metadata) == (other.content, other.tool_calls,
                                                                    other.usage_metadata)


def test_latency_is_slept_and_reported_with_seeded_jitter():
    bound = OfflineChatModel(latency_s=0.02, jitter=0.5).bind_tools(tool_specs())
    start = time.perf_counter()
    first = bound.invoke(ASK)
    took = time.perf_counter() - start
    emulated = first.response_metadata["emulated_latency_s"]
    assert 0.01 <= emulated <= 0.03 and took >= emulated * 0.9
    assert bound.invoke(ASK).response_metadata["emulated_latency_s"] == emulated  # reproducible
    start = time.perf_counter()
    asyncio.run(bound.ainvoke(ASK))
    assert time.perf_counter() - start >= emulated * 0.9
    flat = OfflineChatModel(latency_s=0.02).bind_tools(tool_specs()).invoke(ASK)
    assert flat.response_metadata["emulated_latency_s"] == 0.02


def test_llm_type_and_params():
    m = OfflineChatModel(seed=5, temperature=0.1)
    assert m._llm_type == "offline"
    assert m._identifying_params["seed"] == 5 and m._identifying_params["temperature"] == 0.1
