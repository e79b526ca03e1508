"""The accepted run, kept as the reference the gate judges against (evals/reference.json).

`python evals/calibrate.py --write` stores, beside the bars, the accepted version's pass /
fail / n-a counts per row x scorer, the seeds that failed, and where they came from. The
gate then asks two questions the bars alone cannot: is a scorer's mean *significantly*
below what was accepted on these rows, and did a row that used to pass now fail more than
the accepted rate makes plausible (evals/verdict.py)."""
from __future__ import annotations

import hashlib
import json
from math import floor, log
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from evals.errors import ConfigError
from evals.stats import beta_binomial_sf

DEFAULT_PATH = Path(__file__).with_name("reference.json")
PRIOR = 0.5  # Jeffreys Beta(1/2, 1/2) prior on a row's failure rate


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


class Reference(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provenance: dict[str, Any]
    seeds: list[int]
    rows: dict[str, RowRef]

    def critical_p(self, trials: int, alpha: float, cap: float = 0.05) -> float:
        """The p-value at or below which a row x scorer counts as regressed in a gate of
        `trials` runs per row: a max-statistic calibrated on the accepted runs themselves.
        The accepted seeds are cut into blocks of `trials`; each block is judged against the
        rest as if it were a new gate of the unchanged version; the threshold is set so at
        most a fraction `alpha` of those blocks would have raised a false alarm, and never
        above `cap` (a single row's own significance level). Noisy rows therefore make the
        test stricter for everyone; in a quiet accepted run a row that never failed is
        flagged by its first failure (20/20 then 1/1: p = 0.024)."""
        # every run of `trials` consecutive accepted seeds (overlapping: more blocks, a steadier quantile)
        blocks = [self.seeds[i:i + trials] for i in range(0, len(self.seeds) - trials + 1)]
        if not blocks:
            return 0.0
        minima = []
        for block in blocks:
            inside, low = set(block), 1.0
            for row in self.rows.values():
                for cell in row.cells.values():
                    f = sum(1 for s in cell.failed_seeds if s in inside)
                    if f:
                        low = min(low, tail(f, trials, cell.failed - f, cell.runs - trials))
            minima.append(low)
        minima.sort()
        allowed = floor(alpha * len(blocks) + 1e-9)  # blocks that may fire
        if allowed >= len(minima):
            return cap
        return min(cap, minima[allowed] * (1 - 1e-9))  # strictly below the first block too many


    def failing_runs(self, trials: int, rows: set[str]) -> list[int]:
        """For every run of `trials` consecutive accepted seeds: how many (row, seed) runs of
        these rows failed some scorer (the accepted version's own spread of that count)."""
        failed = {rid: set().union(*(c.failed_seeds for c in row.cells.values())) if row.cells else set()
                  for rid, row in self.rows.items() if rid in rows}
        blocks = [self.seeds[i:i + trials] for i in range(0, len(self.seeds) - trials + 1)]
        return [sum(1 for seeds in failed.values() for s in block if s in seeds) for block in blocks]

    def surprise_null(self, trials: int, rows: set[str]) -> list[float]:
        """The accepted version's own spread of the gate's surprise score (see `surprise`):
        for every run of `trials` consecutive accepted seeds, its failures weighted by how rare
        each row x scorer's failure is in the *other* accepted seeds (left out, as a new gate's
        seeds are)."""
        blocks = [self.seeds[i:i + trials] for i in range(0, len(self.seeds) - trials + 1)]
        share = trials / max(1, len(self.seeds))
        out = []
        for block in blocks:
            inside, score = set(block), 0.0
            for rid, row in self.rows.items():
                if rid not in rows:
                    continue
                for cell in row.cells.values():
                    f = sum(1 for s in cell.failed_seeds if s in inside)
                    if f:
                        applicable = (cell.passed + cell.failed) * (1 - share)
                        score += f * rarity(cell.failed - f, applicable)
            out.append(score)
        return out

    def surprise(self, cells: dict[str, dict[str, list[int]]]) -> float:
        """A gate's failures, each weighted by -log of its row x scorer's accepted failure rate:
        a failure where the accepted version (almost) never failed counts for much, one on a
        row that often fails for little. Diffuse degradation (a hotter model, a switch off)
        spreads thin failures over rows that were quiet; this gathers them."""
        score = 0.0
        for rid, per in cells.items():
            row = self.rows.get(rid)
            if row is None:
                continue
            for name, (_, failed, _) in per.items():
                cell = row.cells.get(name)
                if failed and cell is not None:
                    score += failed * rarity(cell.failed, cell.passed + cell.failed)
        return score


def rarity(failed: float, applicable: float) -> float:
    """-log of a failure rate (Jeffreys estimate), in nats."""
    return -log((failed + PRIOR) / (applicable + 2 * PRIOR))


def tail(failed_now: int, runs_now: int, failed_before: int, runs_before: int) -> float:
    """P(at least failed_now failures in runs_now) under the accepted failure rate (Beta
    posterior from failed_before of runs_before, Jeffreys prior): a Beta-binomial tail."""
    return beta_binomial_sf(failed_now, runs_now, failed_before + PRIOR, runs_before - failed_before + PRIOR)


def row_sha(row: dict) -> str:
    return hashlib.sha256(json.dumps(row, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def cell_counts(runs) -> dict[str, dict[str, Cell]]:
    """row id -> scorer -> Cell, from RunResults (every run counted: pass, fail or n/a)."""
    out: dict[str, dict[str, Cell]] = {}
    for r in runs:
        for name, v in r.verdicts.items():
            cell = out.setdefault(r.row_id, {}).setdefault(name, Cell())
            if v.passed is None:
                cell.na += 1
            elif v.passed:
                cell.passed += 1
            else:
                cell.failed += 1
                cell.failed_seeds.append(r.trial)
    for cells in out.values():
        for cell in cells.values():
            cell.failed_seeds.sort()
    return out


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
        raise ConfigError(f"{path}: no reference file (run evals/calibrate.py --write, or pass --no-reference)") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from exc


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
                          + "; recalibrate (evals/calibrate.py --write) or pass --no-reference")
    if rows and len(changed) == len(known):
        return None, [f"{path}: the accepted run shares no (unchanged) row with this dataset; judged by the bars only"]
    notes = []
    if changed:
        notes.append(f"{len(changed)} row(s) changed since the accepted run, judged by the bars only: "
                     + ", ".join(changed[:5]) + (" ..." if len(changed) > 5 else ""))
        ref = ref.model_copy(update={"rows": {k: v for k, v in ref.rows.items() if k not in set(changed)}})
    return ref, notes
