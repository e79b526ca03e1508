"""The two sides of a comparison: each results file read, checked and reduced to what the
comparison needs (its record without runs, its summary, its verdict table).

Reading a big results file is the cost of `compare` (a 22,200-run file is 50 MB of JSON: parse,
validate, digest), and the two files are independent. So, when the runs themselves are not
needed (no --out/--report/--junit/--markdown), each big file is read in a forked process of its
own: the two are read at once, each process hands back a few MB and exits without tearing its
objects down. Every check is the same as in-process (load_record, the reruns, completeness);
a check that fails there fails here, with the same one line.

A big file's reduced side is also remembered (SideCache), keyed by the sha256 of the file's
exact bytes and of this library's code: reading the same file again (a baseline compared with
every new candidate) costs hashing it, not parsing it. Any other byte is another key, so an
edited file is read and checked in full again; the cache holds only JSON data, validated on read."""
from __future__ import annotations

import gc
import hashlib
import multiprocessing
import os
import pickle
import sys
import traceback
from dataclasses import dataclass
from pathlib import Path

import orjson

from turngate.core.atomic_write import WriteError, write_atomic
from turngate.core.errors import ConfigError, RecordError
from turngate.gate.recheck import check_reruns, confirm_problem, reference_of
from turngate.record.results import Record, load_record, load_record_view, read_bytes
from turngate.record.summaries import VersionSummary
from turngate.verdict.comparison import VerdictTable
from turngate.verdict.decide import reads_failing
from turngate.verdict.summary import scorer_names, summarise

PARALLEL_FROM_BYTES = 4_000_000  # files this big are read in processes of their own (when fork exists)


@dataclass
class Side:
    path: str
    record: Record  # without its runs when read lean
    summary: VersionSummary | None = None  # lean: its own version's runs over all its rows, without `failing`
    table: VerdictTable | None = None  # lean: the same runs' verdicts


class SideCache:
    """Reduced sides of big results files on disk: <dir>/<sha256 of the file>.json, written
    0600, at most KEEP entries (the oldest go). A missing, unreadable or malformed entry is a
    miss; one that cannot be written is skipped (a cache never fails a command)."""
    KEEP = 32

    def __init__(self, directory: Path):
        self.dir = directory

    @classmethod
    def default(cls) -> SideCache | None:
        """$TURNGATE_CACHE_DIR/sides, else the user's cache directory; None: TURNGATE_SIDE_CACHE=0."""
        if os.environ.get("TURNGATE_SIDE_CACHE", "1") == "0":
            return None
        base = os.environ.get("TURNGATE_CACHE_DIR") or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "evals"
        return cls(Path(base) / "sides")

    def key(self, raw: bytes) -> str:
        return hashlib.sha256(_code_digest().encode() + hashlib.sha256(raw).digest()).hexdigest()

    def get(self, key: str, path: str) -> Side | None:
        try:
            data = orjson.loads((self.dir / f"{key}.json").read_bytes())
            table = VerdictTable(keys=[(str(r), int(t)) for r, t in data["table"]["keys"]],
                                 passed=dict(data["table"]["passed"]), explanations=dict(data["table"]["explanations"]))
            side = Side(str(path), Record.model_validate(data["record"]), VersionSummary.model_validate(data["summary"]),
                        table)
        except (OSError, ValueError, KeyError, TypeError):  # no entry, or not one we wrote: read the file
            return None
        n = len(table.keys)
        if side.record.runs or any(len(c) != n for c in [*table.passed.values(), *table.explanations.values()]):
            return None
        return side

    def put(self, key: str, side: Side) -> None:
        data = {"record": side.record.model_dump(mode="json", by_alias=True), "summary": side.summary.model_dump(mode="json"),
                # the columns as they are (dataclasses.asdict would deep-copy every cell: 0.25 s here)
                "table": {"keys": side.table.keys, "passed": side.table.passed, "explanations": side.table.explanations}}
        try:
            write_atomic(self.dir / f"{key}.json", orjson.dumps(data), what="the compare cache", private=True)
            entries = sorted((p for p in self.dir.glob("*.json") if not p.name.startswith(".")),  # not a writer's .tmp-*
                             key=lambda p: p.stat().st_mtime)
            for old in entries[:-self.KEEP]:
                old.unlink(missing_ok=True)
        except (OSError, WriteError):  # a cache: not written is only slower next time
            pass


def _code_digest() -> str:
    """sha256 over this library's source: a side reduced by other code is another key."""
    global _CODE
    if _CODE is None:
        root = Path(__file__).resolve().parents[1]
        h = hashlib.sha256()
        for f in sorted(root.rglob("*.py")):
            h.update(str(f.relative_to(root)).encode() + b"\0" + f.read_bytes())
        _CODE = h.hexdigest()
    return _CODE


_CODE: str | None = None


