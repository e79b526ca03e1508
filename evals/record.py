"""The results record: the one file every later command reads (regrade, compare, show,
report, promote, resume). Like Inspect's eval log, it is typed and self-contained: it
carries the rows it ran, so it can be re-scored without the dataset file."""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from evals.turn import Turn

SCHEMA = "northwind-evals/results@1"


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid")
    passed: bool | None  # None: the scorer had nothing to check on this row (n/a)
    explanation: str


class RunResult(BaseModel):
    """One (row, trial) through one agent version, with every scorer's verdict."""
    model_config = ConfigDict(extra="forbid")
    row_id: str
    trial: int
    seed: int
    version: str
    job: str
    turn: Turn
    verdicts: dict[str, Verdict] = Field(default_factory=dict)

    @property
    def key(self) -> tuple[str, int]:
        return (self.row_id, self.trial)


class Meta(BaseModel):
    """How the run was made: enough to reproduce it, and what --resume restores."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: str = Field(SCHEMA, alias="schema")
    version: str
    version_description: str = ""
    baseline: str | None = None
    model: str
    judge: str
    dataset: str
    dataset_sha256: str
    git_commit: str | None = None
    trials: int
    seeds: list[int]
    parallelism: int
    timeout: float | None = None
    thresholds: dict[str, Any] = Field(default_factory=dict)
    argv: list[str] = Field(default_factory=list)
    started: str
    elapsed_s: float = 0.0
    complete: bool = False
    interrupted: bool = False
    redacted: bool = False  # emails and phone numbers masked on every write (--redact-results)
    # the agent and how it was called (--agent, --model, --transport, --max-retries)
    agent: str = "app.refund_agent:target"
    agent_version: str | None = None  # the --version a factory was given (None: its default / a plain target)
    model_override: str | None = None  # --model, when given
    job: str | None = None  # the candidate's job name, e.g. refund-agent@v3
    transport: str = "memory"
    max_retries: int = 2
    judge_timeout: float = 60.0
    workers: int = 1
    faults: list[str] = Field(default_factory=list)
    thresholds_path: str | None = None
    selection: dict[str, Any] = Field(default_factory=dict)  # --only / --tags / --limit
    cache: dict[str, Any] | None = None  # model-call cache counters (--cache)
    resumed: list[list[str]] = Field(default_factory=list)  # argv of each --resume
    regraded_from: str | None = None  # regrade: the results file re-scored
    compared_files: dict[str, str] | None = None  # compare: the two results files combined
    model_calls: dict[str, Any] | None = None  # provider calls: counts, 429s, retries, wall vs physical limit
    reference: str | None = None  # the accepted-run reference judged against (None: bars only)

    @property
    def versions(self) -> list[str]:
        """The candidate, then the baseline if there is one."""
        return [self.version] + ([self.baseline] if self.baseline else [])


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    meta: Meta
    rows: list[dict[str, Any]]
    runs: list[RunResult] = Field(default_factory=list)
    summary: dict[str, Any] = Field(default_factory=dict)
    comparison: dict[str, Any] | None = None

    def runs_for(self, version: str) -> list[RunResult]:
        return [r for r in self.runs if r.version == version]

    def row_by_id(self) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in self.rows}


class RecordError(Exception):
    """A results file that cannot be read as a results record."""


def load_record(path: str | Path) -> Record:
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise RecordError(f"{path}: no such results file") from exc
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc
    except (OSError, UnicodeDecodeError) as exc:  # a directory, no permission, not text
        raise RecordError(f"{path}: cannot read a results file ({getattr(exc, 'strerror', None) or exc})") from exc
    try:
        return Record.model_validate(data)
    except Exception as exc:
        first = str(exc).splitlines()
        raise RecordError(f"{path}: not a results record ({' '.join(first[:3])})") from exc


def save_record(record: Record, path: str | Path) -> Path:
    """Write atomically: an interrupt mid-write never leaves a half file behind."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
    with os.fdopen(fd, "w") as fh:
        if record.meta.redacted:
            from evals.redaction import mask

            fh.write(json.dumps(mask(record.model_dump(mode="json", by_alias=True)), indent=1))
        else:
            fh.write(record.model_dump_json(by_alias=True, indent=1))
    os.replace(tmp, path)
    return path
