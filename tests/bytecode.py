"""Bytecode for the commands the tests start, where the environment says not to write any.

This machine's image sets PYTHONDONTWRITEBYTECODE=1, and a fresh clone has no `__pycache__`: then
every command a test starts (about 300 in a run, prefork children and real interpreters) compiled
this repository's modules from source again, ~0.2 s each. The controller compiles them once, into
the `__pycache__` folders an interpreter reads (git ignores them), before any worker starts; a
docs page's copy of the repository is compiled the same way when it is made
(tests/test_docs_commands.py). No PYTHONPYCACHEPREFIX: with one, an interpreter reads no
`__pycache__` at all, the installed packages' included.

A pyc is trusted by its source's mtime (whole seconds) and size. Only files already on disk are
compiled, before any command runs; a test that edits one writes it at a later time, so its
bytecode is never taken for the edit's.
"""
from __future__ import annotations

import py_compile
import struct
import sys
from importlib.util import MAGIC_NUMBER
from pathlib import Path

PACKAGES = ("turngate", "app", "evals", "examples", "scripts", "tests")


def cache_path(source: Path) -> Path:
    """Where an interpreter with no pycache prefix looks for source's bytecode."""
    return source.parent / "__pycache__" / f"{source.stem}.{sys.implementation.cache_tag}.pyc"


def _fresh(source: Path, cfile: Path) -> bool:
    try:
        with open(cfile, "rb") as f:
            header = f.read(16)
    except OSError:
        return False
    st = source.stat()
    return header == MAGIC_NUMBER + struct.pack("<III", 0, int(st.st_mtime) & 0xFFFFFFFF, st.st_size & 0xFFFFFFFF)


def compile_tree(root: Path) -> int:
    """Compile the repository's packages under root (the modules whose bytecode is missing or stale).
    How many were compiled; a file that does not compile is left to its importer to report."""
    done = 0
    for package in PACKAGES:
        for source in sorted((root / package).rglob("*.py")):
            cfile = cache_path(source)
            if _fresh(source, cfile):
                continue
            try:
                py_compile.compile(str(source), cfile=str(cfile), doraise=True,
                                   invalidation_mode=py_compile.PycInvalidationMode.TIMESTAMP)
                done += 1
            except (py_compile.PyCompileError, OSError, ValueError):
                pass
    return done
