"""The review's notes, labels and modes: an append-only JSONL sidecar, folded into a state.

The results record is never touched. Every change the reviewer makes is one line appended to
the sidecar (one write of the whole line, under an exclusive lock, then fsync), so a reload,
a second tab, Ctrl-C or kill -9 loses nothing that was saved, and two servers on one sidecar
see each other's lines. The state is the fold of the lines in file order: the last note,
label or assignment of a run wins. Schema `turngate/review@1` (docs/review.md):

    {"schema": "turngate/review@1", "op": "header", "at": ..., "sources": [{"digest", "path", "kind"}]}
    {"op": "note",  "at": ..., "source": DIGEST, "run": KEY, "text": "..."}        "" clears it
    {"op": "label", "at": ..., "source": DIGEST, "run": KEY, "label": "pass"|"fail"|null}
    {"op": "assign","at": ..., "source": DIGEST, "run": KEY, "mode": ID|null}     one mode per run
    {"op": "mode.create", "at": ..., "mode": ID, "name": "...", "definition": "..."}
    {"op": "mode.update", "at": ..., "mode": ID, "name": "...", "definition": "..."}
    {"op": "mode.merge",  "at": ..., "mode": ID, "into": ID}      its runs move, it is gone
    {"op": "mode.split",  "at": ..., "mode": ID, "new": ID, "name": "...", "definition": "...",
                          "runs": [[DIGEST, KEY], ...]}            those runs move to the new mode
    {"op": "mode.delete", "at": ..., "mode": ID}                   its runs are unassigned
    {"op": "position",    "at": ..., "source": DIGEST, "run": KEY} where the reviewer stopped
"""
from __future__ import annotations

import fcntl
import json
import os
import re
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError

from turngate.core.errors import ConfigError

SCHEMA = "turngate/review@1"
MAX_TEXT = 4000  # characters of a note, a mode's name or definition: a note is the first thing that went wrong
MODE_ID = r"m-[0-9a-z]{1,32}"


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid")
    at: str = ""


class _RunEvent(_Event):
    source: Annotated[str, Field(min_length=1, max_length=128)]
    run: Annotated[str, Field(min_length=1, max_length=1000)]


class Header(_Event):
    op: Literal["header"]
    schema_: str = Field(alias="schema")
    sources: list[dict[str, str]] = Field(default_factory=list)


class NoteEvent(_RunEvent):
    op: Literal["note"]
    text: Annotated[str, Field(max_length=MAX_TEXT)]


class LabelEvent(_RunEvent):
    op: Literal["label"]
    label: Literal["pass", "fail"] | None


class AssignEvent(_RunEvent):
    op: Literal["assign"]
    mode: Annotated[str, Field(pattern=MODE_ID)] | None


class PositionEvent(_RunEvent):
    op: Literal["position"]


ModeId = Annotated[str, Field(pattern=f"^{MODE_ID}$")]
Text = Annotated[str, Field(max_length=MAX_TEXT)]


class ModeCreate(_Event):
    op: Literal["mode.create"]
    mode: ModeId
    name: Annotated[str, Field(min_length=1, max_length=200)]
    definition: Text = ""


class ModeUpdate(_Event):
    op: Literal["mode.update"]
    mode: ModeId
    name: Annotated[str, Field(min_length=1, max_length=200)] | None = None
    definition: Text | None = None


class ModeMerge(_Event):
    op: Literal["mode.merge"]
    mode: ModeId
    into: ModeId


class ModeSplit(_Event):
    op: Literal["mode.split"]
    mode: ModeId
    new: ModeId
    name: Annotated[str, Field(min_length=1, max_length=200)]
    definition: Text = ""
    runs: list[tuple[str, str]]


class ModeDelete(_Event):
    op: Literal["mode.delete"]
    mode: ModeId


Event = Annotated[NoteEvent | LabelEvent | AssignEvent | PositionEvent | ModeCreate | ModeUpdate | ModeMerge
                  | ModeSplit | ModeDelete, Field(discriminator="op")]
_EVENT = TypeAdapter(Event)

RunKey = tuple[str, str]  # (source digest, run key)


@dataclass
class Mode:
    id: str
    name: str
    definition: str = ""


