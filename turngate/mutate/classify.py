"""A mutant's gate run judged against the baseline's, on the same seeds.

    killed      the gate fails the mutant (exit 1): the findings name the rows and scorers
    survived    the gate passes, but some row behaves differently: a gap in rows or scorers
    equivalent  the gate passes and every row behaves as the baseline did on every seed
    error       the mutant could not be built or its gate could not be judged (exit 2)

Behaviour is what a run did: its tool calls with their arguments, what the agent said (every
assistant message and the answer) and its error; compared on the gate's own seeds (the runs
of stage "gate", not the confirmation reruns, whose seeds depend on what was flagged). Where the
target has a temperature, behaviour is compared on runs at temperature 0 (runner.py): above it a
model's sampling, seeded by the whole conversation, reshuffles on any edit of the prompt, so every
mutant would look "changed".
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from turngate.record.results import Record, RunResult

KILLED, SURVIVED, EQUIVALENT, ERROR, NOT_RUN = "killed", "survived", "equivalent", "error", "not run"


def behaviour(run: RunResult) -> tuple:
    t = run.turn
    calls = tuple((c.name, json.dumps(c.arguments, sort_keys=True, default=str)) for c in t.tool_calls)
    said = tuple(m.content for m in t.messages if m.role == "assistant")
    return calls, said, t.answer, t.error


def _call(name: str, args: str) -> str:
    shown = ", ".join(f"{k}={v!r}" for k, v in json.loads(args).items())
    return f"{name}({shown})"


def _short(text: str | None, width: int = 60) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= width else text[:width - 1] + "…"


def changed_part(a: str, b: str, context: int = 25) -> tuple[str, str]:
    """The part of two texts that differs, with a little context either side."""
    a, b = " ".join((a or "").split()), " ".join((b or "").split())
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    q = 0
    while q < min(len(a), len(b)) - p and a[-1 - q] == b[-1 - q]:
        q += 1
    start = max(0, p - context)

    def cut(t: str) -> str:
        end = min(len(t), len(t) - q + context)
        return ("…" if start else "") + t[start:end] + ("…" if end < len(t) else "")
    return cut(a), cut(b)


def difference(before: tuple, after: tuple) -> str:
    """The first way two behaviours differ, in one line."""
    (c0, _, a0, e0), (c1, _, a1, e1) = before, after
    if e0 != e1:
        return f"error: {_short(e0) or 'none'} -> {_short(e1) or 'none'}"
    if c0 != c1:
        gone = [_call(*c) for c in c0 if c not in c1]
        new = [_call(*c) for c in c1 if c not in c0]
        if gone or new:
            return "calls: " + "; ".join([*(f"no longer {c}" for c in gone), *(f"now {c}" for c in new)])
        return "calls: the same calls in another order"
    if a0 != a1:
        x, y = changed_part(a0, a1)
        return f'answer: "{x}" -> "{y}"'
    return "an earlier reply changed"


@dataclass
class RowChange:
    row_id: str
    seeds: list[int]
    what: str                  # the first difference, on the first seed that differs
    failed: list[str]          # scorers the mutant failed on this row's gate runs
    why: str = ""              # why the gate did not fail for it (survivors)
    suggest: str = ""          # what would catch it (survivors)


@dataclass
class Classified:
    status: str
    exit_code: int | None = None
    line: str = ""                                        # the gate's headline
    findings: list[str] = field(default_factory=list)     # killed: the gate's reasons
    rows: list[str] = field(default_factory=list)         # killed: the rows named (regressed, or failing a scorer named)
    scorers: list[str] = field(default_factory=list)      # killed: the scorers named
    changed: list[RowChange] = field(default_factory=list)
    reason: str = ""                                      # equivalent: why; error: what


def _gate_runs(record: Record) -> dict[tuple[str, int], RunResult]:
    return {(r.row_id, r.trial): r for r in record.runs_for(record.meta.version) if r.stage == "gate"}


def changed_rows(baseline: Record, mutant: Record) -> list[RowChange]:
    """The rows whose behaviour differs on some seed both ran (or that only one of them ran)."""
    before, after = _gate_runs(baseline), _gate_runs(mutant)
    by_row: dict[str, RowChange] = {}
    for key in sorted(set(before) | set(after)):
        b, a = before.get(key), after.get(key)
        if b is not None and a is not None and behaviour(b) == behaviour(a):
            continue
        what = "run on one side only" if b is None or a is None else difference(behaviour(b), behaviour(a))
        change = by_row.setdefault(key[0], RowChange(key[0], [], what, []))
        change.seeds.append(key[1])
        if a is not None:
            change.failed = sorted(set(change.failed) | {n for n, v in a.verdicts.items() if v.passed is False})
    for change in by_row.values():
        change.suggest = suggestion(before, after, change)
    return list(by_row.values())


def suggestion(before: dict, after: dict, change: RowChange) -> str:
    """What a row would have to expect to tell the two apart (from the first differing seed)."""
    b, a = before.get((change.row_id, change.seeds[0])), after.get((change.row_id, change.seeds[0]))
    if b is None or a is None:
        return ""
    (c0, _, a0, _), (c1, _, a1, _) = behaviour(b), behaviour(a)
    new = sorted({n for n, _ in c1} - {n for n, _ in c0})
    gone = [_call(*c) for c in c0 if c not in c1]
    if new:
        return f"a row like {change.row_id} with expect.forbid {new}"
    if gone:
        return f"a row like {change.row_id} with expect.calls [{gone[0]}]"
    if a0 != a1:
        return f"a row like {change.row_id} pinning the answer's facts (expect.answer) or a rubric"
    return f"a multi-turn row like {change.row_id} checking the earlier replies"


def _failed(run: RunResult | None, scorer: str) -> bool:
    verdict = run.verdicts.get(scorer) if run is not None else None
    return verdict is not None and verdict.passed is False


def classify(baseline: Record, mutant: Record, verdict: Any, behaviour_of: tuple[Record, Record] | None = None
             ) -> Classified:
    """verdict: the mutant's gate Verdict (turngate.verdict.decide) on `mutant`; behaviour_of: the
    (baseline, mutant) runs behaviour is compared on, when not the gates' own."""
    changed = changed_rows(*(behaviour_of or (baseline, mutant)))
    before = _gate_runs(baseline)
    crashed = [r for k, r in _gate_runs(mutant).items() if r.turn.error and not (k in before and before[k].turn.error)]
    if crashed:  # the edit broke the agent: reported as such, never counted as killed
        return Classified(ERROR, verdict.exit_code, verdict.headline, changed=changed,
                          reason=f"{len(crashed)} run(s) crashed, e.g. {crashed[0].row_id}: "
                                 f"{_short(crashed[0].turn.error, 100)}")
    if verdict.exit_code == 2:
        return Classified(ERROR, 2, verdict.headline, changed=changed, reason=verdict.headline)
    if verdict.exit_code == 1:
        scorers = sorted({f.subject for f in verdict.findings if f.kind != "row regressed" and f.subject != "*"}
                         | {s for x in verdict.regressed for s in x.scorers if s != "*"})
        # the rows the reruns confirmed; for a bar or a total, those failing a scorer the gate named on
        # a seed where the baseline passed it (at a temperature above 0, sampling noise among them)
        rows = [x.row_id for x in verdict.regressed if x.kind == "row"] or sorted(
            {k[0] for k, r in _gate_runs(mutant).items()
             if any(v.passed is False and n in scorers and not _failed(before.get(k), n) for n, v in r.verdicts.items())})
        return Classified(KILLED, 1, verdict.headline, [f.text for f in verdict.findings], rows, scorers, changed)
    flaky = {x.row_id: x for x in verdict.flaky if x.kind == "row"}
    for change in changed:
        if not change.failed:
            change.why = "every scorer passed on it"
        elif change.row_id in flaky:
            change.why = f"{', '.join(change.failed)} failed, but the reruns judged it flaky"
        else:
            change.why = f"{', '.join(change.failed)} failed, within the accepted failure rate"
    if changed:
        return Classified(SURVIVED, 0, verdict.headline, changed=changed)
    return Classified(EQUIVALENT, 0, verdict.headline)
