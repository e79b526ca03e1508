"""Calibrated bars per scorer, with where each bar came from (a bars file, e.g. bars.toml)."""
from __future__ import annotations

import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.core.project import project

DEFAULT_PATH = project().path("thresholds", "thresholds.toml")  # [tool.turngate] thresholds, else ./thresholds.toml


class Bar(BaseModel):
    model_config = ConfigDict(extra="forbid")
    bar: float
    observed: float | None = None
    low: float | None = None
    high: float | None = None
    n: int | None = None
    why: str = ""


class Thresholds(BaseModel):
    model_config = ConfigDict(extra="forbid")
    provenance: dict = {}
    scorers: dict[str, Bar]
    _path: str = PrivateAttr("thresholds")
    _lines: dict[str, int] = PrivateAttr(default_factory=dict)

    def bars(self) -> dict[str, float]:
        return {name: b.bar for name, b in self.scorers.items()}

    def where(self, name: str | None = None) -> str:
        """`file:line` of a scorer's bar (or the file) for one-line error messages."""
        line = self._lines.get(name or "")
        return f"{self._path}:{line}" if line else self._path


def load_thresholds(path: str | Path = DEFAULT_PATH) -> Thresholds:
    path = Path(path)
    try:
        text = path.read_text()
        t = Thresholds.model_validate(tomllib.loads(text))
    except FileNotFoundError as exc:
        raise ConfigError(f"{path}: no thresholds file (run {cli.command('calibrate')} --write)") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from exc
    except ValidationError as exc:
        err = exc.errors()[0]
        raise ConfigError(f"{path}: {'.'.join(map(str, err['loc']))}: {err['msg']}") from exc
    t._path = str(path)
    for n, line in enumerate(text.splitlines(), 1):
        for name in t.scorers:
            if line.strip() in (f"[scorers.{name}]", f'[scorers."{name}"]'):
                t._lines[name] = n + 1 if n < len(text.splitlines()) else n  # the `bar =` line follows
    return t


def dump_toml(t: Thresholds) -> str:
    """Write thresholds as TOML (flat enough that a tiny writer beats a dependency)."""
    def value(v):
        if isinstance(v, bool):
            return "true" if v else "false"
        if isinstance(v, (list, tuple)):
            return "[" + ", ".join(value(x) for x in v) + "]"
        if isinstance(v, (int, float)):
            return repr(round(v, 4)) if isinstance(v, float) else str(v)
        return '"' + str(v).replace("\\", "\\\\").replace('"', '\\"') + '"'

    lines = ["# Gate bars per scorer. Proposed by `evals calibrate` from an accepted run; see provenance.",
             "[provenance]"]
    lines += [f"{k} = {value(v)}" for k, v in t.provenance.items()]
    for name, b in t.scorers.items():
        lines.append(f"\n[scorers.{name}]")
        lines += [f"{k} = {value(v)}" for k, v in b.model_dump(exclude_none=True).items()]
    return "\n".join(lines) + "\n"
