"""Write the JSON Schemas generated from the typed record (turngate/record/schemas.py):
turngate/record/gate_json.schema.json (`evals gate --json`) and turngate/record/record.schema.json
(a results file). --check: write nothing, exit 1 if a shipped file is not what the models make.

    python scripts/gen_schemas.py [--check]
"""
from __future__ import annotations

import argparse
import sys

from turngate.record.schemas import generated


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="scripts/gen_schemas.py", description=__doc__.splitlines()[0])
    p.add_argument("--check", action="store_true", help="only check the shipped files are current")
    a = p.parse_args(argv)
    stale = []
    for path, text in generated().items():
        if path.exists() and path.read_text(encoding="utf-8") == text:
            continue
        stale.append(path)
        if not a.check:
            path.write_text(text, encoding="utf-8")
            print(f"wrote {path}")
    if a.check and stale:
        print(f"stale: {', '.join(map(str, stale))} (run python scripts/gen_schemas.py)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
