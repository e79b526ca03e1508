"""Expect keys that scorers declare (`@register_scorer(reads={...})`), beyond the generic ones.

The row schema (turngate/sources/dataset.py) validates a row's extra `expect` keys against this
table, or against the table a loader passes in the validation context (`expect_keys`): the
source layer never imports the scorers. A plug-in may also add a check across keys (e.g.
"an order the answer must name must also be looked up"), run on every row's expect."""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from pydantic import TypeAdapter

from turngate.core.registry import REGISTRY


@dataclass
class Key:
    type: Any  # None: any JSON value
    default: Any = None
    by: set[str] = field(default_factory=set)  # the scorers that read it
    adapter: TypeAdapter | None = None


_KEYS: dict[str, Key] = REGISTRY.expect_keys  # the one registry's tables (turngate/core/registry.py)
_CHECKS: list[Callable[[Any], None]] = REGISTRY.expect_checks


def declare(name: str, type_: Any = None, *, by: str = "?", default: Any = None) -> None:
    """A scorer reads expect key `name` of type `type_` (a type, a pydantic model, list[...]...)."""
    with REGISTRY.lock:
        key = _KEYS.get(name)
        if key is None:
            _KEYS[name] = key = Key(type_, default, adapter=TypeAdapter(type_) if type_ is not None else None)
        elif type_ is not None and key.type is None:
            key.type, key.adapter = type_, TypeAdapter(type_)
        if default is not None:
            key.default = default
        key.by.add(by)


def forget(name: str, *, by: str) -> None:
    with REGISTRY.lock:
        key = _KEYS.get(name)
        if key is not None:
            key.by.discard(by)
            if not key.by:
                del _KEYS[name]


def declared() -> dict[str, Key]:
    with REGISTRY.lock:
        return dict(_KEYS)


def add_check(check: Callable[[Any], None]) -> Callable[[Any], None]:
    """Register `check(expect)`, which raises ValueError when a row's expect keys contradict."""
    with REGISTRY.lock:
        if check not in _CHECKS:
            _CHECKS.append(check)
    return check


def checks() -> list[Callable[[Any], None]]:
    with REGISTRY.lock:
        return list(_CHECKS)
