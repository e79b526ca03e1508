"""The one registry: everything a plug-in (or the library itself) registers, in one object.

Tables, each written only through the register_* functions of the public API (turngate.plugin):

    scorers         name -> ScorerSpec (turngate/scoring/registry.py), in registration order
    expect_keys     dataset `expect` keys scorers read beyond the generic ones, with their types
    expect_checks   checks across a row's expect keys
    judges          name -> (factory, source files behind its rules)
    policy          the written policy an LLM judge grades against
    offline_model   the chat model `offline` names
    escalation      how the agent hands a case to a human: predicates over a Turn's tool calls
    server_fault    how a --fault reaches the agent's tool server: hooks giving the environment to set
    simulated_users name -> a project's simulated user for `evals simulate` (turngate/simulation/hooks.py)
    goal_checks     name -> a project's goal check a scenario's goal_reached may use (same module)

Importing this module registers nothing; plug-ins are imported by `load_plugins()` (core/plugins.py),
which is idempotent and thread-safe. Writes and reads of a table take the registry's lock.
"""
from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Registry:
    scorers: dict[str, Any] = field(default_factory=dict)
    origins: dict[str, tuple[str, str]] = field(default_factory=dict)
    expect_keys: dict[str, Any] = field(default_factory=dict)
    expect_checks: list[Callable[[Any], None]] = field(default_factory=list)
    judges: dict[str, tuple[Callable[..., object], list[Path]]] = field(default_factory=dict)
    policy: list[str] = field(default_factory=list)
    offline_model: list[Callable[..., Any]] = field(default_factory=list)
    escalation: list[Callable[[list], Any]] = field(default_factory=list)  # calls -> the escalating call or None
    server_fault: list[Callable[[str], dict[str, str]]] = field(default_factory=list)
    simulated_users: dict[str, Any] = field(default_factory=dict)  # name -> hooks.SimulatedUser
    goal_checks: dict[str, Any] = field(default_factory=dict)  # name -> hooks.GoalCheckHook
    lock: threading.RLock = field(default_factory=threading.RLock, repr=False)


REGISTRY = Registry()
