"""The source layer: where rows come from. A RowSource yields validated Rows and says what
it read (a name and a sha256 for the record's provenance).

    JsonlSource("rows.jsonl")                    # --dataset PATH
    OrqSource("01J...")                          # --dataset-id ID (orq.ai, needs ORQ_API_KEY)
    ListSource([{"id": ..., "inputs": ..., "expected_output": ...}, ...], name="mine")

`tool_names` (from the target) makes a row naming a tool the agent does not have an error at
load time, with the row's file and line: such a `forbid` check would pass vacuously; the
target's `validate_row` (`check_row`) may reject rows it cannot run, with the same line.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from turngate.core.errors import ConfigError
from turngate.sources.dataset import DatasetError, Row, load_rows, rows_from_datapoints, validate_row

RowCheck = Callable[[Row], None]  # raises ValueError for a row the agent cannot run


@dataclass(frozen=True)
class Loaded:
    rows: list[Row]
    name: str  # what the record calls the source: a path, "orq:<id>", or a given name
    sha256: str  # of the bytes read, or of the rows' canonical JSON when there are no bytes


@runtime_checkable
class RowSource(Protocol):
    def load(self, tool_names: Iterable[str] | None = None, check_row: RowCheck | None = None) -> Loaded: ...


def rows_digest(rows: list[Row]) -> str:
    return hashlib.sha256("\n".join(r.model_dump_json() for r in rows).encode()).hexdigest()


@dataclass(frozen=True)
class JsonlSource:
    path: str | Path

    def load(self, tool_names: Iterable[str] | None = None, check_row: RowCheck | None = None) -> Loaded:
        rows = load_rows(self.path, tool_names=tool_names, check_row=check_row)
        return Loaded(rows, str(self.path), hashlib.sha256(Path(self.path).read_bytes()).hexdigest())


@dataclass(frozen=True)
class ListSource:
    """Rows given in Python (dicts or Rows), validated like a file's."""
    items: list[Any]
    name: str = "python"

    def load(self, tool_names: Iterable[str] | None = None, check_row: RowCheck | None = None) -> Loaded:
        rows, seen = [], set()
        for n, item in enumerate(self.items, start=1):
            data = item.model_dump(mode="json", exclude_unset=True) if isinstance(item, Row) else item
            row = validate_row(data, f"{self.name} row {n}", tool_names=tool_names, check_row=check_row)
            if row.id in seen:
                raise DatasetError(f"{self.name} row {n}: duplicate id {row.id!r}")
            seen.add(row.id)
            rows.append(row)
        if not rows:
            raise DatasetError(f"{self.name}: no rows")
        return Loaded(rows, self.name, rows_digest(rows))


@dataclass(frozen=True)
class OrqSource:
    """An orq.ai dataset (orq-ai-sdk's datapoints listing), validated before any agent runs; a
    bad datapoint is one line naming its row number and datapoint id."""
    dataset_id: str

    def load(self, tool_names: Iterable[str] | None = None, check_row: RowCheck | None = None) -> Loaded:
        rows = rows_from_datapoints(self.fetch(), self.dataset_id, tool_names=tool_names,
                                    check_row=check_row)
        return Loaded(rows, f"orq:{self.dataset_id}", rows_digest(rows))

    def fetch(self) -> list[dict]:
        """Every datapoint, page by page, as {_id, inputs, expected_output}. The loop is
        evaluatorq's fetch_dataset_batches (limit 50, cursor starting_after = the last id, until
        has_more is false) on orq-ai-sdk directly: evaluatorq's DataPoint drops the datapoint
        id, and a bad datapoint must be named by it."""
        if not os.environ.get("ORQ_API_KEY"):
            raise ConfigError("--dataset-id needs ORQ_API_KEY (or use --dataset PATH)")
        from evaluatorq.fetch_data import setup_orq_client

        async def fetch():
            client = setup_orq_client(os.environ["ORQ_API_KEY"])
            points, after = [], None
            while True:
                page = await client.datasets.list_datapoints_async(dataset_id=self.dataset_id, limit=50,
                                                                    starting_after=after)
                points += [{"_id": p.id, "inputs": p.inputs, "expected_output": p.expected_output}
                           for p in page.data]
                if not page.has_more or not page.data:
                    return points
                after = page.data[-1].id

        try:
            return asyncio.run(fetch())
        except Exception as exc:
            from turngate.core.scrubbing import scrub

            first = str(exc).splitlines()[0] if str(exc) else ""
            raise ConfigError(scrub(f"orq.ai dataset {self.dataset_id}: {type(exc).__name__}: {first}")) from exc


def source_for(dataset: str | None, dataset_id: str | None) -> RowSource:
    """The source the command line names (--dataset PATH or --dataset-id ID)."""
    return OrqSource(dataset_id) if dataset_id else JsonlSource(dataset)


def fetch_orq_rows(dataset_id: str) -> list[Row]:
    return OrqSource(dataset_id).load().rows
