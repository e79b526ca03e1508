"""RunView: a run as a reader of verdicts holds it (compare's lean reading of a big results file,
evals/gate/sides.py, like Inspect's header-only reading of an eval log).

What such a reader reads is checked by the same rules as RunResult: the run's keys and stage, every
verdict (ScorerVerdict itself), and of the Turn what the summary counts: that it is an object
with the Turn's required `version` and `model`, and its `error`. The rest of the Turn is not built
into models: on a 22,200-run file that was half of the reading's time, and the record's digest
already covers every byte of it (an edited Turn is refused as a digest mismatch); the commands that
read Turns (show, report, regrade, resume) check them in full."""
from __future__ import annotations

from typing import NotRequired

from pydantic import ConfigDict, Field, TypeAdapter, with_config
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import TypedDict

from evals.record.results import ScorerVerdict


@with_config(ConfigDict(extra="allow"))
class TurnHead(TypedDict):
    """The part of a Turn (evals/core/turn.py) a reader of verdicts reads; the rest kept as read."""
    version: str
    model: str
    error: NotRequired[str | None]


@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True, slots=True)
class RunView:
    """RunResult's fields (tests/test_record_views.py checks they are the same), the Turn a dict."""
    row_id: str
    trial: int
    seed: int
    version: str
    job: str
    turn: TurnHead
    verdicts: dict[str, ScorerVerdict] = Field(default_factory=dict)
    stage: str = "gate"

    @property
    def key(self) -> tuple[str, int]:
        return (self.row_id, self.trial)

    @property
    def agent_error(self) -> str | None:
        return self.turn.get("error")


RUN_VIEWS = TypeAdapter(list[RunView])
