"""Policy judges: offline (deterministic rules) or an LLM (openai:<m> | orq:<m>).

A judge is `async (case) -> (passed, reason)`. A judge that raises or times out makes
the policy_judge verdict fail (the scorer wrapper fails closed); it never skips a row.
"""
from __future__ import annotations

from evals.core.errors import ConfigError


def make_judge(spec: str = "offline", *, timeout: float = 60.0):
    if spec == "offline":
        from .offline import OfflineJudge

        return OfflineJudge()
    if spec.startswith(("openai:", "orq:")):
        from .llm import LLMJudge

        return LLMJudge(spec, timeout=timeout)
    raise ConfigError(f"unknown judge {spec!r}; use offline, openai:<model> or orq:<provider/model>")
