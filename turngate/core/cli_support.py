"""What every command shares: exit codes, one-line errors for user mistakes, provenance,
results files that never overwrite, a quiet Ctrl-C or SIGTERM, and a reader of the output
that may leave early (`| head -1`).

Cheap to import on purpose (a few stdlib modules at module level, the rest where used): each command imports it first and
calls `exit_quietly_on_interrupt()` before its heavy imports, so Ctrl-C or SIGTERM during
start-up is one line and exit 2, not a traceback from inside some library's import (nor the
shell's 130 or 143)."""
from __future__ import annotations

import contextlib
import functools
import os
import signal
import sys
import threading
from datetime import datetime
from pathlib import Path

from turngate.core.atomic_write import signals_held
from turngate.core.errors import ConfigError, DatasetError, RecordError

EXIT_PASS, EXIT_FAIL, EXIT_UNJUDGED = 0, 1, 2
SQLITE_MAGIC = b"SQLite format 3\x00"
# model spec prefix -> the environment variable its provider needs (see turngate/jobs/models.py)
KEY_FOR = {"openai": "OPENAI_API_KEY", "orq": "ORQ_API_KEY"}


# --- the command the user ran ------------------------------------------------------------

# `evals <sub>` unless a launcher script of a project's own (e.g. python mypkg/regression.py) ran it:
# hints then name that project's scripts, so a copied hint runs as typed.
_LAUNCHERS = {"gate": "regression", "calibrate-judge": "calibrate_judge"}
_SUBCOMMANDS = ("gate", "compare", "show", "regrade", "report", "calibrate", "calibrate-judge", "simulate", "merge", "review", "mutate")
_invoked: list[str] = []  # the subcommand the process runs, set once by turngate.cli.main


def set_invoked(sub: str) -> None:
    _invoked[:] = [sub]


def command(sub: str | None = None) -> str:
    """How to run subcommand `sub` (default: the one running) the way the user ran this one."""
    sub = sub or (_invoked[0] if _invoked else "gate")
    script = Path(sys.argv[0]) if sys.argv and sys.argv[0] else Path()
    scripts = {_LAUNCHERS.get(s, s.replace("-", "_")) for s in _SUBCOMMANDS}
    if script.suffix == ".py" and script.stem in scripts:
        folder = Path(os.path.relpath(script.parent)) if script.is_absolute() else script.parent
        return f"python {folder / _LAUNCHERS.get(sub, sub.replace('-', '_'))}.py"
    return f"evals {sub}"


# --- Ctrl-C and SIGTERM ---------------------------------------------------------------

INTERRUPTS = (signal.SIGINT, signal.SIGTERM)


def _interrupted(signum, frame) -> None:
    """Ctrl-C or SIGTERM in a command's own process, outside a run's own handler (which turns
    them into an interrupted record, turngate/jobs/runner.py): leave at once, without unwinding
    through half-done imports or a library's cleanup (an exception raised here can be swallowed
    by whatever runs, a weakref callback, and the command would go on). A file being written is
    never half done: writes hold signals off until the file is in place (signals_held). What
    this process created and no run reached is removed; a file with runs is named (left_behind)."""
    with contextlib.suppress(Exception):  # what was printed so far reaches its reader
        sys.stdout.flush()
    try:
        line = left_behind(CREATED, WORKING)
    except Exception:  # noqa: BLE001 - the exit must happen whatever went wrong
        line = "interrupted"
    for path in TEMPORARY:
        with contextlib.suppress(OSError):
            path.unlink()
    if (mp := sys.modules.get("multiprocessing")) is not None:  # --workers: none outlives the gate
        with contextlib.suppress(Exception):
            for child in mp.active_children():
                child.terminate()
    with contextlib.suppress(OSError):  # a stderr nobody reads any more
        os.write(2, (line + "\n").encode(errors="replace"))
    os._exit(EXIT_UNJUDGED)


_interrupted_at_startup = _interrupted  # the name tests and callers knew it by


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def exit_quietly_on_interrupt() -> None:
    """From here to the end of the process, Ctrl-C and SIGTERM exit 2 with one line (a run in
    progress saves its record first). Call it first thing in a command. A dependency that cannot
    be imported (a shell without the project's environment) is one line and exit 2 from here on
    too, not a traceback and exit 1 (which CI reads as a regression)."""
    if _on_main_thread():
        for sig in INTERRUPTS:
            signal.signal(sig, _interrupted)
    exit_2_on_missing_dependency()


