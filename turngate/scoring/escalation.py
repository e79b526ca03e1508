"""Whether a case was handed to a human. The rule is the agent's project's (which tool escalates,
what reply counts as routed to review): a plug-in registers it with `register_escalation`, and
the simulation's `escalated` goal and any scorer of the plug-in's read it through `escalated`."""
from __future__ import annotations

from collections.abc import Callable, Iterable

from turngate.core.errors import ConfigError
from turngate.core.plugins import load_plugins
from turngate.core.registry import REGISTRY
from turngate.core.turn import ToolCall

EscalationRule = Callable[[list[ToolCall]], ToolCall | None]


def register_escalation(rule: EscalationRule) -> EscalationRule:
    """`rule(calls)` -> the call that handed the case to a human, or None. Several rules: any one."""
    with REGISTRY.lock:
        if rule not in REGISTRY.escalation:
            REGISTRY.escalation.append(rule)
    return rule


def escalation_evidence(calls: Iterable[ToolCall]) -> ToolCall | None:
    """The call that escalated the case by the first registered rule that finds one, or None.
    No rule registered is a ConfigError: "not escalated" would be a guess."""
    load_plugins()
    with REGISTRY.lock:
        rules = list(REGISTRY.escalation)
    if not rules:
        raise ConfigError("no escalation rule is registered: the agent's plug-in names which tool call hands "
                          "a case to a human (turngate.plugin.register_escalation)")
    calls = list(calls)
    return next((hit for rule in rules if (hit := rule(calls)) is not None), None)


def escalated(calls: Iterable[ToolCall]) -> bool:
    return escalation_evidence(calls) is not None
