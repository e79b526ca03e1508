"""Agent versions are data: one TOML file each under versions/.

Adding v4 means adding versions/v4.toml; nothing else changes.
"""
from __future__ import annotations

import tomllib
from functools import cache
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from turngate.core.errors import ConfigError

VERSIONS_DIR = Path(__file__).with_name("versions")


class Version(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    name: str
    description: str
    instructions: str
    model: str = "offline"
    hardened: bool = False  # server switch: tools enforce the refund policy themselves
    redact: bool = False  # strip emails/phone numbers the user did not write from answers

    @classmethod
    def from_prompt(cls, instructions: str, *, name: str = "custom", description: str = "a prompt given in code",
                    **settings) -> Version:
        """A version with no TOML file (tests, experiments); the clause check runs as for a file."""
        version = cls(name=name, description=description, instructions=instructions, **settings)
        warn_unrecognised(version)
        return version


def warn_unrecognised(version: Version) -> None:
    """One warning per prompt listing the policy lines the offline model does not understand:
    such a rule would otherwise be silently ignored by the system under test."""
    if not version.model.startswith("offline"):
        return
    from .offline.policy import report_unrecognised  # lazy: the offline model is not needed for real models

    report_unrecognised(version.instructions, where=version.name)


def known_versions() -> list[str]:
    return sorted(p.stem for p in VERSIONS_DIR.glob("*.toml"))


def version_path(name: str) -> Path:
    """The file a version is read from: versions/<name>.toml, or the path itself."""
    return Path(name) if name.endswith(".toml") else VERSIONS_DIR / f"{name}.toml"


@cache
def load_version(name: str) -> Version:
    """A version by name (versions/<name>.toml), or a version file by path (`path/to/v3-variant.toml`,
    named after the file) for one-off variants such as scripts/gate_power.py builds."""
    path = version_path(name)
    if name.endswith(".toml"):
        if not path.is_file():
            raise ConfigError(f"{path}: no such version file")
        name = path.stem
    if not path.is_file():
        raise ConfigError(f"unknown version {name!r}; known versions: {', '.join(known_versions())}")
    try:
        version = Version(name=name, **tomllib.loads(path.read_text()))
    except (tomllib.TOMLDecodeError, ValidationError, TypeError) as exc:
        first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise ConfigError(f"{path}: {first}") from exc
    warn_unrecognised(version)
    return version
