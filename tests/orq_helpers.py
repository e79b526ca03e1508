"""What the orq tests share: the stand-in (app/orq_standin.py) on 127.0.0.1 with the
environment pointed at it, and a few dataset rows as orq holds them."""
from __future__ import annotations

import contextlib
import json
from pathlib import Path

from app.orq_standin import OrqStandIn

REPO = Path(__file__).resolve().parents[1]
KEY = "orq-dummy-KEY-7f3a9c21e5"  # distinctive, so any leak of it is found by a plain search


def dataset_rows(ids: list[str]) -> list[dict]:
    rows = {r["id"]: r for r in map(json.loads, (REPO / "datasets" / "northwind.jsonl").read_text().splitlines())}
    return [rows[i] for i in ids]


def as_datapoint(row: dict) -> dict:
    """A row as promote.py --upload creates it in orq (inputs carry the row id)."""
    return {"inputs": {"id": row["id"], **row["inputs"]}, "expected_output": row.get("expected_output")}


@contextlib.contextmanager
def orq(monkeypatch, *, page_size: int = 50, datasets: dict[str, list[dict]] | None = None):
    """A running stand-in that accepts only KEY; ORQ_API_KEY, ORQ_BASE_URL and ORQ_ROUTER_URL set."""
    standin = OrqStandIn(page_size=page_size, key=KEY)
    for name, points in (datasets or {}).items():
        standin.add_dataset(name, points)
    with standin.running():
        monkeypatch.setenv("ORQ_API_KEY", KEY)
        for var, value in standin.env().items():
            monkeypatch.setenv(var, value)
        yield standin
