"""RunView (turngate/record/views.py): compare's lean reading checks what it reads of a run by the
same rules as RunResult, and keeps the rest of the Turn as read (the digest covers it)."""
from __future__ import annotations

import copy
import dataclasses

import pytest
from pydantic import ValidationError

from turngate.core.turn import Turn
from turngate.record.results import RunResult
from turngate.record.views import RUN_VIEWS, RunView

GOOD = {"row_id": "r1", "trial": 3, "seed": 3, "version": "v3", "job": "refund-agent@v3",
        "turn": {"version": "v3", "model": "offline", "seed": 3, "answer": "done",
                 "messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "done"}],
                 "tool_calls": [{"name": "get_order", "arguments": {"order_id": "A-1"}, "result": {"ok": 1},
                                 "error": None}],
                 "writes": [], "usage": {"prompt_tokens": 5, "completion_tokens": 1, "llm_calls": 2},
                 "seconds": 0.0, "error": None},
        "verdicts": {"tool_use": {"passed": True, "explanation": "pass"},
                     "escalation": {"passed": None, "explanation": "n/a"}},
        "stage": "gate"}


def _set(path: tuple, value):
    run = copy.deepcopy(GOOD)
    at = run
    for k in path[:-1]:
        at = at[k]
    if value is _DROP:
        del at[path[-1]]
    else:
        at[path[-1]] = value
    return run


_DROP = object()

# (where, what): each changes one thing in a good run that a reader of verdicts reads; the model
# and the view must agree on it
READ = [
    (("turn", "usage"), _DROP), (("turn", "version"), _DROP), (("turn", "version"), 3), (("turn", "model"), _DROP),
    (("turn", "answer"), _DROP), (("turn", "error"), 3), (("turn", "error"), "boom"), (("turn", "error"), _DROP),
    (("turn",), "not a turn"), (("turn",), ["v3"]), (("turn",), _DROP),
    (("verdicts", "tool_use", "passed"), "yes"), (("verdicts", "tool_use", "passed"), None),
    (("verdicts", "tool_use", "explanation"), _DROP), (("verdicts", "tool_use", "score"), 1),
    (("verdicts", "tool_use"), "pass"), (("verdicts",), _DROP), (("trial",), "three"), (("stage",), _DROP),
    (("stage",), "confirm"), (("job",), _DROP), (("row_id",), 5), (("seed",), _DROP), (("extra",), 1),
]
# ... and inside the Turn, what only readers of Turns read: the model refuses these, the view
# keeps them as read (the digest covers them; show, report and regrade refuse them)
UNREAD = [
    (("turn", "messages", 0, "role"), "system"), (("turn", "tool_calls", 0, "arguments"), [1]),
    (("turn", "usage", "llm_calls"), "many"), (("turn", "surprise"), 1),
]


def _accepts(validate, run) -> bool:
    try:
        validate(run)
        return True
    except ValidationError:
        return False


def _view(run):
    return RUN_VIEWS.validate_python([run])


