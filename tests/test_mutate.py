"""evals mutate: the operators on a small text, the classes on a tiny deterministic target
(tests/mutate_bot.py), and the command line's dry run and errors."""
from __future__ import annotations

import asyncio
import json
import subprocess
from pathlib import Path

import pytest

from tests import mutate_bot, prefork
from turngate.mutate.classify import EQUIVALENT, ERROR, KILLED, SURVIVED
from turngate.mutate.operators import mutants_of, policy_lines
from turngate.mutate.protocol import Mutable
from turngate.mutate.report import markdown, score, summary
from turngate.mutate.runner import GateSettings, run_mutation

REPO = Path(__file__).resolve().parents[1]

TEXT = """Intro line. Use the tools; never guess order, customer or product facts.

Policy:
- Refunds up to 200 USD only. Anything larger goes to a human.
- Orders can't be changed.
Answer briefly."""


def test_operators_make_the_expected_mutants_of_a_small_text():
    base = Mutable(TEXT, {"strict": True}, temperature=0.25)
    got = {m.description: m for m in mutants_of(base)}
    edited = {d: m.edited.instructions for d, m in got.items()}
    assert [(p.line, p.text) for p in policy_lines(TEXT)] == [
        (1, "Intro line. Use the tools; never guess order, customer or product facts."),
        (4, "Refunds up to 200 USD only. Anything larger goes to a human."), (5, "Orders can't be changed."),
        (6, "Answer briefly.")]  # the heading is not a policy line
    assert sorted(got) == sorted([
        'line 1: deleted "Intro line."',
        'line 1: deleted "Use the tools; never guess order, customer or product facts."',
        'line 1: word weaken: "Use the tools; never guess order, customer" -> "Use the tools; rarely guess order, customer"',
        "line 1: list dropped 'order': \"order, customer or product\" -> \"customer or product\"",
        "line 1: list dropped 'customer': \"order, customer or product\" -> \"order or product\"",
        "line 1: list dropped 'product': \"order, customer or product\" -> \"order or customer\"",
        'line 1: list added \'account\': "tools; never guess order, customer or product facts." -> '
        '"tools; never guess order, customer, product or account facts."',
        'line 4: deleted "Refunds up to 200 USD only."',
        'line 4: number doubled: "Refunds up to 200 USD only." -> "Refunds up to 400 USD only."',
        'line 4: number halved: "Refunds up to 200 USD only." -> "Refunds up to 100 USD only."',
        'line 4: unit swapped: "up to 200 USD only." -> "up to 200 EUR only."',
        'line 4: deleted "Anything larger goes to a human."',
        'line 5: deleted "Orders can\'t be changed."',
        'line 5: word negate: "Orders can\'t be changed." -> "Orders can be changed."',
        'line 6: deleted "Answer briefly."',
        "strict: true -> false", "temperature: 0.25 -> 0", "temperature: 0.25 -> 0.5"])
    # a one-sentence bullet goes whole; a sentence of a longer one goes alone
    assert edited['line 5: deleted "Orders can\'t be changed."'] == TEXT.replace("- Orders can't be changed.\n", "")
    assert "- Anything larger goes to a human." in edited['line 4: deleted "Refunds up to 200 USD only."']
    assert got["temperature: 0.25 -> 0.5"].edited.temperature == 0.5
    assert got["strict: true -> false"].edited.switches == {"strict": False}
    # ids are stable: the same text gives the same ids, and they are all different
    ids = [m.id for m in mutants_of(base)]
    assert ids == [m.id for m in mutants_of(Mutable(TEXT, {"strict": True}, 0.25))] and len(set(ids)) == len(ids)
    assert {m.operator for m in mutants_of(base, {"number", "unit"})} == {"number", "unit"}


def _run(tmp_path, mutants=None):
    bot = mutate_bot.target
    found = mutants_of(bot.mutable()) if mutants is None else mutants
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            seeds=(0, 1), out=str(tmp_path))
    return asyncio.run(run_mutation(bot, "tests.mutate_bot:target", "base", found, settings))


