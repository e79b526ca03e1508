"""--shard K/N: one deterministic, cost-balanced part of a gate's plan, and what `evals merge`
checks before it puts the parts back together.

Rows are dealt greedily, most expensive first, into the N bins with the least cost so far
(ties: row id, then the lower bin). A row's cost is its model calls in the newest complete
results file of the version (turngate.jobs.runner.duration_hints, the runner's own scheduling hints),
else a guess from its user turns, as the runner guesses. Every seed of a row goes to the same
shard, so stage 2 of the gate (turngate/verdict/confirm.py) reruns a row where its gate runs are.

Each shard's record is an ordinary record of its own rows (its plan and digest as any record,
so --resume works on it), plus meta.shard: {index, count, plan, rows}, `plan` the sha256 of the
whole plan (rows by content hash, seeds, agent, dataset, settings, version files) and `rows`
the whole plan's row id -> sha256 in dataset order."""
from __future__ import annotations

import hashlib
import re
import tempfile
from pathlib import Path
from typing import Any

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError


def parse_shard(text: str) -> tuple[int, int]:
    """`K/N` -> (K, N), 1 <= K <= N."""
    m = re.fullmatch(r"\s*(\d+)\s*/\s*(\d+)\s*", text or "")
    if not m:
        raise ConfigError(f"--shard {text}: give K/N, e.g. 2/3 (the second of three shards)")
    k, n = int(m.group(1)), int(m.group(2))
    if n < 1 or not 1 <= k <= n:
        raise ConfigError(f"--shard {text}: K must be 1..N and N at least 1")
    return k, n


def row_cost(row: Any, hints: dict[str, float]) -> float:
    """Model calls the row is expected to make per run (turngate.jobs.runner.Plan's own guess)."""
    return float(hints.get(row.id, 3.0 * len(row.user_turns())))


def assign(rows: list, hints: dict[str, float], n: int) -> list[list]:
    """The rows in N bins: greedy longest-first into the lightest bin; each bin in dataset order."""
    order = {row.id: i for i, row in enumerate(rows)}
    loads = [0.0] * n
    bins: list[list] = [[] for _ in range(n)]
    for row in sorted(rows, key=lambda r: (-row_cost(r, hints), r.id)):
        i = min(range(n), key=lambda b: (loads[b], b))
        bins[i].append(row)
        loads[i] += row_cost(row, hints)
    return [sorted(b, key=lambda r: order[r.id]) for b in bins]


def plan_digest(plan: Any) -> str:
    """sha256 over a RecordPlan's rows (id -> content sha256, in order), seeds, agent, dataset,
    settings, version files and agent code: two shards come from one plan exactly when these agree."""
    from turngate.record.results import _canonical

    body = {"rows": list(plan.rows.items()), "seeds": plan.seeds, "agent": plan.agent, "dataset": plan.dataset,
            "settings": plan.settings, "version_files": plan.version_files}
    if plan.agent_code is not None:  # only then: a plan from before plans stored it keeps its digest
        body["agent_code"] = plan.agent_code["sha256"]
    return hashlib.sha256(_canonical(body)).hexdigest()


def shard_hints(results_dir: Path, version: str) -> tuple[dict[str, float], str | None]:
    """turngate.jobs.runner.duration_hints, never from a shard's own record (a shard written by an
    earlier shard of the same run would change the split under the next one): (hints, the file)."""
    import json

    from turngate.jobs.runner import duration_hints

    newest = sorted(results_dir.glob(f"{version}-*.json"), key=lambda p: p.stat().st_mtime, reverse=True)[:3]
    for path in newest:
        try:
            meta = json.loads(path.read_text())["meta"]
        except (OSError, ValueError, KeyError, TypeError):
            continue
        if not meta.get("complete") or "index" in (meta.get("shard") or {}):
            continue
        with tempfile.TemporaryDirectory() as tmp:  # duration_hints on just this file
            (Path(tmp) / path.name).symlink_to(path.resolve())
            if hints := duration_hints(Path(tmp), version):
                return hints, path.name
    return {}, None


def take_shard(record: Any, rows: list, hints: dict[str, float], k: int, n: int, source: str | None = None) -> list:
    """Narrow a new (empty) record to shard K of N: its rows, and meta.shard naming the whole
    plan. Returns the shard's rows (turngate.sources.dataset.Row), in dataset order."""
    from turngate.record.results import plan_of

    whole = plan_of(record)  # the whole plan, with the version files this process built
    mine = assign(rows, hints, n)[k - 1]
    ids = {r.id for r in mine}
    record.rows = [r for r in record.rows if r["id"] in ids]
    record.plan = None  # the shard's own plan: fixed at its first save, from its rows
    record.meta.shard = {"index": k, "count": n, "plan": plan_digest(whole), "rows": dict(whole.rows),
                         "cost": sum(row_cost(r, hints) for r in mine) * len(record.meta.seeds), "hints": source}
    return mine


def partial_line(record: Any) -> str | None:
    """The line that marks a shard's verdict as partial, or None for a whole record."""
    sh = record.meta.shard
    if not sh or "index" not in sh:
        return None
    return (f"partial: shard {sh['index']}/{sh['count']}, {len(record.rows)} of {len(sh['rows'])} rows; "
            f"the gate's verdict is the merged one ({cli.command('merge')} SHARD_FILES... --out PATH)")
