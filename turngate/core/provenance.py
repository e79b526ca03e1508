"""Which version file each target this process built came from, and a digest of its agent's
code (turngate/core/agent_code.py): the plan a record stores names both, so a resumed or merged
run can refuse a changed agent. Kept here, below both the job layer (which builds targets) and
the record layer (which stores plans)."""
from __future__ import annotations

from typing import Any

_BUILT: dict[tuple[str, str], dict[str, str] | None] = {}
_CODE: dict[str, dict[str, Any] | None] = {}


def note_built(spec: str, version: str, version_file: dict[str, str] | None) -> None:
    _BUILT[(spec, version)] = version_file


def built_version_file(spec: str, version: str) -> dict[str, str] | None:
    """The version file of a target this process built with load_target (None: none, or not built here)."""
    return _BUILT.get((spec, version))


def note_code(spec: str) -> dict[str, Any] | None:
    """Digest the code of the agent `spec` names, as this process built it; returns the digest."""
    from turngate.core.agent_code import agent_code_of

    code = _CODE[spec] = agent_code_of(spec)
    return code


def built_agent_code(spec: str | None) -> dict[str, Any] | None:
    """The agent code digest noted for spec (None: none found, or not built here)."""
    return _CODE.get(spec) if spec is not None else None