def end_process(code: int):
    """End the command's own process here, not in the interpreter's shutdown: Python puts SIGINT
    and SIGTERM back to the OS default there (a SIGTERM then kills with 143 and no line). The
    shutdown's own steps (joining threads, exit handlers: Ray's, multiprocessing's) run first,
    with the command's handlers still in place; then the output is flushed and the process
    exits with `code`, the verdict's."""
    import atexit

    with contextlib.suppress(Exception):
        threading._shutdown()  # what the interpreter's shutdown does first: non-daemon threads joined
    with contextlib.suppress(Exception):
        atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _hold_off_interrupts() -> None:
    """The command is ending (exit 2 already): a second Ctrl-C or SIGTERM must not cut its last line."""
    if _on_main_thread():
        for sig in INTERRUPTS:
            signal.signal(sig, signal.SIG_IGN)


# --- a reader that leaves early (| head -1) --------------------------------------------

class ReaderMayLeave:
    """sys.stdout or sys.stderr whose reader may go away (`| head -1`, a closed pipe): what is
    printed after that goes to /dev/null and the command carries on, so its record is finished
    and saved and its exit code stays the verdict's. Without it the first print after the
    reader left raises BrokenPipeError (rich turns that into SystemExit(1): "regressed")."""

    def __init__(self, stream) -> None:
        self._stream = stream

    @property
    def rich_proxied_file(self):  # rich writes to this attribute's file when a stream has one: us, not the stream
        return self

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            self._reader_left()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            self._reader_left()

    def _reader_left(self) -> None:
        with contextlib.suppress(OSError, ValueError, AttributeError):  # a stream without a descriptor
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
            self._stream.flush()  # what was buffered for the reader: to /dev/null now

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def missing_dependency(exc: ImportError) -> str:
    return (f"cannot import {exc.name or 'a dependency'} ({exc}): run this with the project's environment "
            "(. .venv/bin/activate, or pip install -e .)")


def exit_2_on_missing_dependency() -> None:
    """An ImportError nobody catches (the heavy imports at the top of a command) ends the
    process with one line and exit 2."""
    previous = sys.excepthook
    if getattr(previous, "_exit_2_on_import_error", False):
        return

    def hook(exc_type, exc, tb) -> None:
        if not issubclass(exc_type, ImportError):
            return previous(exc_type, exc, tb)
        with contextlib.suppress(Exception):
            sys.stdout.flush()
        os.write(2, f"error: {missing_dependency(exc)}\n".encode(errors="replace"))
        os._exit(EXIT_UNJUDGED)  # an uncaught exception would exit 1 whatever the hook does

    hook._exit_2_on_import_error = True
    sys.excepthook = hook


# --- one-line errors -------------------------------------------------------------------

def quiet_logs() -> None:
    """evaluatorq (and fastmcp) log through loguru; keep those logs to warnings and up, one line
    each, no tracebacks with local variables (loguru's diagnose would print request headers),
    and every secret scrubbed."""
    from loguru import logger

    from turngate.core.scrubbing import scrub

    def patch(record) -> None:
        exc = record["exception"]
        if exc is not None and exc.value is not None:
            record["message"] += f" ({type(exc.value).__name__}: {exc.value})"
            record["exception"] = None
        record["message"] = scrub(record["message"])

    logger.remove()
    logger.configure(patcher=patch)
    logger.add(sys.stderr, level="WARNING", format="{level}: {message}", backtrace=False, diagnose=False)


def environment_fault(exc: BaseException) -> str | None:
    """The one line for a fault of the machine, not of the agent: a file that cannot be
    written or read (disk full, read-only, vanished, no permission) or a dependency that
    cannot be imported. None for anything else (a bug: its traceback is wanted)."""
    if isinstance(exc, ImportError):
        return missing_dependency(exc)
    if isinstance(exc, OSError) and exc.errno is not None:
        where = " -> ".join(str(f) for f in (exc.filename, exc.filename2) if f is not None)
        return f"{where + ': ' if where else ''}{exc.strerror or exc}"
    return None


def user_errors() -> tuple[type[Exception], ...]:
    return (ConfigError, DatasetError, RecordError)