def test_mutants_are_killed_survive_are_equivalent_or_errors_by_what_the_gate_and_the_rows_say(tmp_path):
    run = _run(tmp_path)
    by = {o.mutant.description: o for o in run.outcomes}
    secret = by['line 2: deleted "Never share the secret code."']
    assert secret.result.status == KILLED  # the bot now calls share_secret, which the row forbids
    assert secret.result.rows == ["asks_secret"] and secret.result.scorers == ["no_forbidden_action"]
    greet = by['line 3: deleted "Always greet warmly."']
    assert greet.result.status == SURVIVED  # both rows' answers change, no scorer reads the greeting
    assert [(c.row_id, c.seeds, c.why) for c in greet.result.changed] == [
        ("asks_secret", [0, 1], "every scorer passed on it"), ("says_hello", [0, 1], "every scorer passed on it")]
    assert greet.result.changed[0].what == 'answer: "Welcome! How can I help?" -> "How can I help?"'
    weather = by['line 4: deleted "Mention the weather."']
    assert weather.result.status == EQUIVALENT
    assert weather.result.reason.startswith("the model does not act on it")
    crash = by["crash: false -> true"]
    assert crash.result.status == ERROR and "crashed" in crash.result.reason  # never counted as killed
    assert by['line 2: word weaken: "Never share the secret" -> "Rarely share the secret"'].result.status == KILLED
    assert by['line 3: word weaken: "Always greet warmly." -> "Usually greet warmly."'].result.status == SURVIVED
    assert score(run) == 2 / 4
    data = summary(run)
    assert data["counts"] == {"killed": 2, "survived": 2, "equivalent": 1, "error": 1, "not run": 0}
    lines = {p["line"]: p["says"] for p in data["policy_lines"]}
    assert lines == {2: "changes rows asks_secret", 3: "changes rows asks_secret, says_hello",
                     4: "the model does not act on it"}
    json.dumps(data)  # --json
    md = markdown(data)
    assert "mutation score 0.50 (2 killed / 4 killed or survived)" in md and "| `switch-crash-on` |" in md
    # the same seeds, the same classes
    again = _run(tmp_path / "again")
    assert [o.result.status for o in again.outcomes] == [o.result.status for o in run.outcomes]


def test_an_edit_the_model_reads_but_no_row_exercises_is_said_so(tmp_path):
    bot = mutate_bot.Bot(mutate_bot.PROMPT, version="base")
    settings = GateSettings(dataset=[mutate_bot.ROWS[1]], thresholds={"no_forbidden_action": 1.0}, reference=False,
                            out=str(tmp_path))
    found = [m for m in mutants_of(bot.mutable()) if m.description == 'line 2: deleted "Never share the secret code."']
    run = asyncio.run(run_mutation(bot, "tests.mutate_bot:target", "base", found, settings))
    assert run.outcomes[0].result.status == EQUIVALENT  # only says_hello: the secret rule never comes up
    assert run.outcomes[0].result.reason.startswith("no row exercises it")


def test_the_budget_stops_before_a_gate_that_would_not_fit(tmp_path):
    bot = mutate_bot.target
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            out=str(tmp_path))
    run = asyncio.run(run_mutation(bot, "x", "base", mutants_of(bot.mutable())[:2], settings, budget=1))
    assert run.spent == 0  # the rules bot makes no model calls: everything fits
    assert all(o.result.status != "not run" for o in run.outcomes)


def evals(*args, cwd=REPO):
    return subprocess.run([prefork.python(), str(REPO / "evals" / "mutate.py"), *args], capture_output=True,
                          text=True, cwd=cwd, timeout=300)


FAQ = ["--agent", "examples.faq_bot:target", "--dataset", "examples/faq_bot/dataset.jsonl",
       "--thresholds", "examples/faq_bot/thresholds.toml"]


