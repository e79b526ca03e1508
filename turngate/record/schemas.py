"""The JSON Schemas shipped beside the models they are generated from: what `--json` prints
(gate_json.schema.json) and a results file (record.schema.json). scripts/gen_schemas.py writes
them; tests/test_schemas.py checks the shipped files are current and that real output validates."""
from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel

HERE = Path(__file__).resolve().parent
GATE_JSON = HERE / "gate_json.schema.json"
RECORD = HERE / "record.schema.json"


def _models() -> dict[Path, tuple[type[BaseModel], str]]:
    from turngate.record.gate_json import GateJson
    from turngate.record.results import SCHEMA, Record

    return {GATE_JSON: (GateJson, "the object `evals gate --json` prints on stdout"),
            RECORD: (Record, f"a results file ({SCHEMA}), as save_record writes it")}


def schema_of(model: type[BaseModel], title: str) -> dict:
    """The model's JSON Schema as it serialises (what a file or stdout holds). A results file
    also ends with its seal, a member of the file, not of the record (turngate/record/results.py)."""
    from turngate.record.results import SEAL, Record

    schema = model.model_json_schema(mode="serialization", by_alias=True)
    if model is Record:
        schema["properties"][SEAL] = {"type": "string", "pattern": "^[0-9a-f]{64}$", "title": "Text Sha256",
                                      "description": "sha256 of the file's bytes before this member, "
                                                     "the last one (save_record)"}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "description": title, **schema}


def generated() -> dict[Path, str]:
    """path -> the text that file must hold."""
    return {path: json.dumps(schema_of(model, title), indent=2, sort_keys=True, ensure_ascii=False) + "\n"
            for path, (model, title) in _models().items()}
