"""The model layer: a model spec string -> a LangChain chat model.

    offline[:temperature=0.25,latency=200ms]   the offline model a plug-in registers (register_offline_model)
    openai:<name>[,temperature=T]               langchain-openai ChatOpenAI; OPENAI_API_KEY, OPENAI_BASE_URL
                                                (any OpenAI-compatible server: vLLM, Ollama, LM Studio ...)
    orq:<provider/name>[,temperature=T]         orq.ai's OpenAI-compatible router; ORQ_API_KEY

Provider models send no temperature unless the spec names one: the provider's default applies
(an OpenAI-compatible emulator then uses its own default, so a run through HTTP matches the
in-process one). Every provider call goes through turngate.jobs.model_calls: adaptive
concurrency, retries with backoff, counts. "offline" is whatever deterministic model a plug-in
registers with register_offline_model (no key, no network).
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

from langchain_core.language_models import BaseChatModel

from turngate.core.errors import ConfigError
from turngate.core.plugins import load_plugins
from turngate.core.registry import REGISTRY
from turngate.jobs.model_calls import DEFAULT_MAX_RETRIES

ORQ_ROUTER = "https://api.orq.ai/v3/router"


def register_offline_model(factory) -> None:
    """The chat model `offline` names: deterministic for a seed, no key, no network. A factory
    (seed=, temperature=, latency_s=, jitter=) -> chat model; the last one registered wins."""
    with REGISTRY.lock:
        REGISTRY.offline_model[:] = [factory]


@dataclass(frozen=True)
class ModelSpec:
    provider: str  # offline | openai | orq
    name: str = ""
    options: tuple[tuple[str, str], ...] = field(default=())

    def __str__(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options)
        if self.provider == "offline":
            return "offline" + (f":{opts}" if opts else "")
        return f"{self.provider}:{self.name}" + (f",{opts}" if opts else "")


def parse_spec(spec: str) -> ModelSpec:
    provider, _, rest = spec.strip().partition(":")
    if provider == "offline":
        options = []
        for part in filter(None, rest.split(",")):
            key, eq, value = part.partition("=")
            if not eq or key.strip() not in ("temperature", "latency", "jitter"):
                raise ConfigError(
                    f"model {spec!r}: offline options are temperature=<float>, latency=<ms>ms, jitter=<0..1>; got {part!r}")
            options.append((key.strip(), value.strip()))
        parsed = ModelSpec("offline", "", tuple(options))
        _offline_kwargs(parsed)  # validate values now, not at the first call
        return parsed
    if provider in ("openai", "orq") and rest:
        name, *parts = rest.split(",")
        options = []
        for part in parts:
            key, eq, value = part.partition("=")
            if not eq or key.strip() != "temperature":
                raise ConfigError(f"model {spec!r}: {provider} options are temperature=<float>; got {part!r}")
            try:
                float(value)
            except ValueError as exc:
                raise ConfigError(f"model {spec!r}: temperature {value.strip()!r} is not a number") from exc
            options.append(("temperature", value.strip()))
        if name.strip():
            return ModelSpec(provider, name.strip(), tuple(options))
    raise ConfigError(f"unknown model {spec!r}; use offline, openai:<model> or orq:<provider/model>")


def _seconds(value: str) -> float:
    match = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ms|s)?", value)
    if not match:
        raise ConfigError(f"latency {value!r}: write it like 200ms or 0.2s")
    number = float(match.group(1))
    return number / 1000 if match.group(2) in (None, "ms") else number


def _offline_kwargs(spec: ModelSpec) -> dict:
    kwargs: dict = {}
    for key, value in spec.options:
        try:
            if key == "temperature":
                kwargs["temperature"] = float(value)
            elif key == "latency":
                kwargs["latency_s"] = _seconds(value)
            elif key == "jitter":
                kwargs["jitter"] = float(value)
        except ValueError as exc:
            raise ConfigError(f"model option {key}={value!r}: not a number") from exc
    return kwargs


def _require(var: str, spec: ModelSpec) -> str:
    value = os.environ.get(var, "").strip()
    if not value:
        raise ConfigError(f"{var} is not set; model {spec} needs it (or use --model offline)")
    return value


def make_model(spec: str | ModelSpec, *, seed: int = 0, max_retries: int = DEFAULT_MAX_RETRIES,
               timeout: float | None = None) -> BaseChatModel:
    """Build the chat model for a spec. API keys are read here and never stored elsewhere."""
    parsed = spec if isinstance(spec, ModelSpec) else parse_spec(spec)
    if parsed.provider == "offline":
        load_plugins()
        with REGISTRY.lock:
            factory = REGISTRY.offline_model[0] if REGISTRY.offline_model else None
        if factory is None:
            raise ConfigError(f"model {parsed}: no offline model is installed (a plug-in registers one); "
                              "use openai:<model> or orq:<provider/model>")
        return factory(seed=seed, **_offline_kwargs(parsed))

    from turngate.jobs.chat_provider import ProviderChatModel

    if parsed.provider == "openai":
        key = _require("OPENAI_API_KEY", parsed)
        base_url = os.environ.get("OPENAI_BASE_URL") or None
    else:
        key = _require("ORQ_API_KEY", parsed)
        base_url = os.environ.get("ORQ_ROUTER_URL") or ORQ_ROUTER  # not ORQ_BASE_URL: evaluatorq reads that as the platform URL
    options = dict(parsed.options)
    temperature = float(options["temperature"]) if "temperature" in options else None
    return ProviderChatModel.build(f"{parsed.provider}:{parsed.name}", model=parsed.name, api_key=key,
                                   base_url=base_url, seed=seed, temperature=temperature,
                                   retries=max_retries, timeout=timeout)