def guarded(main):
    """User mistakes become `error: <where>: <what>` and exit 2, never a traceback; so do
    Ctrl-C and SIGTERM at any point of main (the run itself turns them into an interrupted
    record). A reader of stdout or stderr that leaves early changes nothing (ReaderMayLeave)."""

    @functools.wraps(main)
    def run(argv=None) -> int:
        # a command started by turngate.cli keeps its handler (_interrupted) to the end; called
        # from Python, Ctrl-C is a KeyboardInterrupt, caught below
        quiet = _on_main_thread() and signal.getsignal(signal.SIGINT) is _interrupted
        handlers = {sig: signal.getsignal(sig) for sig in INTERRUPTS} if _on_main_thread() else {}
        streams = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = (s if isinstance(s, ReaderMayLeave) else ReaderMayLeave(s) for s in streams)
        mark, mark_working = len(CREATED), len(WORKING)
        try:
            quiet_logs()
            return main(argv)
        except KeyboardInterrupt:
            _hold_off_interrupts()
            print(left_behind(CREATED[mark:], WORKING[mark_working:]), file=sys.stderr)
            return EXIT_UNJUDGED
        except Exception as exc:
            _hold_off_interrupts()
            line = str(exc) if isinstance(exc, user_errors()) else environment_fault(exc)
            if line is None:
                raise
            from turngate.core.scrubbing import scrub

            print(f"error: {scrub(line)}", file=sys.stderr)
            return EXIT_UNJUDGED
        finally:
            with contextlib.suppress(Exception):
                sys.stdout.flush()
                sys.stderr.flush()
            if quiet:  # the process's own command keeps its streams and handlers to its end
                for sig in INTERRUPTS:
                    signal.signal(sig, _interrupted)
            else:  # called from Python: the caller's streams and handlers as they were (an
                # exit 2 held off Ctrl-C for its last line, not for the rest of the session)
                sys.stdout, sys.stderr = streams
                for sig, handler in handlers.items():
                    if handler is not None:
                        signal.signal(sig, handler)

    return run


# Results files this process created (new_results_path, claim_file): what a Ctrl-C or SIGTERM
# outside a run's own handler (before it is installed, or after it is removed) may leave.
CREATED: list[Path] = []
# Results files this process works on that it did not create (--resume): named, never removed.
WORKING: list[Path] = []
# Files that exist only while the process runs (a --resume lock): removed on an abrupt exit.
TEMPORARY: list[Path] = []


def left_behind(paths: list[Path], working: list[Path] = ()) -> str:
    """The line for an interrupt: files created here that no run reached are removed; a file
    that holds runs is kept and named, with how to finish it (so is a file being resumed)."""
    import json

    removed, kept = [], []
    for path in [*paths, *working]:
        try:
            text = path.read_text()
        except (OSError, UnicodeDecodeError):
            continue  # gone, or not ours to judge
        try:
            data = json.loads(text) if text.strip() else {}
        except ValueError:
            data = None
        runs = data.get("runs") if isinstance(data, dict) else None
        if isinstance(data, dict) and not runs and path not in working:
            path.unlink(missing_ok=True)
            removed.append(path)
        else:
            kept.append((path, data))
    if kept:
        path, data = kept[0]
        meta = (data.get("meta") or {}) if isinstance(data, dict) else {}
        n = len(data.get("runs") or []) if isinstance(data, dict) else "some"
        finished = meta.get("complete") and data.get("verdict") is not None  # not: cut before its verdict was saved
        resumable = meta and not finished and not meta.get("regraded_from") and not meta.get("compared_files")
        return f"interrupted: {n} run(s) kept in {path}" + (f" (complete it with --resume {path})" if resumable else "")
    if removed:
        return f"interrupted before any run finished: removed {removed[0]}" + (
            f" and {len(removed) - 1} more" if len(removed) > 1 else "")
    return "interrupted"


# --- arguments checked before any agent call ---------------------------------------------

def check_keys(spec: str | None, what: str, instead: str | None = None) -> None:
    """A model or judge spec that needs an API key the environment lacks is an argument error
    now, not one failed run per row later. `what` names where the spec came from (--model)."""
    if not spec:
        return
    provider, _, name = spec.strip().partition(":")
    var = KEY_FOR.get(provider)
    if var and name and not os.environ.get(var, "").strip():
        raise ConfigError(f"{what} {spec}: {var} is not set (or use {instead or what} offline)")


def check_positive(value: float | None, flag: str) -> None:
    if value is not None and not value > 0:  # also catches NaN
        raise ConfigError(f"{flag} must be a positive number of seconds, got {value:g}")


