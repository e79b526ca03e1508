"""The FAQ bot (examples/faq_bot) making CALLS cheap provider calls per conversation through
the project's model layer (openai:offline at OPENAI_BASE_URL, every call through
turngate.jobs.model_calls), so a gate on a 2-core machine is bound by the provider's rate limit
rather than by CPU. Its answers, and so its verdicts, are the FAQ bot's own.

    --agent tests.chatty_bot:target --dataset examples/faq_bot/dataset.jsonl
        --thresholds examples/faq_bot/thresholds.toml
"""
from __future__ import annotations

from typing import Any

from langchain_core.messages import HumanMessage

import examples.faq_bot as faq_bot
from turngate.core.turn import Turn, Usage
from turngate.jobs.chat_provider import ProviderChatModel  # noqa: F401  imported with the target: a worker is warm
from turngate.jobs.models import make_model

CALLS = 3


async def target(inputs: dict[str, Any], seed: int) -> Turn:
    model = make_model("openai:offline", seed=seed, max_retries=8, timeout=60)
    error = None
    made = 0
    try:
        for i in range(CALLS):
            await model.ainvoke([HumanMessage(f"hello {i}")])
            made += 1
    except Exception as exc:  # a failed call fails the run (and says which), as the Northwind agent does
        error = f"{type(exc).__name__}: {exc}"
    turn = await faq_bot.target(inputs, seed)
    return turn.model_copy(update={"version": "chatty-bot", "model": "openai:offline", "error": error,
                                   "usage": Usage(llm_calls=made)})


target.name = "chatty-bot"
target.model = "openai:offline"
target.tool_names = faq_bot.target.tool_names


async def crashing_target(inputs: dict[str, Any], seed: int) -> Turn:
    """The FAQ bot, except that the process running it dies on a question about passwords
    (a worker killed mid-run: out of memory, a segfault in a native library)."""
    import os

    if "password" in str(inputs.get("message", "")):
        os._exit(3)
    return await faq_bot.target(inputs, seed)


crashing_target.name = "crashing-bot"
crashing_target.tool_names = faq_bot.target.tool_names
