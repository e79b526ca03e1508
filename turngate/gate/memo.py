"""A disk memo for pure, costly results (the sensitivity statement): one file per digest of the
inputs and of this package's source, so an edit of the code that computes it, a numpy whose
random streams differ or other inputs never meet an old entry.

Where: $TURNGATE_CACHE_DIR, else $XDG_CACHE_HOME/turngate, else ~/.cache/turngate;
TURNGATE_CACHE_DIR=off keeps nothing on disk. It only ever saves time: an entry that is missing,
unreadable or does not validate is made again, and a folder that cannot be written is skipped
without a word. Entries hold no secret (a statement is counts and words) and nothing in them runs:
they are validated as data.
"""
from __future__ import annotations

import hashlib
import os
import tempfile
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TypeVar

T = TypeVar("T")
OFF = "off"


def folder() -> Path | None:
    """The memo's folder, or None when it is switched off."""
    chosen = os.environ.get("TURNGATE_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip() in ("", OFF) else Path(chosen).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "turngate"


@cache
def code_digest() -> str:
    """This package's source and numpy's version: what a memoised result may depend on."""
    import numpy

    h = hashlib.sha256(numpy.__version__.encode())
    root = Path(__file__).resolve().parents[1]
    for path in sorted(root.rglob("*.py")):
        h.update(str(path.relative_to(root)).encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


def _path(kind: str, key: str) -> Path | None:
    where = folder()
    if where is None:
        return None
    name = hashlib.sha256(f"{kind}\0{key}\0{code_digest()}".encode()).hexdigest()
    return where / kind / f"{name}.json"


def read(kind: str, key: str, parse: Callable[[str], T]) -> T | None:
    """The entry for (kind, key) under today's code, parsed; None when there is none usable."""
    path = _path(kind, key)
    if path is None:
        return None
    try:
        return parse(path.read_text(encoding="utf-8"))
    except Exception:  # missing, unreadable or invalid: made again (and written over)
        return None


def write(kind: str, key: str, text: str) -> None:
    """Store an entry atomically (a reader never sees half of one); any failure is ignored."""
    path = _path(kind, key)
    if path is None:
        return
    tmp = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, path)
        tmp = None
    except OSError:
        pass
    finally:
        if tmp is not None:
            try:
                os.unlink(tmp)
            except OSError:
                pass
