"""Replay planning: a handler is straight-line code that asks for tool results;
a result not in the transcript yet stops the handler and becomes a tool call.

Each model call replays every handler from the start against the results so far,
so the model needs no state of its own. Independent handlers (say, refunds of
three orders) run side by side and their missing calls go out in one message.
"""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .noise import Noise
from .policy import Policy
from .request import Request
from .transcript import Call, Transcript


class Pending(Exception):
    """Tool results a handler needs before it can go on."""

    def __init__(self, calls: list[tuple[str, dict]]):
        super().__init__(f"{len(calls)} pending calls")
        self.calls = calls


class Session:
    def __init__(self, transcript: Transcript, policy: Policy, noise: Noise, tools: dict[str, dict],
                 request: Request, final: bool = False):
        self.t = transcript
        self.policy = policy
        self.noise = noise
        self.tools = tools          # bound tool name -> JSON schema of its arguments
        self.req = request
        self.final = final          # step budget used up: answer with what is known

    def has_tool(self, name: str) -> bool:
        return name in self.tools

    def _missing(self, name: str, args: dict) -> Call:
        return Call(id="", name=name, args=args, answered=True,
                    error=f"I don't have the {name} tool available" if name not in self.tools
                    else "I ran out of steps before I could look this up")

    def gather(self, specs: list[tuple[str, dict]]) -> list[Call]:
        """Results of several calls; all missing ones are requested together."""
        out: list[Call] = []
        pending: list[tuple[str, dict]] = []
        for name, args in specs:
            args = {k: v for k, v in args.items() if v is not None}
            if name not in self.tools:
                out.append(self._missing(name, args))
                continue
            found = self.t.lookup(name, args)
            if found is None or not found.answered:
                if self.final:
                    out.append(self._missing(name, args))
                    continue
                if found is None:
                    pending.append((name, args))
                out.append(found or Call(id="", name=name, args=args))
            else:
                out.append(found)
        if pending:
            raise Pending(pending)
        return out

    def call(self, name: str, **args: Any) -> Call:
        return self.gather([(name, args)])[0]

    def run_all(self, thunks: list[Callable[[], Any]]) -> list[Any]:
        """Run independent handlers; collect every handler's pending calls at once."""
        results, pending = [], []
        for thunk in thunks:
            try:
                results.append(thunk())
            except Pending as p:
                pending.extend(p.calls)
                results.append(None)
        if pending:
            raise Pending(pending)
        return results
