"""Human verdicts on the policy judge's question, one (row, Turn) each: the labels file
`evals calibrate-judge --labels PATH` reads (JSONL, one LabelledExample a line) and `evals review`
exports (turngate.review.export)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from turngate.core.turn import Turn
from turngate.sources.dataset import DatasetError, Row


class LabelledExample(BaseModel):
    """One human verdict on the policy judge's question for one (row, Turn)."""
    model_config = ConfigDict(extra="forbid")
    id: str
    row: Row
    turn: Turn
    human: Literal["pass", "fail"]
    reason: str
    split: Literal["dev", "test"]
    origin: str


def load_labels(path: str | Path) -> list[LabelledExample]:
    try:
        lines = Path(path).read_text().splitlines()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    out, seen = [], set()
    for n, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            ex = LabelledExample.model_validate(json.loads(line))
        except json.JSONDecodeError as exc:
            raise DatasetError(f"{path}:{n}: not valid JSON ({exc.msg})") from None
        except ValidationError as exc:
            err = exc.errors(include_url=False)[0]
            where = ".".join(str(p) for p in err["loc"])
            raise DatasetError(f"{path}:{n}: {where}: {err['msg']}") from None
        if ex.id in seen:
            raise DatasetError(f"{path}:{n}: duplicate id {ex.id!r}")
        seen.add(ex.id)
        out.append(ex)
    if not out:
        raise DatasetError(f"{path}: no labelled examples")
    return out
