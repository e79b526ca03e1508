"""Plug-ins: packages that register scorers, expect keys or judges when imported. Found through
the `turngate.plugins` entry-point group (pyproject.toml: `[project.entry-points."turngate.plugins"]`)
`plugins = [...]` in the project's [tool.turngate], and the TURNGATE_PLUGINS environment variable
(comma-separated module names).
TURNGATE_DISABLE_PLUGIN_AUTOLOAD=1 skips the entry points (as PYTEST_DISABLE_PLUGIN_AUTOLOAD does for
pytest): only the plug-ins TURNGATE_PLUGINS names, and modules an --agent imports, register."""
from __future__ import annotations

import functools
import importlib
import os
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from turngate.core.errors import ConfigError

PLUGIN_GROUP = "turngate.plugins"


def _plugin_modules() -> list[tuple[str, Callable[[], Any]]]:
    autoload = os.environ.get("TURNGATE_DISABLE_PLUGIN_AUTOLOAD", "").strip() in ("", "0")
    found = [(ep.value, ep.load) for ep in entry_points(group=PLUGIN_GROUP)] if autoload else []
    from turngate.core.project import project

    named = [m for m in project().config.get("plugins", []) if isinstance(m, str)]  # [tool.turngate] plugins
    named += os.environ.get("TURNGATE_PLUGINS", "").split(",")
    for mod in filter(None, (m.strip() for m in named)):
        found.append((mod, functools.partial(importlib.import_module, mod)))
    return found


_loaded = False


def load_plugins() -> None:
    """Import every installed plug-in once (its decorators register its scorers). A plug-in that
    cannot be imported is a ConfigError naming it: its scorers would otherwise silently vanish."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    for where, load in _plugin_modules():
        try:
            obj = load()
        except ImportError as exc:
            _loaded = False
            raise ConfigError(f"plug-in {where}: cannot import it ({exc})") from exc
        if callable(obj):  # an entry point may name a register() function instead of a module
            obj()


