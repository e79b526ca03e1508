"""A simulated conversation as a dataset row, once: what `scripts/promote.py` and
`evals review`'s export (turngate.review.export) share.

The row's `inputs.turns` are the simulated user's turns up to and including the turn after
which the conversation went wrong (the failure's `after_turn`; all turns when it did not fail):
replaying them gives exactly the Turn that failed (same turns, same seed). `expect`, `tags` and
`expected_output` come from the scenario; `source` is simulation:<run>/<conversation>."""
from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

from turngate.sources.dataset import DatasetError, Row, load_rows

from .convert import conversation_row
from .run import ConversationRecord


def default_id(rec: ConversationRecord) -> str:
    return re.sub(r"[^A-Za-z0-9_.-]", "_", f"sim_{rec.scenario}_{rec.persona}_s{rec.seed}")[:100]


def build_row(rec: ConversationRecord, row_id: str | None = None, expected_output: str | None = None) -> Row:
    """The row that replays the conversation up to its failure; DatasetError (one line) when
    there is nothing to promote (the agent crashed, no user turns) or the row is invalid."""
    if rec.ended == "error" or not rec.turns:
        why = rec.failure.explanation if rec.failure is not None else "no user turns"
        raise DatasetError(f"{rec.conversation}: nothing to promote ({why})")
    upto = rec.failure.after_turn if rec.failure is not None and rec.failure.after_turn > 0 else len(rec.turns)
    return conversation_row(rec.scenario_spec, rec.turns[:upto], row_id=row_id or default_id(rec),
                            source=f"simulation:{rec.run}/{rec.conversation}", expected_output=expected_output)


def same_turns(row: Row, rows: Iterable[Row]) -> Row | None:
    """The first of `rows` whose user turns are the row's (whitespace at the ends aside)."""
    turns = [t.strip() for t in row.user_turns()]
    return next((o for o in rows if [t.strip() for t in o.user_turns()] == turns), None)


def check_new(row: Row, dataset: Path) -> None:
    """Refuse an id clash or the same user turns already in the file."""
    if not dataset.exists():
        return
    rows = load_rows(dataset)
    same = same_turns(row, rows)
    if same is not None:  # checked first: promoting the same conversation twice says so
        raise DatasetError(f"{dataset}: row {same.id!r} already has these user turns (a duplicate); not written")
    if any(o.id == row.id for o in rows):
        raise DatasetError(f"{dataset}: id {row.id!r} is already taken (pass --id NEW_ID); not written")
