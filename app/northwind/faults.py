"""Fault injection for the stdio server, so the eval harness can be tested against a real
server process that misbehaves. Off unless NORTHWIND_FAULT is set:

    NORTHWIND_FAULT=die-after:3        the process exits abruptly on the 3rd tool call
    NORTHWIND_FAULT=hang:refund_order  that tool never answers

Only the stdio entry point installs it; the in-process server never reads the variable.
"""
from __future__ import annotations

import asyncio
import os
import sys

from fastmcp.server.middleware import Middleware

ENV = "NORTHWIND_FAULT"


class FaultMiddleware(Middleware):
    def __init__(self, spec: str):
        kind, _, arg = spec.partition(":")
        if kind not in ("die-after", "hang") or not arg:
            raise SystemExit(f"{ENV}={spec!r}: use die-after:<n> or hang:<tool>")
        self.kind, self.arg, self.calls = kind, arg, 0

    async def on_call_tool(self, context, call_next):
        self.calls += 1
        if self.kind == "die-after" and self.calls >= int(self.arg):
            sys.stderr.write(f"northwind: injected fault, dying on tool call {self.calls}\n")
            os._exit(3)  # no cleanup, no reply: what a crashed server looks like to the client
        if self.kind == "hang" and context.message.name == self.arg:
            await asyncio.Event().wait()  # never answers
        return await call_next(context)


def install(server) -> None:
    spec = os.environ.get(ENV, "").strip()
    if spec:
        server.add_middleware(FaultMiddleware(spec))
