"""The source layer: the eval row schema and its loaders.

A row is evaluatorq-shaped (`inputs` + `expected_output`); what a scorer checks
lives in `inputs.expect`:

    {"id": "order_total",
     "inputs": {"message": "What did I pay for order 1042?",   # or "turns": [...], exactly one
                "tags": ["golden", "orders"],
                "source": "seed" | "manual" | "simulation:<run>/<conversation>",
                "expect": {"calls": [{"name": "lookup_order", "args": {"order_id": "1042"}}],
                           "forbid": ["delete_account"], "answer": [["1042.50"]],
                           "leak": ["internal note"], "rubric": "...", "handoff": false}},
     "expected_output": "Order 1042 came to 1,042.50 EUR, as lookup_order says."}

Generic expect fields (all optional):
    calls            tool calls that must be made and answered; a bare tool name or
                     {"name", "args"}. Args match as `matches` says.
    forbid           tool calls that must not even be attempted (same spec format).
    answer           groups of spellings; every group must appear in the normalised answer.
    leak             text that must never appear in the normalised answer.
    rubric           what the policy judge checks. Default: the row's expected_output.

Any other key is one a registered scorer declares it reads (turngate/sources/expect_keys.py),
validated with the type it declares; the example's `handoff` is a plug-in's, declared with
turngate.plugin.declare_expect_key. An undeclared key is an error.

Answer and leak strings are stored normalised (see `normalise`), so an author may
write "1,042.50" or "Order-1042" and the scorer still compares like with like.

Row kind (for reporting) comes from the tags: the first of KIND_ORDER a row carries,
else the row's own first tag, else "other" (turngate/sources/kinds.py).

For orq.ai datasets (evaluatorq DataPoints) the row id lives in `inputs.id`, since a
DataPoint has only `inputs` and `expected_output`; `row_to_datapoint` writes it there
and `rows_from_datapoints` reads it back. Both loaders validate with the same models
and report problems as one human line, prefixed with where the row came from.
"""
from __future__ import annotations

import difflib
import json
import math
import re
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from turngate.core.errors import DatasetError
from turngate.core.plugins import load_plugins
from turngate.sources import expect_keys
from turngate.sources.kinds import KIND_ORDER, kind_of

__all__ = [
    "KIND_ORDER", "DatasetError", "CallSpec", "Expect", "Inputs", "Row",
    "describe_errors", "normalise", "matches", "validate_row", "load_rows", "select", "rows_from_datapoints", "row_to_datapoint",
    "row_to_json",
]


_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,99}")
_TAG = re.compile(r"[a-z0-9][a-z0-9-]*")
_SOURCE = re.compile(r"seed|manual|simulation:[^/\s]+/[^/\s]+")
_TOLERANCE = 0.01 + 1e-9  # "within 0.01", robust to 129.01 - 129.0 = 0.0100000000000051




def normalise(text: str) -> str:
    """Lower case, unicode hyphen/en/em dashes -> '-', drop thousands separators
    (1,042.50 -> 1042.50): the answer check's normalisation, plus the em dash."""
    text = text.lower().replace("\u2011", "-").replace("\u2013", "-").replace("\u2014", "-")
    return re.sub(r"(?<=\d),(?=\d{3})", "", text)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def matches(args: dict, expected: dict) -> bool:
    """Do a call's arguments satisfy the expected ones? Numbers must be within 0.01,
    strings must occur case-insensitively as substrings; a missing argument fails.
    Arguments not named in `expected` are not checked."""
    for key, want in expected.items():
        if key not in args:
            return False
        got = args[key]
        if _is_number(want):
            try:
                close = abs(float(got) - float(want)) <= _TOLERANCE
            except (TypeError, ValueError):
                return False
            if not close:  # written this way so NaN fails too
                return False
        elif isinstance(want, str):
            if want.lower() not in str(got).lower():
                return False
        elif got != want:
            return False
    return True


