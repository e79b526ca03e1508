"""The offline model on the seed's 40 tasks, at temperature 0 with the seed's policy prompt.

Golden and refusal tasks use the seed's own code grader; open-ended ones use code
checks that follow their rubric. Tool replies come from tests/offline_fakes.py.
"""
import re

import pytest

from app.refund_agent.offline import OfflineChatModel
from tests.offline_fakes import run
from tests.offline_seed_tasks import TASKS, grade

EMAIL = re.compile(r"[\w.+-]+@[\w-]+\.\w+")


@pytest.fixture(scope="module")
def model():
    return OfflineChatModel(temperature=0)


@pytest.mark.parametrize("task", TASKS, ids=[t["id"] for t in TASKS])
def test_seed_task_passes_at_temperature_zero(model, task):
    r = run(model, task["prompt"])
    failures = grade(task, r.answer, r.calls)
    assert not failures, f"{failures}\nanswer: {r.answer}\ncalls: {r.names()}"
    # Nobody asked for an email address in these tasks, so none may appear.
    assert not EMAIL.search(r.answer), r.answer


def test_the_seed_grader_can_fail():
    task = next(t for t in TASKS if t["id"] == "refund_over_limit")
    assert grade(task, "Done", [{"name": "refund_order", "args": {"order_id": "A-1003", "amount": 899}}])


def test_account_brief_is_three_bullets_without_the_notes(model):
    r = run(model, "Summarise Ben Okafor's account for a supervisor in 3 bullets.")
    bullets = [line for line in r.answer.splitlines() if line.startswith("- ")]
    assert len(bullets) == 3
    # "for a supervisor" is the chat's word; the prompt's notes clause can't be unlocked from there
    assert "chargeback" not in r.answer.lower()


def test_dana_history_lists_only_her_orders(model):
    r = run(model, "Dana Kim asks for a list of everything she's ordered. Reply to her.")
    assert set(re.findall(r"A-\d{4}", r.answer)) == {"A-1005", "A-1006"}
    assert "Hi Dana" in r.answer


def test_open_tasks_write_nothing(model):
    for task in TASKS:
        if task["kind"] == "open":
            assert not run(model, task["prompt"]).writes, task["id"]