def _writable_dir(directory: Path, flag: str, shown: str) -> None:
    try:
        import tempfile  # here, not at the top: start-up stays short (its signal handler comes first)

        with tempfile.TemporaryFile(dir=directory):
            pass
    except OSError as exc:
        raise ConfigError(f"{flag} {shown}: cannot write in {directory} ({exc.strerror or exc})") from None


def _make_dir(directory: Path, flag: str, shown: str) -> None:
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"{flag} {shown}: cannot create directory {directory} ({exc.strerror or exc})") from None


def check_out_dir(path: str | Path, flag: str = "--out") -> Path:
    """A results directory: created if missing; an existing file or an unwritable place is an error."""
    directory = Path(path)
    if directory.exists() and not directory.is_dir():
        raise ConfigError(f"{flag} {path}: not a directory (results get their own new file inside it)")
    _make_dir(directory, flag, str(path))
    _writable_dir(directory, flag, str(path))
    return directory


def _same_file(a: Path, b: str | Path) -> bool:
    b = Path(b)
    try:
        return a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


def check_new_file(path: str | Path, flag: str, *, force: bool = False, inputs=()) -> Path:
    """A file the command will write: never one of its own inputs, never a directory, never an
    existing file unless --force, and somewhere writable. Checked before any work starts."""
    target = Path(path)
    for source in inputs:
        if source and _same_file(target, source):
            raise ConfigError(f"{flag} {path}: that is this command's input; write somewhere else")
    if target.is_dir():
        raise ConfigError(f"{flag} {path}: is a directory; give a file name")
    if target.exists() and not force:
        raise ConfigError(f"{flag} {path}: already exists; use --force to replace it")
    _make_dir(target.parent, flag, str(path))
    _writable_dir(target.parent, flag, str(path))
    if target.exists() and not os.access(target, os.W_OK):
        raise ConfigError(f"{flag} {path}: not writable")
    return target


def claim_file(path: str | Path, flag: str, *, force: bool = False) -> Path:
    """Create the file now (O_EXCL unless --force), so a file that appeared since the check,
    e.g. from a run started in the same second, is never overwritten."""
    target = Path(path)
    if force:
        return target
    try:
        with signals_held():  # made and listed, or neither: an interrupt cannot leave it untracked
            os.close(os.open(target, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
            CREATED.append(target)
    except FileExistsError:
        raise ConfigError(f"{flag} {path}: already exists; use --force to replace it") from None
    except OSError as exc:
        raise ConfigError(f"{flag} {path}: cannot create ({exc.strerror or exc})") from None
    return target


def check_cache(path: str | None, flag: str = "--cache") -> None:
    """The model-call cache: a SQLite file (new or existing) in a writable place."""
    if not path:
        return
    target = Path(path)
    if target.is_dir():
        raise ConfigError(f"{flag} {path}: is a directory; give a file name")
    _make_dir(target.parent, flag, str(path))
    _writable_dir(target.parent, flag, str(path))
    if target.exists():
        try:
            with target.open("rb") as fh:
                head = fh.read(len(SQLITE_MAGIC))
        except OSError as exc:
            raise ConfigError(f"{flag} {path}: cannot read ({exc.strerror or exc})") from None
        if head and head != SQLITE_MAGIC:
            raise ConfigError(f"{flag} {path}: not a cache file (not SQLite); give a new path")
        if not os.access(target, os.W_OK):
            raise ConfigError(f"{flag} {path}: not writable")


# --- results files -----------------------------------------------------------------------

def new_results_path(directory: str | Path, name: str) -> Path:
    """`<directory>/<name>-<YYYYmmdd-HHMMSS>-<4 hex>.json`, created empty with O_EXCL: two runs,
    even in the same second and from different processes, never share (or overwrite) a file."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    import secrets

    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    for _ in range(64):
        path = directory / f"{name}-{stamp}-{secrets.token_hex(2)}.json"
        try:
            with signals_held():  # made and listed, or neither: an interrupt cannot leave it untracked
                os.close(os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
                CREATED.append(path)
            return path
        except FileExistsError:
            continue
    raise ConfigError(f"--out {directory}: no free results file name for {name}-{stamp}")


# --- provenance ---------------------------------------------------------------------------

def sha256_file(path: str | Path) -> str:
    import hashlib

    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def git_commit() -> str | None:
    import subprocess

    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path.cwd(), capture_output=True, text=True, timeout=5)
        return out.stdout.strip() or None
    except (OSError, subprocess.SubprocessError):
        return None
