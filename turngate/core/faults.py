"""--fault: inject a failure into a gate run to see that it fails closed.

    agent-raises[:ROW]    the agent call raises                  -> failed Turn (error set)
    run-hangs[:ROW]       the agent never returns                -> Turn error "timeout" (see --timeout)
    not-a-turn[:ROW]      the job returns something else         -> every scorer fails: "not a Turn"
    scorer-raises:NAME    that scorer raises inside evaluatorq   -> its verdict fails: "scorer raised"
    judge-raises          the policy judge raises                -> policy_judge fails
    judge-hangs           the policy judge never answers         -> policy_judge fails on --judge-timeout
    tool-hangs:TOOL       the stdio server never answers TOOL    -> call kept with no result; run fails
    server-dies[:N]       the stdio server process exits on tool call N (default 4)

The last two live in the agent's tool server, which only the agent's project knows how to
reach: its plug-in registers a hook (`register_server_faults`) that turns the fault into the
environment its server reads; without one these faults are refused. ROW limits a fault to one
row id; without it, every row.
No fault ever removes a row from a denominator.
"""
from __future__ import annotations

import asyncio
import contextlib
import difflib
import functools
import os
from collections.abc import Callable
from dataclasses import dataclass

from turngate.core.errors import ConfigError

KINDS = {"agent-raises", "run-hangs", "not-a-turn", "scorer-raises", "judge-raises", "judge-hangs",
         "tool-hangs", "server-dies"}
NEEDS_ARG = {"scorer-raises", "tool-hangs"}
ROW_KINDS = {"agent-raises", "run-hangs", "not-a-turn"}  # ROW: one row id of the selection
NO_ARG = {"judge-raises", "judge-hangs"}


@dataclass(frozen=True)
class Fault:
    kind: str
    arg: str | None = None

    def hits_row(self, row_id: str) -> bool:
        return self.arg is None or self.arg == row_id


def parse_faults(specs: list[str] | None) -> list[Fault]:
    faults = []
    for spec in specs or []:
        kind, _, arg = spec.partition(":")
        if kind not in KINDS:
            raise ConfigError(f"--fault {spec!r}: unknown fault; known: {', '.join(sorted(KINDS))}")
        if kind in NEEDS_ARG and not arg:
            raise ConfigError(f"--fault {spec!r}: {kind} needs a name, e.g. {kind}:{'tool_use' if kind == 'scorer-raises' else 'search_faq'}")
        if kind == "server-dies" and arg and not (arg.isdigit() and int(arg) > 0):
            raise ConfigError(f"--fault {spec!r}: server-dies takes a tool-call count, e.g. server-dies:4")
        if kind in NO_ARG and arg:
            raise ConfigError(f"--fault {spec!r}: {kind} takes no argument")
        faults.append(Fault(kind, arg or None))
    return faults


def check_targets(faults: list[Fault], row_ids, tool_names=None) -> None:
    """A fault aimed at a row that is not selected, or at a tool the server does not have,
    would inject nothing and let the gate pass: an argument error instead. `tool_names`
    comes from the server itself (None: the target lists no tools, so tool faults cannot apply)."""
    rows = set(row_ids)
    for f in faults:
        if f.kind in ROW_KINDS and f.arg is not None and f.arg not in rows:
            raise ConfigError(f"--fault {f.kind}:{f.arg}: no selected row has id {f.arg!r}{_hint(f.arg, rows)}")
        if f.kind == "tool-hangs":
            if tool_names is None:
                raise ConfigError(f"--fault tool-hangs:{f.arg}: this agent lists no server tools to hang")
            if f.arg not in tool_names:
                raise ConfigError(f"--fault tool-hangs:{f.arg}: the server has no tool {f.arg!r}"
                                  f"{_hint(f.arg, tool_names)}")


def _hint(name: str, known) -> str:
    close = difflib.get_close_matches(name, sorted(known), n=1)
    return f" (did you mean {close[0]!r}?)" if close else ""


def server_fault(faults: list[Fault]) -> str | None:
    """The server-side fault to deliver (`hang:TOOL` or `die-after:N`), if any fault lives there."""
    for f in faults:
        if f.kind == "tool-hangs":
            return f"hang:{f.arg}"
        if f.kind == "server-dies":
            return f"die-after:{f.arg or 4}"
    return None


def job_fault(faults: list[Fault], row_id: str) -> str | None:
    return next((f.kind for f in faults if f.kind in ("agent-raises", "run-hangs", "not-a-turn")
                 and f.hits_row(row_id)), None)


def wrap_evaluators(evaluators: list[dict], faults: list[Fault]) -> list[dict]:
    """Evaluators with scorer faults injected outside the fail-closed wrapper, so the
    failure travels evaluatorq's own error path."""
    broken = {f.arg for f in faults if f.kind == "scorer-raises"}
    if not broken:
        return evaluators
    unknown = broken - {e["name"] for e in evaluators}
    if unknown:
        raise ConfigError(f"--fault scorer-raises: no scorer named {', '.join(sorted(unknown))}")

    def raising(name):
        async def scorer(params):
            raise RuntimeError(f"injected fault: scorer {name} raised")
        return scorer

    return [{**e, "scorer": raising(e["name"])} if e["name"] in broken else e for e in evaluators]


def wrap_judge(judge, faults: list[Fault]):
    kinds = {f.kind for f in faults}
    if not kinds & {"judge-raises", "judge-hangs"}:
        return judge

    @functools.wraps(judge)
    async def faulty(case):
        if "judge-raises" in kinds:
            raise RuntimeError("injected fault: judge raised")
        await asyncio.Event().wait()  # judge-hangs: never answers

    return faulty


# --- delivering a fault to the agent's tool server -------------------------------------------

ServerFaultHook = Callable[[str], dict[str, str]]
_shipped: dict[str, str] = {}  # what the hook set for the run in progress: also shipped to Ray workers


def register_server_faults(hook: ServerFaultHook) -> ServerFaultHook:
    """`hook("hang:TOOL" | "die-after:N")` -> the environment variables that make the agent's tool
    server misbehave so (its project's own names). The last one registered is used."""
    from turngate.core.registry import REGISTRY

    with REGISTRY.lock:
        REGISTRY.server_fault[:] = [hook]
    return hook


def shipped_env() -> dict[str, str]:
    """The fault environment of the run in progress (for worker processes on other machines)."""
    return dict(_shipped)


@contextlib.contextmanager
def server_fault_env(value: str | None):
    """Set the registered hook's environment for this run only, and restore it after."""
    if not value:
        yield
        return
    from turngate.core.plugins import load_plugins
    from turngate.core.registry import REGISTRY

    load_plugins()
    with REGISTRY.lock:
        hooks = list(REGISTRY.server_fault)
    if not hooks:
        raise ConfigError(f"--fault {value.split(':', 1)[0].replace('hang', 'tool-hangs').replace('die-after', 'server-dies')}: "
                          "the agent's project registers no way to deliver it to its tool server "
                          "(turngate.plugin.register_server_faults)")
    env = {str(k): str(v) for k, v in hooks[0](value).items()}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    _shipped.update(env)
    try:
        yield
    finally:
        for k, v in old.items():
            _shipped.pop(k, None)
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
