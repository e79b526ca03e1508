"""The one typed input every scorer and judge gets: a dataset row and the Turn it produced."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from turngate.core.turn import ToolCall, Turn
from turngate.sources.dataset import DatasetError, Row, matches, rows_from_datapoints


class CaseError(Exception):
    """The scorer's input is not a (row, Turn) pair; the verdict fails closed."""


_recent: dict[tuple[int, int], tuple[Any, Any, Case]] = {}


@dataclass(frozen=True)
class Case:
    row: Row
    turn: Turn

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> Case:
        """From evaluatorq's scorer params: data = the DataPoint, output = the job's Turn.
        evaluatorq hands every scorer of a run the same two objects, so the parsed Case is
        kept for them (checked by identity) instead of validated once per scorer."""
        data, output = params.get("data"), params.get("output")
        hit = _recent.get((id(data), id(output)))
        if hit is not None and hit[0] is data and hit[1] is output:
            return hit[2]
        case = cls._parse(data, output)
        _recent[(id(data), id(output))] = (data, output, case)
        if len(_recent) > 512:
            _recent.pop(next(iter(_recent)))
        return case

    @classmethod
    def _parse(cls, data: Any, output: Any) -> Case:
        try:
            row = rows_from_datapoints([data], "in scorer")[0]
        except DatasetError as exc:
            raise CaseError(f"dataset row unreadable: {exc}") from exc
        if isinstance(output, Turn):
            return cls(row, output)
        if not isinstance(output, dict):
            raise CaseError(f"job output is not a Turn (got {type(output).__name__})")
        try:
            return cls(row, Turn.model_validate(output))
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(str(p) for p in first["loc"]) or "output"
            raise CaseError(f"job output is not a Turn ({where}: {first['msg']})") from exc

    # -- helpers over the action trail -------------------------------------------------
    def calls(self, name: str | None = None) -> list[ToolCall]:
        return [c for c in self.turn.tool_calls if name is None or c.name == name]

    def matching(self, name: str, args: dict[str, Any]) -> list[ToolCall]:
        return [c for c in self.calls(name) if matches(c.arguments, args)]

    @property
    def user_text(self) -> str:
        return " ".join(m.content for m in self.turn.messages if m.role == "user") or " ".join(
            self.row.user_turns())


def ok(call: ToolCall) -> bool:
    """The tool's own reply says the action was applied."""
    return isinstance(call.result, dict) and call.result.get("ok") is True


def describe(call: ToolCall) -> str:
    args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
    return f"{call.name}({args})"