@dataclass
class ReviewState:
    """What the sidecar's lines add up to."""
    notes: dict[RunKey, str] = field(default_factory=dict)
    labels: dict[RunKey, str] = field(default_factory=dict)
    modes: dict[str, Mode] = field(default_factory=dict)  # in creation order
    assigned: dict[RunKey, str] = field(default_factory=dict)  # run -> mode id
    position: RunKey | None = None
    events: int = 0  # lines applied (the header excluded): a page's view of the state is this old
    stale: int = 0  # lines that no longer applied when folded (a mode another tab had deleted)

    def runs_of(self, mode: str) -> list[RunKey]:
        return [k for k, m in self.assigned.items() if m == mode]

    def problem(self, ev: Any) -> str | None:
        """Why an event cannot apply to this state (None: it can)."""
        if isinstance(ev, AssignEvent) and ev.mode is not None and ev.mode not in self.modes:
            return f"no mode {ev.mode}"
        if isinstance(ev, ModeCreate) and ev.mode in self.modes:
            return f"mode {ev.mode} exists"
        if isinstance(ev, ModeUpdate | ModeMerge | ModeSplit | ModeDelete) and ev.mode not in self.modes:
            return f"no mode {ev.mode}"
        if isinstance(ev, ModeMerge) and (ev.into not in self.modes or ev.into == ev.mode):
            return f"cannot merge {ev.mode} into {ev.into}"
        if isinstance(ev, ModeSplit):
            if ev.new in self.modes:
                return f"mode {ev.new} exists"
            if not ev.runs or any(self.assigned.get(tuple(k)) != ev.mode for k in ev.runs):
                return f"a split moves some of {ev.mode}'s own runs"
        return None

    def apply(self, ev: Any) -> bool:
        """Apply one event; False (and counted stale) when it no longer applies."""
        self.events += 1
        if self.problem(ev) is not None:
            self.stale += 1
            return False
        if isinstance(ev, NoteEvent | LabelEvent | AssignEvent | PositionEvent):
            key = (ev.source, ev.run)
            if isinstance(ev, NoteEvent):
                _set(self.notes, key, ev.text.strip() or None)
            elif isinstance(ev, LabelEvent):
                _set(self.labels, key, ev.label)
            elif isinstance(ev, AssignEvent):
                _set(self.assigned, key, ev.mode)
            else:
                self.position = key
        elif isinstance(ev, ModeCreate):
            self.modes[ev.mode] = Mode(ev.mode, ev.name.strip(), ev.definition.strip())
        elif isinstance(ev, ModeUpdate):
            m = self.modes[ev.mode]
            m.name = ev.name.strip() if ev.name is not None else m.name
            m.definition = ev.definition.strip() if ev.definition is not None else m.definition
        elif isinstance(ev, ModeMerge):
            for k in self.runs_of(ev.mode):
                self.assigned[k] = ev.into
            del self.modes[ev.mode]
        elif isinstance(ev, ModeSplit):
            self.modes[ev.new] = Mode(ev.new, ev.name.strip(), ev.definition.strip())
            for k in ev.runs:
                self.assigned[tuple(k)] = ev.new
        elif isinstance(ev, ModeDelete):
            for k in self.runs_of(ev.mode):
                del self.assigned[k]
            del self.modes[ev.mode]
        return True


def _set(d: dict, key: Any, value: Any) -> None:
    if value is None:
        d.pop(key, None)
    else:
        d[key] = value


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def sidecar_for(path: str | Path) -> Path:
    """Where a source's notes go by default: `<record>.review.jsonl` beside a results file,
    `review.jsonl` inside a folder of simulated conversations."""
    p = Path(path)
    return p / "review.jsonl" if p.is_dir() else p.with_name(re.sub(r"\.json$", "", p.name) + ".review.jsonl")


def parse_event(data: Any) -> Any:
    """One event from its JSON value (a page's request or a sidecar line); ValueError: why not."""
    try:
        return _EVENT.validate_python(data)
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err.get("loc", ()))
        raise ValueError(f"{where + ': ' if where else ''}{err.get('msg', 'invalid')}") from None


