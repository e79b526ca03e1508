"""RunView: a run as a reader that needs only its verdicts holds it (compare's lean reading of a
big results file, evals/gate/sides.py). Checked by the same rules as RunResult, field for field,
its Turn included, but the Turn is kept as the checked dict instead of being built into models:
on a 22,200-run file that is about half of the validation's time, and compare reads nothing in
a Turn but its `error`.

The Turn's rules are not copied here: TURN_AS_DICT is Turn's own pydantic schema with each model
turned into a typed dict of the same fields (required where the model requires them, extra keys
refused where the model refuses them, the same types), so the two cannot drift apart."""
from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field, GetCoreSchemaHandler, TypeAdapter
from pydantic.dataclasses import dataclass as pydantic_dataclass
from pydantic_core import core_schema

from evals.core.turn import Turn
from evals.record.results import ScorerVerdict


def as_dicts(schema: Any) -> Any:
    """A pydantic core schema with every model replaced by a typed dict of the same fields: the
    same checks, plain dicts out. A field with a default is optional and left out when absent
    (the dict holds what the file holds, nothing filled in)."""
    if isinstance(schema, list):
        return [as_dicts(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    if schema.get("type") == "model":
        inner = schema["schema"]
        if inner.get("type") != "model-fields" or inner.get("computed_fields"):
            raise TypeError(f"as_dicts: {schema.get('cls')} is not a plain model")
        fields = {}
        for name, field in inner["fields"].items():
            sub = field["schema"]
            required = sub.get("type") != "default"
            fields[name] = core_schema.typed_dict_field(as_dicts(sub if required else sub["schema"]),
                                                        required=required)
        extra = (schema.get("config") or {}).get("extra_fields_behavior", "ignore")
        ref = schema.get("ref")  # kept (renamed), so that a definition-ref to the model still resolves
        return core_schema.typed_dict_schema(fields, extra_behavior=extra, ref=f"{ref}:as-dict" if ref else None)
    if schema.get("type") == "definition-ref":
        return {**schema, "schema_ref": f"{schema['schema_ref']}:as-dict"}
    # every ref renamed alike: the new schemas never share a name with the models they copy
    return {k: (f"{v}:as-dict" if k == "ref" else v if k in ("cls", "metadata", "serialization", "config")
                else as_dicts(v)) for k, v in schema.items()}


class TurnDict(dict):
    """A Turn as the checked dict (the annotation RunView uses for its `turn`)."""

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> core_schema.CoreSchema:
        return as_dicts(Turn.__pydantic_core_schema__)


@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True, slots=True)
class RunView:
    """RunResult's fields (tests/test_record_views.py checks they are the same), the Turn a dict."""
    row_id: str
    trial: int
    seed: int
    version: str
    job: str
    turn: TurnDict
    verdicts: dict[str, ScorerVerdict] = Field(default_factory=dict)
    stage: str = "gate"

    @property
    def key(self) -> tuple[str, int]:
        return (self.row_id, self.trial)

    @property
    def agent_error(self) -> str | None:
        return self.turn.get("error")


RUN_VIEWS = TypeAdapter(list[RunView])
