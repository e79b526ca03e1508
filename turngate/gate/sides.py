"""The two sides of a comparison: each results file read by load_record (the one reader: every
value validated, its plan, seal or digest checked), its reruns and completeness checked, and,
when the runs themselves are not written out, reduced to what the comparison reads (its
summary and verdict table). A check that fails is one line, as in every other reader."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from turngate.core.errors import ConfigError, RecordError
from turngate.gate.recheck import check_reruns, confirm_problem, reference_of
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


def read_sides(paths: list[str], *, lean: bool) -> list[Side]:
    """read_side of each path, in order."""
    return [read_side(p, lean=lean) for p in paths]
