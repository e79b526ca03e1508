"""A copy of a reference with the accepted counts of new rows added, from a complete
calibration results file of those rows alone, on the reference's own seeds:

    evals calibrate --version v3 --trials 300 --dataset new.jsonl --thresholds /tmp/b.toml --against none \\
        --judge offline --out /tmp/cal      # the accepted run (no bars are written: only its results file is used)
    python scripts/add_reference_rows.py evals/reference.json /tmp/cal/calibrate-v3-*.json -o /tmp/ref_plus.json

For trying rows out (docs/mutate.md: the rows that close Northwind's survivors) without
recalibrating every row: the bars stay as they are, and the copy says so in its provenance.
Adopting the rows in the suite is a full `evals calibrate --write --force`.
"""
from __future__ import annotations

import argparse
import sys

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.record.results import load_record
from turngate.verdict.reference import RowRef, cell_counts, dump_reference, load_reference, row_sha


@cli.guarded
def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="scripts/add_reference_rows.py", description=__doc__.splitlines()[0])
    p.add_argument("reference")
    p.add_argument("results", help="a complete results file of the new rows, on the reference's seeds")
    p.add_argument("-o", "--out", required=True)
    a = p.parse_args(argv)
    ref = load_reference(a.reference)
    record = load_record(a.results)
    if not record.meta.complete or sorted(record.meta.seeds) != sorted(ref.seeds):
        raise ConfigError(f"{a.results}: not a complete run on the reference's seeds ({len(ref.seeds)} seeds)")
    rows = record.row_by_id()
    if clash := sorted(set(rows) & set(ref.rows)):
        raise ConfigError(f"{a.results}: row {clash[0]!r} is in the reference already")
    cells = cell_counts(record.runs_for(record.meta.version))
    added = {rid: RowRef(sha=row_sha(rows[rid]), cells=c) for rid, c in cells.items()}
    provenance = {**ref.provenance, "added_rows": sorted(added)}
    out = ref.model_copy(update={"rows": {**ref.rows, **added}, "provenance": provenance})
    with open(a.out, "w") as f:
        f.write(dump_reference(out))
    print(f"{a.out}: {len(ref.rows)} rows + {', '.join(sorted(added))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
