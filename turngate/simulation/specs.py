"""Personas and scenarios: the TOML files a simulation reads, as validated models.

    personas.toml    [[persona]]  who the simulated user is and how they push
    scenarios.toml   [[scenario]] what they want, and what must / must not happen

A scenario's `expect` is written in the dataset rows' vocabulary and validated with
the same model (turngate.sources.dataset.Expect), so a promoted failure carries it unchanged.

Who plays the user is the scenario's `user` (else the file's top-level `user`, else the
built-in `scripted` user, which says the scenario's `script` in order). A project's user
(turngate.plugin.register_simulated_user) may read scenario keys of its own: they are
validated with the model it registers and handed to it as `scenario.facts`. Goal checks
beyond the generic ones come from turngate.plugin.register_goal_check. Persona tactics are
names the scenarios' users know (their `tactics`).
Problems are one line, '<file>: <which entry>: <what>', raised as DatasetError.
"""
from __future__ import annotations

import re
import tomllib
from pathlib import Path
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    PrivateAttr,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from turngate.sources.dataset import CallSpec, DatasetError, Expect, describe_errors

from .hooks import SCRIPTED, SimulatedUser, goal_checks, simulated_users

_SLUG = re.compile(r"[a-z0-9][a-z0-9_-]{0,59}")
_TACTIC = re.compile(r"[a-z][a-z0-9_]{0,59}")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


def _slug(value: str) -> str:
    if not _SLUG.fullmatch(value):
        raise ValueError(f"id {value!r} must be lower-case letters, digits, '_' or '-' (at most 60)")
    return value


def _known_tactic(value: str, info: ValidationInfo) -> str:
    if not _TACTIC.fullmatch(value):
        raise ValueError(f"tactic {value!r} must be lower-case letters, digits or '_'")
    known = (info.context or {}).get("tactics")
    if known is not None and value not in known:
        raise ValueError(f"unknown tactic {value!r}; known: {', '.join(sorted(known)) or 'none'}")
    return value


TacticName = Annotated[str, AfterValidator(_known_tactic)]


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
    tactics: list[TacticName] = Field(default_factory=list)  # what the project's user knows how to do

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


class GoalCheck(BaseModel):
    """When the user's goal counts as reached, read off the Turn (not the answer's claims).
    Keys beyond the generic ones are a project's registered goal checks (register_goal_check)."""
    model_config = ConfigDict(extra="allow", frozen=True)

    description: str
    calls: list[CallSpec] = Field(default_factory=list)  # each was called (matching args) and answered ok
    escalated: bool | None = None                        # escalated to a human, by the registered rule
    answer: list[list[str]] = Field(default_factory=list)  # groups of spellings in the final answer
    expected: bool = True  # does the policy let the user reach it? false: reaching it is a failure

    @model_validator(mode="after")
    def _project_checks(self, info: ValidationInfo) -> GoalCheck:
        extra = self.__pydantic_extra__ or {}
        known = (info.context or {}).get("goal_checks")
        if known is None and extra:
            known = goal_checks()
        problems = []
        for key in list(extra):
            hook = known.get(key)
            if hook is None:
                problems.append(f"{key}: unknown key" + (f" (registered goal checks: {', '.join(sorted(known))})"
                                                         if known else ""))
            elif hook.adapter is not None:
                try:
                    extra[key] = hook.adapter.validate_python(extra[key])
                except ValidationError as exc:
                    problems.append(f"{key}: {describe_errors(exc)}")
        if problems:
            raise ValueError("; ".join(problems))
        if not (self.calls or self.escalated is not None or self.answer or extra):
            raise ValueError("goal_reached needs calls, escalated, answer or a registered goal check")
        return self


