"""`evals mutate --propose N`: a model's plausible edits of the instructions as mutants (operator
`llm`), read strictly (an edit that is not one sentence or line of the text replaced is dropped
with its reason), asked through the provider layer of a local OpenAI-compatible fake: no key, no network."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import prefork
from tests.fakes.openai_server import FakeOpenAI, text_completion
from turngate.jobs.target import TargetOptions, load_target
from turngate.mutate.propose import read_edits

REPO = Path(__file__).resolve().parents[1]
FAQ = ["--agent", "examples.faq_bot:target", "--dataset", "examples/faq_bot/dataset.jsonl",
       "--thresholds", "examples/faq_bot/thresholds.toml", "--no-reference"]
RETURNS = "You can return an item within 30 days of delivery for a full refund."
SHIPPING = "Standard shipping takes 3 to 5 business days; express takes 1 business day."
HOURS = "Support is open Monday to Friday, 9:00 to 17:00 CET."
EDITS = [
    {"before": RETURNS, "after": RETURNS.replace("30", "14"), "why": "a shorter window"},
    {"before": SHIPPING, "after": SHIPPING.replace("1 business day", "2 business days"), "why": "slower express"},
    {"before": "Refunds are instant.", "after": "Refunds take a week."},             # not in the text
    {"before": HOURS, "after": "Support is open\nevery day."},                         # two lines
    {"before": HOURS, "after": HOURS},                                                 # no change
    "oops",                                                                            # not an object
    {"before": RETURNS, "after": RETURNS.replace("30", "60")},                         # a second edit of one sentence
    {"before": HOURS, "after": 'Support is open <script>alert("x")</script> every day.', "why": "<b>hostile</b>"},
    {"before": HOURS, "after": "Support is open every day."},                          # more than asked for
]


def faq():
    return load_target("examples.faq_bot:target", TargetOptions()).mutable()


def test_a_reply_is_read_strictly_each_invalid_edit_dropped_with_its_reason():
    base = faq()
    got = read_edits("Sure! Here they are:\n```json\n" + json.dumps({"edits": EDITS}) + "\n```", base, 8, "openai:m")
    assert [m.operator for m in got.mutants] == ["llm"] * 3
    assert [m.edited.instructions for m in got.mutants][:2] == [
        base.instructions.replace("within 30 days", "within 14 days"),
        base.instructions.replace("express takes 1 business day", "express takes 2 business days")]
    assert got.mutants[0].description == ('line 2: model edit: "…an return an item within 30 days of delivery for a f…" '
                                          '-> "…an return an item within 14 days of delivery for a f…" (a shorter window)')
    assert got.mutants[0].line == 2 and len({m.id for m in got.mutants}) == 3
    assert got.dropped == [
        'edit 3: before "Refunds are instant." is not exactly one sentence or line of the instructions',
        "edit 4: after spans several lines (one sentence or line only)",
        "edit 5: after is the same as before",
        "edit 6: not an object with before and after",
        f'edit 7: a second edit of "{RETURNS[:49]}…"',
        "edit 9: more than the 8 asked for"]
    # the same reply, the same mutants (ids are stable)
    assert [m.id for m in read_edits(json.dumps({"edits": EDITS}), base, 8, "x").mutants] == [m.id for m in got.mutants]


@pytest.mark.parametrize("reply, says", [
    ("I cannot help with that.", "the reply holds no JSON object"),
    ('{"edits": {"before": "x"}}', 'the reply has no list "edits"'),
    ('{"edits": [', "the reply holds no JSON object"),
    ('{"edits": [1, 2,]}', "the reply's JSON does not parse"),
])
def test_a_reply_that_is_not_the_json_asked_for_makes_no_mutant_and_says_why(reply, says):
    got = read_edits(reply, faq(), 3, "openai:m")
    assert got.mutants == [] and len(got.dropped) == 1 and got.dropped[0].startswith(says)


def evals(server, *args):
    env = {**os.environ, "PYTHONPATH": str(REPO), "OPENAI_BASE_URL": server.url,
           "OPENAI_API_KEY": "sk-test-not-a-real-key-123456"}
    return subprocess.run([prefork.python(), str(REPO / "evals" / "mutate.py"), *FAQ, *args], capture_output=True,
                          text=True, cwd=REPO, timeout=300, env=env)


def test_proposed_edits_are_gated_and_classified_like_any_mutant(tmp_path):
    page = tmp_path / "mutate.html"
    with FakeOpenAI([text_completion(json.dumps({"edits": EDITS}))]) as server:
        res = evals(server, "--propose", "8", "--proposer", "openai:gpt-test", "--operators", "llm", "--json",
                    "--report", str(page), "--out", str(tmp_path))
    assert res.returncode == 0, res.stderr
    (request,) = server.requests  # one call, at temperature 0, with the instructions and the number asked
    assert request["model"] == "gpt-test" and request["temperature"] == 0
    prompt = request["messages"][-1]["content"]
    assert "Propose exactly 8 different edits" in prompt and SHIPPING in prompt
    assert "--propose 8: openai:gpt-test proposed 3 valid edit(s), 6 dropped" in res.stderr
    assert "  dropped: edit 4: after spans several lines (one sentence or line only)" in res.stderr
    data = json.loads(res.stdout)
    classes = [(m["operator"], m["line"], m["status"]) for m in data["mutants"]]
    assert classes == [("llm", 2, "killed"), ("llm", 3, "survived"), ("llm", 4, "killed")]
    html = page.read_text()
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html and "<script>" not in html
    assert "(&lt;b&gt;hostile&lt;/b&gt;)" in html


def test_a_proposer_that_fails_or_is_missing_is_one_line_and_exit_2(tmp_path):
    with FakeOpenAI([], fail_first=10, fail_status=401) as server:
        res = evals(server, "--propose", "3", "--proposer", "openai:gpt-test", "--out", str(tmp_path))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "--propose: asking openai:gpt-test for edits failed" in res.stderr
    with FakeOpenAI([]) as server:
        res = evals(server, "--propose", "3", "--out", str(tmp_path))  # no provider model to ask
        assert res.returncode == 2 and "--propose: name the model to ask with --proposer" in res.stderr
        res = evals(server, "--propose", "3", "--proposer", "offline", "--out", str(tmp_path))
        assert res.returncode == 2 and "needs a provider model" in res.stderr
        dry = evals(server, "--propose", "3", "--proposer", "openai:gpt-test", "--dry-run", "--out", str(tmp_path))
    assert dry.returncode == 0 and "openai:gpt-test is asked once for up to 3 more mutants" in dry.stdout
    assert server.requests == []  # neither the refused runs nor the dry run asked the model
