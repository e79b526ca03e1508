"""What `evals gate --json` prints on stdout: one JSON object, for scripts.
Its JSON Schema is turngate/record/gate_json.schema.json (generated from this model by
scripts/gen_schemas.py; tests/test_schemas.py checks it is current and that a real gate's
output validates against it). Documented in docs/json-output.md."""
from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from turngate.record.summaries import StoredVerdict, VersionSummary

SCHEMA_ID = "turngate/gate-json@1"


class GateJson(BaseModel):
    """The gate's exit code, its verdict and each version's numbers, read back from the results
    file and recomputed from its runs (as every reader does: turngate/gate/recheck.py). A command
    that failed before a results file existed prints only exit_code (and error: the one line)."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True,
                              json_schema_serialization_defaults_required=True,
                              json_schema_extra={"$id": SCHEMA_ID})
    schema_: str = Field(SCHEMA_ID, alias="schema", description="this layout's name and version")
    exit_code: int = Field(
        description="0 pass, 1 regressed (failed), 2 cannot judge (bad input, broken environment, interrupted)")
    error: str | None = Field(None, description="the one-line error of a user mistake (exit 2), else None")
    results: str | None = Field(None, description="the results file")
    version: str | None = Field(None, description="the candidate version")
    baseline: str | None = Field(None, description="--baseline, when given")
    job: str | None = Field(None, description="the candidate's job name, e.g. mybot@v3")
    agent: str | None = Field(None,
                              description="the agent as the command line named it (never imported by a reader)")
    incomplete: str | None = Field(None,
                                   description="`incomplete: N of M runs`: the run did not finish (no verdict)")
    verdict: StoredVerdict | None = Field(None,
                                          description="None: no verdict (incomplete, or no results file)")
    summary: dict[str, VersionSummary] = Field(default_factory=dict,
                                               description="version -> its numbers, candidate first")
