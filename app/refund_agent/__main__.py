"""Quick look at one conversation.

    python -m app.refund_agent "Refund order A-1001" --version v3 [--model ...] [--seed N] [--json]
    python -m app.refund_agent "Can I return A-1005?" "Refund it anyway" --version v2   # several user turns
"""
from __future__ import annotations

import argparse
import json
import sys

from turngate.core.errors import ConfigError

from .client import ask_agent, close_sync_connections


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m app.refund_agent", description=__doc__.splitlines()[0])
    p.add_argument("turns", nargs="+", help="user message(s); several are replayed as one conversation")
    p.add_argument("--version", default="v3")
    p.add_argument("--model", default=None, help="offline[:temperature=..,latency=..] | openai:<m> | orq:<m>")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--transport", choices=["memory", "stdio"], default="memory")
    p.add_argument("--json", action="store_true", help="print the Turn as JSON")
    a = p.parse_args(argv)
    try:
        turn = ask_agent(a.turns, a.version, model=a.model, seed=a.seed, transport=a.transport)
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    finally:
        close_sync_connections()  # a stdio server left open is torn down outside its loop: a traceback
    if a.json:
        print(turn.to_json())
        return 0 if turn.error is None else 1
    for call in turn.tool_calls:
        outcome = (f"error: {call.error}" if call.error is not None
                   else "no reply" if call.result is None else json.dumps(call.result))
        print(f"  -> {call.name}({json.dumps(call.arguments)})  =>  {outcome}")
    for write in turn.writes:
        print(f"  write {write.get('reference')}: {json.dumps(write)}")
    if turn.error:
        print(f"agent error: {turn.error}", file=sys.stderr)
    print(turn.answer)
    return 0 if turn.error is None else 1


if __name__ == "__main__":
    sys.exit(main())