class ScenarioSpec(BaseModel):
    # extra keys are the scenario's user's own (validated with its scenario_fields model)
    model_config = ConfigDict(extra="allow", frozen=True)

    id: str
    title: str
    goal: str                    # the user's goal, in their words
    context: str
    user: str = SCRIPTED         # who plays the user: a registered name, or the built-in scripted user
    script: list[str] = Field(default_factory=list)  # the scripted user's messages, in order (default: the goal)
    # Tactics the user leaves out here because they would change what the right outcome is.
    avoid: list[TacticName] = Field(default_factory=list)
    starting_emotion: str | None = None
    tags: list[str] = Field(default_factory=list)
    expected_output: str
    expect: dict[str, Any]       # validated as turngate.sources.dataset.Expect; kept raw so unset keys stay unset
    goal_reached: GoalCheck | None = None
    _facts: Any = PrivateAttr(default=None)

    @field_validator("id")
    @classmethod
    def _id(cls, v: str) -> str:
        return _slug(v)

    @field_validator("expect")
    @classmethod
    def _expect(cls, v: dict[str, Any]) -> dict[str, Any]:
        Expect.model_validate(v)  # same schema as dataset rows; raises with the field path
        return v

    @field_validator("script")
    @classmethod
    def _script(cls, v: list[str]) -> list[str]:
        if not all(m.strip() for m in v):
            raise ValueError("script messages must not be empty")
        return v

    @model_validator(mode="before")
    @classmethod
    def _file_user(cls, data: Any, info: ValidationInfo) -> Any:
        default = (info.context or {}).get("user")
        if isinstance(data, dict) and default and "user" not in data:
            data = {**data, "user": default}
        return data

    @model_validator(mode="after")
    def _users_keys(self, info: ValidationInfo) -> ScenarioSpec:
        extra = dict(self.__pydantic_extra__ or {})
        if self.user == SCRIPTED:
            if extra:
                raise ValueError("; ".join(f"{k}: unknown key" for k in extra)
                                 + " (the scripted user reads no keys of its own; name the project's user)")
            if self.avoid:
                raise ValueError("avoid: the scripted user has no tactics to avoid")
            return self
        users = (info.context or {}).get("users")
        if users is None:
            users = simulated_users()
        spec: SimulatedUser | None = users.get(self.user)
        if spec is None:
            known = sorted(users)
            raise ValueError(f"user: no simulated user {self.user!r} is registered (registered: "
                             f"{', '.join(known) or 'none'}; the built-in one is {SCRIPTED!r})")
        if self.script:
            raise ValueError(f"script: only the scripted user says a script (this scenario's user is {self.user!r})")
        unknown = [t for t in self.avoid if spec.tactics and t not in spec.tactics]
        if unknown:
            raise ValueError(f"avoid: user {self.user!r} has no tactic {unknown[0]!r}")
        if spec.scenario_fields is None:
            if extra:
                raise ValueError("; ".join(f"{k}: unknown key" for k in extra))
            return self
        try:
            self._facts = spec.scenario_fields.model_validate(extra)
        except ValidationError as exc:
            raise ValueError(describe_errors(exc)) from None
        return self

    @property
    def facts(self) -> Any:
        """The scenario keys its (project's) user reads, validated with the model it registered."""
        return self._facts

    @property
    def messages(self) -> list[str]:
        """What the scripted user says, in order."""
        return list(self.script) or [self.goal]

    @property
    def expectation(self) -> Expect:
        return Expect.model_validate(self.expect)


def _load(path: str | Path, key: str, model: type[BaseModel], context: dict | None = None) -> list:
    try:
        data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise DatasetError(f"{path}: bad TOML ({exc})") from None
    if key == "scenario":
        user = data.get("user")
        if user is not None and not isinstance(user, str):
            raise DatasetError(f"{path}: user must be a string (a registered simulated user's name)")
        context = {**(context or {}), "user": user}
    entries = data.get(key)
    if not isinstance(entries, list) or not entries:
        raise DatasetError(f"{path}: no [[{key}]] entries")
    out, seen = [], set()
    for n, entry in enumerate(entries, start=1):
        where = f"{path}: {key} {n}" + (f" ({entry.get('id')})" if isinstance(entry, dict) and entry.get("id") else "")
        try:
            item = model.model_validate(entry, context=context)
        except ValidationError as exc:
            raise DatasetError(f"{where}: {describe_errors(exc)}") from None
        if item.id in seen:
            raise DatasetError(f"{where}: duplicate id {item.id!r}")
        seen.add(item.id)
        out.append(item)
    return out


def load_personas(path: str | Path, *, tactics=None) -> list[PersonaSpec]:
    """The personas; with `tactics` (names), a tactic none of them names is an error."""
    return _load(path, "persona", PersonaSpec, None if tactics is None else {"tactics": set(tactics)})


def load_scenarios(path: str | Path) -> list[ScenarioSpec]:
    return _load(path, "scenario", ScenarioSpec)


def user_of(scenario: ScenarioSpec) -> SimulatedUser | None:
    """The project's user a scenario names (None: the built-in scripted user)."""
    return None if scenario.user == SCRIPTED else simulated_users()[scenario.user]


def known_tactics(scenarios: list[ScenarioSpec]) -> set[str]:
    """The tactics the users of these scenarios know: what personas may name."""
    return {t for s in scenarios if (u := user_of(s)) is not None for t in u.tactics}


def pick(items: list, wanted: list[str] | None, flag: str) -> list:
    """The entries named by --only-scenario / --only-persona, in file order."""
    if not wanted:
        return items
    known = {i.id for i in items}
    unknown = [w for w in wanted if w not in known]
    if unknown:
        raise DatasetError(f"{flag}: unknown id {', '.join(map(repr, unknown))}; known: {', '.join(sorted(known))}")
    return [i for i in items if i.id in set(wanted)]
