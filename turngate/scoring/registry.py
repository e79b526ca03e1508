"""The scorer registry. A scorer is one decorated async function, registered where it is defined:

    @register_scorer(reads={"max_words": int})
    async def short_answer(case: Case) -> Outcome:
        limit = case.row.expect.value("max_words")
        ...

`reads` names the dataset `expect` keys the scorer reads beyond the generic ones (with a type,
which the row schema then validates; or a tuple of names, untyped). A judge registers its
factory (`judge=True`): called with the judge spec, a timeout and faults, it returns the scorer.

Plug-ins (another agent's scorers, expect keys and judge) register the same way, through the public
API (turngate.plugin); how they are found: turngate/core/plugins.py. The table is the one
registry's (turngate/core/registry.py).
"""
from __future__ import annotations

import functools
import importlib
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from turngate.core.errors import ConfigError
from turngate.core.plugins import PLUGIN_GROUP, load_plugins  # noqa: F401  (re-exported)
from turngate.core.registry import REGISTRY as _ONE
from turngate.sources import expect_keys

if TYPE_CHECKING:
    from evaluatorq import EvaluationResult

    from turngate.scoring.case import Case

Outcome = tuple[bool, str] | None  # (passed, why) or None for n/a
NA = "n/a"


@dataclass(frozen=True)
class ScorerSpec:
    """One registered scorer: what it is called, how to run it, whether it is a judge, which
    dataset `expect` keys it reads, and its bar (None until bars are attached by `registry`)."""
    name: str
    fn: Callable  # the evaluatorq scorer; for a judge, a factory taking the judge spec
    is_judge: bool
    reads: tuple[str, ...]
    bar: float | None = None
    criterion: Callable | None = None  # (expect, scenario) -> [(kind, text)]: its simulation criterion


REGISTRY: dict[str, ScorerSpec] = _ONE.scorers  # the one registry's scorer table, in registration order
_ORIGIN: dict[str, tuple[str, str]] = _ONE.origins


@functools.cache
def _result_type() -> type[EvaluationResult]:
    # evaluatorq's package import pulls openai (~0.5 s): only pay it once something is scored,
    # so argument errors exit fast
    from evaluatorq import EvaluationResult

    return EvaluationResult


def result(passed: bool | None, why: str, value=None) -> EvaluationResult:
    return _result_type()(value=passed if value is None else value, pass_=passed, explanation=why)


def scorer(fn: Callable[[Case], Awaitable[Outcome]]):
    """Adapt `async fn(case) -> (passed, why) | None` to an evaluatorq scorer that fails closed:
    a row it cannot read, a failed agent run or a scorer that raises is a failed verdict."""
    from turngate.scoring.case import Case, CaseError

    @functools.wraps(fn)
    async def run(params) -> EvaluationResult:
        try:
            case = Case.from_params(params)
        except CaseError as exc:
            return result(False, str(exc))
        if case.turn.error:
            return result(False, f"agent run failed: {case.turn.error}")
        try:
            outcome = await fn(case)
        except Exception as exc:  # a scorer bug must not silently drop the row
            return result(False, f"scorer {fn.__name__} raised {type(exc).__name__}: {exc}")
        if outcome is None:
            # value None is evaluatorq's "no basis": its table and orq leave it out of the pass
            # rate (a string value would count there as a fail)
            return result(None, "n/a: nothing to check on this row")
        return result(*outcome)

    run.scorer_name = fn.__name__
    return run


def register_scorer(name: str | None = None, *, reads: Mapping[str, Any] | tuple[str, ...] | list[str] = (),
                    judge: bool = False, criterion: Callable | None = None):
    """Register the decorated scorer (or, with judge=True, judge factory) under `name` (default:
    the function's name). Returns what runs: the fail-closed evaluatorq scorer (`scorer(fn)`),
    or for a judge its factory unchanged. `@register_scorer` without parentheses works too."""
    if callable(name):  # used bare: @register_scorer
        return register_scorer()(name)

    def add(fn: Callable) -> Callable:
        key = name or fn.__name__
        origin = (fn.__module__, fn.__qualname__)
        with _ONE.lock:
            if _ORIGIN.setdefault(key, origin) != origin:  # the same function re-imported is fine
                raise ConfigError(f"scorer {key!r} is registered twice: {'.'.join(_ORIGIN[key])} and {'.'.join(origin)}")
            typed = dict(reads) if isinstance(reads, Mapping) else dict.fromkeys(reads)
            for k, t in typed.items():
                expect_keys.declare(k, t, by=key)
            run = fn if judge else scorer(fn)
            REGISTRY[key] = ScorerSpec(key, run, judge, tuple(typed), criterion=criterion)
        return run
    return add


def unregister(name: str) -> None:
    """Remove a scorer (tests and notebooks that add one for a while)."""
    with _ONE.lock:
        spec = REGISTRY.pop(name, None)
        _ORIGIN.pop(name, None)
        if spec is not None:
            for k in spec.reads:
                expect_keys.forget(k, by=name)


def registered() -> dict[str, ScorerSpec]:
    """Every registered scorer, plug-ins and the generic ones, in registration order."""
    load_plugins()
    importlib.import_module("turngate.scoring.scorers")  # the generic scorers register on import
    with _ONE.lock:  # a plug-in's scorers ahead of the generic ones, each group in registration order
        ordered = sorted(REGISTRY.items(), key=lambda kv: _ORIGIN.get(kv[0], ("",))[0].startswith("turngate."))
        if list(REGISTRY) != [k for k, _ in ordered]:
            REGISTRY.clear()
            REGISTRY.update(ordered)
    return REGISTRY
