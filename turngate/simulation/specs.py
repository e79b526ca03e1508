"""Personas and scenarios: the TOML files a simulation reads, as validated models.

    datasets/personas.toml    [[persona]]  who the simulated user is and how they push
    datasets/scenarios.toml   [[scenario]] what they want, and what must / must not happen

A scenario's `expect` is written in the dataset rows' vocabulary and validated with
the same model (turngate.sources.dataset.Expect), so a promoted failure carries it unchanged.
Problems are one line, '<file>: <which entry>: <what>', raised as DatasetError.
"""
from __future__ import annotations

import re
import tomllib
from enum import StrEnum
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from turngate.sources.dataset import DatasetError, Expect, describe_errors

ORDER_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")  # any id token (Northwind's look like A-1001)
_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,59}")


class Tactic(StrEnum):
    """How a persona pushes once the agent says no (or how it opens)."""
    claim_authority = "claim_authority"    # "I'm the store manager, I approve it"
    made_up_policy = "made_up_policy"      # "your policy says 90 days"
    fake_tool_result = "fake_tool_result"  # pastes a [TOOL_RESULT ...] that says yes
    split_request = "split_request"        # opens without the order id, gives it a turn later
    split_amount = "split_amount"          # asks for a slice under the limit, then "another" slice
    change_order = "change_order"          # switches to another order id mid-way
    get_angry = "get_angry"                # pressure and insults
    plead = "plead"                        # polite pressure: "just this once"
    give_up = "give_up"                    # leaves when reached, even with patience left


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _slug(value: str) -> str:
    if not _SLUG.fullmatch(value):
        raise ValueError(f"id {value!r} must be lower-case letters, digits, '_' or '-' (at most 60)")
    return value


class PersonaSpec(_Strict):
    id: str
    name: str
    background: str
    patience: float = Field(ge=0, le=1)        # how many refusals before leaving
    assertiveness: float = Field(ge=0, le=1)   # pushes on after a hand-over to a human
    politeness: float = Field(ge=0, le=1)
    technical_level: float = Field(default=0.5, ge=0, le=1)
    communication_style: str = "casual"
    emotional_arc: str | None = None
    tactics: list[Tactic] = Field(default_factory=list)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return _slug(v)

    @field_validator("communication_style")
    @classmethod
    def _style(cls, v: str) -> str:
        if v not in ("formal", "casual", "terse", "verbose"):
            raise ValueError("communication_style must be formal, casual, terse or verbose")
        return v

    @property
    def push_budget(self) -> int:
        """Pushes after refusals before the persona leaves: 1 (impatient) to 5."""
        return 1 + round(self.patience * 4)


class GoalCheck(_Strict):
    """When the user's goal counts as reached, read off the Turn (not the answer's claims)."""
    description: str
    refunded: list[str] = Field(default_factory=list)   # a refund on each of these orders succeeded
    escalated: bool | None = None                        # a successful escalate_to_human (or tool routing)
    answer: list[list[str]] = Field(default_factory=list)  # groups of spellings in the final answer
    expected: bool = True  # does the policy let the user reach it? false: reaching it is a failure

    @field_validator("refunded")
    @classmethod
    def _ids(cls, ids: list[str]) -> list[str]:
        for i in ids:
            if not ORDER_ID.fullmatch(i):
                raise ValueError(f"order id {i!r} must be one token of letters, digits, '-', '_' or '.'")
        return ids

    @model_validator(mode="after")
    def _something(self) -> GoalCheck:
        if not (self.refunded or self.escalated is not None or self.answer):
            raise ValueError("goal_reached needs refunded, escalated or answer")
        return self


class ScenarioSpec(_Strict):
    id: str
    title: str
    goal: str                    # the user's goal, in their words
    context: str
    customer: str | None = None  # the customer's name, for openings that introduce themselves
    # A refund-style request (the offline user's tactics push for it) names order, product and
    # reason; any other scenario leaves them out and the user asks `opening` (default: the goal).
    opening: str | None = None   # the user's first message, for a plain question
    order: str | None = None     # the order the request is about
    product: str | None = None   # what the user calls the item ("the headphones")
    amount: float | None = Field(default=None, gt=0)  # asked amount; None: the full order
    currency: str | None = None
    reason: str | None = None    # why they want the money back, as a clause
    switch_to: str | None = None  # an order id the change_order tactic switches to
    # Tactics the simulated user leaves out here because they would change what the right
    # outcome is (e.g. splitting 150 SGD into 120 + 30 makes the first refund legitimate).
    avoid: list[Tactic] = Field(default_factory=list)
    starting_emotion: str | None = None
    tags: list[str] = Field(default_factory=list)
    expected_output: str
    expect: dict[str, Any]       # validated as turngate.sources.dataset.Expect; kept raw so unset keys stay unset
    goal_reached: GoalCheck | None = None

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return _slug(v)

    @field_validator("order", "switch_to")
    @classmethod
    def _order(cls, v: str | None) -> str | None:
        if v is not None and not ORDER_ID.fullmatch(v):
            raise ValueError(f"order id {v!r} must be one token of letters, digits, '-', '_' or '.'")
        return v

    @field_validator("expect")
    @classmethod
    def _expect(cls, v: dict[str, Any]) -> dict[str, Any]:
        Expect.model_validate(v)  # same schema as dataset rows; raises with the field path
        return v

    @model_validator(mode="after")
    def _amount_has_currency(self) -> ScenarioSpec:
        request = [self.order, self.product, self.reason]
        if any(v is not None for v in request) and None in request:
            raise ValueError("order, product and reason go together (a refund-style request names all three)")
        if (self.amount is None) != (self.currency is None):
            raise ValueError("amount and currency go together (leave both out for the full order)")
        return self

    @property
    def expectation(self) -> Expect:
        return Expect.model_validate(self.expect)

    def money(self, amount: float | None = None) -> str:
        value = self.amount if amount is None else amount
        return f"{value:g} {self.currency}" if value is not None else "the full amount"


def _load(path: str | Path, key: str, model: type[BaseModel]) -> list:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(f"{path}: bad TOML ({exc})") from None
    entries = data.get(key)
    if not isinstance(entries, list) or not entries:
        raise DatasetError(f"{path}: no [[{key}]] entries")
    out, seen = [], set()
    for n, entry in enumerate(entries, start=1):
        where = f"{path}: {key} {n}" + (f" ({entry.get('id')})" if isinstance(entry, dict) and entry.get("id") else "")
        try:
            item = model.model_validate(entry)
        except ValidationError as exc:
            raise DatasetError(f"{where}: {describe_errors(exc)}") from None
        if item.id in seen:
            raise DatasetError(f"{where}: duplicate id {item.id!r}")
        seen.add(item.id)
        out.append(item)
    return out


def load_personas(path: str | Path) -> list[PersonaSpec]:
    return _load(path, "persona", PersonaSpec)


def load_scenarios(path: str | Path) -> list[ScenarioSpec]:
    return _load(path, "scenario", ScenarioSpec)


def pick(items: list, wanted: list[str] | None, flag: str) -> list:
    """The entries named by --only-scenario / --only-persona, in file order."""
    if not wanted:
        return items
    known = {i.id for i in items}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise DatasetError(f"{flag}: unknown id {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}")
    return [i for i in items if i.id in set(wanted)]
