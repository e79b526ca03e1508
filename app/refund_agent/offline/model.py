"""OfflineChatModel: a deterministic tool-calling chat model that stands in for an LLM.

No network, no keys. Each call reads the whole message list (system prompt, user
turns, its own earlier tool calls and their replies) and returns the next AIMessage:
tool calls, or a short final answer. Inputs are only the messages, the bound tools,
seed and temperature; the same inputs give the same output in any process.
"""
from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel, LanguageModelInput
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from langchain_core.utils.function_calling import convert_to_openai_tool

from .noise import Noise
from .planner import plan
from .transcript import read

_CACHE_MAX = 512
# bind_tools runs before every model step of an agent; converting 22 schemas each
# time would cost more than the model itself. Keyed by object identity, with the
# object kept alive in the entry so an id can't be reused while cached.
_converted: dict[int, tuple[Any, dict]] = {}
_tool_index: dict[int, tuple[list, dict[str, dict], int]] = {}
_bound: dict[tuple[int, ...], tuple[tuple, list]] = {}


def _convert(tool: Any) -> dict:
    hit = _converted.get(id(tool))
    if hit is not None and hit[0] is tool:
        return hit[1]
    spec = convert_to_openai_tool(tool)
    if len(_converted) >= _CACHE_MAX:
        _converted.clear()
    _converted[id(tool)] = (tool, spec)
    return spec


def _index(tools: list | None) -> tuple[dict[str, dict], int]:
    """Bound tools -> {name: JSON schema of its arguments}, and the schemas' size in chars."""
    if not tools:
        return {}, 0
    hit = _tool_index.get(id(tools))
    if hit is not None and hit[0] is tools:
        return hit[1], hit[2]
    names: dict[str, dict] = {}
    for t in tools:
        fn = t.get("function", t) if isinstance(t, dict) else {}
        if fn.get("name"):
            names[fn["name"]] = fn.get("parameters") or fn.get("input_schema") or {}
    size = len(json.dumps(tools, default=str))
    if len(_tool_index) >= _CACHE_MAX:
        _tool_index.clear()
    _tool_index[id(tools)] = (tools, names, size)
    return names, size


class OfflineChatModel(BaseChatModel):
    """Deterministic offline stand-in for a tool-calling LLM (see the package docs)."""

    seed: int = 0
    temperature: float = 0.25
    latency_s: float = 0.0   # emulated seconds per call (sleeps; reported in response_metadata)
    jitter: float = 0.0      # latency varies by +-jitter*latency_s, seeded like everything else

    @property
    def _llm_type(self) -> str:
        return "offline"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model_name": "offline", "seed": self.seed, "temperature": self.temperature,
                "latency_s": self.latency_s, "jitter": self.jitter}

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[LanguageModelInput, AIMessage]:
        """Like ChatOpenAI.bind_tools: tools become OpenAI-format schemas bound as `tools`."""
        key = tuple(id(t) for t in tools)
        hit = _bound.get(key)
        if hit is not None and all(a is b for a, b in zip(hit[0], tools, strict=True)):
            formatted = hit[1]  # the same list object, so _index's cache hits too
        else:
            formatted = [_convert(t) for t in tools]
            if len(_bound) >= _CACHE_MAX:
                _bound.clear()
            _bound[key] = (tuple(tools), formatted)
        if tool_choice is not None:
            kwargs["tool_choice"] = tool_choice
        return self.bind(tools=formatted, **kwargs)

    # --- generation ---------------------------------------------------------------
    def _respond(self, messages: list[BaseMessage], tools: list | None) -> tuple[ChatResult, float]:
        transcript = read(messages)
        names, schema_chars = _index(tools)
        step = plan(transcript, names, self.seed, self.temperature)
        if step.calls:
            calls = [{"name": name, "args": dict(args), "id": f"call_{transcript.total_calls + i + 1}",
                      "type": "tool_call"} for i, (name, args) in enumerate(step.calls)]
            out_chars = len(json.dumps([[c["name"], c["args"]] for c in calls], default=str))
            content, finish = "", "tool_calls"
        else:
            calls, out_chars, content, finish = [], len(step.answer), step.answer, "stop"
        latency = self.latency_s
        if latency and self.jitter:
            u = Noise(self.seed, 1.0, transcript.context_digest).jitter(f"{transcript.total_calls}")
            latency = max(0.0, latency * (1.0 + self.jitter * u))
        in_tokens = max(1, (transcript.input_chars + schema_chars) // 4)
        out_tokens = max(1, out_chars // 4)
        message = AIMessage(
            content=content,
            tool_calls=calls,
            usage_metadata={"input_tokens": in_tokens, "output_tokens": out_tokens,
                            "total_tokens": in_tokens + out_tokens},
            response_metadata={"model_name": "offline", "finish_reason": finish,
                               "emulated_latency_s": round(latency, 6)},
        )
        return ChatResult(generations=[ChatGeneration(message=message)]), latency

    def _generate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                  run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        result, latency = self._respond(messages, kwargs.get("tools"))
        if latency > 0:
            time.sleep(latency)
        return result

    async def _agenerate(self, messages: list[BaseMessage], stop: list[str] | None = None,
                         run_manager: AsyncCallbackManagerForLLMRun | None = None, **kwargs: Any) -> ChatResult:
        result, latency = self._respond(messages, kwargs.get("tools"))
        if latency > 0:
            await asyncio.sleep(latency)
        return result