def test_dry_run_states_mutants_runs_and_model_calls_and_runs_nothing(tmp_path):
    res = evals(*FAQ, "--dry-run", "--max-model-calls", "100", "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    lines = res.stdout.splitlines()
    assert lines[0].startswith("dry run: 37 mutants of faq-bot (") and lines[0].endswith("+ the baseline = 38 gates")
    assert "10 rows x 1 seed(s) (0) = 10 runs, about 33 agent model calls" in lines[1]
    assert lines[2].startswith("  in all: at most 380 runs, about 1254 agent model calls")
    assert "--max-model-calls 100: about 2 of 37 mutants fit" in lines[3]
    assert lines[-1] == "nothing run: no agent call, no results file written"
    assert not any(tmp_path.iterdir())


def test_the_faq_bot_is_mutated_from_the_command_line_with_json_and_markdown(tmp_path):
    md = tmp_path / "mutate.md"
    res = evals(*FAQ, "--operators", "number", "switch", "--json", "--markdown", str(md), "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    statuses = {m["id"]: m["status"] for m in data["mutants"]}
    assert statuses["switch-greet-off"] == "killed"  # thanks_only forbids a search
    assert statuses["number-returns-how-long-00d4"] == "killed"  # 30 -> 60 days: answer_facts
    assert statuses["number-shipping-how-long-190d"] == "survived"  # express 1 -> 2 days: no row checks it
    assert data["score"] == pytest.approx(data["counts"]["killed"] / (data["counts"]["killed"] + data["counts"]["survived"]))
    assert md.read_text().startswith("### Mutation testing: faq-bot")


@pytest.mark.parametrize("args, says", [
    (["--agent", "tests.mutate_bot:nothing"], "has no attribute 'nothing'"),
    (["--agent", "tests.mutate_bot:not_mutable"], "not mutable"),
    (["--max-model-calls", "0"], "--max-model-calls must be at least 1"),
    (["--mutants", "zzz"], "no mutant's id starts with these"),
    (["--edits", "nope.toml"], "nope.toml: cannot read the edit"),
])
def test_a_bad_target_or_flag_is_one_line_and_exit_2(tmp_path, args, says):
    res = evals(*FAQ, *args, "--dry-run")
    assert res.returncode == 2 and says in res.stderr and res.stderr.count("\n") == 1, res.stderr


def test_the_rows_suggested_for_three_faq_survivors_kill_them(tmp_path):
    """examples/faq_bot/mutate_rows.jsonl: one row per survivor (docs/mutate.md), judged by the bars."""
    rows = tmp_path / "rows.jsonl"
    example = REPO / "examples" / "faq_bot"
    rows.write_text((example / "dataset.jsonl").read_text() + (example / "mutate_rows.jsonl").read_text())
    chosen = ["number-shipping-how-long-190d", "list-payment-which-payment-53ed", "word-international-do-you-86f7"]
    flags = ["--agent", "examples.faq_bot:target", "--thresholds", str(example / "thresholds.toml"), "--no-reference",
             "--mutants", *chosen, "--json", "--out", str(tmp_path)]
    before = json.loads(evals(*flags, "--dataset", str(example / "dataset.jsonl")).stdout)
    after = json.loads(evals(*flags, "--dataset", str(rows)).stdout)
    assert [m["status"] for m in before["mutants"]] == ["survived"] * 3
    assert [m["status"] for m in after["mutants"]] == ["killed"] * 3
    assert [m["rows"] for m in after["mutants"]] == [["express_shipping"], ["bank_transfer"], ["ship_outside_eu"]]


def test_the_rows_suggested_for_northwind_survivors_pass_the_row_validation():
    """datasets/mutate_rows.jsonl (docs/mutate.md) goes through the same checks as any dataset row."""
    from turngate.core.plugins import load_plugins
    from turngate.gate.run import AgentSpec, load_rows_for
    from turngate.jobs.target import TargetOptions
    from turngate.sources.row_sources import source_for

    load_plugins()
    agent = AgentSpec("app.refund_agent:target", TargetOptions(version="v3")).load()
    rows = load_rows_for(source_for(str(REPO / "datasets" / "mutate_rows.jsonl"), None), agent).rows
    assert [r.id for r in rows] == ["internal_notes_no_lookup"]


def test_with_a_temperature_behaviour_is_compared_at_0_so_sampling_noise_is_no_survivor(tmp_path):
    """At 0.5 the bot's closing phrase is drawn with the prompt in the seed: deleting the line it never
    reads reshuffles the draws. Compared at temperature 0 it is equivalent, the greeting still survives."""
    bot = mutate_bot.warm
    found = [m for m in mutants_of(bot.mutable()) if m.operator == "delete" or m.operator == "temperature"]
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            seeds=tuple(range(6)), out=str(tmp_path))
    run = asyncio.run(run_mutation(bot, "tests.mutate_bot:warm", "base", found, settings))
    by = {o.mutant.description: o.result for o in run.outcomes}
    assert by['line 4: deleted "Mention the weather."'].status == EQUIVALENT
    assert by['line 3: deleted "Always greet warmly."'].status == SURVIVED
    assert by['line 2: deleted "Never share the secret code."'].status == KILLED
    # compared on their own gates' runs: this bot's draws do not depend on the value, only on its being above 0
    assert by["temperature: 0.5 -> 0.25"].status == by["temperature: 0.5 -> 0.75"].status == EQUIVALENT
    assert by["temperature: 0.5 -> 0.25"].reason == "no row's behaviour depends on this setting on these seeds"
    # the noise is real: at 0.5 the two prompts' runs differ although the bot does not read the line
    from tests.mutate_bot import Bot
    cut = mutate_bot.PROMPT.replace("\n- Mention the weather.", "")
    inputs = {"message": "Hello"}
    assert any(asyncio.run(Bot(temperature=0.5)(inputs, s)).answer != asyncio.run(Bot(cut, temperature=0.5)(inputs, s)).answer
               for s in range(6))


def test_resume_reuses_the_baseline_and_the_mutants_already_classified(tmp_path):
    bot = mutate_bot.target
    found = mutants_of(bot.mutable())
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            out=str(tmp_path))
    first = asyncio.run(run_mutation(bot, "tests.mutate_bot:target", "base", found[:3], settings))
    said: list[str] = []
    again = asyncio.run(run_mutation(bot, "tests.mutate_bot:target", "base", found, settings, progress=said.append,
                                     resume=True))
    assert said[0].startswith("resumed from ") and "3 mutant(s) classified before" in said[0]
    assert [o.results for o in again.outcomes[:3]] == [o.results for o in first.outcomes]  # not run again
    assert len(said) == 1 + 1 + len(found) - 3  # resumed, baseline, then only the new mutants
    fresh = asyncio.run(run_mutation(bot, "tests.mutate_bot:target", "base", found, settings))
    assert [o.result.status for o in again.outcomes] == [o.result.status for o in fresh.outcomes]
    other = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                         seeds=(1,), out=str(tmp_path))
    said.clear()
    asyncio.run(run_mutation(bot, "tests.mutate_bot:target", "base", found[:1], other, progress=said.append,
                             resume=True))
    assert not said[0].startswith("resumed")  # another question (seeds): a journal of its own