def test_a_run_view_has_the_fields_of_a_run_result():
    view = [f.name for f in dataclasses.fields(RunView)]
    assert view == list(RunResult.model_fields)
    required = {f.name for f in dataclasses.fields(RunView)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert required == {n for n, f in RunResult.model_fields.items() if f.is_required()}
    turn_required = {n for n, f in Turn.model_fields.items() if f.is_required()}
    assert turn_required == {"version", "model"}  # what TurnHead requires


def test_a_good_run_reads_the_same_as_a_view():
    view, = _view(GOOD)
    run = RunResult.model_validate(GOOD)
    assert (view.row_id, view.trial, view.seed, view.version, view.job, view.stage) == \
        (run.row_id, run.trial, run.seed, run.version, run.job, run.stage)
    assert view.verdicts == run.verdicts and view.key == run.key
    assert view.turn == GOOD["turn"]  # the Turn as read, nothing filled in or left out
    assert view.agent_error is None and run.agent_error is None


@pytest.mark.parametrize(("where", "value"), READ, ids=[".".join(map(str, w)) + f"={v!r}"[:20] for w, v in READ])
def test_the_view_accepts_and_refuses_what_the_model_does_in_what_it_reads(where, value):
    run = _set(where, value)
    assert _accepts(_view, run) == _accepts(RunResult.model_validate, run)


def test_the_changes_include_runs_the_model_accepts_and_runs_it_refuses():
    verdicts = [_accepts(RunResult.model_validate, _set(w, v)) for w, v in READ]
    assert sum(verdicts) >= 5 and len(verdicts) - sum(verdicts) >= 12


@pytest.mark.parametrize(("where", "value"), UNREAD, ids=[".".join(map(str, w)) for w, _ in UNREAD])
def test_what_the_view_does_not_read_is_kept_as_read(where, value):
    run = _set(where, value)
    assert not _accepts(RunResult.model_validate, run)
    view, = _view(run)
    assert view.turn == run["turn"]


def test_the_view_refuses_a_bad_agent_error_and_keeps_a_good_one():
    assert not _accepts(_view, _set(("turn", "error"), {"why": "timeout"}))
    view, = _view(_set(("turn", "error"), "timeout after 120 s"))
    assert view.agent_error == "timeout after 120 s"


# -- SealedRun: the same reading by msgspec, for a file whose seal holds ---------------------------

def _sealed(run):
    import orjson

    from turngate.record.views import _RUNS

    return _RUNS.decode(orjson.dumps([run]))


def _sealed_accepts(run) -> bool:
    import msgspec

    try:
        _sealed(run)
        return True
    except msgspec.ValidationError:
        return False


def test_a_sealed_run_has_the_fields_of_a_run_view():
    import msgspec

    from turngate.record.results import ScorerVerdict
    from turngate.record.views import SealedRun, SealedTurnHead, SealedVerdict, TurnHead

    fields = msgspec.structs.fields(SealedRun)
    assert [f.name for f in fields] == [f.name for f in dataclasses.fields(RunView)]
    assert {f.name for f in fields if f.required} == \
        {f.name for f in dataclasses.fields(RunView) if f.default is dataclasses.MISSING
         and f.default_factory is dataclasses.MISSING}
    assert [f.name for f in msgspec.structs.fields(SealedVerdict)] == [f.name for f in dataclasses.fields(ScorerVerdict)]
    assert [f.name for f in msgspec.structs.fields(SealedTurnHead)] == list(TurnHead.__annotations__)


def _same(sealed, view) -> bool:
    return ((sealed.row_id, sealed.trial, sealed.seed, sealed.version, sealed.job, sealed.stage, sealed.key,
             sealed.agent_error, sealed.turn.version, sealed.turn.model)
            == (view.row_id, view.trial, view.seed, view.version, view.job, view.stage, view.key,
                view.agent_error, view.turn["version"], view.turn["model"])
            and {n: (v.passed, v.explanation) for n, v in sealed.verdicts.items()}
            == {n: (v.passed, v.explanation) for n, v in view.verdicts.items()})


@pytest.mark.parametrize(("where", "value"), READ + UNREAD,
                         ids=[".".join(map(str, w)) + f"={v!r}"[:20] for w, v in READ + UNREAD])
def test_what_msgspec_accepts_the_view_accepts_with_the_same_values(where, value):
    """msgspec may refuse more (the file is then read the pydantic way, which decides); what it
    accepts, the view accepts, and both read the same."""
    run = _set(where, value)
    if _sealed_accepts(run):
        assert _accepts(_view, run)
        (sealed,), (view,) = _sealed(run), _view(run)
        assert _same(sealed, view)


def test_msgspec_reads_the_good_run_and_refuses_most_bad_ones_itself():
    (sealed,), (view,) = _sealed(GOOD), _view(GOOD)
    assert _same(sealed, view)
    refused_by_view = [(w, v) for w, v in READ if not _accepts(_view, _set(w, v))]
    assert all(not _sealed_accepts(_set(w, v)) for w, v in refused_by_view)