def read_side(path: str | Path, *, lean: bool, raw: bytes | None = None) -> Side:
    """One results file, checked (its plan, seal or digest, reruns; complete), as a Side: lean, its
    summary and verdict table instead of its runs (read as RunViews: turngate/record/views.py).
    raw: the file's bytes, when the caller has read them already (lean only)."""
    if not lean:
        record = load_record(path)  # checked against its plan, and its seal or digest
        check_reruns(record, path)
        _refuse_incomplete(record.incomplete(), path)
        return Side(str(path), record)
    record, runs = load_record_view(path, raw)  # the same checks
    _refuse_incomplete(record.incomplete(runs), path)
    m = record.meta
    own = [r for r in runs if r.version == m.version and r.stage == "gate"]
    reference = reference_of(record)
    # once, read by the reruns' check too; the failing runs one by one only where that check
    # reads them, and never handed on: the verdict table shows them (the comparison's flips), and
    # a big side would otherwise carry tens of thousands of them to the process that compares
    names = scorer_names(own)
    summary = summarise(own, record.row_by_id(), m.thresholds or {}, m.trials,
                        failing=reads_failing(names, reference), names=names)
    if problem := confirm_problem(record, reference, runs=runs, summary=summary):  # check_reruns, complete here
        raise RecordError(f"{path}: {problem}")
    summary.failing = []
    return Side(str(path), record, summary, VerdictTable.of(own, names))


def _refuse_incomplete(line: str | None, path: str | Path) -> None:
    if line:  # no comparison over part of the runs
        raise ConfigError(f"{path}: {line}; finish it with --resume {path} before comparing")


def read_big_side(path: str, cache: SideCache | None) -> Side:
    """read_side(lean) of a big file, served from the cache when its bytes are remembered, else
    read and remembered. One reading of the bytes serves both the key and the parse, so what is
    remembered is what was checked."""
    raw = read_bytes(path)
    key = cache.key(raw) if cache is not None else None
    if key is not None and (side := cache.get(key, path)) is not None:
        return side
    side = read_side(path, lean=True, raw=raw)
    if key is not None:
        cache.put(key, side)
    return side


def remember(path: str | Path) -> None:
    """After a command wrote a big complete results file: read it back once, as compare will, so
    that compare's first reading of it is a cache hit. A file that does not read back cleanly is
    not remembered (the reader that needs it gets its one line)."""
    cache = SideCache.default()
    if cache is None or _size(str(path)) < PARALLEL_FROM_BYTES:
        return
    try:
        read_big_side(str(path), cache)
    except (ConfigError, RecordError):
        pass


def read_sides(paths: list[str], *, lean: bool) -> list[Side]:
    """read_side of each path, in order. Big files, when lean: each looked up in the cache and,
    if not remembered, read, in a process of its own when there are several and this platform
    can fork (the two files hashed and parsed at once), else one after the other, here."""
    if not (lean and all(_size(p) >= PARALLEL_FROM_BYTES for p in paths)):
        return [read_side(p, lean=lean) for p in paths]
    cache = SideCache.default()
    if len(paths) > 1 and _can_fork():
        return _in_processes(paths, cache)
    return [read_big_side(p, cache) for p in paths]


def _in_processes(paths: list[str], cache: SideCache | None) -> list[Side]:
    """read_big_side of each path, each in a forked process, all at once."""
    import turngate.record.views  # noqa: F401  (what the readers import: once here, not in each process)

    if cache is not None:
        _code_digest()  # part of every key: once here, not in each process

    ctx = multiprocessing.get_context("fork")
    readers = []
    for path in paths:
        receive, send = ctx.Pipe(duplex=False)
        proc = ctx.Process(target=_reader, args=(send, path, cache), daemon=True)
        proc.start()
        send.close()
        readers.append((path, proc, receive))
    answers = []
    for path, proc, receive in readers:  # every answer first: a reader's exit (freeing its memory) is not waited on
        try:
            answers.append(receive.recv())
        except EOFError:  # the process died before it answered (killed, out of memory)
            proc.join()
            answers.append(("error", RecordError(f"{path}: the process reading it died (exit code {proc.exitcode})")))
        finally:
            receive.close()
    out: list[Side] = []
    problem: BaseException | None = None
    for (path, _, _), (kind, value) in zip(readers, answers, strict=True):
        if kind == "ok":
            out.append(pickle.loads(value))
        elif problem is None:  # the first file's problem is the one reported, as in order
            problem = value if isinstance(value, BaseException) else RuntimeError(f"reading {path} failed:\n{value}")
    for _, proc, _ in readers:
        proc.join()
    if problem is not None:
        raise problem
    return out


def _reader(send, path: str, cache: SideCache | None) -> None:
    """In the forked process: read one side, send it (or its error), and exit at once: its
    objects die with the process, nobody waits for them to be freed."""
    gc.disable()  # nothing this short-lived process makes needs collecting
    try:
        try:
            message = ("ok", pickle.dumps(read_big_side(path, cache), protocol=pickle.HIGHEST_PROTOCOL))
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
