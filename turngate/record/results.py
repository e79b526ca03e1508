"""The results record: the one file every later command reads (regrade, compare, show,
report, promote, resume). Like Inspect's eval log, it is typed and self-contained: it
carries the rows it ran, so it can be re-scored without the dataset file. It checks itself:
it stores its plan (RecordPlan), a digest of its content and a seal of its bytes (SEAL), and
load_record refuses a file whose runs do not match the plan, or whose bytes changed: its seal
does not hold and its digest does not match (one line, a RecordError). A re-indented file keeps
its digest."""
from __future__ import annotations

import contextlib
import gc
import hashlib
import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Annotated, Any

import msgspec
import orjson
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter, model_validator, with_config
from pydantic.dataclasses import dataclass as pydantic_dataclass
from typing_extensions import TypedDict

from turngate.core import cli_support as cli
from turngate.core.errors import RecordError
from turngate.core.turn import Turn
from turngate.record.summaries import StoredVerdict, VersionSummary

# @2: the record carries its plan and a digest (see RecordPlan); @3: the summary is labelled
# (turngate/record/summaries.py) and the verdict is a field of its own; @4: the file ends with a
# seal of its bytes (SEAL); @5: it carries what it was judged with (meta.judged_with: the rule,
# its constants, its copy of the reference) and its dataset's rows (meta.dataset_rows), so it is
# re-judged from itself alone. Each reads the earlier ones.
SCHEMA_NAME = "turngate/results"
SCHEMA_VERSION = 5
SCHEMA = f"{SCHEMA_NAME}@{SCHEMA_VERSION}"
LEGACY_SCHEMAS = (f"{SCHEMA_NAME}@1",)  # written before plans: runs checked against rows x seeds only
# A record's layout is its `results@N`; the part before the slash names the library that wrote
# it: turngate, or the name the library had before it had its own. Files written under that
# name are the same layouts (the same N) and load and verify as they are, never rewritten.
_WRITTEN_BY = re.compile(r"[a-z][a-z0-9_.-]*/results@([0-9]+)")


def schema_name(schema: str) -> str:
    """A record's meta.schema under the library's own name: `<writer>/results@N` is turngate/results@N."""
    m = _WRITTEN_BY.fullmatch(schema)
    return f"{SCHEMA_NAME}@{m.group(1)}" if m else schema


def layout_of(schema: str) -> int | None:
    """N of a record's `results@N` (None: not a results layout)."""
    m = _WRITTEN_BY.fullmatch(schema)
    return int(m.group(1)) if m else None


# a slotted dataclass, not a model: a big record holds hundreds of thousands of these, and
# pydantic validates them 2-3x faster so (just as strictly)
@pydantic_dataclass(config=ConfigDict(extra="forbid"), frozen=True, slots=True)
class ScorerVerdict:
    """One scorer's verdict on one run."""
    passed: bool | None  # None: the scorer had nothing to check on this row (n/a)
    explanation: str


class RunResult(BaseModel):
    """One (row, trial) through one agent version, with every scorer's verdict."""
    model_config = ConfigDict(extra="forbid")
    row_id: str
    trial: int
    seed: int
    version: str
    job: str
    turn: Turn
    verdicts: dict[str, ScorerVerdict] = Field(default_factory=dict)
    stage: str = "gate"  # "gate": a planned (row, seed); "confirm": a rerun of a flagged row (turngate/verdict/confirm.py)

    @property
    def key(self) -> tuple[str, int]:
        return (self.row_id, self.trial)

    @property
    def agent_error(self) -> str | None:
        return self.turn.error


@with_config(ConfigDict(extra="allow"))
class ConfirmPlan(TypedDict, total=False):
    """What readers read of meta.confirm (the confirmation reruns, turngate/gate/run.py); the rest is kept."""
    enabled: bool
    k: int | None
    rows: dict[str, list[int]]  # row id -> the fresh seeds it is rerun on


_CONFIRM = TypeAdapter(ConfirmPlan)


MAX_CONFIRM_K = 1000  # --confirm K: reruns per flagged row; a record asking more is refused, never planned


def _confirm_shape(conf: dict[str, Any] | None) -> dict[str, Any] | None:
    if conf is None:
        return None
    conf = dict(_CONFIRM.validate_python(conf))
    if (k := conf.get("k")) is not None and not 1 <= k <= MAX_CONFIRM_K:
        raise ValueError(f"meta.confirm.k is {k}, not 1-{MAX_CONFIRM_K} reruns per flagged row")
    return conf


