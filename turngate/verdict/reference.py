"""The accepted run, kept as the reference the gate judges against (reference.json
beside the bars file).

`evals calibrate --write` stores, beside the bars, the accepted version's pass /
fail / n-a counts per row x scorer, the seeds that failed, and where they came from. The
gate then asks two questions the bars alone cannot: is a scorer's mean *significantly*
below what was accepted on these rows, and did a row that used to pass now fail more than
the accepted rate makes plausible (turngate/verdict/decide.py)."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.core.project import project
from turngate.verdict.stats import beta_binomial_sf

DEFAULT_PATH = project().path("thresholds", "thresholds.toml").with_name("reference.json")  # beside the bars
PRIOR = 0.5  # Jeffreys Beta(1/2, 1/2) prior on a row's failure rate
_NULL_CACHE: dict = {}  # Reference.null_stats: gate_power judges hundreds of gates against one reference


class Cell(BaseModel):
    """One row x scorer over the accepted runs: verdict counts and the seeds that failed."""
    model_config = ConfigDict(extra="forbid")
    passed: int = 0
    failed: int = 0
    na: int = 0
    failed_seeds: list[int] = Field(default_factory=list)

    @property
    def runs(self) -> int:
        return self.passed + self.failed + self.na


class RowRef(BaseModel):
    model_config = ConfigDict(extra="forbid")
    sha: str  # of the row's content: a changed row is a different test
    cells: dict[str, Cell]

    @property
    def runs(self) -> int:
        return max((c.runs for c in self.cells.values()), default=0)

    def failed_seeds(self) -> set[int]:
        """The accepted seeds on which this row failed some scorer."""
        return set().union(*(c.failed_seeds for c in self.cells.values()))


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provenance: dict[str, Any]
    seeds: list[int]
    rows: dict[str, RowRef]


    def scorers(self) -> set[str]:
        return {name for row in self.rows.values() for name in row.cells}

    def without_scorers(self, names: set[str]) -> Reference:
        """A copy that knows nothing of these scorers (their verdicts are judged by the bars only)."""
        rows = {rid: RowRef(sha=row.sha, cells={n: c for n, c in row.cells.items() if n not in names})
                for rid, row in self.rows.items()}
        return self.model_copy(update={"rows": rows})


# The failing-runs test's statistics: three score statistics for three ways a version can get
# diffusely worse than the accepted one (turngate/verdict/decide.py: runs_test).


def tail(failed_now: int, runs_now: int, failed_before: int, runs_before: int) -> float:
    """P(at least failed_now failures in runs_now) under the accepted failure rate (Beta
    posterior from failed_before of runs_before, Jeffreys prior): a Beta-binomial tail."""
    return beta_binomial_sf(failed_now, runs_now, failed_before + PRIOR, runs_before - failed_before + PRIOR)


def row_sha(row: dict) -> str:
    return hashlib.sha256(json.dumps(row, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def cell_counts(runs) -> dict[str, dict[str, Cell]]:
    """row id -> scorer -> Cell, from RunResults (every run counted: pass, fail or n/a)."""
    counts: dict[str, dict[str, list]] = {}  # plain counters first: one Cell per (row, scorer), not per run
    for r in runs:
        per_row = counts.get(r.row_id)
        if per_row is None:
            per_row = counts[r.row_id] = {}
        for name, v in r.verdicts.items():
            c = per_row.get(name)
            if c is None:
                c = per_row[name] = [0, 0, 0, []]
            if v.passed is None:
                c[2] += 1
            elif v.passed:
                c[0] += 1
            else:
                c[1] += 1
                c[3].append(r.trial)
    return {rid: {name: Cell(passed=p, failed=f, na=na, failed_seeds=sorted(seeds))
                  for name, (p, f, na, seeds) in per_row.items()} for rid, per_row in counts.items()}


def build_reference(record, provenance: dict[str, Any]) -> Reference:
    rows = record.row_by_id()
    cells = cell_counts(record.runs_for(record.meta.version))
    return Reference(provenance=provenance, seeds=list(record.meta.seeds),
                     rows={rid: RowRef(sha=row_sha(rows[rid]), cells=c) for rid, c in cells.items()})


def dump_reference(ref: Reference) -> str:
    """One line per row, so a recalibration's diff reads row by row."""
    head = json.dumps({"provenance": ref.provenance}, indent=1)[:-2] + ',\n "seeds": ' + json.dumps(ref.seeds)
    lines = [json.dumps(rid) + ": " + row.model_dump_json() for rid, row in ref.rows.items()]
    return head + ',\n "rows": {\n  ' + ",\n  ".join(lines) + "\n }\n}\n"


def load_reference(path: str | Path = DEFAULT_PATH) -> Reference:
    path = Path(path)
    try:
        return Reference.model_validate_json(path.read_text())
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no reference file (run {cli.command('calibrate')} --write, "
                          "or pass --no-reference)") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from exc


def check_judge(ref: Reference | None, judge: str, judge_scorers: set[str]) -> tuple[Reference | None, list[str]]:
    """A judge scorer's accepted counts hold only for the judge that gave them: with another
    judge they measure something else, so that scorer is judged by its bar only (said in a note)."""
    accepted = (ref.provenance.get("judge") if ref is not None else None) or judge
    if ref is None or accepted == judge or not (gone := judge_scorers & ref.scorers()):
        return ref, []
    return ref.without_scorers(gone), [
        f"the accepted run was judged by {accepted}, this run by {judge}: {', '.join(sorted(gone))} judged by "
        f"the bar only (calibrate with --judge {judge} to compare it with an accepted run)"]


def check_rows(ref: Reference, rows: list[dict], path: str | Path = DEFAULT_PATH, *,
               explicit: bool = True) -> tuple[Reference | None, list[str]]:
    """The reference as it applies to these rows, and notes on what it does not cover.

    An explicit --reference from another dataset (no row in common, or a row whose content
    changed since the accepted run) is refused: exit 2, before any agent runs. The default
    reference is only applied where it holds: rows it does not know, or whose content
    changed, are judged by the bars only, and a dataset it knows nothing of (a user's own
    rows) is judged by the bars alone. Both cases are said in the notes, never silent."""
    known = [r for r in rows if r["id"] in ref.rows]
    changed = [r["id"] for r in known if ref.rows[r["id"]].sha != row_sha(r)]
    if explicit and rows and not known:
        raise ConfigError(f"{path}: the reference is from another dataset (none of these {len(rows)} rows is in it; "
                          f"its dataset sha256 {str(ref.provenance.get('dataset_sha256', '?'))[:12]}); "
                          "recalibrate or pass --no-reference")
    if explicit and changed:
        raise ConfigError(f"{path}: row {changed[0]!r} changed since the accepted run"
                          + (f" (and {len(changed) - 1} more)" if len(changed) > 1 else "")
                          + f"; recalibrate ({cli.command('calibrate')} --write) or pass --no-reference")
    if rows and len(changed) == len(known):
        return None, [f"{path}: the accepted run shares no (unchanged) row with this dataset; judged by the bars only"]
    notes = []
    if changed:
        notes.append(f"{len(changed)} row(s) changed since the accepted run, judged by the bars only: "
                     + ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else ""))
        ref = ref.model_copy(update={"rows": {k: v for k, v in ref.rows.items() if k not in set(changed)}})
    return ref, notes