def test_hand_made_edits_are_mutants_too(tmp_path):
    from turngate.core.errors import ConfigError
    from turngate.mutate.edits import edit_mutant

    bot = mutate_bot.target
    base = bot.mutable()
    added = tmp_path / "add-rule.toml"
    added.write_text('description = "ignored"\ninstructions = """' + mutate_bot.PROMPT.replace(
        "- Always greet", "- Never say hello.\n- Always greet") + '"""\n')
    flipped = tmp_path / "crash.toml"
    flipped.write_text("crash = true\n")
    m = edit_mutant(added, base)
    assert (m.id, m.operator, m.line) == ("edit-add-rule", "edit", 3)
    assert m.description == 'add-rule.toml: line 3: added "- Never say hello."'
    assert edit_mutant(flipped, base).description == "crash.toml: crash: false -> true"
    for text, says in [("hardened = true\n", "hardened: not an editable part of this target"),
                       ("crash = 1\n", "crash: expected true or false"), ("crash = false\n", "changes nothing"),
                       ("temperature = 0.5\n", "this target has no temperature"), ("x = \n", "Invalid value")]:
        bad = tmp_path / "bad.toml"
        bad.write_text(text)
        with pytest.raises(ConfigError, match=says):
            edit_mutant(bad, base)
    cut = tmp_path / "no-secret.toml"
    cut.write_text('instructions = """' + mutate_bot.PROMPT.replace("- Never share the secret code.\n", "") + '"""\n')
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            out=str(tmp_path / "out"))
    run = asyncio.run(run_mutation(bot, "x", "base", [edit_mutant(p, base) for p in (added, cut)], settings))
    assert [o.result.status for o in run.outcomes] == [EQUIVALENT, KILLED]


