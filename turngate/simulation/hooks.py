"""What a project brings to `evals simulate`: its own simulated user and its own goal checks
(public through turngate.plugin). Without either, a simulation still runs: the built-in
`scripted` user says each scenario's `script` in order, and goals use the generic fields
(`calls`, `escalated`, `answer`).

    register_simulated_user("shopper", Shopper, scenario_fields=ShopperFacts, tactics={...})
    register_goal_check("paid", lambda orders, turn: ..., value_type=list[str])

A scenario picks its user by name: its own `user = "..."`, else its file's top-level
`user = "..."`, else `scripted`. A user is a factory `(persona, scenario, seed)` returning an
object with `decide(answers, goal_reached) -> UserDecision`: the next message (a UserMove),
or None with the reason the user stops. `decide([])` is the opening. It must be a pure,
deterministic function of the agent's answers so far: the judge calls it too, to end the
conversation exactly when the user would walk away.

Importing this module registers nothing and loads nothing heavy; both tables live in the one
registry (turngate/core/registry.py), under its lock.
"""
from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from turngate.core.registry import REGISTRY

SCRIPTED = "scripted"  # the built-in user's name
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,59}")
_GENERIC_GOAL_KEYS = {"description", "calls", "escalated", "answer", "expected"}


@dataclass(frozen=True)
class UserMove:
    """What the simulated user says next, and which of its moves it is (a tactic's name, "open", ...)."""
    text: str
    tactic: str = ""


@dataclass(frozen=True)
class UserDecision:
    """The user's next move, or move None and why it stops (`ended`: goal_reached, gave_up, ...)."""
    move: UserMove | None
    ended: str | None = None


UserFactory = Callable[..., Any]  # (persona, scenario, seed) -> an object with decide(answers, goal_reached)


@dataclass(frozen=True)
class SimulatedUser:
    """A registered user: its factory, and what the library needs to know about it."""
    name: str
    factory: UserFactory
    scenario_fields: Any = None  # a pydantic model of the extra scenario keys it reads (scenario.facts)
    tactics: Mapping[str, str] = field(default_factory=dict)  # tactic -> how an LLM-played user uses it
    brief: Callable[[Any], str] | None = None  # scenario -> the facts an LLM-played user is told
    stop: Callable[[Any, Any, list[str], bool], str | None] | None = None  # when an LLM-played user stops


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not _NAME.fullmatch(name):
        raise ValueError(f"{what} name {name!r} must be lower-case letters, digits, '_' or '-', starting with a letter")


def register_simulated_user(name: str, factory: UserFactory, *, scenario_fields: Any = None,
                            tactics: Mapping[str, str] | None = None, brief: Callable[[Any], str] | None = None,
                            stop: Callable[[Any, Any, list[str], bool], str | None] | None = None) -> UserFactory:
    """Register the project's offline simulated user under `name` (the last one registered under a
    name wins).

    factory(persona, scenario, seed) -> object with `decide(answers: list[str], goal_reached: bool)
        -> UserDecision`; `decide([], False)` gives the opening message.
    scenario_fields: a pydantic model for the scenario keys this user reads beyond the generic ones;
        the file's entries are validated with it when loaded, and the instance is `scenario.facts`.
    tactics: the persona tactics this user knows, each with the line an LLM-played user
        (--sim-model openai:<m>) is told; personas' `tactics` and scenarios' `avoid` are checked
        against them.
    brief(scenario) -> str: the facts an LLM-played user is told ("FACTS YOU KNOW").
    stop(persona, scenario, answers, goal_reached) -> reason | None: when an LLM-played user stops
        (default: goal reached, or more refusals than the persona's patience allows).
    """
    _check_name(name, "simulated user")
    if name == SCRIPTED:
        raise ValueError(f"simulated user name {SCRIPTED!r} is the built-in scripted user's")
    if not callable(factory):
        raise TypeError("register_simulated_user: factory must be callable (persona, scenario, seed) -> user")
    spec = SimulatedUser(name, factory, scenario_fields, dict(tactics or {}), brief, stop)
    with REGISTRY.lock:
        REGISTRY.simulated_users[name] = spec
    return factory


def simulated_users() -> dict[str, SimulatedUser]:
    """Every registered user, plug-ins loaded first."""
    from turngate.core.plugins import load_plugins

    load_plugins()
    with REGISTRY.lock:
        return dict(REGISTRY.simulated_users)


@dataclass(frozen=True)
class GoalCheckHook:
    name: str
    check: Callable[[Any, Any], bool]
    value_type: Any = None
    adapter: Any = None  # pydantic TypeAdapter of value_type, made on registration


def register_goal_check(name: str, check: Callable[[Any, Any], bool], *, value_type: Any = None
                        ) -> Callable[[Any, Any], bool]:
    """A key a scenario's `[scenario.goal_reached]` may set beyond the generic ones (calls,
    escalated, answer): `check(value, turn) -> bool`, whether the goal holds on the Turn. The
    value is validated with `value_type` (a type, list[...], a pydantic model) when the
    scenario file is loaded. The last one registered under a name wins."""
    _check_name(name, "goal check")
    if name in _GENERIC_GOAL_KEYS:
        raise ValueError(f"goal check name {name!r} is a generic goal_reached key")
    adapter = None
    if value_type is not None:
        from pydantic import TypeAdapter

        adapter = TypeAdapter(value_type)
    with REGISTRY.lock:
        REGISTRY.goal_checks[name] = GoalCheckHook(name, check, value_type, adapter)
    return check


def goal_checks() -> dict[str, GoalCheckHook]:
    from turngate.core.plugins import load_plugins

    load_plugins()
    with REGISTRY.lock:
        return dict(REGISTRY.goal_checks)
