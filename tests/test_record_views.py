"""RunView (evals/record/views.py): compare's lean reading checks a run by the same rules as
RunResult, its Turn included, without building the Turn's models."""
from __future__ import annotations

import copy
import dataclasses

import pytest
from pydantic import ValidationError

from evals.core.turn import Turn
from evals.record.results import RunResult
from evals.record.views import RUN_VIEWS, RunView

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

# (where, what): each changes one thing in a good run; the model and the view must agree on it
CHANGES = [
    (("turn", "messages", 0, "role"), "system"), (("turn", "messages", 0, "content"), 7),
    (("turn", "messages", 0, "extra"), "x"), (("turn", "tool_calls", 0, "name"), None),
    (("turn", "tool_calls", 0, "arguments"), [1]), (("turn", "tool_calls", 0, "error"), _DROP),
    (("turn", "tool_calls", 0, "result"), _DROP), (("turn", "usage", "llm_calls"), "many"),
    (("turn", "usage", "cost"), 1.0), (("turn", "usage"), _DROP), (("turn", "version"), _DROP),
    (("turn", "model"), _DROP), (("turn", "answer"), _DROP), (("turn", "error"), 3),
    (("turn", "error"), "boom"), (("turn", "seconds"), "fast"), (("turn", "writes"), {"a": 1}),
    (("turn", "surprise"), 1), (("turn",), "not a turn"), (("turn",), _DROP),
    (("verdicts", "tool_use", "passed"), "yes"), (("verdicts", "tool_use", "explanation"), _DROP),
    (("verdicts", "tool_use", "score"), 1), (("trial",), "three"), (("stage",), _DROP), (("job",), _DROP),
    (("row_id",), 5), (("extra",), 1),
]


def _accepts(validate, run) -> bool:
    try:
        validate(run)
        return True
    except ValidationError:
        return False


def test_a_run_view_has_the_fields_of_a_run_result():
    view = {f.name: f.type for f in dataclasses.fields(RunView)}
    model = {n: f.annotation for n, f in RunResult.model_fields.items()}
    assert list(view) == list(model)
    required = {f.name for f in dataclasses.fields(RunView)
                if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING}
    assert required == {n for n, f in RunResult.model_fields.items() if f.is_required()}


def test_a_good_run_reads_the_same_as_a_view():
    view, = RUN_VIEWS.validate_python([GOOD])
    run = RunResult.model_validate(GOOD)
    assert (view.row_id, view.trial, view.seed, view.version, view.job, view.stage) == \
        (run.row_id, run.trial, run.seed, run.version, run.job, run.stage)
    assert view.verdicts == run.verdicts and view.key == run.key
    assert view.turn == GOOD["turn"]  # the checked dict, nothing filled in
    assert view.agent_error is None and run.agent_error is None


@pytest.mark.parametrize(("where", "value"), CHANGES, ids=[".".join(map(str, w)) for w, _ in CHANGES])
def test_the_view_accepts_and_refuses_what_the_model_does(where, value):
    run = _set(where, value)
    model_ok = _accepts(RunResult.model_validate, run)
    assert _accepts(lambda r: RUN_VIEWS.validate_python([r]), run) == model_ok


def test_the_changes_include_runs_the_model_accepts_and_runs_it_refuses():
    verdicts = [_accepts(RunResult.model_validate, _set(w, v)) for w, v in CHANGES]
    assert sum(verdicts) >= 5 and len(verdicts) - sum(verdicts) >= 15
    assert _accepts(Turn.model_validate, GOOD["turn"])


def test_the_view_refuses_a_bad_turn_and_keeps_an_agent_error():
    assert not _accepts(lambda r: RUN_VIEWS.validate_python([r]), _set(("turn", "messages", 0, "role"), "tool"))
    view, = RUN_VIEWS.validate_python([_set(("turn", "error"), "timeout after 120 s")])
    assert view.agent_error == "timeout after 120 s"