class _Model(BaseModel):
    # Strict: "true" is not a bool and 3 is not a string; unknown keys are errors.
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _order_id(value: str) -> str:
    value = value.strip().upper()
    if not value:
        raise ValueError("order id must not be empty")
    return value


class CallSpec(_Model):
    """A tool call to require or forbid. A bare string "name" means any arguments."""

    name: str
    args: dict[str, Any] = Field(default_factory=dict)

    @model_validator(mode="before")
    @classmethod
    def _bare_name(cls, data: Any) -> Any:
        return {"name": data} if isinstance(data, str) else data

    @field_validator("name")
    @classmethod
    def _known_tool(cls, name: str, info: ValidationInfo) -> str:
        # The agent's own tool list (the target's), when the loader was given one.
        tools = (info.context or {}).get("tool_names")
        if tools is not None and name not in tools:
            close = difflib.get_close_matches(name, sorted(tools), n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ValueError(f"unknown tool {name!r}{hint}")
        return name

    @field_validator("args")
    @classmethod
    def _scalar_args(cls, args: dict[str, Any]) -> dict[str, Any]:
        # matches() only knows substring and numeric rules.
        for key, value in args.items():
            if not (isinstance(value, str) or (_is_number(value) and math.isfinite(value))):
                raise ValueError(f"argument {key!r} must be a string or a finite number")
        return {k: float(v) if _is_number(v) else v for k, v in args.items()}

    def label(self) -> str:
        """Short text for failure messages: lookup_order(order_id='1042')."""
        inner = ", ".join(f"{k}={v!r}" for k, v in self.args.items())
        return f"{self.name}({inner})" if self.args else self.name


class Expect(_Model):
    # Unknown keys are still errors (see _declared_extras); "allow" only lets a key that a
    # registered scorer declares through, untyped, for that scorer to read with value().
    model_config = ConfigDict(extra="allow", strict=True, frozen=True)

    calls: list[CallSpec] = Field(default_factory=list)
    forbid: list[CallSpec] = Field(default_factory=list)
    answer: list[list[str]] = Field(default_factory=list)
    leak: list[str] = Field(default_factory=list)
    rubric: str | None = None

    @field_validator("answer")
    @classmethod
    def _norm_answer(cls, groups: list[list[str]]) -> list[list[str]]:
        for n, group in enumerate(groups):
            if not group or not all(option.strip() for option in group):
                raise ValueError(f"group {n} must hold at least one non-empty spelling")
        # Not stripped: the seed relies on spellings like "3 " (a digit, then a space).
        return [[normalise(option) for option in group] for group in groups]

    @field_validator("leak")
    @classmethod
    def _norm_leak(cls, secrets: list[str]) -> list[str]:
        if not all(s.strip() for s in secrets):
            raise ValueError("leak strings must not be empty")
        return [normalise(s) for s in secrets]

    @field_validator("rubric")
    @classmethod
    def _rubric_text(cls, rubric: str | None) -> str | None:
        if rubric is not None and not rubric.strip():
            raise ValueError("rubric must not be empty (leave it out to use expected_output)")
        return rubric

    @model_validator(mode="after")
    def _consistent(self) -> Expect:
        # Contradictions make a row impossible to pass; catch them when loading.
        required = {c.name for c in self.calls}
        banned = {f.name for f in self.forbid if not f.args}
        if required & banned:
            raise ValueError(f"{sorted(required & banned)} both required (calls) and forbidden")
        return self

    @model_validator(mode="after")
    def _declared_extras(self, info: ValidationInfo) -> Expect:
        # Keys beyond the generic ones are those a registered scorer declares it reads
        # (turngate/sources/expect_keys.py), typed as it declares them; the loader may pass its own
        # table in the validation context. Anything else is an unknown key.
        extra = self.__pydantic_extra__ or {}
        known = (info.context or {}).get("expect_keys")
        if known is None and extra:
            load_plugins()  # a plug-in's keys are known once it is imported
            known = expect_keys.declared()
        for key in list(extra):
            spec = known.get(key)
            if spec is None:
                raise PydanticCustomError("unknown_key", "unknown key", {"key": key})
            if spec.adapter is not None:
                try:
                    extra[key] = spec.adapter.validate_python(extra[key], strict=True)
                except ValidationError as exc:
                    raise PydanticCustomError("declared_key", "{key}: invalid", {
                        "key": key, "errors": [(tuple(e["loc"]), e["msg"]) for e in exc.errors(include_url=False)],
                    }) from None
        for check in expect_keys.checks():
            check(self)
        return self

    def __getattr__(self, item: str) -> Any:
        # A declared key the row does not set reads as its declared default (e.g. a list key -> []).
        try:
            return super().__getattr__(item)
        except AttributeError:
            spec = None if item.startswith("_") else expect_keys.declared().get(item)
            if spec is None:
                raise
            return spec.default() if callable(spec.default) else spec.default

    def has(self, key: str) -> bool:
        """Did the row set this key (typed or declared)?"""
        return key in self.model_fields_set or key in (self.__pydantic_extra__ or {})

    def value(self, key: str, default: Any = None) -> Any:
        """An expect key's value, typed or scorer-declared (None/default when the row does not set it)."""
        if key in type(self).model_fields:
            return getattr(self, key)
        return (self.model_extra or {}).get(key, default)

    def rubric_for(self, row: Row) -> str:
        return self.rubric if self.rubric is not None else row.expected_output


class Inputs(_Model):
    message: str | None = None
    turns: list[str] | None = None
    tags: list[str] = Field(default_factory=list)
    source: str = "manual"
    expect: Expect = Field(default_factory=Expect)

    @field_validator("tags")
    @classmethod
    def _tags(cls, tags: list[str]) -> list[str]:
        for tag in tags:
            if not _TAG.fullmatch(tag):
                raise ValueError(f"tag {tag!r} must be lower-case letters, digits and '-'")
        if len(set(tags)) != len(tags):
            raise ValueError("duplicate tag")
        return tags

    @field_validator("source")
    @classmethod
    def _source(cls, source: str) -> str:
        if not _SOURCE.fullmatch(source):
            raise ValueError(f"source {source!r} must be 'seed', 'manual' or "
                             "'simulation:<run>/<conversation>'")
        return source

    @model_validator(mode="after")
    def _one_prompt(self) -> Inputs:
        if (self.message is None) == (self.turns is None):
            got = "both" if self.message is not None else "neither"
            raise ValueError(f"exactly one of 'message' or 'turns' is required (got {got})")
        texts = [self.message] if self.message is not None else self.turns
        if not texts or not all(t.strip() for t in texts):
            raise ValueError("message/turns must be non-empty text")
        # Reports group by kind, which comes from the tags; keep the tag honest.
        if (self.turns is not None) != ("multi-turn" in self.tags):
            raise ValueError("a row has the tag 'multi-turn' exactly when it uses 'turns'")
        return self


class Row(_Model):
    id: str
    inputs: Inputs
    expected_output: str

    @field_validator("id")
    @classmethod
    def _slug(cls, value: str) -> str:
        if not _ID.fullmatch(value):
            raise ValueError(f"id {value!r} must be 1-100 letters, digits, '_', '-' or '.', "
                             "starting with a letter or digit")
        return value

    @field_validator("expected_output")
    @classmethod
    def _some_text(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("expected_output must not be empty")
        return value

    @model_validator(mode="after")
    def _agent_accepts(self, info: ValidationInfo) -> Row:
        # The target's own row check (e.g. "no such order in this world"), when given.
        check = (info.context or {}).get("check_row")
        if check is not None:
            check(self)
        return self

    @property
    def expect(self) -> Expect:
        return self.inputs.expect

    @property
    def kind(self) -> str:
        """First tag in KIND_ORDER the row carries, else its own first tag, else "other"."""
        return kind_of(self.inputs.tags)

    def user_turns(self) -> list[str]:
        if self.inputs.message is not None:
            return [self.inputs.message]
        return list(self.inputs.turns or [])


# --- loading ---------------------------------------------------------------------

def describe_errors(error: ValidationError) -> str:
    """Pydantic errors as one compact line: 'inputs.expect.anwser: unknown key'."""
    parts: list[str] = []
    for e in error.errors(include_url=False):
        where = ".".join(str(p) for p in e["loc"])
        if e["type"] == "extra_forbidden":
            what = "unknown key"
        elif e["type"] == "unknown_key":  # Expect's own check: name the key as pydantic would
            where, what = ".".join([*map(str, e["loc"]), e["ctx"]["key"]]), "unknown key"
        elif e["type"] == "declared_key":  # a scorer-declared key: its own errors, located under it
            for loc, msg in e["ctx"]["errors"]:
                text = f"{'.'.join(map(str, [*e['loc'], e['ctx']['key'], *loc]))}: {msg.removeprefix('Value error, ')}"
                if text not in parts:
                    parts.append(text)
            continue
        else:
            what = e["msg"].removeprefix("Value error, ")
        text = f"{where}: {what}" if where else what
        if text not in parts:
            parts.append(text)
    return "; ".join(parts)


def validate_row(data: Any, where: str, *, tool_names: Iterable[str] | None = None,
                 check_row: Callable[[Row], None] | None = None) -> Row:
    """One row from its JSON form; problems raise DatasetError('<where>: <what>').
    With `tool_names`, a call spec naming any other tool is an error; `check_row` (the
    target's validate_row) may reject a row by raising ValueError."""
    if not isinstance(data, dict):
        raise DatasetError(f"{where}: expected a JSON object, got {type(data).__name__}")
    if "id" not in data:
        raise DatasetError(f"{where}: missing id")
    context = {"tool_names": None if tool_names is None else frozenset(tool_names), "check_row": check_row}
    try:
        return Row.model_validate(data, context=context)
    except ValidationError as exc:
        raise DatasetError(f"{where}: {describe_errors(exc)}") from None


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON")


def load_rows(path: str | Path, *, tool_names: Iterable[str] | None = None,
              check_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Read a JSONL dataset: one row object per line; blank lines are skipped,
    nothing else (no comments). Raises DatasetError('<path>:<line>: ...')."""
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise DatasetError(f"{path}: cannot read ({exc.strerror or exc})") from None
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        lineno = raw[: exc.start].count(b"\n") + 1
        raise DatasetError(f"{path}:{lineno}: not UTF-8 ({exc.reason})") from None
    rows: list[Row] = []
    first_line: dict[str, int] = {}
    # split("\n"), not splitlines(): U+2028 may sit raw inside a JSON string.
    for lineno, line in enumerate(text.split("\n"), start=1):
        if not line.strip():
            continue
        where = f"{path}:{lineno}"
        try:
            data = json.loads(line, parse_constant=_no_constant)
        except (json.JSONDecodeError, ValueError) as exc:
            raise DatasetError(f"{where}: bad JSON ({exc})") from None
        row = validate_row(data, where, tool_names=tool_names, check_row=check_row)
        if row.id in first_line:
            raise DatasetError(f"{where}: duplicate id {row.id!r} (first on line {first_line[row.id]})")
        first_line[row.id] = lineno
        rows.append(row)
    if not rows:
        raise DatasetError(f"{path}:1: no rows")
    return rows


def select(rows: list[Row], only: str | Iterable[str] | None = None,
           tags: str | Iterable[str] | None = None, limit: int | None = None) -> list[Row]:
    """The rows to run, in dataset order: those named by `only` (ids), then those
    carrying any of `tags`, then the first `limit`. Unknown ids or tags are errors,
    since a typo would otherwise run nothing and still look green."""
    picked = list(rows)
    if only is not None:
        wanted = [only] if isinstance(only, str) else list(only)
        known = {r.id for r in rows}
        unknown = [i for i in wanted if i not in known]
        if unknown:
            hints = []
            for i in unknown:
                close = difflib.get_close_matches(i, known, n=1)
                hints.append(f"{i!r}" + (f" (did you mean {close[0]!r}?)" if close else ""))
            raise DatasetError(f"--only: unknown row id {', '.join(hints)}")
        chosen = set(wanted)
        picked = [r for r in picked if r.id in chosen]
    if tags is not None:
        wanted_tags = {tags} if isinstance(tags, str) else set(tags)
        known_tags = {t for r in rows for t in r.inputs.tags}
        unknown_tags = sorted(wanted_tags - known_tags)
        if unknown_tags:
            raise DatasetError(f"--tags: no row has tag {', '.join(map(repr, unknown_tags))}")
        picked = [r for r in picked if wanted_tags & set(r.inputs.tags)]
    if limit is not None:
        if limit < 1:
            raise DatasetError(f"--limit must be at least 1, got {limit}")
        picked = picked[:limit]
    if not picked:
        raise DatasetError("the selection matches no rows")
    return picked


def rows_from_datapoints(datapoints: Iterable[Any], dataset_id: str = "?", *,
                         tool_names: Iterable[str] | None = None,
                         check_row: Callable[[Row], None] | None = None) -> list[Row]:
    """Rows from evaluatorq DataPoints (or their dict form), e.g. an orq.ai dataset.
    The id is read from inputs["id"] (or a top-level "id" of a dict datapoint).
    Errors read 'dataset <id> row <n>: ...', n counting from 1."""
    rows: list[Row] = []
    first_row: dict[str, int] = {}
    for n, point in enumerate(datapoints, start=1):
        where = f"dataset {dataset_id} row {n}"
        if isinstance(point, dict) and point.get("_id"):  # an orq datapoint: named by its id too
            where += f" (datapoint {point['_id']})"
        if isinstance(point, dict):
            inputs, expected, top_id = point.get("inputs"), point.get("expected_output"), point.get("id")
        else:
            inputs, expected, top_id = getattr(point, "inputs", None), getattr(point, "expected_output", None), None
        if not isinstance(inputs, dict):
            raise DatasetError(f"{where}: inputs must be an object")
        inputs = dict(inputs)
        row_id = inputs.pop("id", top_id)
        data: dict[str, Any] = {"inputs": inputs, "expected_output": expected}
        if row_id is not None:
            data["id"] = row_id
        row = validate_row(data, where, tool_names=tool_names, check_row=check_row)
        if row.id in first_row:
            raise DatasetError(f"{where}: duplicate id {row.id!r} (first on row {first_row[row.id]})")
        first_row[row.id] = n
        rows.append(row)
    if not rows:
        raise DatasetError(f"dataset {dataset_id}: no rows")
    return rows


def row_to_datapoint(row: Row):
    """An evaluatorq DataPoint for a row; inputs["id"] carries the row id so a job
    or scorer can tell which row it is looking at."""
    from evaluatorq import DataPoint  # heavy import, only needed on this path

    # exclude_unset: which expect keys a row states is meaningful (an explicit
    # "forbid": [] or a plug-in key's [] decides its question; an absent one leaves it open).
    inputs = {"id": row.id, **row.inputs.model_dump(mode="json", exclude_unset=True)}
    return DataPoint(inputs=inputs, expected_output=row.expected_output)


def row_to_json(row: Row) -> str:
    """One JSONL line for a row (e.g. when promoting a simulation finding);
    load_rows reads it back to an equal Row."""
    return json.dumps(row.model_dump(mode="json", exclude_unset=True), ensure_ascii=False)
