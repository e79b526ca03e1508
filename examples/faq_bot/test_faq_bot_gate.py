"""The FAQ bot's gate as a test in its own suite: `pytest examples/faq_bot/test_faq_bot_gate.py`
(the project's own suite runs these too, from tests/test_api.py)."""
from pathlib import Path

import turngate
from examples.faq_bot import broken_target, target

HERE = Path(__file__).parent
GATE = {"rows": HERE / "dataset.jsonl", "thresholds": HERE / "thresholds.toml"}  # reference.json beside them


def test_the_bot_passes_its_gate(tmp_path):
    result = turngate.run_gate(target, **GATE, seeds=[0, 1, 2], out=tmp_path)
    assert result.passed, result.verdict.line


def test_a_broken_bot_fails_it(tmp_path):
    result = turngate.run_gate(broken_target, **GATE, out=tmp_path)
    assert result.exit_code == 1
    failed = {name for name, s in result.verdict.scorers.items() if s.ok is False}
    assert failed == {"tool_use", "answer_facts", "no_pii_leak"}, result.verdict.line


async def test_the_gate_from_async_code(tmp_path):
    result = await turngate.run_gate_async(target, **GATE, out=tmp_path, quiet=True)
    assert result.passed, result.verdict.line
