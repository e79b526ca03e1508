"""`python -m app.northwind [--hardened]`: serve the Northwind MCP server over stdio."""
import argparse

from . import faults, stdio
from .server import build_server


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m app.northwind", description=__doc__)
    parser.add_argument("--hardened", action="store_true",
                        help="enforce the refund policy in refund_order and hide internal notes")
    args = parser.parse_args()
    # No banner: stdout is the protocol channel and stderr should stay readable.
    server = build_server(hardened=args.hardened)
    faults.install(server)  # NORTHWIND_FAULT, for testing the harness against a failing server
    stdio.run(server)  # as server.run(transport="stdio"), but malformed lines get a JSON-RPC error


if __name__ == "__main__":
    main()
