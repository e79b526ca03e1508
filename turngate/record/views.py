"""A run as a reader of verdicts holds it (compare's lean reading of a big results file,
turngate/gate/sides.py, like Inspect's header-only reading of an eval log): RunView, or SealedRun
for a file whose seal holds.

What such a reader reads is checked by the same rules as RunResult: the run's keys and stage, every
verdict (ScorerVerdict itself), and of the Turn what the summary counts: that it is an object
with the Turn's required `version` and `model`, and its `error`. The rest of the Turn is not built
into models: on a 22,200-run file that was half of the reading's time. The record's digest covers
every byte of it (an edited Turn is refused as a digest mismatch), or, in a sealed file, the seal
does, and msgspec then skips it without building it at all. The commands that read Turns (show,
report, regrade, resume) check them in full."""
from __future__ import annotations

import json
from typing import Any, NotRequired

import msgspec
from pydantic import ConfigDict, Field, TypeAdapter, with_config
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import TypedDict

from turngate.record.results import SEAL, RunKey, ScorerVerdict


@with_config(ConfigDict(extra="allow"))
class TurnHead(TypedDict):
    """The part of a Turn (turngate/core/turn.py) a reader of verdicts reads; the rest kept as read."""
    version: str
    model: str
    error: NotRequired[str | None]


@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True, slots=True)
class RunView(RunKey):
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
    def agent_error(self) -> str | None:
        return self.turn.get("error")


RUN_VIEWS = TypeAdapter(list[RunView])


# -- a sealed file (turngate/record/results.py: SEAL), read without building its Turns ---------------
# The same fields and types as RunView, checked by msgspec as it parses: what a Turn holds
# besides `version`, `model` and `error` is skipped, not built (the seal covers its bytes). msgspec
# is stricter than pydantic's lax mode (no "3" or 3.0 for an int): what it refuses is read again
# the pydantic way, which decides (tests/test_record_views.py).

class SealedVerdict(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    passed: bool | None
    explanation: str


class SealedTurnHead(msgspec.Struct, frozen=True):
    version: str
    model: str
    error: str | None = None


class SealedRun(msgspec.Struct, RunKey, frozen=True, forbid_unknown_fields=True):
    row_id: str
    trial: int
    seed: int
    version: str
    job: str
    turn: SealedTurnHead
    verdicts: dict[str, SealedVerdict] = {}
    stage: str = "gate"

    @property
    def agent_error(self) -> str | None:
        return self.turn.error


_MEMBERS = msgspec.json.Decoder(dict[str, msgspec.Raw])
_RUNS = msgspec.json.Decoder(list[SealedRun])


def read_sealed(raw: bytes) -> tuple[dict[str, Any], list[SealedRun]] | None:
    """(the record's other members, parsed by json, its runs as SealedRuns), or None when msgspec
    refuses the bytes (the caller then reads them the pydantic way, whose line counts)."""
    try:
        members = _MEMBERS.decode(raw)
        runs = _RUNS.decode(members.pop("runs")) if "runs" in members else []
        members.pop(SEAL, None)
        # the rest is small: json's exact reading (an int past 64 bits stays an int)
        return {k: json.loads(bytes(v)) for k, v in members.items()}, runs
    except (msgspec.DecodeError, ValueError, TypeError):
        return None
