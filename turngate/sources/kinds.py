"""Row kinds, for reporting. A row's kind is the first of KIND_ORDER among its tags (the kinds
whose meaning the library gives), else the row's own first tag (its author's), else "other".
A rule of the row alone, so a results file's kinds are recomputed from that file, whatever
plug-ins the reader has. A module of its own so that a reader of results
(turngate/verdict/summary.py) counts kinds without loading the dataset's models."""
from __future__ import annotations

from collections.abc import Sequence

KIND_ORDER = ("golden", "refuse", "open", "multi-turn")


def kind_of(tags: Sequence[str]) -> str:
    return next((k for k in KIND_ORDER if k in tags), tags[0] if tags else "other")
