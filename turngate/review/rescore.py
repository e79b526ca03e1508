"""The annotated runs scored again with the project's scorers as they are now, so a mode's
coverage answers "does any scorer of today's suite catch these runs?": a scorer written after
the review (from an exported skeleton) shows up as covering its mode on the next export,
without re-running the agent. Only the runs assigned to a mode are scored (a few dozen)."""
from __future__ import annotations

import asyncio

from turngate.core.errors import ConfigError
from turngate.core.project import project
from turngate.scoring.grading import grade_many
from turngate.scoring.scorers import evaluators_for
from turngate.sources.dataset import DatasetError, Row
from turngate.verdict.thresholds import load_thresholds

from .items import Item
from .store import RunKey

Verdicts = dict[RunKey, dict[str, bool | None]]


def suite(thresholds: str | None = None) -> list[str]:
    """The scorers the project's bars name (its gate's suite); ConfigError when there are none."""
    path = thresholds or str(project().path("thresholds", "thresholds.toml"))
    return list(load_thresholds(path).bars())


def _row_of(item: Item) -> Row | None:
    if item.stage != "simulation":
        run, row = item.payload
        return Row.model_validate(row) if row is not None else None
    from turngate.simulation.convert import conversation_row

    conv = item.payload
    try:
        return conversation_row(conv.scenario_spec, conv.turns, row_id=conv.scenario)
    except DatasetError:
        return None


def rescored(items: list[Item], *, scorers: list[str], judge: str | None) -> Verdicts:
    """Each item's verdicts by `scorers` now (judge: the policy judge's spec, None: the
    judge-backed scorers are left out). An item without a row keeps no verdicts here."""
    if not items:
        return {}
    try:
        evaluators = evaluators_for({n: None for n in scorers}, judge)
    except ConfigError:
        raise
    work, keys = [], []
    for it in items:
        row = _row_of(it)
        if row is None:
            continue
        turn = it.payload.turn if it.stage == "simulation" else it.payload[0].turn.model_dump(mode="json")
        work.append((row, turn))
        keys.append(it.key)
    graded = asyncio.run(grade_many(work, evaluators))
    return {k: {n: v.passed for n, v in g.items()} for k, g in zip(keys, graded, strict=True)}


class Coverage:
    """Where a mode's coverage comes from: today's suite (`scorers`, scored once per run and
    kept), or the verdicts the files recorded (scorers None)."""

    def __init__(self, scorers: list[str] | None = None, judge: str | None = None) -> None:
        self.scorers, self.judge = scorers, judge
        self._made: Verdicts = {}

    @classmethod
    def of_project(cls, judge: str | None) -> tuple[Coverage, str | None]:
        """Today's suite as the project's bars name it, or (recorded, why not) without bars."""
        try:
            return cls(suite(), judge), None
        except ConfigError as exc:
            return cls(), f"coverage by the verdicts the files recorded ({exc})"

    def verdicts(self, state, by_key: dict[RunKey, Item]) -> Verdicts | None:
        if self.scorers is None:
            return None
        todo = [by_key[k] for k in state.assigned if k in by_key and k not in self._made]
        if todo:
            self._made.update(rescored(todo, scorers=self.scorers, judge=self.judge))
        return self._made
