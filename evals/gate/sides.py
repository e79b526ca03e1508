"""The two sides of a comparison: each results file read, checked and reduced to what the
comparison needs (its record without runs, its summary, its verdict table).

Reading a big results file is the cost of `compare` (a 22,200-run file is 50 MB of JSON: parse,
validate, digest), and the two files are independent. So, when the runs themselves are not
needed (no --out/--report/--junit/--markdown), each big file is read in a forked process of its
own: the two are read at once, each process hands back a few MB and exits without tearing its
objects down. Every check is the same as in-process (load_record, the reruns, completeness);
a check that fails there fails here, with the same one line."""
from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import traceback
from dataclasses import dataclass
from pathlib import Path

from evals.core.errors import ConfigError, RecordError
from evals.gate.recheck import check_reruns
from evals.record.results import Record, load_record
from evals.record.summaries import VersionSummary
from evals.verdict.comparison import VerdictTable
from evals.verdict.summary import summarise

PARALLEL_FROM_BYTES = 4_000_000  # files this big are read in processes of their own (when fork exists)


@dataclass
class Side:
    path: str
    record: Record  # without its runs when read lean
    summary: VersionSummary | None = None  # lean: its own version's runs over all its rows (no bars)
    table: VerdictTable | None = None  # lean: the same runs' verdicts


def read_side(path: str | Path, *, lean: bool) -> Side:
    """One results file, checked (its plan, digest, reruns; complete), as a Side: lean, its
    summary and verdict table instead of its runs."""
    record = load_record(path)  # checked against its plan and digest
    check_reruns(record, path)
    if line := record.incomplete():  # no comparison over part of the runs
        raise ConfigError(f"{path}: {line}; finish it with --resume {path} before comparing")
    if not lean:
        return Side(str(path), record)
    runs = record.runs_for(record.meta.version)
    return Side(str(path), record.model_copy(update={"runs": []}),
                summarise(runs, record.row_by_id(), {}, record.meta.trials), VerdictTable.of(runs))


def read_sides(paths: list[str], *, lean: bool) -> list[Side]:
    """read_side of each path, in order; in parallel processes when lean, the files are big and
    this platform can fork (else one after the other, here)."""
    if not (lean and _can_fork() and len(paths) > 1 and all(_size(p) >= PARALLEL_FROM_BYTES for p in paths)):
        return [read_side(p, lean=lean) for p in paths]
    import evals.gate.run  # noqa: F401  (what check_reruns imports: once here, not in each process)

    ctx = multiprocessing.get_context("fork")
    readers = []
    for path in paths:
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_reader, args=(send, path), daemon=True)
        proc.start()
        send.close()
        readers.append((path, proc, receive))
    out: list[Side] = []
    problem: BaseException | None = None
    for path, proc, receive in readers:
        try:
            kind, value = receive.recv()
        except EOFError:  # the process died before it answered (killed, out of memory)
            proc.join()
            kind, value = "error", RecordError(f"{path}: the process reading it died (exit code {proc.exitcode})")
        finally:
            receive.close()
        proc.join()
        if kind == "ok":
            out.append(pickle.loads(value))
        elif problem is None:  # the first file's problem is the one reported, as in order
            problem = value if isinstance(value, BaseException) else RuntimeError(f"reading {path} failed:\n{value}")
    if problem is not None:
        raise problem
    return out


def _reader(send, path: str) -> None:
    """In the forked process: read one side, send it (or its error), and exit at once: its
    objects die with the process, nobody waits for them to be freed."""
    gc.disable()  # nothing this short-lived process makes needs collecting
    try:
        try:
            message = ("ok", pickle.dumps(read_side(path, lean=True), protocol=pickle.HIGHEST_PROTOCOL))
        except (ConfigError, RecordError, OSError, ImportError) as exc:  # one line in the parent, as in-process
            message = ("error", exc)
        except BaseException:  # a bug: its traceback, as text
            message = ("error", traceback.format_exc())
        try:
            send.send(message)
        except Exception:  # an exception that cannot be pickled: its line
            send.send(("error", RecordError(f"{path}: {message[1]}")))
        send.close()
    finally:
        os._exit(0)


def _can_fork() -> bool:
    return "fork" in multiprocessing.get_all_start_methods()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # read here, where the missing file gets its one line
