"""A project's defaults: `[tool.turngate]` in its pyproject.toml, as pytest reads `[tool.pytest]`.

    [tool.turngate]
    agent = "mypkg.bot:target"          # --agent
    dataset = "gate/rows.jsonl"         # --dataset
    thresholds = "gate/bars.toml"       # --thresholds (the reference sits beside it: reference.json)
    judge_calibration = "gate/judge_calibration.json"
    judge_labels = "gate/judge_labels.jsonl"
    scenarios = "gate/scenarios.toml"   # simulate
    personas = "gate/personas.toml"
    against = "v1"                      # calibrate --against: the version the bars must fail
    plugins = ["mypkg.scorers"]         # modules that register scorers, expect keys or judges

Paths are relative to that pyproject.toml. The file is found from the current folder upwards;
without one the defaults are files in the current folder and a required --agent. The library
knows no project's paths: a project is only ever what its own configuration says.
"""
from __future__ import annotations

import functools
import tomllib
from dataclasses import dataclass
from pathlib import Path

from turngate.core.errors import ConfigError


@dataclass(frozen=True)
class Project:
    root: Path | None
    config: dict

    def path(self, key: str, fallback: str) -> Path:
        value = self.config.get(key)
        if value is None:
            return Path(fallback)
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(f"{self.root / 'pyproject.toml'}: [tool.turngate] {key} must be a path")
        return (self.root / value) if self.root is not None else Path(value)

    def value(self, key: str, fallback: str | None = None) -> str | None:
        value = self.config.get(key, fallback)
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"{self.root / 'pyproject.toml'}: [tool.turngate] {key} must be a string")
        return value


def _config_of(pyproject: Path) -> dict | None:
    try:
        data = tomllib.loads(pyproject.read_text())
    except (OSError, UnicodeDecodeError):
        return None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{pyproject}: not valid TOML ({exc})") from None
    section = data.get("tool", {}).get("turngate")
    return section if isinstance(section, dict) else None


@functools.cache
def project(start: str | None = None) -> Project:
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        config = _config_of(folder / "pyproject.toml")
        if config is not None:
            return Project(folder, config)
    return Project(None, {})


def make_importable(root: Path | None = None) -> None:
    """Put the project's root folder first on sys.path (as pytest's rootdir): the modules its
    configuration names (`plugins`, `agent`) are the project's own, ahead of any installed
    package of the same name, from whichever folder of the project a command runs. With no
    project, the current folder (where `--agent app.agent:target` is looked for too)."""
    import sys

    folder = root or project().root or Path.cwd()
    if str(folder) not in sys.path:
        sys.path.insert(0, str(folder))
