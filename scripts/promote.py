"""Promote a simulated conversation to a dataset row.

    python scripts/promote.py results/sim-v2-<stamp>/<conversation>.json [--id NEW_ID]
        [--expected-output "..."] [--to datasets/northwind.jsonl] [--dry-run] [--upload DATASET_ID]

The row's `inputs.turns` are the simulated user's turns up to and including the turn
after which the conversation went wrong (the failure's `after_turn`; all turns when it
did not fail): replaying them gives exactly the Turn that failed (same turns, same seed),
and turns after it only test how the agent talks about a failure that already happened.
`expect`, `tags` and `expected_output` come from the scenario; `source` is
simulation:<run>/<conversation>; tags add from-simulation and multi-turn.

Refuses, as one line and exit 2: a row whose user turns are already in the file, an id
that is taken, a row the dataset schema rejects. --dry-run prints the row and writes
nothing. --upload DATASET_ID also creates the datapoint in that orq.ai dataset.
"""
from __future__ import annotations

from turngate.core import cli_support as cli

if __name__ == "__main__":
    cli.exit_quietly_on_interrupt()  # before the heavy imports below: Ctrl-C is one line and exit 2

import argparse
import json
import os
import sys
from pathlib import Path

from turngate.core.errors import ConfigError
from turngate.output.console import console
from turngate.simulation.promote import build_row as _build_row
from turngate.simulation.promote import check_new, default_id  # noqa: F401  (this script's API)
from turngate.simulation.run import load_record_file
from turngate.sources.dataset import Row, row_to_datapoint, row_to_json

LEGACY_SCHEMA = "northwind-evals/simulation@1"  # Northwind's conversations simulated before the rename (still read)


def build_row(rec, row_id=None, expected_output=None):
    """The library's row; Northwind's files written before the library was generic tagged every
    row "refund" themselves (now the scenario's own tag): a promoted old conversation keeps it."""
    if rec.schema_ == LEGACY_SCHEMA:
        rec = rec.model_copy(update={"scenario_spec": {**rec.scenario_spec,
                                                       "tags": ["refund", *rec.scenario_spec.get("tags", [])]}})
    return _build_row(rec, row_id, expected_output)


DEFAULT_DATASET = Path(__file__).resolve().parents[1] / "datasets" / "northwind.jsonl"


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scripts/promote.py", description=__doc__.splitlines()[0])
    p.add_argument("conversation", help="a results/sim-*/<conversation>.json file")
    p.add_argument("--id", help="the new row's id (default: sim_<scenario>_<persona>_s<seed>)")
    p.add_argument("--expected-output", help="the row's expected_output (default: the scenario's)")
    p.add_argument("--to", default=str(DEFAULT_DATASET), help="dataset file to append to")
    p.add_argument("--dry-run", action="store_true", help="print the row, write nothing")
    p.add_argument("--upload", metavar="DATASET_ID", help="also create the datapoint in this orq.ai dataset")
    return p


def append(row: Row, dataset: Path) -> int:
    """Append one JSONL line; returns its line number."""
    text = dataset.read_text(encoding="utf-8") if dataset.exists() else ""
    prefix = "" if not text or text.endswith("\n") else "\n"
    with dataset.open("a", encoding="utf-8") as fh:
        fh.write(prefix + row_to_json(row) + "\n")
    return len((text + prefix).splitlines()) + 1


def orq_key() -> str:
    key = os.environ.get("ORQ_API_KEY", "").strip()
    if not key:
        raise ConfigError("--upload needs ORQ_API_KEY in the environment; nothing was written or uploaded")
    return key


def upload(row: Row, dataset_id: str, key: str) -> str:
    from evaluatorq.fetch_data import setup_orq_client

    point = row_to_datapoint(row)  # inputs carry the row id, as rows_from_datapoints reads it back
    try:
        client = setup_orq_client(key)
        created = client.datasets.create_datapoint(
            dataset_id=dataset_id,
            request_body=[{"inputs": point.inputs, "expected_output": point.expected_output}])
    except Exception as exc:  # network, auth, unknown dataset: one line, not a traceback
        raise ConfigError(f"--upload {dataset_id}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}"
                          ) from exc
    first = created[0] if created else None
    return str(getattr(first, "id", None) or getattr(first, "_id", None) or "created")


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    a = parser().parse_args(sys.argv[1:] if argv is None else argv)
    key = orq_key() if a.upload and not a.dry_run else ""  # before anything is written
    rec = load_record_file(a.conversation)
    row = build_row(rec, a.id, a.expected_output)
    dataset = Path(a.to)
    check_new(row, dataset)
    console.print_json(json.dumps(row.model_dump(mode="json", exclude_unset=True), ensure_ascii=False))
    if rec.failure is not None:
        console.print(f"failure: {rec.failure.scorer} after user turn {rec.failure.after_turn} of {len(rec.turns)}; "
                      f"the row keeps turns 1-{len(row.user_turns())}", markup=False)
    if a.dry_run:
        console.print(f"dry run: not written to {dataset}" + (f", not uploaded to {a.upload}" if a.upload else ""),
                      markup=False)
        return cli.EXIT_PASS
    line = append(row, dataset)
    console.print(f"wrote row {row.id} to {dataset}:{line}", markup=False)
    if a.upload:
        console.print(f"uploaded to orq.ai dataset {a.upload}: datapoint {upload(row, a.upload, key)}", markup=False)
    return cli.EXIT_PASS


if __name__ == "__main__":
    sys.exit(main())
