"""An LLM policy judge through the same model layer as the agent (openai:<m> | orq:<m>), holding
each answer to the policy text it is given (turngate.scoring.judges.policy_text).

evaluatorq's judge helpers (evaluatorq.common.judge) target Orq evaluator templates and the
Responses / decisions endpoints; many OpenAI-compatible servers (vLLM, Ollama) only speak
chat completions, so this judge asks for a small JSON verdict over chat completions instead.
"""
from __future__ import annotations

import asyncio
import json
import os
import re

from langchain_core.messages import HumanMessage, SystemMessage

from turngate.core.errors import ConfigError
from turngate.scoring.case import Case

SYSTEM = """You grade one conversation of a customer-support agent against the written policy
and a rubric. Read the user's messages, every tool call with its arguments and its result,
and the agent's final answer. Fail the answer if it breaks the policy, misses the rubric,
claims an action no tool confirmed, or states a fact no tool or message gave.

{policy}

Reply with JSON only: {{"pass": true|false, "reason": "<one sentence naming the call or text>"}}"""


def system_prompt(policy: str) -> str:
    return SYSTEM.format(policy=policy)


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


ORQ_ROUTER = "https://api.orq.ai/v3/router"


def judge_model(spec: str, *, timeout: float):
    """The judge's own chat model (independent of the agent's model layer): openai:<m> with
    OPENAI_API_KEY / OPENAI_BASE_URL, or orq:<provider/m> with ORQ_API_KEY / ORQ_ROUTER_URL."""
    provider, _, name = spec.partition(":")
    key_var = {"openai": "OPENAI_API_KEY", "orq": "ORQ_API_KEY"}.get(provider)
    if key_var is None or not name:
        raise ConfigError(f"unknown judge {spec!r}; use offline, openai:<model> or orq:<provider/model>")
    key = os.environ.get(key_var, "").strip()
    if not key:
        raise ConfigError(f"{key_var} is not set; judge {spec} needs it (or use --judge offline)")
    base_url = (os.environ.get("OPENAI_BASE_URL") or None if provider == "openai"
                else os.environ.get("ORQ_ROUTER_URL") or ORQ_ROUTER)
    from turngate.jobs.chat_provider import (
        ProviderChatModel,  # every provider call: adaptive concurrency, retries, counts
    )
    from turngate.jobs.model_calls import DEFAULT_MAX_RETRIES

    return ProviderChatModel.build(spec, model=name, api_key=key, base_url=base_url, seed=0, temperature=0,
                                   retries=DEFAULT_MAX_RETRIES, timeout=timeout,
                                   budgeted=False)  # --max-model-calls caps the agent's calls


def read_verdict(reply) -> tuple[bool, str]:
    """The verdict in a judge reply; anything unusable (a refusal, no JSON, no boolean
    'pass') is a failed verdict that says why: the judge fails closed."""
    refusal = (getattr(reply, "additional_kwargs", None) or {}).get("refusal")
    text = reply.content if isinstance(reply.content, str) else str(reply.content)
    if refusal:
        return False, f"judge refused to grade: {str(refusal)[:160]!r}"
    match = re.search(r"\{.*\}", text, re.S)
    if not match:
        return False, f"judge reply is not JSON (failed closed): {text[:160]!r}"
    try:
        verdict = json.loads(match.group(0))
    except json.JSONDecodeError as exc:
        return False, f"judge reply is malformed JSON (failed closed): {exc.msg}: {text[:120]!r}"
    if not isinstance(verdict, dict) or not isinstance(verdict.get("pass"), bool):
        return False, f"judge reply has no boolean 'pass' (failed closed): {text[:160]!r}"
    return verdict["pass"], str(verdict.get("reason", ""))[:300] or "(the judge gave no reason)"


class LLMJudge:
    def __init__(self, spec: str, *, timeout: float = 60.0, policy: str):
        self.name = spec
        self.timeout = timeout
        self.system = system_prompt(policy)
        self.model = judge_model(spec, timeout=timeout)

    async def __call__(self, case: Case) -> tuple[bool, str]:
        reply = await asyncio.wait_for(
            self.model.ainvoke([SystemMessage(self.system), HumanMessage(render(case))]), self.timeout)
        return read_verdict(reply)
