"""A digest of the agent's code, for the record's plan: `--resume` (and merge's reruns) refuse a
record whose agent's code changed since the run, since finishing it would mix two agents' runs.

What counts as the agent's code is found from the `--agent` module alone, by one rule:
- a module inside a package (`app.agent`, `examples.faq_bot`): every `.py` file under
  its top-level package (`app/`, `examples/`), recursively: an agent's prompt, tools and
  helpers usually live beside it in the same package, and a whole package is cheap to hash;
- a module outside a package (`bot.py` in the project folder): the `.py` files of its own
  folder, not below it: its siblings are what it can import, and the folder below a project's
  root holds tests and virtualenvs, not the agent.
`__pycache__` and hidden folders (`.venv`, `.git`) are skipped. Only `.py` files count: a
results folder or a data file inside the package must not make a run unresumable; a prompt
kept in another file is pinned by naming it as the target's `version_file`. Installed
libraries the agent imports (turngate, an SDK) are its dependencies, not its code.

The digest is sorted paths (relative to the package's parent, or to the module's folder, so a
checkout elsewhere has the same digest) with the sha256 of each file's bytes."""
from __future__ import annotations

import hashlib
import os
import sys
from pathlib import Path
from typing import Any


def _module_name(spec: str) -> str:
    """The module of `package.module:attr` (or `package.module.attr`)."""
    module, sep, _ = spec.partition(":")
    return module if sep else spec.rpartition(".")[0]


def _files(root: Path, recursive: bool) -> dict[str, Path]:
    """The .py files of root (relative path -> path), sorted."""
    found: dict[str, Path] = {}
    base = root.parent if recursive else root
    for folder, dirs, names in os.walk(root):
        if not recursive:
            dirs[:] = []
        dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
        for name in names:
            if name.endswith(".py"):
                path = Path(folder, name)
                found.setdefault(path.relative_to(base).as_posix(), path)  # the first of a namespace wins, as on import
    return dict(sorted(found.items()))


def agent_code_of(spec: str) -> dict[str, Any] | None:
    """{"root", "sha256", "files": {relative path: sha256}} of the code the `--agent` module comes
    from (the module docstring's rule), or None: its module has no files (built in, a notebook)."""
    name = _module_name(spec)
    top = sys.modules.get(name.partition(".")[0])
    if top is None or not name:
        return None
    if getattr(top, "__path__", None) is not None:  # a package, regular or namespace
        roots, recursive, shown = [Path(p) for p in top.__path__], True, top.__name__
    elif getattr(top, "__file__", None):
        folder = Path(top.__file__).resolve().parent
        try:
            shown = folder.relative_to(Path.cwd().resolve()).as_posix()
        except ValueError:
            shown = str(folder)
        roots, recursive = [folder], False
    else:
        return None
    files: dict[str, str] = {}
    for root in roots:
        for rel, path in _files(root, recursive).items():
            if rel not in files:
                try:
                    files[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
                except OSError:  # vanished or unreadable: it counts as changed, never as the same
                    files[rel] = "unreadable"
    if not files:
        return None
    files = dict(sorted(files.items()))
    total = hashlib.sha256("".join(f"{rel}\0{sha}\n" for rel, sha in files.items()).encode()).hexdigest()
    return {"root": shown, "sha256": total, "files": files}


def code_changed(then: dict[str, Any] | None, now: dict[str, Any] | None) -> str | None:
    """What changed between two agent_code_of digests, in a few words naming the files; None: nothing."""
    if (then or {}).get("sha256") == (now or {}).get("sha256"):
        return None
    if now is None:
        return f"its code under {then['root']} is not found now"
    if then is None:
        return f"its code under {now['root']} was not found then"
    a, b = then.get("files") or {}, now.get("files") or {}
    parts = [f"{rel} {'added' if rel not in a else 'removed' if rel not in b else 'edited'}"
             for rel in sorted({*a, *b}) if a.get(rel) != b.get(rel)]
    if not parts:
        return f"its code under {now['root']} differs"
    shown = ", ".join(parts[:3]) + (f" and {len(parts) - 3} more file(s)" if len(parts) > 3 else "")
    return shown
