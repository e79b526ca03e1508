"""The Turn: the stable record of one conversation with the agent.

Every scorer, the results file and every later command read this shape and nothing
else, so it changes only by adding optional fields.

    {"version": "v3", "model": "offline", "seed": 0,
     "answer": "<final assistant text>",
     "messages": [{"role": "user" | "assistant", "content": "..."}],
     "tool_calls": [{"name": "update_address", "arguments": {"order_id": "1042", "city": "Lyon"},
                     "result": <the tool's parsed reply, or null when no reply came back>,
                     "error": "<tool error text>" | null}],
     "writes": [{"action": "update_address", "order_id": "1042", "city": "Lyon"}],
     "usage": {"prompt_tokens": 0, "completion_tokens": 0, "llm_calls": 3},
     "seconds": 0.012,
     "error": null | "<why the agent run itself failed>"}

- `tool_calls` are in call order across all user turns. A call whose reply never came
  back has `result` and `error` both null: scorers treat that as missing and fail closed.
- `writes` is the MCP server's own write log for the conversation: what was applied,
  not what the model claims.
- `seconds` is wall-clock time for real models. For the offline model it is the model's
  emulated time (its configured latency per call, 0 by default), so the same input and
  seed give a byte-identical Turn in any process.
"""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class Message(BaseModel):
    model_config = ConfigDict(extra="forbid")
    role: Literal["user", "assistant"]
    content: str


class ToolCall(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: str
    arguments: dict[str, Any] = Field(default_factory=dict)
    result: Any = None
    error: str | None = None

    @property
    def answered(self) -> bool:
        """A reply came back: a result or a tool error."""
        return self.result is not None or self.error is not None


class Usage(BaseModel):
    model_config = ConfigDict(extra="forbid")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    llm_calls: int = 0


class Turn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    version: str
    model: str
    seed: int = 0
    answer: str = ""
    messages: list[Message] = Field(default_factory=list)
    tool_calls: list[ToolCall] = Field(default_factory=list)
    writes: list[dict[str, Any]] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    seconds: float = 0.0
    error: str | None = None

    def to_json(self) -> str:
        return self.model_dump_json()