class JudgedWith(BaseModel):
    """What a record was judged with (results@5), so that every reader re-judges it from the
    record alone: a later calibration, or a moved or deleted reference file, changes nothing."""
    model_config = ConfigDict(extra="forbid")
    rule: int  # the decision rule's number (turngate/verdict/policy.py RULE)
    policy: dict[str, int | float | None]  # that rule's knobs, as they were (a GatePolicy; null: no cap)
    # the accepted run's counts it was judged against (a turngate.verdict.reference.Reference): the
    # rows of its dataset selection, every scorer's cells (all count in a row's "some scorer" unit)
    reference: dict[str, Any] | None = None
    reference_sha256: str | None = None  # of `reference` as canonical JSON: checked on every read
    reference_file: dict[str, str] | None = None  # where the copy came from: path, sha256 of the file then


class Meta(BaseModel):
    """How the run was made: enough to reproduce it, and what --resume restores."""
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    schema_: str = Field(SCHEMA, alias="schema")
    version: str
    version_description: str = ""
    baseline: str | None = None
    model: str
    judge: str | None  # None: no judge ran (the bars named none)
    dataset: str
    dataset_sha256: str
    git_commit: str | None = None
    trials: int
    seeds: list[int]
    parallelism: int
    timeout: float | None = None
    thresholds: dict[str, Any] = Field(default_factory=dict)
    argv: list[str] = Field(default_factory=list)
    started: str
    elapsed_s: float = 0.0
    complete: bool = False
    interrupted: bool = False
    redacted: bool = False  # emails and phone numbers masked on every write (--redact-results)
    # the agent and how it was called (--agent, --model, --transport, --max-retries); every record
    # written since results@2 names it (None: a results@1 file from before records named theirs)
    agent: str | None = None
    agent_version: str | None = None  # the --version a factory was given (None: its default / a plain target)
    model_override: str | None = None  # --model, when given
    job: str | None = None  # the candidate's job name, e.g. mybot@v3
    transport: str = "memory"
    max_retries: int = 2
    judge_timeout: float = 60.0
    workers: int = 1
    faults: list[str] = Field(default_factory=list)
    thresholds_path: str | None = None
    selection: dict[str, Any] = Field(default_factory=dict)  # --only / --tags / --limit
    cache: dict[str, Any] | None = None  # model-call cache counters (--cache)
    resumed: list[list[str]] = Field(default_factory=list)  # argv of each --resume
    regraded_from: str | None = None  # regrade: the results file re-scored
    compared_files: dict[str, str] | None = None  # compare: the two results files combined
    model_calls: dict[str, Any] | None = None  # provider calls: counts, 429s, retries, wall vs physical limit
    confirm: Annotated[dict[str, Any] | None, AfterValidator(_confirm_shape)] = None  # the confirmation reruns: enabled, rows -> seeds, cost
    reference: str | None = None  # the accepted-run reference judged against (None: bars only)
    shard: dict[str, Any] | None = None  # --shard K/N: index, count, the whole plan's digest (turngate/jobs/shards.py)
    judged_with: JudgedWith | None = None  # results@5: the rule, its constants and the reference (None: earlier)
    # results@5: every row of the dataset, in its order: [id, sha256 of the row as stored, tags];
    # the record's rows are exactly meta.selection of these (check_record)
    dataset_rows: list[tuple[str, str, list[str]]] | None = None

    @property
    def versions(self) -> list[str]:
        """The candidate, then the baseline if there is one."""
        return [self.version] + ([self.baseline] if self.baseline else [])


class RecordPlan(BaseModel):
    """What the record promises to hold, fixed when its first version is written: every reader
    checks the runs against it (each planned (version, row, seed) once, nothing else) and
    --resume checks the agent against it. Everything but `seeds` of another version,
    `version_files` and `agent_code` is recomputed from meta and rows on load and must agree."""
    model_config = ConfigDict(extra="forbid")
    rows: dict[str, str]  # row id -> sha256 of the row as stored, in dataset order
    seeds: dict[str, list[int]]  # version -> the seeds it must have one stage="gate" run of, per row
    agent: dict[str, Any]  # spec, --version, --model, job, model: the agent as the command line named it
    version_files: dict[str, dict[str, str] | None] = Field(default_factory=dict)  # version -> path, sha256
    dataset: dict[str, str]  # name, sha256
    # root, sha256, files: the --agent module's package (turngate/core/agent_code.py); None: not
    # found, or a record from before plans stored it
    agent_code: dict[str, Any] | None = None
    settings: dict[str, Any]  # everything else that changes what a run does (judge, bars, timeouts, faults...)


