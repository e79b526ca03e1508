"""The job layer's one contract: a Target is any async callable `(inputs, seed) -> Turn`.

    async def run(inputs: dict, seed: int) -> Turn: ...      # mypkg/bot.py
    python evals/regression.py --agent mypkg.bot:run --dataset rows.jsonl --thresholds bars.toml

`inputs` holds only what the user says: {"message": str} or {"turns": [str, ...]}, never the
row's id or expectations (a target that could read them could pass by peeking). Optional
attributes refine it:
    name        the job name in results and tables (default: the callable's name)
    version     the label runs are stored under (default: name)
    model       the model it runs, for the record (default "-")
    tool_names  the tools it can call; dataset rows naming others are rejected at load time
                (default None: not checked)
    validate_row(row)  raise ValueError for a row this agent cannot run (unknown order, ...)
    version_file  the file its version was read from; its sha256 goes in the record's plan, and
                --resume refuses when the file changed since (as it does when the code of the
                --agent module's package changed: turngate/core/agent_code.py)

An agent with versions or settings is a *factory* instead: `--agent` names a callable that
takes a TargetOptions and returns a Target (mark it with `@target_factory`), e.g.
`mypkg.agent:target` building `mybot@<version>` from a version file per version.
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from turngate.core.errors import ConfigError, import_failure
from turngate.core.project import project
from turngate.core.provenance import built_version_file, note_built, note_code  # noqa: F401  (re-exported)
from turngate.core.turn import Turn

DEFAULT_AGENT = project().value("agent")  # [tool.turngate] agent; None: --agent is required


@runtime_checkable
class Target(Protocol):
    def __call__(self, inputs: dict[str, Any], seed: int) -> Awaitable[Turn]: ...


@dataclass(frozen=True)
class TargetOptions:
    """What the command line says about the agent; a factory uses what applies to it."""
    version: str | None = None
    model: str | None = None
    transport: str = "memory"
    max_retries: int = 8  # provider retries (turngate.jobs.model_calls.DEFAULT_MAX_RETRIES)
    timeout: float | None = None
    # ("module:function", argument): the loaded target becomes function(target, argument), so a
    # worker process rebuilds a derived target from the spec too (a mutant: turngate/mutate/protocol.py)
    derive: tuple[str, str] | None = None


def target_factory(fn: Callable[[TargetOptions], Target]) -> Callable[[TargetOptions], Target]:
    """Mark `fn(options) -> Target` as a factory, so `--agent` calls it with the options."""
    fn.is_target_factory = True
    return fn


def user_turns(inputs: dict[str, Any]) -> list[str]:
    """The user's messages in order, whichever form the row used."""
    return [inputs["message"]] if inputs.get("message") is not None else list(inputs.get("turns") or [])


def target_inputs(row) -> dict[str, Any]:
    """A row's inputs as a target sees them: the user's words only."""
    if row.inputs.message is not None:
        return {"message": row.inputs.message}
    return {"turns": list(row.inputs.turns or [])}


def name_of(target: Any) -> str:
    return getattr(target, "name", None) or getattr(target, "__name__", None) or type(target).__name__


def version_of(target: Any) -> str:
    return getattr(target, "version", None) or name_of(target)


def model_of(target: Any) -> str:
    return getattr(target, "model", None) or "-"


def tool_names_of(target: Any) -> frozenset[str] | None:
    names = getattr(target, "tool_names", None)
    names = names() if callable(names) else names
    return None if names is None else frozenset(names)


def import_object(spec: str) -> Any:
    """`package.module:attr` (or `package.module.attr`) -> the object; a bad spec is a ConfigError."""
    module_name, sep, attr = spec.partition(":")
    if not sep:
        module_name, _, attr = spec.rpartition(".")
    if not module_name or not attr:
        raise ConfigError(f"--agent {spec!r}: expected 'package.module:callable'")
    if os.getcwd() not in sys.path:  # like uvicorn's --app-dir ".": your package in the current directory,
        sys.path.insert(0, os.getcwd())  # ahead of any installed package of the same name
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):  # the module itself
            raise ConfigError(f"--agent {spec!r}: cannot import {module_name} ({exc})") from None
        raise ConfigError(import_failure(f"--agent {spec}: importing {module_name} failed", exc)) from None
    except Exception as exc:  # a typo or a crash in the agent's own module: cannot judge (2), not a regression (1)
        raise ConfigError(import_failure(f"--agent {spec}: importing {module_name} failed", exc)) from None
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise ConfigError(f"--agent {spec!r}: {module_name} has no attribute {attr!r}") from None
    return obj


def _is_async_callable(obj: Any) -> bool:
    """An async function (or partial of one), or an object whose __call__ is one."""
    return inspect.iscoroutinefunction(obj) or inspect.iscoroutinefunction(getattr(obj, "__call__", None))  # noqa: B004


def load_target(spec: str, options: TargetOptions) -> Target:
    """Resolve `--agent`: a factory is called with the options, a Target is used as it is."""
    if not spec:
        raise ConfigError("--agent: no agent given (module:callable), and no [tool.turngate] agent in a pyproject.toml")
    obj = import_object(spec)
    if getattr(obj, "is_target_factory", False):
        obj = obj(options)
    elif options.version is not None:
        raise ConfigError(f"--agent {spec}: --version/--baseline need an agent factory "
                          "(a @target_factory callable taking TargetOptions)")
    if options.derive is not None:
        obj = import_object(options.derive[0])(obj, options.derive[1])
    if not _is_async_callable(obj):
        raise ConfigError(f"--agent {spec}: not an async callable (inputs, seed) -> Turn "
                          f"(got {type(obj).__name__})")
    note_built(spec, version_of(obj), version_file_of(obj))
    note_code(spec)  # its module's package, for the plan: --resume refuses when that code changed
    return obj


# (agent spec, version label) -> its version file as read when this process built the target:
# what a new results record's plan stores (turngate/record/results.py: plan_of), and --resume compares with.


def version_file_of(target: Any) -> dict[str, str] | None:
    """{"path", "sha256"} of the file a target's version was read from (its `version_file`
    attribute, e.g. versions/v3.toml), or None: it has none."""
    import hashlib
    from pathlib import Path

    from turngate.core.project import project

    path = getattr(target, "version_file", None)
    if path is None:
        return None
    path = Path(path)
    try:
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the version file ({exc.strerror or exc})") from None
    try:
        shown = str(path.resolve().relative_to(project().root or Path.cwd().resolve()))
    except ValueError:
        shown = str(path)
    return {"path": shown, "sha256": digest}


def as_turn(value: Any) -> Turn:
    """A target's return value as a Turn (a Turn, or a dict of one); raises ValueError otherwise."""
    if isinstance(value, Turn):
        return value
    if isinstance(value, dict):
        return Turn.model_validate(value)
    raise ValueError(f"target returned {type(value).__name__}, not a Turn")
