"""The runs a review reads: every run of a results record and every simulated conversation,
as one flat list of items with stable keys.

A source is one file (a results record, or one simulated conversation) or a folder of
simulated conversations. Each item is keyed by its source's digest and a run key that names
the run in words (version/row/stage/trial), so notes written on a record still find their run
when the record is moved or renamed, and never find a run of another record.
"""
from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from turngate.core.errors import ConfigError
from turngate.record.results import Record, RecordError, RunResult, load_record


@dataclass(frozen=True, slots=True)
class Source:
    """One file read: what it is and the digest notes are keyed by."""
    path: str
    kind: str  # "gate": a results record (gate, calibrate, compare, merge, regrade); "simulation"
    digest: str  # a record's own digest; a conversation file's sha256
    label: str  # short, for the page: the file's name


@dataclass(frozen=True, slots=True)
class Item:
    """One run to read. `run` is its key inside its source; (source.digest, run) is global."""
    source: Source
    run: str
    row_id: str
    version: str
    trial: int
    seed: int
    stage: str  # "gate", "confirm" or "simulation"
    failed: bool  # a scorer failed it, or the agent crashed
    failing: tuple[str, ...]  # the scorers that failed it ("agent_error" for a crash)
    payload: Any = field(repr=False, compare=False)  # (RunResult, its row) or a ConversationRecord: read on demand

    @property
    def key(self) -> tuple[str, str]:
        return (self.source.digest, self.run)


def run_key(run: RunResult) -> str:
    return f"{run.version}/{run.row_id}/{run.stage}/{run.trial}"


def _failing_scorers(verdicts: dict[str, Any], error: str | None) -> tuple[str, ...]:
    out = tuple(name for name, v in verdicts.items() if v.passed is False)
    return (("agent_error",) + out) if error else out


def _record_items(path: Path, record: Record) -> list[Item]:
    src = Source(str(path), "gate", record.digest or _file_sha256(path), path.name)
    rows, out = record.row_by_id(), []
    for r in record.runs:
        failing = _failing_scorers(r.verdicts, r.turn.error)
        out.append(Item(src, run_key(r), r.row_id, r.version, r.trial, r.seed, r.stage, bool(failing), failing,
                        (r, rows.get(r.row_id))))
    return out


def _file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with path.open("rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _conversation_items(paths: list[Path], label: str) -> list[Item]:
    # only a simulation review pays for importing evaluatorq.simulation
    from turngate.simulation.run import load_record_file
    from turngate.sources.dataset import DatasetError

    out = []
    for p in paths:
        try:
            conv = load_record_file(p)
        except DatasetError as exc:
            raise ConfigError(str(exc)) from None
        src = Source(str(p), "simulation", _file_sha256(p), label or p.name)
        failing = tuple(n for n, v in conv.verdicts.items() if v.passed is False)
        if conv.ended == "error":
            failing = ("agent_error",) + failing
        out.append(Item(src, f"{conv.version}/{conv.conversation}", conv.scenario, conv.version, 0, conv.seed,
                        "simulation", bool(failing), failing, conv))
    return out


def _looks_like_conversation(path: Path) -> bool:
    try:
        with path.open("rb") as f:
            head = f.read(4096)
    except OSError:
        return False
    return b'"schema"' in head and b"/simulation@" in head and b'"conversation"' in head


def load_items(paths: Iterable[str | Path]) -> list[Item]:
    """Every run of every source, in the order given. A results record must pass every check
    the gate's readers make (one line, ConfigError, otherwise); a folder is read as the
    simulated conversations in it (results/sim-<version>-<stamp>/)."""
    items: list[Item] = []
    seen: dict[str, str] = {}
    for given in paths:
        path = Path(given)
        if path.is_dir():
            convs = sorted(p for p in path.glob("*.json") if _looks_like_conversation(p))
            if not convs:
                raise ConfigError(f"{path}: no simulated conversations in this folder (results/sim-*/ holds them)")
            new = _conversation_items(convs, path.name)
        elif _looks_like_conversation(path):
            new = _conversation_items([path], "")
        else:
            try:
                record = load_record(path)
            except RecordError as exc:
                raise ConfigError(str(exc)) from None
            new = _record_items(path, record)
        for it in new[:1]:
            if it.source.digest in seen and seen[it.source.digest] != it.source.path:
                raise ConfigError(f"{path}: the same record as {seen[it.source.digest]} (same digest): give it once")
            seen[it.source.digest] = it.source.path
        items += new
    return items


def queue(items: list[Item], sample: int, seed: int = 0, keep: set[tuple[str, str]] | frozenset = frozenset()) -> list[Item]:
    """What to read, in order: every failing run (by row, then trial), then `sample` passing runs
    drawn with a fixed seed (the same queue each time the same files are opened), and any run
    already annotated (`keep`) wherever it falls."""
    failing = [it for it in items if it.failed]
    passing = [it for it in items if not it.failed]
    rng = random.Random(seed)
    chosen = set(rng.sample(range(len(passing)), min(max(sample, 0), len(passing))))
    drawn = [it for i, it in enumerate(passing) if i in chosen or it.key in keep]
    order = {it.key: i for i, it in enumerate(items)}
    return sorted(failing, key=lambda it: (it.row_id, order[it.key])) + drawn


def transcript(item: Item) -> dict[str, Any]:
    """One run as the page shows it: the conversation, each tool call with its arguments and
    result, the answer, every scorer's verdict and explanation. Plain JSON data."""
    p = item.payload
    if item.stage == "simulation":
        turn = p.turn if isinstance(p.turn, dict) else {}
        verdicts = {n: {"passed": v.passed, "explanation": v.explanation} for n, v in p.verdicts.items()}
        extra = {"scenario": p.scenario, "persona": p.persona, "ended": p.ended, "user_turns": list(p.turns),
                 "failure": p.failure.model_dump() if p.failure else None, "expect": p.scenario_spec.get("expect")}
    else:
        run, row = p
        turn = json.loads(run.turn.model_dump_json())
        verdicts = {n: {"passed": v.passed, "explanation": v.explanation} for n, v in run.verdicts.items()}
        extra = {"job": run.job, "row": row}
    return {"source": item.source.digest, "run": item.run, "file": item.source.label, "row_id": item.row_id,
            "version": item.version, "trial": item.trial, "seed": item.seed, "stage": item.stage,
            "failed": item.failed, "failing": list(item.failing), "verdicts": verdicts,
            "answer": turn.get("answer", ""), "messages": turn.get("messages", []),
            "tool_calls": turn.get("tool_calls", []), "error": turn.get("error"), **extra}