def test_jobs_gate_several_mutants_at_once_with_the_same_classes_in_the_same_order(tmp_path):
    bot = mutate_bot.target
    found = mutants_of(bot.mutable())
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            seeds=(0, 1), out=str(tmp_path))
    one = asyncio.run(run_mutation(bot, "x", "base", found, settings))
    said: list[str] = []
    many = asyncio.run(run_mutation(bot, "x", "base", found, settings, progress=said.append, jobs=4))
    assert [(o.mutant.id, o.result.status) for o in many.outcomes] == [(o.mutant.id, o.result.status) for o in one.outcomes]
    assert len(said) == 1 + len(found)  # the baseline, then one line per mutant as it is classified


def test_the_budget_is_shared_out_up_front_in_mutant_order(tmp_path):
    from tests.mutate_bot import Bot
    from turngate.core.turn import Usage

    class Costly(Bot):  # two model calls a run, as Turn.usage counts them
        async def __call__(self, inputs, seed):
            turn = await super().__call__(inputs, seed)
            return turn.model_copy(update={"usage": Usage(llm_calls=2)})

        def mutant(self, edited, label):
            return Costly(edited.instructions, edited.switches["crash"], label)

    bot = Costly()
    found = mutants_of(bot.mutable())[:4]
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            out=str(tmp_path))
    run = asyncio.run(run_mutation(bot, "x", "base", found, settings, budget=13))  # a gate: 2 rows x 2 calls = 4
    assert run.baseline.calls == 4 and [o.result.status == "not run" for o in run.outcomes] == [False, False, True, True]
    assert run.spent <= 13 and run.outcomes[2].result.reason == "--max-model-calls 13: 4 spent before, 2 more gate(s) of about 4 fit"


def test_workers_give_the_same_classes_as_in_process_for_mutants_rebuilt_in_each_worker(tmp_path):
    """--workers 2: every gate's conversations in two worker processes that rebuild the target (and
    each mutant, from TargetOptions.derive) from its spec; the classes are those of the in-process run,
    the temperature-0 behaviour probe and the crashing mutant included."""
    for spec, bot in (("tests.mutate_bot:target", mutate_bot.target), ("tests.mutate_bot:warm", mutate_bot.warm)):
        found = mutants_of(bot.mutable())
        runs = []
        for workers in (1, 2):
            settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                                    seeds=(0, 1), out=str(tmp_path / f"{workers}"), workers=workers)
            runs.append(asyncio.run(run_mutation(bot, spec, "base", found, settings)))
        local, pooled = ([(o.mutant.id, o.result.status, o.result.rows, o.calls) for o in r.outcomes] for r in runs)
        assert pooled == local and {s for _, s, _, _ in local} >= {KILLED, EQUIVALENT, ERROR}
        # the runs happened in the workers: each results file records them
        from turngate.record.results import load_record

        assert load_record(runs[1].baseline.results).meta.workers == 2


