"""The optional protocol a target implements to be mutation-tested. A target (or what a
@target_factory returns) is *mutable* when it has

    mutable() -> Mutable              its editable parts: the instructions text, named on/off
                                      switches, the model's temperature (None: not a setting)
    mutant(edited: Mutable, label) -> Target
                                      a target built from an edited copy, versioned `label`
    understanding(instructions) -> object   (optional) what its model makes of a prompt, comparable
                                      with ==: equal for two prompts means the model cannot act
                                      differently on them (e.g. an offline model's parsed
                                      policy). Lets the report tell "the model does not act on this
                                      line" from "no row exercises it".

Nothing else is required: the gate runs a mutant like any target. With --workers or --executor
ray each worker rebuilds it: the target loaded from its spec, then mutant() called there with
the same edit (mutation_of/rebuild, through TargetOptions.derive), so mutant() must depend only on
the edit and the label.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from turngate.core.errors import ConfigError


@dataclass(frozen=True)
class Mutable:
    instructions: str = ""
    switches: Mapping[str, bool] = field(default_factory=dict)
    temperature: float | None = None

    def edited(self, **changes: Any) -> Mutable:
        return replace(self, **changes)


def is_mutable(target: Any) -> bool:
    return callable(getattr(target, "mutable", None)) and callable(getattr(target, "mutant", None))


def mutable_of(target: Any, spec: str) -> Mutable:
    """The target's editable parts; a target without the protocol is a one-line ConfigError."""
    if not is_mutable(target):
        raise ConfigError(f"--agent {spec}: not mutable: it needs mutable() -> Mutable and mutant(edited, label) "
                          "(see docs/mutate.md#your-own-agent)")
    got = target.mutable()
    if not isinstance(got, Mutable):
        raise ConfigError(f"--agent {spec}: mutable() returned {type(got).__name__}, not turngate.plugin.Mutable")
    return got


def understanding_of(target: Any, instructions: str) -> Any:
    """What the target's model makes of `instructions`, or None when it does not say."""
    fn = getattr(target, "understanding", None)
    return fn(instructions) if callable(fn) else None


REBUILD = "turngate.mutate.protocol:rebuild"  # TargetOptions.derive: a mutant rebuilt from the spec


def mutation_of(edited: Mutable, label: str) -> tuple[str, str]:
    """TargetOptions.derive for the mutant `edited`, versioned `label`: what a worker process (or a
    Ray worker) needs to build the same mutant from the agent's spec (turngate.jobs.target.load_target)."""
    import json

    return REBUILD, json.dumps({"label": label, "instructions": edited.instructions,
                                "switches": dict(edited.switches), "temperature": edited.temperature}, sort_keys=True)


def rebuild(target: Any, payload: str) -> Any:
    """The mutant `payload` (mutation_of) of a loaded target."""
    import json

    got = json.loads(payload)
    label = got.pop("label")
    return target.mutant(Mutable(**got), label)