class ReviewStore:
    """One sidecar file: read it whole once, then append events and follow other writers."""

    def __init__(self, path: str | Path, sources: list[dict[str, str]] | None = None) -> None:
        self.path = Path(path)
        self.sources = sources or []
        self.state = ReviewState()
        self._offset = 0  # bytes of the file folded into state
        self._line = 0  # lines folded (for file:line errors)
        self._fd: int | None = None

    # reading
    def load(self) -> ReviewState:
        """Fold the whole file (creating it, with its header, when absent). A line that is not
        an event is `file:line: ...`, a ConfigError; only a last line cut short by a crash is
        left out (and kept apart from the next line written)."""
        try:
            self._fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot open the review file ({exc.strerror or exc})") from None
        with self._locked():
            if os.fstat(self._fd).st_size == 0:
                header = {"schema": SCHEMA, "op": "header", "at": now(), "sources": self.sources}
                self._write(json.dumps(header, ensure_ascii=False))
                _fsync_dir(self.path.parent)
            self._follow()
        return self.state

    def _follow(self) -> None:
        """Fold the lines other writers appended since the last read (called under the lock)."""
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size <= self._offset:
            return
        chunk = os.pread(self._fd, size - self._offset, self._offset)
        lines = chunk.split(b"\n")
        tail = lines.pop()  # b"" when the chunk ends in a newline
        for raw in lines:
            self._offset += len(raw) + 1
            self._line += 1
            self._fold(raw)
        if tail:  # a last line without its newline: a write a crash cut short
            self._line += 1
            try:
                self._fold(tail, strict=True)
            except ValueError:  # never acknowledged to anyone: it goes, so the next line starts clean
                self._line -= 1
                os.ftruncate(self._fd, self._offset)
                return
            os.write(self._fd, b"\n")  # whole but unterminated: end it, keep it
            self._offset += len(tail) + 1

    def _fold(self, raw: bytes, strict: bool = False) -> None:
        where = f"{self.path}:{self._line}"
        if not raw.strip():
            return
        try:
            data = json.loads(raw)
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            if strict:
                raise ValueError(str(exc)) from None
            raise ConfigError(f"{where}: not a JSON line ({exc})") from None
        if self._line == 1:
            if not (isinstance(data, dict) and data.get("op") == "header"):
                raise ConfigError(f"{where}: not a review file (its first line is not a {SCHEMA} header)")
            if data.get("schema") != SCHEMA:
                raise ConfigError(f"{where}: review file of schema {data.get('schema')!r}; this turngate reads {SCHEMA}")
            Header.model_validate(data)
            return
        try:
            ev = parse_event(data)
        except ValueError as exc:
            if strict:
                raise
            raise ConfigError(f"{where}: not a review event ({exc})") from None
        self.state.apply(ev)

    # writing
    def append(self, data: dict[str, Any]) -> tuple[bool, str | None]:
        """Validate one event against the latest state (other writers' lines folded first),
        then write it durably and apply it. (False, why) when it does not apply; ValueError
        when it is not an event at all."""
        ev = parse_event({**data, "at": data.get("at") or now()})
        with self._locked():
            self._follow()
            if (why := self.state.problem(ev)) is not None:
                return False, why
            line = json.dumps(ev.model_dump(mode="json", by_alias=True), ensure_ascii=False)
            self._write(line)
            self._offset = os.fstat(self._fd).st_size
            self._line += 1
            self.state.apply(ev)
        return True, None

    def refresh(self) -> ReviewState:
        with self._locked():
            self._follow()
        return self.state

    def _write(self, line: str) -> None:
        data = (line + "\n").encode()
        try:
            n = os.write(self._fd, data)
            if n != len(data):
                raise OSError(f"short write ({n} of {len(data)} bytes)")
            os.fsync(self._fd)
        except OSError as exc:
            raise ConfigError(f"{self.path}: cannot write the review file ({getattr(exc, 'strerror', None) or exc})") from None

    def _locked(self):
        return _Flock(self._fd)

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


class _Flock:
    def __init__(self, fd: int | None) -> None:
        if fd is None:
            raise ConfigError("the review file is not open (ReviewStore.load first)")
        self.fd = fd

    def __enter__(self):
        fcntl.flock(self.fd, fcntl.LOCK_EX)

    def __exit__(self, *exc):
        fcntl.flock(self.fd, fcntl.LOCK_UN)


def _fsync_dir(folder: Path) -> None:
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
