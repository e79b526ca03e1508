"""The LLM judge path end to end (--judge openai:<m>) against a local OpenAI-compatible server
with canned verdicts, including malformed and refused replies: each fails closed with the reason."""
from __future__ import annotations

import json

import pytest

from tests.fakes.openai_server import FakeOpenAI, text_completion
from tests.test_judge_calibration import small_labels, write_labels
from turngate.commands import calibrate_judge
from turngate.core.errors import ConfigError
from turngate.scoring.judges import make_judge


def run(tmp_path, replies, openai_env):
    labels = write_labels(tmp_path / "labels.jsonl", [x for x in small_labels() if x["split"] == "test"][:1])
    with FakeOpenAI(replies) as server:
        openai_env(server)
        code = calibrate_judge.main(["--judge", "openai:judge-test", "--labels", str(labels), "--out", str(tmp_path),
                                     "--calibration", str(tmp_path / "cal.json")])
    assert code == 0
    return server, json.loads((tmp_path / "cal.json").read_text()), json.loads(
        (tmp_path / "judge_disagreements-test.json").read_text())


def test_a_canned_pass_verdict_is_read(tmp_path, openai_env):
    server, cal, dis = run(tmp_path, [text_completion('{"pass": true, "reason": "refund confirmed by W-0001"}')], openai_env)
    assert (cal["tp"], cal["fn"]) == (1, 0) and dis["count"] == 0
    sent = server.requests[0]["messages"]
    assert "Northwind support policy" in sent[0]["content"]
    assert "refund_order" in sent[1]["content"] and "## Rubric" in sent[1]["content"]


@pytest.mark.parametrize("reply,reason", [
    (text_completion("Looks fine to me."), "not JSON"),
    (text_completion('{"pass": "yes"}'), "no boolean 'pass'"),
    (text_completion('{"pass": true, "reason": }'), "malformed JSON"),
    ({"role": "assistant", "content": None, "refusal": "I can't help with grading this."}, "refused"),
])
def test_malformed_and_refused_replies_fail_closed_with_the_reason(tmp_path, openai_env, reply, reason):
    _, cal, dis = run(tmp_path, [reply], openai_env)
    assert (cal["tp"], cal["fn"]) == (0, 1)  # a human pass the judge could not grade counts as a fail
    assert reason in dis["disagreements"][0]["judge_reason"]


def test_missing_key_is_a_config_error(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="OPENAI_API_KEY"):
        make_judge("openai:judge-test")
