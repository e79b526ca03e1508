"""The two sides of a comparison: each results file read by load_record (the one reader: every
value validated, its plan, seal or digest checked), its reruns and completeness checked, and,
when the runs themselves are not written out, reduced to what the comparison reads (its
summary and verdict table). A check that fails is one line, as in every other reader.

Reading is the cost of `compare` (a 22,200-run file is 55 MB of JSON: 0.6 s to parse and
validate), and the two files are independent: when both are big and only their reductions are
needed, each is read by the same read_side in a forked process of its own, at once, and hands
back its few MB (scripts/bench.py --compare-files: 2.35 s read one after the other, 1.44 s so,
on 2 cores)."""
from __future__ import annotations

import gc
import multiprocessing
import os
import pickle
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

from turngate.core.errors import ConfigError, RecordError
from turngate.gate.recheck import check_reruns, confirm_problem, earlier_rule, reference_of
from turngate.record.results import Record, load_record
from turngate.record.summaries import VersionSummary
from turngate.verdict.comparison import VerdictTable
from turngate.verdict.decide import reads_failing
from turngate.verdict.summary import scorer_names, summarise


@dataclass
class Side:
    path: str
    record: Record  # as load_record read it; lean: its runs dropped once reduced (one big record in memory at a time)
    summary: VersionSummary | None = None  # lean: its own version's runs over all its rows, without `failing`
    table: VerdictTable | None = None  # lean: the same runs' verdicts


def read_side(path: str | Path, *, lean: bool) -> Side:
    """One results file, checked (load_record: its plan, seal or digest; its reruns; complete),
    as a Side; lean: with its candidate's summary and verdict table, for a comparison that does
    not write the runs out."""
    record = load_record(path)
    if not lean:
        check_reruns(record, path)
        _refuse_incomplete(record.incomplete(), path)
        return Side(str(path), record)
    _refuse_incomplete(record.incomplete(), path)
    earlier_rule(record, path)  # its rule and policy, refused here in the full reading's own line
    m = record.meta
    own = record.runs_for(m.version)
    reference = reference_of(record)
    # once, read by the reruns' check too; the failing runs one by one only where that check
    # reads them: the verdict table shows them (the comparison's flips)
    names = scorer_names(own)
    summary = summarise(own, record.row_by_id(), m.thresholds or {}, m.trials,
                        failing=reads_failing(names, reference), names=names)
    if problem := confirm_problem(record, reference, summary=summary):  # check_reruns, complete here
        raise RecordError(f"{path}: {problem}")
    summary.failing = []
    table = VerdictTable.of(own, names)
    record.runs = []
    return Side(str(path), record, summary, table)


def _refuse_incomplete(line: str | None, path: str | Path) -> None:
    if line:  # no comparison over part of the runs
        raise ConfigError(f"{path}: {line}; finish it with --resume {path} before comparing")


PARALLEL_FROM_BYTES = 4_000_000  # files this big are read in processes of their own (when fork exists)


def read_sides(paths: list[str], *, lean: bool) -> list[Side]:
    """read_side of each path, in order: each in a process of its own when there are several,
    all big, only their reductions needed (lean), and this platform can fork; else here."""
    if lean and len(paths) > 1 and _can_fork() and all(_size(p) >= PARALLEL_FROM_BYTES for p in paths):
        return _in_processes(paths)
    return [read_side(p, lean=lean) for p in paths]


def _in_processes(paths: list[str]) -> list[Side]:
    """read_side(lean) of each path, each in a forked process, all at once."""
    ctx = multiprocessing.get_context("fork")
    readers = []
    for path in paths:
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_reader, args=(send, path), daemon=True)
        proc.start()
        send.close()
        readers.append((path, proc, receive))
    answers = []
    for path, proc, receive in readers:  # every answer first: a reader's exit is not waited on
        try:
            answers.append(receive.recv())
        except EOFError:  # the process died before it answered (killed, out of memory)
            proc.join()
            answers.append(("error", RecordError(f"{path}: the process reading it died (exit code {proc.exitcode})")))
        finally:
            receive.close()
    for _, proc, _ in readers:
        proc.join()
    out: list[Side] = []
    for path, (kind, value) in zip(paths, answers, strict=True):
        if kind != "ok":  # the first file's problem is the one reported, as in order
            raise value if isinstance(value, BaseException) else RuntimeError(f"reading {path} failed:\n{value}")
        out.append(pickle.loads(value))
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
    # Linux only: macOS has fork but frameworks loaded before it can make the child crash
    # (Python itself defaults to spawn there), and Windows has none
    return sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods()


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0  # read here, where the missing file gets its one line
