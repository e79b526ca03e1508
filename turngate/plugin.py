"""The plug-in API: everything a project's own eval suite needs to teach turngate about its agent.
A plug-in is a module named in the project's `[tool.turngate] plugins` (or TURNGATE_PLUGINS, or
the `turngate.plugins` entry-point group); importing it registers what it brings:

    from turngate.plugin import Case, Outcome, register_scorer

    @register_scorer(reads={"max_words": int})
    async def short_answer(case: Case) -> Outcome:
        limit = case.row.expect.value("max_words")
        if limit is None:
            return None                      # n/a on this row
        words = len(case.turn.answer.split())
        return words <= limit, f"{words} words (at most {limit})"

What can be registered, all in one registry (turngate/core/registry.py), thread-safe:
scorers (`register_scorer`), the dataset `expect` keys they read (`declare_expect_key`) and
checks across them (`add_expect_check`), judges (`register_judge`) and the policy an LLM judge
grades against (`register_policy`), the deterministic `offline` chat model
(`register_offline_model`), how the agent escalates to a human (`register_escalation`), how a
`--fault` reaches the agent's tool server (`register_server_faults`), and the simulated user of
`evals simulate` (`register_simulated_user`). `Mutable` is what a target's `mutable()` returns
for `evals mutate` (docs/mutate.md). Only this module and `turngate` itself are public:
everything else may change without notice.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> "module:attribute"; loaded on first use, so importing a plug-in stays cheap
_EXPORTS = {
    "Turn": "turngate.core.turn:Turn", "ToolCall": "turngate.core.turn:ToolCall",
    "Message": "turngate.core.turn:Message", "Usage": "turngate.core.turn:Usage",
    "ConfigError": "turngate.core.errors:ConfigError",
    "Row": "turngate.sources.dataset:Row", "Expect": "turngate.sources.dataset:Expect",
    "Inputs": "turngate.sources.dataset:Inputs", "matches": "turngate.sources.dataset:matches",
    "normalise": "turngate.sources.dataset:normalise",
    "declare_expect_key": "turngate.sources.expect_keys:declare",
    "add_expect_check": "turngate.sources.expect_keys:add_check",
    "Target": "turngate.jobs.target:Target", "TargetOptions": "turngate.jobs.target:TargetOptions",
    "target_factory": "turngate.jobs.target:target_factory", "user_turns": "turngate.jobs.target:user_turns",
    "Mutable": "turngate.mutate.protocol:Mutable",
    "register_offline_model": "turngate.jobs.models:register_offline_model",
    "Case": "turngate.scoring.case:Case", "ok": "turngate.scoring.case:ok", "describe": "turngate.scoring.case:describe",
    "Outcome": "turngate.scoring.registry:Outcome", "register_scorer": "turngate.scoring.registry:register_scorer",
    "register_judge": "turngate.scoring.judges:register_judge",
    "register_policy": "turngate.scoring.judges:register_policy",
    "register_escalation": "turngate.scoring.escalation:register_escalation",
    "escalated": "turngate.scoring.escalation:escalated",
    "escalation_evidence": "turngate.scoring.escalation:escalation_evidence",
    "register_server_faults": "turngate.core.faults:register_server_faults",
    "register_simulated_user": "turngate.simulation.hooks:register_simulated_user",
    "find_pii": "turngate.core.pii:find", "unprompted_pii": "turngate.core.pii:unprompted",
    "PII_SOURCE": "turngate.core.pii:SOURCE",
    "register_goal_check": "turngate.simulation.hooks:register_goal_check",
    "UserMove": "turngate.simulation.hooks:UserMove", "UserDecision": "turngate.simulation.hooks:UserDecision",
}

__all__ = sorted(_EXPORTS)

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time each name loads on first use
    pass
    from turngate.simulation.hooks import UserDecision, UserMove, register_goal_check, register_simulated_user  # noqa: F401


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'turngate.plugin' has no attribute {name!r}")
    module, _, attr = where.partition(":")
    value = getattr(importlib.import_module(module), attr)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
