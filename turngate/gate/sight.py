"""Every gate verdict states what it could see: the gate's own settings (rows, trials, bars,
reruns) handed to turngate/verdict/sensitivity.py. A gate, its --dry-run, merge and every reader
(turngate/gate/recheck.py) make the same statement from the same inputs.

The simulation is about half of a 79-row gate's own time and nearly all of `evals show`'s, and
it is a pure function of its inputs and of this package's code: it is kept in memory for the
process and on disk (turngate/gate/memo.py) under a digest of both, so the reader after a gate,
or the next gate of the same plan, finds it made. The record still holds only its inputs."""
from __future__ import annotations

import hashlib
import json
from typing import Any

from turngate.gate import memo
from turngate.record.sensitivity import Sensitivity
from turngate.verdict.policy import DEFAULT, GatePolicy

_MADE: dict[str, Sensitivity] = {}  # inputs' digest -> statement: a gate prints it, then --json reads it back


def statement(reference: Any, rows: list[str], trials: int, bars: dict[str, float], *, confirm: bool = True,
              fixed: int | None = None, policy: GatePolicy = DEFAULT) -> Sensitivity:
    """The sensitivity statement of a gate of these rows x trials (turngate.verdict.sensitivity)."""
    from turngate.verdict.sensitivity import GATES, SEED, sensitivity

    key = hashlib.sha256(json.dumps(
        [reference.model_dump(mode="json") if reference is not None else None, sorted(rows), trials,
         sorted(bars.items()), confirm, fixed, policy.as_dict(), GATES, SEED], sort_keys=True).encode()).hexdigest()
    if key not in _MADE:
        made = memo.read("sensitivity", key, Sensitivity.model_validate_json)
        if made is None:
            made = sensitivity(reference, trials, bars, rows=rows, confirm=confirm, fixed=fixed, policy=policy)
            memo.write("sensitivity", key, made.model_dump_json())
        _MADE[key] = made
    return _MADE[key].model_copy(deep=True)


def of_record(record: Any, reference: Any) -> Sensitivity:
    """The statement of the gate a record holds, from its own settings."""
    m = record.meta
    conf = m.confirm or {}
    from turngate.verdict.rule import policy_of

    return statement(reference, [r["id"] for r in record.rows], m.trials, dict(m.thresholds or {}),
                     confirm=bool(conf.get("enabled")), fixed=conf.get("k"), policy=policy_of(m))


def line(sensitivity: Sensitivity | None) -> str | None:
    """How the terminal prints it, after the verdict."""
    return None if sensitivity is None else f"sensitivity: {sensitivity.line}"


def markdown(sensitivity: Sensitivity | None) -> str:
    """The step summary's line (the PR comment words it the same way)."""
    return "" if sensitivity is None else f"\n**What this verdict could see**: {sensitivity.line}\n"
