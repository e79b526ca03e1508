"""The Northwind refund agent as an evals Target: `--agent app.refund_agent:target`
(the default), one pinned version per target, `refund-agent@<version>` in results."""
from __future__ import annotations

import asyncio
from functools import cache
from typing import Any

from turngate.core.turn import Turn
from turngate.jobs.target import TargetOptions, target_factory, user_turns

DEFAULT_VERSION = "v3"


@cache
def northwind_tool_names() -> frozenset[str]:
    """The tools the Northwind server lists, asked of the server itself (no copy kept here)."""
    from app.northwind import build_server

    async def names() -> frozenset[str]:
        return frozenset(t.name for t in await build_server().list_tools())

    return asyncio.run(names()) if not _loop_running() else _in_thread(names)


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


def _in_thread(coro_fn) -> Any:
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as ex:
        return ex.submit(asyncio.run, coro_fn()).result()


class RefundAgent:
    """One pinned version of the refund agent: `await agent({"message": ...}, seed) -> Turn`."""

    def __init__(self, options: TargetOptions, spec=None):
        from .models import parse_spec
        from .versions import load_version, version_path

        if spec is None:
            spec = load_version(options.version or DEFAULT_VERSION)  # unknown version: ConfigError
            self.version_file = version_path(options.version or DEFAULT_VERSION)  # its digest goes in the record's plan
        else:  # a version given as an object (a mutant of `evals mutate`): no file
            self.version_file = None
        if options.model:
            parse_spec(options.model)  # bad model spec or missing key: ConfigError, before any run
        self.options = options
        self.spec = spec  # passed on as the object: a version loaded from a file path has no name to look up
        self.version = spec.name
        self.name = f"refund-agent@{spec.name}"
        self.model = options.model or spec.model
        self.description = spec.description
        from turngate.core.cli_support import check_keys

        # a missing API key is an argument error now, not one failed run per row later
        check_keys(self.model, "--model" if options.model else f"version {spec.name}'s model", "--model")

    # `evals mutate` (turngate/mutate/protocol.py): the version file's prompt, switches and temperature
    def mutable(self):
        from turngate.plugin import Mutable

        return Mutable(self.spec.instructions, {"hardened": self.spec.hardened, "redact": self.spec.redact},
                       _temperature(self.model))

    def mutant(self, edited, label: str) -> RefundAgent:
        from dataclasses import replace

        from .versions import Version

        spec = Version(name=label, description=f"a mutant of {self.version} (evals mutate)",
                       instructions=edited.instructions, model=_with_temperature(self.model, edited.temperature),
                       **dict(edited.switches))
        return RefundAgent(replace(self.options, version=None, model=None), spec=spec)

    def understanding(self, instructions: str):
        """The offline model acts on its parsed policy alone (offline/planner.py): equal policies, equal
        behaviour. A real model's reading cannot be known: None."""
        if not self.model.startswith("offline"):
            return None
        from .offline.policy import parse_policy

        policy = parse_policy(instructions)
        return policy, policy.rules

    def tool_names(self) -> frozenset[str]:
        return northwind_tool_names()

    def validate_row(self, row) -> None:
        """Rows naming orders, customers or SKUs this world lacks are errors at load time."""
        from .row_check import validate_row

        validate_row(row)

    def conversation(self, seed: int):
        """One live conversation (one server world, one message history), for the simulation."""
        from .client import Conversation

        o = self.options
        return Conversation(self.spec, model=o.model, seed=seed, transport=o.transport, max_retries=o.max_retries,
                            model_timeout=o.timeout)

    async def __call__(self, inputs: dict[str, Any], seed: int) -> Turn:
        from .client import aask_agent

        o = self.options
        return await aask_agent(user_turns(inputs), self.spec, model=o.model, seed=seed,
                                transport=o.transport, max_retries=o.max_retries, timeout=o.timeout)


def _temperature(model: str) -> float | None:
    """The model's temperature: as its spec names it, the offline model's own default, or None
    (a provider's default, unknown here)."""
    from .models import parse_spec

    spec = parse_spec(model)
    named = dict(spec.options).get("temperature")
    if named is not None:
        return float(named)
    if spec.provider == "offline":
        from .offline.model import OfflineChatModel

        return OfflineChatModel.model_fields["temperature"].default
    return None


def _with_temperature(model: str, temperature: float | None) -> str:
    from .models import ModelSpec, parse_spec

    spec = parse_spec(model)
    if temperature is None or temperature == _temperature(model):
        return model
    options = tuple(o for o in spec.options if o[0] != "temperature") + (("temperature", f"{temperature:g}"),)
    return str(ModelSpec(spec.provider, spec.name, options))


@target_factory
def target(options: TargetOptions) -> RefundAgent:
    return RefundAgent(options)
