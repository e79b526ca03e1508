"""Read a LangChain message list into what the model needs: the system prompt,
the user turns, and the tool calls (with replies) of the current turn.

The model is stateless: every call rebuilds this from the messages alone.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage, BaseMessage, HumanMessage, SystemMessage, ToolMessage


def text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):  # content blocks
        return "".join(b if isinstance(b, str) else str(b.get("text", "")) for b in content
                       if isinstance(b, (str, dict)))
    return str(content or "")


def parse_reply(text: str) -> Any:
    """A tool reply as data: JSON when it is JSON, else the string. fastmcp can wrap
    a list reply as {"result": [...]}; unwrap that."""
    try:
        data = json.loads(text)
    except (ValueError, TypeError):
        return text
    if isinstance(data, dict) and set(data) == {"result"}:
        return data["result"]
    return data


@dataclass
class Call:
    id: str
    name: str
    args: dict
    answered: bool = False
    data: Any = None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.answered and self.error is None


def call_key(name: str, args: dict) -> str:
    return name + json.dumps(args, sort_keys=True, default=str)


@dataclass
class Transcript:
    system: str = ""
    users: list[str] = field(default_factory=list)
    calls: list[Call] = field(default_factory=list)          # this turn's calls
    earlier_calls: list[Call] = field(default_factory=list)  # calls of earlier turns
    total_calls: int = 0      # tool calls in the whole conversation, for new call ids
    steps: int = 0            # tool-calling model replies in this turn
    context_digest: bytes = b""
    input_chars: int = 0

    def lookup(self, name: str, args: dict) -> Call | None:
        key = call_key(name, args)
        for c in self.calls:
            if call_key(c.name, c.args) == key:
                return c
        return None


def _role(m: BaseMessage) -> str:
    if isinstance(m, SystemMessage):
        return "system"
    if isinstance(m, HumanMessage):
        return "user"
    if isinstance(m, AIMessage):
        return "assistant"
    if isinstance(m, ToolMessage):
        return "tool"
    return getattr(m, "type", "other")


def read(messages: list[BaseMessage]) -> Transcript:
    t = Transcript()
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, HumanMessage)), default=-1)
    replies = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
    digest = hashlib.sha256()
    for i, m in enumerate(messages):
        text = text_of(m.content)
        t.input_chars += len(text)
        if i <= last_user:
            # What came before this turn's tool calls: the slips' random key.
            digest.update(f"{_role(m)}\x1f{text}\x1f".encode())
            if isinstance(m, AIMessage) and m.tool_calls:
                digest.update(json.dumps([[c["name"], c["args"]] for c in m.tool_calls],
                                         sort_keys=True, default=str).encode())
            digest.update(b"\x1e")
        if isinstance(m, SystemMessage):
            t.system += ("\n" if t.system else "") + text
        elif isinstance(m, HumanMessage):
            t.users.append(text)
        elif isinstance(m, AIMessage) and m.tool_calls:
            t.total_calls += len(m.tool_calls)
            if i > last_user:
                t.steps += 1
            for tc in m.tool_calls:
                call = Call(id=tc.get("id") or "", name=tc["name"], args=dict(tc.get("args") or {}))
                reply = replies.get(call.id)
                if reply is not None:
                    call.answered = True
                    body = text_of(reply.content)
                    if getattr(reply, "status", None) == "error" or body.startswith("Error:"):
                        call.error = body.removeprefix("Error:").strip() or "tool error"
                    else:
                        call.data = parse_reply(body)
                (t.calls if i > last_user else t.earlier_calls).append(call)
    t.context_digest = digest.digest()
    return t
