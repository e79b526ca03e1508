"""The journal of a mutation run, for --resume: one JSON line for the baseline (its results
files), then one per classified mutant, in OUT/journal-<key>.jsonl. The key is a digest of
everything that decides a classification (agent, version, its editable parts, rows, bars,
reference, seeds, judge), so a journal is only ever reused for the same question; a mutant is
reused by id, which names its edit."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict
from pathlib import Path
from typing import Any

from turngate.mutate.classify import Classified, RowChange
from turngate.mutate.operators import Mutant
from turngate.mutate.protocol import Mutable
from turngate.record.results import Record, load_record


def _digest(value: Any) -> str:
    """A file's content digest when `value` names one, else the value itself."""
    if isinstance(value, (str, Path)) and Path(value).is_file():
        return hashlib.sha256(Path(value).read_bytes()).hexdigest()
    return json.dumps(value, sort_keys=True, default=str)


def path_for(settings, agent: str, version: str, mutable: Mutable) -> Path:
    key = json.dumps({"agent": agent, "version": version, "instructions": mutable.instructions,
                      "switches": dict(mutable.switches), "temperature": mutable.temperature,
                      "rows": _digest(settings.dataset), "bars": _digest(settings.thresholds),
                      "reference": _digest(settings.reference), "seeds": list(settings.seeds), "judge": settings.judge},
                     sort_keys=True, default=str)
    return Path(settings.out) / f"journal-{hashlib.sha256(key.encode()).hexdigest()[:12]}.jsonl"


def start(path: Path, baseline) -> None:
    path.write_text(json.dumps({"baseline": asdict(baseline)}) + "\n")


def add(path: Path, outcome) -> None:
    with path.open("a") as f:
        f.write(json.dumps({"id": outcome.mutant.id, "result": asdict(outcome.result), "calls": outcome.calls,
                            "runs": outcome.runs, "results": outcome.results, "seconds": outcome.seconds, "probe": outcome.probe}) + "\n")


def read(path: Path):
    """(Baseline, {mutant id: its line}) from a journal, or None when there is none to resume."""
    from turngate.mutate.runner import Baseline

    if not path.is_file():
        return None
    lines = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
    if not lines or "baseline" not in lines[0]:
        return None
    return Baseline(**lines[0]["baseline"]), {x["id"]: x for x in lines[1:] if "id" in x}


def records(baseline) -> tuple[Record, Record | None]:
    return load_record(baseline.results), load_record(baseline.probe) if baseline.probe else None


def outcome(mutant: Mutant, line: dict):
    from turngate.mutate.runner import Outcome

    result = dict(line["result"])
    result["changed"] = [RowChange(**c) for c in result.get("changed", [])]
    return Outcome(mutant, Classified(**result), line["calls"], line["runs"], line["results"], line["seconds"],
                   line.get("probe"))  # absent from a journal written before the review hand-off
