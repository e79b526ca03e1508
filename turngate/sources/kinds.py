"""Row kinds, for reporting: a row's kind is the first of KIND_ORDER among its tags, else "other".
A module of its own so that a reader of results (turngate/verdict/summary.py) counts kinds without
loading the dataset's models."""
from __future__ import annotations

KIND_ORDER = ("golden", "refuse", "open", "multi-turn", "refund")
