"""`python -m app.northwind [--hardened]`: serve the Northwind MCP server over stdio.

NORTHWIND_MAX_CONVERSATIONS=N caps the conversations with writes one session holds at once
(default 4,096; clients release the ones they finish)."""
import argparse
import os

from . import faults, stdio
from .server import MAX_CONVERSATIONS, build_server

MAX_CONVERSATIONS_ENV = "NORTHWIND_MAX_CONVERSATIONS"


def max_conversations() -> int:
    raw = os.environ.get(MAX_CONVERSATIONS_ENV, "").strip()
    if not raw:
        return MAX_CONVERSATIONS
    if not raw.isdigit() or int(raw) < 1:
        raise SystemExit(f"{MAX_CONVERSATIONS_ENV}={raw!r}: give a whole number of at least 1")
    return int(raw)


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m app.northwind", description=__doc__)
    parser.add_argument("--hardened", action="store_true",
                        help="enforce the refund policy in refund_order and hide internal notes")
    args = parser.parse_args()
    # No banner: stdout is the protocol channel and stderr should stay readable.
    server = build_server(hardened=args.hardened, max_worlds=max_conversations())
    faults.install(server)  # NORTHWIND_FAULT, for testing the harness against a failing server
    stdio.run(server)  # as server.run(transport="stdio"), but malformed lines get a JSON-RPC error


if __name__ == "__main__":
    main()
