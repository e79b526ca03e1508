"""Every file a command writes is written whole or not at all: results records, HTML, JUnit and
Markdown reports, bars and reference files, simulation outputs.

    write_atomic("out/report.html", html, what="the report")   # -> Path, or a WriteError

A temporary file in the target's own folder (so the rename never crosses file systems), written,
flushed to the disk (fsync: a full disk fails here, before the target is touched), then renamed
over the target. A full disk, a vanished folder or a SIGTERM mid-write leave the target as it
was (absent, or its last complete version) and no temporary behind. Stdlib only: cheap to import."""
from __future__ import annotations

import contextlib
import errno
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

from turngate.core.errors import ConfigError


class WriteError(ConfigError):
    """An output could not be written (disk full, read-only or vanished folder): one line that
    names the file and what is left of it, exit 2 (an environment fault, never a regression)."""


_HELD = (signal.SIGINT, signal.SIGTERM)


@contextlib.contextmanager
def signals_held():
    """SIGINT and SIGTERM that arrive inside the block take effect when it ends, through the
    handler that was in place: a file being written is then in place or not there at all.
    Outside the main thread (where handlers cannot be set) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    pending: list[int] = []
    previous = {}
    for sig in _HELD:
        previous[sig] = signal.signal(sig, lambda signum, frame: pending.append(signum))
    try:
        yield
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        for sig in dict.fromkeys(pending):  # each signal once, as the OS would deliver it
            handler = previous[sig]
            if callable(handler):
                handler(sig, None)  # e.g. KeyboardInterrupt, or an event loop's own (a no-op: it saw it too)
            elif handler == signal.SIG_DFL:
                os.kill(os.getpid(), sig)


def _public_mode() -> int:
    """What open() would give a new file here (0666 less the umask), not mkstemp's 0600."""
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def _write_and_sync(fd: int, data: bytes) -> None:
    """All of data, then to the disk: a full disk fails here, before the target is touched."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]
    os.fsync(fd)


def failure_line(what: str, path: Path, exc: OSError, existed: bool) -> str:
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileNotFoundError):
        reason += f" (the folder {path.parent} is gone)"
    left = f"{path} is as it was" if existed else "nothing was written"
    return f"cannot write {what} {path}: {reason}; {left}"


def write_atomic(path: str | Path, data: str | bytes, *, what: str = "the file", private: bool = False,
                 exclusive: bool = False, mkdir: bool = True,
                 failed: Callable[[Path, OSError], Exception] | None = None) -> Path:
    """Write `data` (text: UTF-8) to `path` whole or not at all; the path written.

    what: how the error line names the file ("the report"). private: mode 0600 (a file that may
    hold user data or secrets), else the mode open() would give it. exclusive: never replace a
    file that exists (one that appeared since the command checked: WriteError). mkdir: create
    the folder if missing. failed: the exception for a failed write (default: a WriteError whose
    line names the file and what is left of it)."""
    path = Path(path)
    blob = data.encode("utf-8") if isinstance(data, str) else data
    existed = path.exists()

    def error(exc: OSError) -> Exception:
        return failed(path, exc) if failed is not None else WriteError(failure_line(what, path, exc, existed))

    with signals_held():
        try:
            if mkdir:
                path.parent.mkdir(parents=True, exist_ok=True)
            import tempfile  # here: the modules that import this one stay cheap at start-up

            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=path.suffix)
        except OSError as exc:
            raise error(exc) from exc
        try:
            try:
                if not private:
                    os.fchmod(fd, _public_mode())
                _write_and_sync(fd, blob)
            finally:
                with contextlib.suppress(OSError):  # fsync has reported any write error already
                    os.close(fd)
            _rename(tmp, path, exclusive)
        except BaseException as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            if isinstance(exc, FileExistsError) and exclusive:
                raise WriteError(f"cannot write {what} {path}: it already exists (made since the command checked); "
                                 "nothing was written; use --force to replace it") from None
            if isinstance(exc, OSError):
                raise error(exc) from exc
            raise
    _sync_dir(path.parent)
    return path


def _rename(tmp: str, path: Path, exclusive: bool) -> None:
    if not exclusive:
        os.replace(tmp, path)
        return
    try:
        os.link(tmp, path)  # atomic and never over an existing file (FileExistsError)
    except OSError as exc:
        if exc.errno not in (errno.EPERM, errno.ENOTSUP, errno.EOPNOTSUPP, errno.EXDEV) or path.exists():
            raise
        os.replace(tmp, path)  # a file system without hard links: checked just above, as close as it gets
    else:
        os.unlink(tmp)


def _sync_dir(folder: Path) -> None:
    """The rename itself reaches the disk (best effort: not every file system can open a folder)."""
    with contextlib.suppress(OSError):
        fd = os.open(folder, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
