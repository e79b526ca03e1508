"""Chat-completions requests -> the offline model (or the offline judge) -> OpenAI replies.

The mapping is exact: OpenAI messages become the LangChain messages the agent would have
handed the model in process (langchain_core.messages.convert_to_messages), the tools are the
same OpenAI-format schemas ChatOpenAI sends, the request's seed is the model's seed, and a
request without `temperature` gets the offline model's default, as `--model offline` does.
"""
from __future__ import annotations

import json
import time
import uuid
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError


class ChatRequest(BaseModel):
    model_config = ConfigDict(extra="allow")  # max_tokens, stop, parallel_tool_calls ...: accepted, unused
    model: str
    messages: list[dict[str, Any]] = Field(min_length=1)
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    seed: int | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    stream: bool = False
    n: int = 1


def parse(body: dict) -> ChatRequest:
    try:
        req = ChatRequest.model_validate(body)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"{where}: {first['msg']}") from None
    if req.stream:
        raise ValueError("stream: streaming is not supported by this server; send stream=false")
    if req.n != 1:
        raise ValueError("n: only n=1 is supported")
    return req


def _tools_for(req: ChatRequest) -> list[dict] | None:
    choice = req.tool_choice
    if not req.tools or choice == "none":
        return None
    if isinstance(choice, dict):
        name = (choice.get("function") or {}).get("name")
        chosen = [t for t in req.tools if (t.get("function") or {}).get("name") == name]
        if not chosen:
            raise ValueError(f"tool_choice names {name!r}, which is not among the tools")
        return chosen
    return req.tools


def _reply(req: ChatRequest, message: dict, finish: str, prompt_tokens: int, completion_tokens: int) -> dict:
    return {"id": f"chatcmpl-{uuid.uuid4().hex[:24]}", "object": "chat.completion", "created": int(time.time()),
            "model": req.model, "system_fingerprint": "northwind-offline",
            "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}


async def complete(body: dict) -> dict:
    from langchain_core.messages import convert_to_messages

    from .offline import OfflineChatModel

    req = parse(body)
    try:
        messages = convert_to_messages(req.messages)
    except (ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"messages: {exc}") from None
    settings: dict[str, Any] = {"seed": req.seed or 0}
    if req.temperature is not None:
        settings["temperature"] = req.temperature
    tools = _tools_for(req)
    out = await OfflineChatModel(**settings).ainvoke(messages, **({"tools": tools} if tools else {}))
    usage = out.usage_metadata or {}
    message: dict[str, Any] = {"role": "assistant", "content": out.content or None}
    if out.tool_calls:
        message["tool_calls"] = [{"id": c["id"], "type": "function",
                                  "function": {"name": c["name"], "arguments": json.dumps(c["args"])}}
                                 for c in out.tool_calls]
    finish = (out.response_metadata or {}).get("finish_reason") or ("tool_calls" if out.tool_calls else "stop")
    return _reply(req, message, finish, usage.get("input_tokens", 0), usage.get("output_tokens", 0))


async def judge(body: dict) -> dict:
    from .serve_judge import PromptError, judge_reply

    req = parse(body)
    prompt = next((m.get("content") for m in reversed(req.messages) if m.get("role") == "user"), None)
    if isinstance(prompt, list):  # content blocks
        prompt = "".join(b.get("text", "") for b in prompt if isinstance(b, dict))
    if not isinstance(prompt, str):
        raise ValueError("offline-judge: no user message holding the case")
    try:
        text = await judge_reply(prompt)
    except PromptError as exc:
        raise ValueError(f"offline-judge: {exc}") from None
    chars = sum(len(str(m.get("content") or "")) for m in req.messages)
    return _reply(req, {"role": "assistant", "content": text}, "stop", max(1, chars // 4), max(1, len(text) // 4))
