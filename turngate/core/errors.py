"""Errors that are the user's to fix (bad version, model spec, missing key).

Commands print them as one line and exit 2; they never become a traceback.
"""


class ConfigError(Exception):
    """A setting the user gave cannot be used as it is."""


class DatasetError(ValueError):
    """A dataset problem, as one line: '<where>: <what is wrong>'."""


class RecordError(Exception):
    """A results file that cannot be read as a results record."""


def import_failure(what: str, exc: BaseException) -> str:
    """One line for a module that could not be imported: `file:line: <what>: <why>`. A syntax
    error names its own place; an exception raised while importing names the deepest frame in
    the user's files (not the library's, not importlib's), else where it was raised."""
    import sys
    import traceback

    if isinstance(exc, SyntaxError) and exc.filename:
        detail = (exc.msg or "invalid syntax") + (f" ({exc.text.strip()!r})" if exc.text and exc.text.strip() else "")
        return f"{exc.filename}:{exc.lineno or '?'}: {what}: {type(exc).__name__}: {detail}"
    frames = traceback.extract_tb(exc.__traceback__)
    prefixes = tuple({p for p in (sys.prefix, sys.base_prefix, sys.exec_prefix) if p})
    theirs = [f for f in frames if not f.filename.startswith(prefixes) and not f.filename.startswith("<frozen")
              and "/turngate/" not in f.filename]
    frame = (theirs or frames or [None])[-1]
    where = f"{frame.filename}:{frame.lineno}: " if frame is not None else ""
    return f"{where}{what}: {type(exc).__name__}: {exc}"
