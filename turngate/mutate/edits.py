"""Mutants written by hand (`--edits FILE.toml ...`): an edit the operators do not make, such
as a rule added or reworded, classified like any mutant. A file holds what changes, in the
version file's own words:

    instructions = \"\"\"...the whole edited prompt...\"\"\"     # optional: default the baseline's
    redact = false                                           # a switch by its name
    temperature = 0.5                                        # or model = "offline:temperature=0.5"

A project's own version files are such files as they stand: their
description is ignored, their model may differ only in its temperature."""
from __future__ import annotations

import difflib
import re
import tomllib
from pathlib import Path

from turngate.core.errors import ConfigError
from turngate.mutate.classify import changed_part
from turngate.mutate.operators import Mutant, _short, _slug
from turngate.mutate.protocol import Mutable


def _temperature(where: str, data: dict, base: Mutable) -> float | None:
    if "temperature" in data:
        value = data["temperature"]
    elif isinstance(data.get("model"), str) and (m := re.search(r"temperature=([0-9.]+)", data["model"])):
        value = float(m.group(1))
    else:
        return base.temperature
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise ConfigError(f"{where}: temperature: expected a number of at least 0, got {value!r}")
    if base.temperature is None:
        raise ConfigError(f"{where}: temperature: this target has no temperature to set")
    return float(value)


def _first_change(before: str, after: str) -> tuple[int | None, str]:
    a, b = before.splitlines(), after.splitlines()
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag != "equal":
            old, new = " ".join(x.strip() for x in a[i1:i2]), " ".join(x.strip() for x in b[j1:j2])
            what = '"{}" -> "{}"'.format(*changed_part(old, new)) if old and new else (
                f'deleted "{_short(old, 60)}"' if old else f'added "{_short(new, 60)}"')
            return i1 + 1, f"line {i1 + 1}: {what}"
    return None, ""


def edit_mutant(path: str | Path, base: Mutable) -> Mutant:
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text())
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read the edit ({exc.strerror or exc})") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    known = {"instructions", "temperature", "model", "description", *base.switches}
    if unknown := sorted(set(data) - known):
        raise ConfigError(f"{path}: {unknown[0]}: not an editable part of this target "
                          f"(instructions, temperature, {', '.join(base.switches) or 'no switches'})")
    switches = dict(base.switches)
    for name in base.switches:
        if name in data:
            if not isinstance(data[name], bool):
                raise ConfigError(f"{path}: {name}: expected true or false, got {data[name]!r}")
            switches[name] = data[name]
    text = data.get("instructions", base.instructions)
    if not isinstance(text, str):
        raise ConfigError(f"{path}: instructions: expected a string")
    edited = base.edited(instructions=text, switches=switches, temperature=_temperature(str(path), data, base))
    line, said = _first_change(base.instructions, text)
    changes = [said] if said else []
    changes += [f"{k}: {str(base.switches[k]).lower()} -> {str(v).lower()}" for k, v in switches.items()
                if v != base.switches[k]]
    if edited.temperature != base.temperature:
        changes.append(f"temperature: {base.temperature:g} -> {edited.temperature:g}")
    if not changes:
        raise ConfigError(f"{path}: changes nothing of the baseline")
    return Mutant(f"edit-{_slug(path.stem, 6)}", "edit", f"{path.name}: " + "; ".join(changes), line,
                  _short(text.splitlines()[line - 1], 90) if line and line <= len(text.splitlines()) else path.name,
                  edited)