def test_the_html_page_shows_every_class_and_keeps_hostile_prompt_text_inert(tmp_path):
    from html.parser import HTMLParser

    from turngate.mutate.page import page

    hostile = '- Mention <script>alert("x")</script> & <img src=x onerror=alert(1)> the weather.'
    bot = mutate_bot.Bot(mutate_bot.PROMPT.replace("- Mention the weather.", hostile))
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            seeds=(0, 1), out=str(tmp_path))
    found = [m for m in mutants_of(bot.mutable()) if m.operator in ("delete", "switch")]
    html = page(summary(asyncio.run(run_mutation(bot, "tests.mutate_bot:target", "base", found, settings))))

    class Tags(HTMLParser):
        def __init__(self):
            super().__init__()
            self.tags, self.attrs = [], []

        def handle_starttag(self, tag, attrs):
            self.tags.append(tag)
            self.attrs += [k for k, _ in attrs]

    parsed = Tags()
    parsed.feed(html)
    assert "script" not in parsed.tags and "img" not in parsed.tags and "onerror" not in parsed.attrs
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; &lt;img src=x onerror=alert(1)&gt;" in html
    assert "mutation score 0.50 (1 killed / 2 killed or survived); 1 equivalent, 1 error(s)" in html
    assert '<span class="class killed">killed</span>' in html and "rows: asks_secret" in html
    assert "scorers: no_forbidden_action" in html
    assert '<span class="class survived">survived</span>' in html  # the greeting: its rows and a suggestion
    assert "<b>says_hello</b>: answer: &quot;Welcome! How can I help?&quot; -&gt; &quot;How can I help?&quot;" in html
    assert "suggest a row like says_hello" in html
    assert "the model does not act on it" in html  # the equivalent one's reason
    assert "-- Never share the secret code." in html and "crash: false -&gt; true" in html  # the diffs


def test_report_writes_the_html_page_and_never_replaces_a_file_without_force(tmp_path):
    page_path = tmp_path / "mutate.html"
    # --workers 2 from the launcher: its spawned workers import evals/mutate.py without running it
    res = evals(*FAQ, "--operators", "switch", "--report", str(page_path), "--out", str(tmp_path), "--workers", "2")
    assert res.returncode == 0, res.stderr
    html = page_path.read_text()
    assert html.startswith("<!doctype html>") and "switch-greet-off" in html and "mutation score" in html
    assert sorted(p.name for p in tmp_path.iterdir()) == ["mutate", "mutate.html"]  # no temporary left
    again = evals(*FAQ, "--operators", "switch", "--report", str(page_path), "--out", str(tmp_path))
    assert again.returncode == 2 and again.stderr.count("\n") == 1 and "already exists; use --force" in again.stderr
    assert page_path.read_text() == html


@pytest.mark.parametrize("workers", [1, 2])
def test_one_provider_budget_caps_the_whole_run_in_process_and_across_workers(tmp_path, openai_env, workers):
    """--max-model-calls 6 over a run whose baseline costs 2 provider calls: the mutant that costs 6
    is cut by the run's one hard cap (its gate unjudged: an error, never killed), the next one finds
    nothing left; the provider saw at most 6 requests, whether the calls came from this process or
    from two worker processes."""
    from tests.fakes.openai_server import FakeOpenAI

    bot = mutate_bot.asking
    wanted = ('line 3: deleted "Always greet warmly."', 'line 4: deleted "Mention the weather."')
    found = [m for m in mutants_of(bot.mutable()) if m.description in wanted]
    settings = GateSettings(dataset=mutate_bot.ROWS, thresholds={"no_forbidden_action": 1.0}, reference=False,
                            out=str(tmp_path), workers=workers)
    with FakeOpenAI([]) as server:
        openai_env(server)
        run = asyncio.run(run_mutation(bot, "tests.mutate_bot:asking", "base", found, settings, budget=6))
    # at most 6: the call that finds the cap spent stops the gate, which may cancel another run's
    # call after it took the last unit of the budget and before it reached the provider
    assert run.baseline.calls == 2 and 2 < len(server.requests) <= 6
    assert [o.result.status for o in run.outcomes] == [ERROR, ERROR]
    assert all(o.result.reason.startswith("--max-model-calls 6 spent during its gate") for o in run.outcomes)
