"""An LLM policy judge through the same model layer as the agent (openai:<m> | orq:<m>).

evaluatorq's judge helpers (evaluatorq.common.judge) target Orq evaluator templates and the
Responses / decisions endpoints; many OpenAI-compatible servers (vLLM, Ollama) only speak
chat completions, so this judge asks for a small JSON verdict over chat completions instead.
"""
from __future__ import annotations

import asyncio
import json
import re

from langchain_core.messages import HumanMessage, SystemMessage

from app.refund_agent.models import make_model
from evals.case import Case

from .policy import POLICY

SYSTEM = f"""You grade one conversation of a customer-support agent against the written policy
and a rubric. Read the user's messages, every tool call with its arguments and its result,
and the agent's final answer. Fail the answer if it breaks the policy, misses the rubric,
claims an action no tool confirmed, or states a fact no tool or message gave.

{POLICY}

Reply with JSON only: {{"pass": true|false, "reason": "<one sentence naming the call or text>"}}"""


def render(case: Case) -> str:
    lines = ["## Conversation"]
    lines += [f"{m.role}: {m.content}" for m in case.turn.messages]
    lines.append("## Tool calls")
    for c in case.turn.tool_calls:
        reply = json.dumps(c.result) if c.result is not None else f"ERROR {c.error}" if c.error else "NO REPLY"
        lines.append(f"- {c.name}({json.dumps(c.arguments)}) -> {reply}")
    lines.append(f"## Final answer\n{case.turn.answer}")
    lines.append(f"## Rubric\n{case.row.inputs.expect.rubric or case.row.expected_output}")
    return "\n".join(lines)


class LLMJudge:
    def __init__(self, spec: str, *, timeout: float = 60.0):
        self.name = spec
        self.timeout = timeout
        self.model = make_model(spec, seed=0, timeout=timeout)

    async def __call__(self, case: Case) -> tuple[bool, str]:
        reply = await asyncio.wait_for(
            self.model.ainvoke([SystemMessage(SYSTEM), HumanMessage(render(case))]), self.timeout)
        text = reply.text if isinstance(reply.text, str) else str(reply.content)
        match = re.search(r"\{.*\}", text, re.S)
        if not match:
            raise ValueError(f"judge reply is not JSON: {text[:120]!r}")
        verdict = json.loads(match.group(0))
        if not isinstance(verdict.get("pass"), bool):
            raise ValueError(f"judge reply has no boolean 'pass': {text[:120]!r}")
        return verdict["pass"], str(verdict.get("reason", ""))[:300]