PLAN_SETTINGS = ("trials", "judge", "timeout", "transport", "max_retries", "judge_timeout", "workers", "faults",
                 "thresholds", "selection", "reference", "redacted")


def _row_with_id(row: dict[str, Any]) -> dict[str, Any]:
    """A stored row is the dataset's row as it ran (hashed into the plan); every reader keys it by its id."""
    if not isinstance(row.get("id"), str):
        raise ValueError(f"a row's id must be a string, not {row.get('id')!r}")
    return row


class Record(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    meta: Meta
    plan: RecordPlan | None = None  # None only in memory before the first save, or in a results@1 file
    rows: list[Annotated[dict[str, Any], AfterValidator(_row_with_id)]]
    runs: list[RunResult] = Field(default_factory=list)
    # derived from the runs, outside the digest: every reader recomputes them (turngate/gate/recheck.py)
    summary: dict[str, VersionSummary] = Field(default_factory=dict)  # version -> its numbers
    verdict: StoredVerdict | None = None  # the gate's verdict; None: not decided (interrupted, incomplete)
    comparison: dict[str, Any] | None = None  # candidate against baseline (turngate/verdict/comparison.py)
    digest: str | None = None  # sha256 over meta, plan, rows and runs as written (save_record)

    @model_validator(mode="before")
    @classmethod
    def _verdict_in_summary(cls, data: Any) -> Any:
        """A results@2 file keeps the verdict beside the versions, as summary["verdict"]."""
        if isinstance(data, dict) and isinstance(summary := data.get("summary"), dict) and "verdict" in summary:
            summary = dict(summary)
            verdict = summary.pop("verdict")
            data = {**data, "summary": summary, "verdict": data.get("verdict", verdict)}
        return data

    def runs_for(self, version: str, stage: str = "gate") -> list[RunResult]:
        """One version's runs of one stage: the planned runs by default, "confirm" for the reruns."""
        return [r for r in self.runs if r.version == version and r.stage == stage]

    def row_by_id(self) -> dict[str, dict[str, Any]]:
        return {r["id"]: r for r in self.rows}

    def planned_keys(self) -> list[tuple[str, str, int]]:
        """Every (version, row id, seed) the record must hold one stage="gate" run of."""
        if self.plan is not None:
            ids, seeds = list(self.plan.rows), self.plan.seeds
        else:
            ids, seeds = [r["id"] for r in self.rows], {v: list(self.meta.seeds) for v in self.meta.versions}
        return [(v, rid, s) for v, vs in seeds.items() for rid in ids for s in vs]

    def progress(self) -> tuple[int, int]:
        """(planned runs present, planned runs)."""
        planned = set(self.planned_keys())
        have = {(r.version, r.row_id, r.trial) for r in self.runs if r.stage == "gate"}
        return len(have & planned), len(planned)

    def incomplete(self) -> str | None:
        """`incomplete: N of M runs`, or None for a complete record."""
        have, planned = self.progress()
        return None if self.meta.complete and have == planned else f"incomplete: {have} of {planned} runs"

    def replan(self) -> RecordPlan:
        """The plan again from meta and rows, for a command that makes a new record out of this one
        (regrade's judge and bars), keeping the version files it recorded."""
        old = self.plan
        self.plan = plan_of(self, version_files=old.version_files if old is not None else None,
                            seeds=old.seeds if old is not None and self.meta.compared_files else None,
                            agent_code=old.agent_code if old is not None else None)
        return self.plan


def _canonical(value: Any) -> bytes:
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    except TypeError:  # a non-string key: as JSON writes it, then canonical
        text = json.dumps(json.loads(json.dumps(value)), sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return text.encode()


def row_sha256(row: dict[str, Any]) -> str:
    return hashlib.sha256(_canonical(row)).hexdigest()


def digest_of(data: dict[str, Any], canonical=_canonical) -> str:
    """sha256 over meta, plan and rows of a record as JSON, then each run's sha256, in order
    (summary, verdict and comparison are derived from these and recomputed by every reader, so
    they are left out). Canonical JSON (sorted keys, no spaces), so re-indenting a file keeps it."""
    h = hashlib.sha256(_canonical({k: data.get(k) for k in ("meta", "plan", "rows")}))
    for run in data.get("runs") or []:
        h.update(hashlib.sha256(canonical(run)).digest())
    return h.hexdigest()


def _fast_canonical(value: Any) -> bytes:
    """_canonical by orjson (5x faster on a big record): the same bytes for what a results file
    holds (string keys, finite floats, 64-bit ints); anything orjson cannot write goes to _canonical."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except (orjson.JSONEncodeError, TypeError):
        return _canonical(value)


def digest_matches(data: dict[str, Any], digest: str) -> bool:
    """digest_of(data) == digest. Tried first with orjson's bytes, then, if they disagree, with
    _canonical's own: a difference between the two serialisers costs time, never passes a changed
    file (a match with orjson's bytes means they are _canonical's bytes, short of a sha256 collision)."""
    return digest_of(data, _fast_canonical) == digest or digest_of(data) == digest


SEAL = "text_sha256"
"""The last member of a results file as save_record writes it: the sha256 of the file's bytes
before it. Unlike the digest (over the content, so a re-indented file keeps it), it holds only
for the exact bytes written, and it needs no parsing to check: every reader takes a file whose
seal holds as written, without re-serialising its runs for the digest (every value in it is
still validated). Any other file, a re-indented one included, is checked by its digest."""
_SEAL_TAIL = re.compile(rb',\n "' + SEAL.encode() + rb'": "([0-9a-f]{64})"\n\}\Z')


def seal_text(text: str) -> str:
    """text (a JSON object as json or pydantic write it with indent=1) with its seal as last member."""
    head = text.rstrip()
    if not head.endswith("}"):
        raise ValueError("not a JSON object")
    head = head[:-1].rstrip()
    return f'{head},\n "{SEAL}": "{hashlib.sha256(head.encode()).hexdigest()}"\n}}'


def seal_holds(raw: bytes) -> bool:
    """The file ends with its seal, and the seal is the sha256 of every byte before it."""
    tail = raw[-100:]
    m = _SEAL_TAIL.search(tail)
    return m is not None and hashlib.sha256(memoryview(raw)[:len(raw) - len(tail) + m.start()]).hexdigest() == \
        m.group(1).decode()


@contextlib.contextmanager
def _gc_paused():
    """Reading a big record makes millions of containers, none of them garbage: the cyclic
    collector would walk them over and over (a 55 MB record loads 4x slower). Paused meanwhile."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


_RUN_SHA: dict[bytes, bytes] = {}  # sha256 of a run as pydantic writes it -> sha256 of its canonical JSON


def _record_digest(record: Record) -> str:
    """digest_of(the record as save_record writes it), without re-reading the runs it already
    hashed at an earlier checkpoint: a run's canonical sha256 is cached under the sha256 of its
    exact serialisation, so a run changed in place is hashed again."""
    h = hashlib.sha256(_canonical(json.loads(record.model_dump_json(by_alias=True, include={"meta", "plan", "rows"}))))
    if len(_RUN_SHA) > 500_000:
        _RUN_SHA.clear()
    for run in record.runs:
        text = run.model_dump_json().encode()
        key = hashlib.sha256(text).digest()
        if (sha := _RUN_SHA.get(key)) is None:
            sha = _RUN_SHA[key] = hashlib.sha256(_canonical(json.loads(text))).digest()
        h.update(sha)
    return h.hexdigest()


def stored_row_sha256(row: dict[str, Any], redacted: bool) -> str:
    """row_sha256 of a row as a record stores it (masked with --redact-results)."""
    if redacted:
        from turngate.core.redaction import mask

        return row_sha256(mask(row))
    return row_sha256(row)


def dataset_index(rows: list[dict[str, Any]], redacted: bool = False) -> list[tuple[str, str, list[str]]]:
    """meta.dataset_rows of these dataset rows (dicts as a record stores them), in their order."""
    return [(r["id"], stored_row_sha256(r, redacted), list((r.get("inputs") or {}).get("tags") or []))
            for r in rows]


def selected_rows(index: list, selection: dict[str, Any]) -> list[tuple[str, str]]:
    """(id, sha256) of the dataset rows meta.selection picks, in dataset order: the rule of
    turngate.sources.dataset.select (`only`, then `tags`, then `limit`), over meta.dataset_rows;
    then, for a compare record, only the rows each side it was compared with holds (shared_with)."""
    picked = [(rid, sha, tags) for rid, sha, tags in index]
    if (only := selection.get("only")) is not None:
        wanted = {only} if isinstance(only, str) else set(only)
        picked = [e for e in picked if e[0] in wanted]
    if (tags := selection.get("tags")) is not None:
        wanted = {tags} if isinstance(tags, str) else set(tags)
        picked = [e for e in picked if wanted & set(e[2])]
    if (limit := selection.get("limit")) is not None:
        picked = picked[:max(int(limit), 0)]
    out = [(rid, sha) for rid, sha, _ in picked]
    for side in selection.get("shared_with") or []:
        held = {(rid, sha) for rid, sha in side}
        out = [e for e in out if e in held]
    return out


def reference_sha256(copy: dict[str, Any] | None) -> str | None:
    """meta.judged_with.reference_sha256 of a reference copy."""
    return None if copy is None else hashlib.sha256(_canonical(copy)).hexdigest()


_SHARD_TYPES = {"index": int, "count": int, "plan": str, "rows": dict}  # what merge reads of meta.shard


def shard_problem(shard: dict) -> str | None:
    """Which part of a shard's meta.shard (turngate/jobs/shards.py writes it) has not the shape merge reads."""
    for key, kind in _SHARD_TYPES.items():
        value = shard.get(key)
        if not isinstance(value, kind) or isinstance(value, bool):
            return f"{key} is {value!r}, not {'an' if kind is int else 'a'} {kind.__name__}"
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in shard["rows"].items()):
        return "rows is not row ids to sha256s"
    if not isinstance(shard.get("hints"), str | None):
        return f"hints is {shard['hints']!r}, not a path"
    return None


def _rows_not_selected(record: Record) -> str | None:
    """Where the record's rows are not exactly its selection of its dataset's rows (a row
    deleted from rows, plan and runs, or one added), in one line; None: they are. A shard's rows
    are part of it, and its meta.shard.rows the whole of it."""
    m, p = record.meta, record.plan
    have = list(p.rows.items()) if p is not None else [(r["id"], stored_row_sha256(r, m.redacted))
                                                       for r in record.rows]
    want = selected_rows(m.dataset_rows or [], m.selection or {})
    if m.shard and "index" in m.shard:
        if problem := shard_problem(m.shard):  # every reader, in merge's own words
            return f"meta.shard.{problem} (the file was edited)"
        if list((m.shard.get("rows") or {}).items()) != want:
            return "meta.shard.rows are not the selection of the dataset rows the record names (meta.dataset_rows)"
        at = {e: i for i, e in enumerate(want)}
        if all(e in at for e in have) and [at[e] for e in have] == sorted(at[e] for e in have):
            return None  # a part of it, in its order
        want = [e for e in want if e[0] in {rid for rid, _ in have}]  # what is wrong with the rows it holds
    if have == want:
        return None
    sha_of, mine = dict(want), dict(have)
    if missing := [rid for rid, _ in want if rid not in mine]:
        return (f"row {missing[0]!r} of its dataset selection is not in the record ({len(have)} rows, "
                f"meta.dataset_rows and meta.selection make {len(want)}): rows were deleted")
    if extra := [rid for rid, _ in have if rid not in sha_of]:
        return f"row {extra[0]!r} is not in its dataset selection (meta.dataset_rows and meta.selection)"
    if changed := [rid for rid, sha in have if sha_of[rid] != sha]:
        return f"row {changed[0]!r} is not the dataset's row meta.dataset_rows names (its content differs)"
    return "the rows are not in their dataset's order (meta.dataset_rows)"


def _judged_with_problem(record: Record) -> str | None:
    """A results@5 record's judged_with and dataset rows: present, and its reference copy its digest."""
    m = record.meta
    if m.judged_with is None:
        return f"no meta.judged_with (a {SCHEMA} record always has it: the file was edited)"
    if m.dataset_rows is None:
        return f"no meta.dataset_rows (a {SCHEMA} record always has them: the file was edited)"
    j = m.judged_with
    if (m.reference is None) != (j.reference is None):
        return (f"meta.reference is {m.reference!r} but meta.judged_with {'holds no' if j.reference is None else 'holds a'}"
                " reference copy (the file was edited)")
    if reference_sha256(j.reference) != j.reference_sha256:
        return "meta.judged_with.reference is not the copy its reference_sha256 names (it was edited)"
    return None


def plan_of(record: Record, *, version_files: dict[str, dict[str, str] | None] | None = None,
            seeds: dict[str, list[int]] | None = None, agent_code: dict[str, Any] | None = None) -> RecordPlan:
    """The plan meta and rows describe. version_files: None asks turngate.jobs.target for the files of the
    targets this process built, and for their agent's code (a reader builds none, so it passes the
    stored ones, and agent_code with them)."""
    m = record.meta
    if m.redacted:  # the rows as written: save_record masks them
        from turngate.core.redaction import mask

        hashes = {r["id"]: row_sha256(mask(r)) for r in record.rows}
    else:
        hashes = {r["id"]: row_sha256(r) for r in record.rows}
    if version_files is None:
        from turngate.core.provenance import built_agent_code, built_version_file

        version_files = {v: built_version_file(m.agent, v) for v in m.versions}
        agent_code = built_agent_code(m.agent)
    return RecordPlan(rows=hashes, seeds=seeds if seeds is not None else {v: list(m.seeds) for v in m.versions},
                      agent={"spec": m.agent, "version": m.agent_version, "model_override": m.model_override,
                             "job": m.job, "model": m.model},
                      version_files=version_files, dataset={"name": m.dataset, "sha256": m.dataset_sha256},
                      settings={k: getattr(m, k) for k in PLAN_SETTINGS}, agent_code=agent_code)


def planned_file(record: Record, version: str | None = None) -> dict[str, str] | None:
    """The version file a record's plan stored for a version (default: its candidate)."""
    return record.plan.version_files.get(version or record.meta.version) if record.plan is not None else None


_META_NAME = {("agent", "spec"): "agent", ("agent", "version"): "agent_version", ("dataset", "name"): "dataset",
              ("dataset", "sha256"): "dataset_sha256"}


def _plan_disagrees(record: Record) -> str | None:
    """Where meta or rows say something else than the stored plan, in one line; None: they agree."""
    p, m = record.plan, record.meta
    if set(p.seeds) != set(m.versions):
        return f"the plan is for versions {sorted(p.seeds)}, meta names {m.versions}"
    want = plan_of(record, version_files=p.version_files, seeds=p.seeds, agent_code=p.agent_code)
    if p.rows != want.rows:
        rid = next(i for i in dict.fromkeys([*p.rows, *want.rows]) if p.rows.get(i) != want.rows.get(i))
        what = ("in the rows but not in the record's plan" if rid not in p.rows else
                "in the record's plan but not in its rows" if rid not in want.rows else
                "not the row the record's plan names (its content changed)")
        return f"row {rid!r} is {what}"
    for part in ("agent", "dataset", "settings"):
        have, planned = getattr(want, part), getattr(p, part)
        for key in dict.fromkeys([*planned, *have]):
            if have.get(key) != planned.get(key):
                name = _META_NAME.get((part, key), key)
                return f"meta.{name} is {have.get(key)!r}, the record's plan says {planned.get(key)!r}"
    if p.seeds[m.version] != list(m.seeds) or (not m.compared_files and any(s != list(m.seeds) for s in p.seeds.values())):
        return f"meta.seeds is {m.seeds}, the record's plan says {p.seeds}"
    return None


def _key(k: tuple[str, str, int]) -> str:
    return f"{k[0]} {k[1]}#{k[2]}"


def check_record(record: Record, data: dict[str, Any] | None, where: str | Path, sealed: bool = False) -> None:
    """Refuse a record whose runs do not match its plan, or that changed after it was written.
    sealed: its file's seal holds (the bytes are as written), so its digest is not recomputed (data unused)."""
    runs = record.runs
    legacy = schema_name(record.meta.schema_) in LEGACY_SCHEMAS
    if not legacy and (record.plan is None or record.digest is None):
        raise RecordError(f"{where}: no {'plan' if record.plan is None else 'digest'} (a {SCHEMA} record "
                          "always has both: the file was edited)")
    ids = [r.get("id") for r in record.rows]
    if len(set(ids)) != len(ids):
        raise RecordError(f"{where}: row {next(i for i in ids if ids.count(i) > 1)!r} is stored twice")
    if record.plan is not None and (why := _plan_disagrees(record)):
        raise RecordError(f"{where}: {why}")
    planned = record.planned_keys()
    versions = {v for v, _, _ in planned}
    rows = {rid for _, rid, _ in planned} or set(ids)
    seen = Counter((r.version, r.row_id, r.trial) for r in runs if r.stage == "gate")
    wanted = set(planned)
    extra = [k for k in seen if k not in wanted]
    extra += [(r.version, r.row_id, r.trial) for r in runs
              if r.stage != "gate" and (r.stage != "confirm" or r.version not in versions or r.row_id not in rows)]
    if extra:
        raise RecordError(f"{where}: {len(extra)} run(s) the record's plan has no place for (e.g. {_key(extra[0])}: "
                          "another row, seed or version)")
    if dup := [k for k, n in seen.items() if n > 1]:
        raise RecordError(f"{where}: {len(dup)} planned run(s) stored more than once (e.g. {_key(dup[0])} "
                          f"{seen[dup[0]]} times)")
    missing = [k for k in planned if k not in seen]
    if missing and record.meta.complete:
        raise RecordError(f"{where}: marked complete but {len(missing)} planned run(s) are missing "
                          f"(e.g. {_key(missing[0])}): {len(wanted) - len(missing)} of {len(wanted)} runs")
    if record.digest is not None and not sealed and not digest_matches(data, record.digest):
        raise RecordError(f"{where}: digest mismatch: meta, plan, rows or runs changed after the file was written")
    if (layout_of(record.meta.schema_) or 0) >= 5 and (why := _judged_with_problem(record) or _rows_not_selected(record)):
        raise RecordError(f"{where}: {why}")


def load_record(path: str | Path) -> Record:
    """The one reader of a results file (every command reads it so): its bytes parsed once, every
    value validated by the record's own models (Record, RunResult, turngate/core/turn.py's Turn),
    then its runs checked against its plan and its seal or digest (check_record). Any failure is
    one line, a RecordError."""
    path = Path(path)
    raw = read_bytes(path)
    with _gc_paused():
        data = _parse(raw, path)
        if isinstance(data, dict):
            data.pop(SEAL, None)  # the seal covers the bytes, not the content: never a field
        try:
            record = Record.model_validate(data)
        except ValueError as exc:
            first = str(exc).splitlines()
            raise RecordError(f"{path}: not a results record ({' '.join(first[:3])})") from exc
        # a seal that holds: the bytes are as save_record wrote them, the digest not recomputed
        check_record(record, data, path, sealed=seal_holds(raw))
        if len(record.runs) >= BIG_RECORD:
            # its objects live as long as the command: once in the permanent generation, the
            # collector no longer walks them at each collection of the objects made after them
            gc.freeze()
    return record


BIG_RECORD = 5_000  # runs: from here a record's objects are frozen out of the cyclic collector


def read_bytes(path: str | Path) -> bytes:
    """A results file's bytes, or its one line."""
    try:
        return Path(path).read_bytes()
    except FileNotFoundError as exc:
        raise RecordError(f"{path}: no such results file") from exc
    except OSError as exc:  # a directory, no permission
        raise RecordError(f"{path}: cannot read a results file ({exc.strerror or exc})") from exc


def _parse(raw: bytes, path: Path) -> Any:
    """The file's JSON. msgspec (the fastest; an int past 64 bits stays an int) reads the same
    values json does wherever it reads at all; what it refuses (NaN, a lone surrogate, bad bytes)
    goes to json, which reads the rest or gives the line where the file is broken."""
    try:
        return msgspec.json.decode(raw)
    except msgspec.DecodeError:
        pass
    try:
        text = raw.decode()
    except UnicodeDecodeError as exc:
        raise RecordError(f"{path}: cannot read a results file (not text: {exc.reason} at byte {exc.start})") from exc
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise RecordError(f"{path}:{exc.lineno}: not valid JSON ({exc.msg})") from exc


def _current_layout(record: Record) -> None:
    """The record as this layout (SCHEMA) writes it: its plan fixed at the first save, and its
    dataset rows: a record written before results@5, or built from rows of no dataset (by hand),
    has its own rows as its dataset."""
    record.meta.schema_ = SCHEMA
    if record.meta.dataset_rows is None:
        record.meta.dataset_rows = dataset_index(record.rows, record.meta.redacted)
    if record.plan is None:
        record.plan = plan_of(record)


def sealed(record: Record) -> dict[str, Any]:
    """The record as save_record writes it: the plan fixed at the first save, then the digest over
    meta, plan, rows and runs as written (masked with --redact-results)."""
    _current_layout(record)
    data = record.model_dump(mode="json", by_alias=True, exclude={"digest"})
    if record.meta.redacted:
        from turngate.core.redaction import mask

        data = mask(data)
    data["digest"] = record.digest = digest_of(data)
    return data


def sealed_text(record: Record) -> str:
    """The text of sealed(record), the way save_record writes it (pydantic's serialiser, several
    times faster than json.dumps with indent on a record of thousands of runs), ending with its
    seal (SEAL)."""
    if record.meta.redacted:
        return seal_text(json.dumps(sealed(record), indent=1, ensure_ascii=False))
    _current_layout(record)
    record.digest = _record_digest(record)
    return seal_text(record.model_dump_json(by_alias=True, indent=1))


class RecordWriteError(RecordError):
    """A results file could not be written (disk full, read-only or vanished directory): an
    environment fault, one line and exit 2. The message names what is left on disk."""


_SAVED: set[Path] = set()  # results files this process saved: if their directory goes, that is an error


def _left_on_disk(path: Path) -> str:
    """After a failed save: what `path` holds now, and how to go on from it."""
    try:
        data = json.loads(path.read_text(encoding="utf-8") or "null")
    except FileNotFoundError:
        return "nothing was saved"
    except (OSError, ValueError):
        return f"{path} is as it was"
    if data is None:  # the empty file claimed for this output
        with contextlib.suppress(OSError):
            path.unlink()
            return f"nothing was saved (removed the empty {path})"
        return "nothing was saved"
    meta = data.get("meta") if isinstance(data, dict) else None
    runs = data.get("runs") if isinstance(data, dict) else None
    if not isinstance(meta, dict) or not isinstance(runs, list):
        return f"{path} is as it was"
    if meta.get("regraded_from") or meta.get("compared_files") or meta.get("complete"):
        return f"{path} keeps what it held before"
    return (f"the {len(runs)} run(s) saved before are kept in {path}: finish the run with "
            f"`{cli.command('gate')} --resume {path}`")


def _write_failed(path: Path, exc: OSError) -> RecordWriteError:
    reason = exc.strerror or str(exc)
    if isinstance(exc, FileNotFoundError):
        reason += f" (the directory {path.parent} is gone)"
    return RecordWriteError(f"cannot write the results file {path}: {reason}; {_left_on_disk(path)}")


def _through_symlink(path: Path) -> Path:
    """The file a symlink names (the replace below would swap the link itself for a regular file)."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def save_record(record: Record, path: str | Path) -> Path:
    """Write atomically (turngate/core/atomic_write.py, mode 0600: runs hold what users typed): an
    interrupt or a full disk mid-write never leaves a half file behind (the temporary file goes;
    `path` keeps its last complete version). A failed write raises RecordWriteError naming what is
    left. A directory that vanished after this process saved into it is an error, not re-created
    behind the user's back."""
    from turngate.core.atomic_write import write_atomic

    path = Path(path)
    dest = _through_symlink(path)
    text = sealed_text(record)
    key = dest.absolute()
    write_atomic(dest, text, private=True, mkdir=key not in _SAVED, failed=_write_failed)
    _SAVED.add(key)
    return path


def lock_path(path: str | Path) -> Path:
    """`<results>.lock` beside the real file: a symlink and its target share one lock."""
    path = Path(os.path.realpath(path))
    return path.with_name(path.name + ".lock")


@contextlib.contextmanager
def holding(path: str | Path, what: str):
    """An exclusive OS lock (fcntl.flock) on the sidecar `<results>.lock` while the block runs: a
    second holder is refused at once with a RecordError naming the first, never queued. The OS
    drops the lock when its process ends, kill -9 included: a lock file left behind locks nothing."""
    import fcntl
    import socket
    from datetime import datetime

    from turngate.core.atomic_write import signals_held

    path, lock = Path(path), lock_path(path)
    with signals_held():  # locked and listed for removal on an abrupt exit, or neither: no stray lock file
        while True:
            try:
                fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise RecordError(f"{path}: cannot create its lock file {lock} ({exc.strerror or exc})") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                holder = " ".join(os.read(fd, 2000).decode(errors="replace").split()) or "another process"
                os.close(fd)
                raise RecordError(f"{path}: in use by {holder} (lock {lock}); wait for it to finish") from None
            try:
                here, there = os.fstat(fd), os.stat(lock)
                if (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino):
                    break
            except FileNotFoundError:
                pass
            os.close(fd)  # its last holder removed it between our open and our lock: lock the new one
        cli.TEMPORARY.append(lock)
    stamp = datetime.now().astimezone().isoformat(timespec="seconds")
    os.ftruncate(fd, 0)
    os.write(fd, f"pid {os.getpid()} on {socket.gethostname()} since {stamp} ({what})".encode())
    try:
        yield lock
    finally:
        with contextlib.suppress(OSError):
            os.unlink(lock)  # before closing: whoever opened this file meanwhile sees it is gone and retries
        os.close(fd)
        cli.TEMPORARY.remove(lock)
