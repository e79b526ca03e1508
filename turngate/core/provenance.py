"""Which version file each target this process built came from: the plan a record stores
names it, so a resumed or merged run can refuse a changed version file. Kept here, below
both the job layer (which builds targets) and the record layer (which stores plans)."""
from __future__ import annotations

_BUILT: dict[tuple[str, str], dict[str, str] | None] = {}


def note_built(spec: str, version: str, version_file: dict[str, str] | None) -> None:
    _BUILT[(spec, version)] = version_file


def built_version_file(spec: str, version: str) -> dict[str, str] | None:
    """The version file of a target this process built with load_target (None: none, or not built here)."""
    return _BUILT.get((spec, version))
