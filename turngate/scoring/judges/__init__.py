"""Policy judges: an LLM judge (openai:<m> | orq:<m>) that holds every answer to a written
policy text, and judges a plug-in registers by name (e.g. a deterministic `offline` judge, no key).

A judge is `async (case) -> (passed, reason)`. A judge that raises or times out makes
the policy_judge verdict fail (the scorer wrapper fails closed); it never skips a row.

The policy text: `register_policy(text)` (a plug-in does this for its agent), or the file
named by TURNGATE_JUDGE_POLICY / the gate's --judge-policy. An LLM judge with no policy is a
ConfigError: grading "against the policy" with none would pass anything.
"""
from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from turngate.core.errors import ConfigError
from turngate.core.plugins import load_plugins
from turngate.core.registry import REGISTRY

_POLICY: list[str] = REGISTRY.policy  # the one registry's (turngate/core/registry.py)


def register_judge(name: str, factory: Callable[..., object], *, sources: list[Path] | None = None) -> None:
    """`--judge <name>` builds `factory(timeout=...)`. sources: the files behind its rules, whose
    hash is the judge's fingerprint (a changed rule makes its stored calibration stale)."""
    if not callable(factory):
        raise ConfigError(f"judge {name!r}: its factory is not callable")
    with REGISTRY.lock:
        REGISTRY.judges[name] = (factory, sorted(Path(p) for p in (sources or [])))


def judge_sources(spec: str) -> list[Path]:
    load_plugins()
    if spec in REGISTRY.judges:
        return REGISTRY.judges[spec][1]
    return [Path(__file__).with_name("llm.py")]


def register_policy(text: str) -> None:
    """The written policy every LLM judge grades against (the last one registered wins)."""
    if not text.strip():
        raise ConfigError("the judge's policy text is empty")
    with REGISTRY.lock:
        _POLICY[:] = [text.strip()]


def policy_text() -> str:
    """The policy an LLM judge is given: TURNGATE_JUDGE_POLICY's file, else the registered text."""
    path = os.environ.get("TURNGATE_JUDGE_POLICY", "").strip()
    if path:
        try:
            text = Path(path).read_text()
        except OSError as exc:
            raise ConfigError(f"{path}: cannot read the judge policy ({exc.strerror or exc})") from None
        if not text.strip():
            raise ConfigError(f"{path}: the judge policy is empty")
        return text.strip()
    load_plugins()
    if not _POLICY:
        raise ConfigError("no judge policy: register one (turngate.scoring.judges.register_policy) "
                          "or set TURNGATE_JUDGE_POLICY / --judge-policy to a file")
    return _POLICY[0]


def make_judge(spec: str, *, timeout: float = 60.0, policy: str | None = None):
    load_plugins()
    if spec in REGISTRY.judges:
        return REGISTRY.judges[spec][0](timeout=timeout)
    if spec.startswith(("openai:", "orq:")):
        from .llm import LLMJudge

        return LLMJudge(spec, timeout=timeout, policy=policy if policy is not None else policy_text())
    known = ", ".join([*REGISTRY.judges, "openai:<model>", "orq:<provider/model>"])
    raise ConfigError(f"unknown judge {spec!r}; use {known}")
