"""Plug-ins: modules that register scorers, expect keys, judges or agent data when imported
(turngate.plugin is their API). Found through
- `plugins = [...]` in the project's [tool.turngate] (pyproject.toml), e.g. a repo's own `evals`;
- the TURNGATE_PLUGINS environment variable (comma-separated module names);
- the `turngate.plugins` entry-point group of installed packages. TURNGATE_DISABLE_PLUGIN_AUTOLOAD=1
  skips those (as PYTEST_DISABLE_PLUGIN_AUTOLOAD does for pytest).
An agent module given with --agent is imported too, so scorers defined beside it register.

Loading is idempotent and thread-safe: the first caller imports every plug-in while holding the
lock; the others wait for it and never see a half-filled registry. Marked done only once all
imported, so a failed import is raised again to the next caller, never forgotten."""
from __future__ import annotations

import functools
import importlib
import os
import threading
from collections.abc import Callable
from importlib.metadata import entry_points
from typing import Any

from turngate.core.errors import ConfigError, import_failure

PLUGIN_GROUP = "turngate.plugins"

_lock = threading.RLock()
_state = {"loaded": False, "loading_in": None}  # loading_in: the thread importing the plug-ins now


def _plugin_modules() -> list[tuple[str, Callable[[], Any]]]:
    autoload = os.environ.get("TURNGATE_DISABLE_PLUGIN_AUTOLOAD", "").strip() in ("", "0")
    found = [(ep.value, ep.load) for ep in entry_points(group=PLUGIN_GROUP)] if autoload else []
    from turngate.core.project import make_importable, project

    make_importable()
    named = [m for m in project().config.get("plugins", []) if isinstance(m, str)]  # [tool.turngate] plugins
    named += os.environ.get("TURNGATE_PLUGINS", "").split(",")
    seen = {where for where, _ in found}
    for mod in filter(None, (m.strip() for m in named)):
        if mod not in seen:
            seen.add(mod)
            found.append((mod, functools.partial(importlib.import_module, mod)))
    return found


def load_plugins() -> None:
    """Import every plug-in once (its decorators register what it brings). A plug-in that cannot
    be imported is a ConfigError naming it: its scorers would otherwise silently vanish."""
    if _state["loaded"]:
        return
    with _lock:
        if _state["loaded"] or _state["loading_in"] is threading.get_ident():
            return  # done meanwhile, or a plug-in being imported asks the registry: it is filling it
        _state["loading_in"] = threading.get_ident()
        try:
            for where, load in _plugin_modules():
                try:
                    obj = load()
                except ImportError as exc:
                    if exc.name and (where == exc.name or where.startswith(exc.name + ".")):  # the plug-in itself
                        raise ConfigError(f"plug-in {where}: cannot import it ({exc})") from None
                    raise ConfigError(import_failure(f"plug-in {where}: importing it failed", exc)) from None
                except Exception as exc:  # a plug-in that raises at import: one line naming where
                    raise ConfigError(import_failure(f"plug-in {where}: importing it failed", exc)) from None
                if callable(obj):  # an entry point may name a register() function instead of a module
                    obj()
            _state["loaded"] = True
        finally:
            _state["loading_in"] = None


def reset_plugins() -> None:
    """Forget that plug-ins were loaded (tests that change TURNGATE_PLUGINS in one process)."""
    with _lock:
        _state["loaded"] = False
