"""evals mutate --review DIR: each survivor handed to evals review as a draft failure mode, its
changed runs noted and assigned to it, end to end on real gates (the FAQ bot from the command
line, then `evals review --export`; the tiny bot at a temperature, whose behaviour is compared
at 0, in process)."""
from __future__ import annotations

import asyncio
import json
import shlex
import subprocess
from pathlib import Path

from tests import mutate_bot, prefork
from turngate.mutate.classify import SURVIVED
from turngate.mutate.handoff import REVIEW_FILE, write_handoff
from turngate.mutate.operators import mutants_of
from turngate.mutate.runner import GateSettings, run_mutation
from turngate.review.store import ReviewStore

REPO = Path(__file__).resolve().parents[1]
FAQ = ["--agent", "examples.faq_bot:target", "--dataset", "examples/faq_bot/dataset.jsonl",
       "--thresholds", "examples/faq_bot/thresholds.toml", "--no-reference"]
# two survivors (no row checks express shipping's days, nor that bank transfer is accepted) and a kill
CHOSEN = ["number-shipping-how-long-190d", "list-payment-which-payment-53ed", "switch-greet-off"]


def launcher(name: str, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([prefork.python(), str(REPO / "evals" / f"{name}.py"), *args], capture_output=True, text=True,
                          cwd=REPO, timeout=300)


def test_faq_survivors_become_draft_modes_that_the_review_export_turns_into_scorer_skeletons(tmp_path):
    folder = tmp_path / "handed"
    res = launcher("mutate", *FAQ, "--mutants", *CHOSEN, "--json", "--out", str(tmp_path / "out"),
                   "--review", str(folder))
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert [m["status"] for m in data["mutants"]] == ["survived", "survived", "killed"]
    handed = data["review"]
    assert (handed["survivors"], handed["runs"]) == (2, 2)
    assert sorted(p.name for p in folder.iterdir()) == sorted([f"{CHOSEN[0]}.json", f"{CHOSEN[1]}.json", REVIEW_FILE])
    assert "review: 2 survivor(s), 2 changed run(s) noted" in res.stderr

    store = ReviewStore(folder / REVIEW_FILE)
    state = store.load()  # the review's own reader takes the file as it stands
    store.close()
    assert [m.name for m in state.modes.values()] == [f"{CHOSEN[0]} survives", f"{CHOSEN[1]} survives"]
    notes = sorted(state.notes.values())
    assert notes[0].startswith(f"[evals mutate {CHOSEN[1]}] answer: ") and "bank transfer" in notes[0]
    assert "express takes 2 business day" in notes[1] and "every scorer passed on it" in notes[1]
    assert not state.labels and state.position is not None  # labels are the reviewer's verdict

    # the command it prints opens the review; its export makes the taxonomy and a skeleton per survivor
    command = shlex.split(handed["command"])
    assert command[:2] == ["evals", "review"]
    export = tmp_path / "export"
    got = launcher("review", *command[2:], "--export", str(export), "--coverage", "recorded")
    assert got.returncode == 0, got.stderr
    taxonomy = json.loads((export / "taxonomy.json").read_text())
    modes = {m["name"]: m for m in taxonomy["modes"]}
    assert list(modes) == [f"{CHOSEN[0]} survives", f"{CHOSEN[1]} survives"]
    for mode in modes.values():  # the gap the survivor showed: no scorer fails its runs
        assert mode["coverage"] == "uncovered" and len(mode["runs"]) == 1 and mode["scorer_skeleton"]
        assert (export / mode["scorer_skeleton"]).is_file()
    assert modes[f"{CHOSEN[0]} survives"]["examples"][0]["row_id"] == "shipping_time"
    assert [o["mode"] for o in taxonomy["open_coding"]] and len(taxonomy["open_coding"]) == 2

    # a second hand-off never replaces the review file (it may hold the reviewer's notes) without --force
    again = launcher("mutate", *FAQ, "--mutants", *CHOSEN, "--out", str(tmp_path / "out"), "--review", str(folder))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "already exists" in again.stderr, again.stderr
    assert "Traceback" not in again.stderr


def test_at_a_temperature_the_runs_compared_at_0_are_handed_over_and_equivalents_are_not(tmp_path):
    bot = mutate_bot.warm
    found = [m for m in mutants_of(bot.mutable()) if m.operator == "delete"]
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            seeds=(0, 1), out=str(tmp_path / "out"))
    run = asyncio.run(run_mutation(bot, "tests.mutate_bot:warm", "base", found, settings))
    survivors = [o for o in run.outcomes if o.result.status == SURVIVED]
    assert [o.mutant.description for o in survivors] == ['line 3: deleted "Always greet warmly."']
    handed = write_handoff(run, tmp_path / "handed")
    assert handed.records == [tmp_path / "handed" / f"{survivors[0].mutant.id}.json"]
    assert handed.runs == 4  # both rows on both seeds lost their "Welcome!"
    state = ReviewStore(handed.review).load()
    assert all(run_key.split("/")[0].endswith("-t0") for _, run_key in state.notes)  # the runs at temperature 0
    assert all('"Welcome! ' in text for text in state.notes.values())
    assert len(set(state.assigned.values())) == 1
    # nothing survived: nothing written
    none = write_handoff(run.__class__(**{**run.__dict__, "outcomes": [o for o in run.outcomes if o not in survivors]}),
                         tmp_path / "empty")
    assert none.survivors == 0 and not (tmp_path / "empty").exists()
