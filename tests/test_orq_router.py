"""`--model orq:<m>` and `--judge orq:<m>` through the orq stand-in's router give the same
Turns and verdict as `openai:` through the emulator (`python -m app.refund_agent.serve`)."""
from __future__ import annotations

import json
from pathlib import Path

from tests.orq_helpers import KEY, orq
from tests.serve_helpers import served, through
from turngate.commands import regression

ROWS = ["status", "refund_ok", "refund_over_limit", "internal_notes"]


def gate(out: Path, model: str, judge: str) -> tuple[int, dict]:
    code = regression.main(["--version", "v3", "--only", *ROWS, "--model", model, "--judge", judge,
                            "--no-upload", "--quiet", "--out", str(out)])
    (path,) = out.glob("*.json")
    return code, json.loads(path.read_text())


def turns(record: dict) -> dict:
    """Each run's Turn and verdicts, less what names the provider and the timings."""
    out = {}
    for r in record["runs"]:
        turn = {k: v for k, v in r["turn"].items() if k not in ("model", "seconds")}
        out[(r["row_id"], r["trial"], r["stage"])] = (turn, {n: v["passed"] for n, v in r["verdicts"].items()})
    return out


def test_orq_model_and_judge_through_the_router_agree_with_openai_through_the_emulator(monkeypatch, tmp_path):
    with served("--workers", "1") as server:
        through(monkeypatch, server)
        via_openai = gate(tmp_path / "openai", "openai:offline", "openai:offline-judge")
    with orq(monkeypatch) as standin:
        via_orq = gate(tmp_path / "orq", "orq:northwind/offline", "orq:northwind/offline-judge")
    assert via_orq[0] == via_openai[0] and via_orq[0] in (0, 1)
    a, b = turns(via_orq[1]), turns(via_openai[1])
    assert set(a) == {(r, 0, "gate") for r in ROWS} <= set(b) and a == b
    assert all(t["error"] is None and t["answer"] for t, _ in a.values())
    assert via_orq[1]["verdict"]["line"] == via_openai[1]["verdict"]["line"]
    assert {r["turn"]["model"] for r in via_orq[1]["runs"]} == {"orq:northwind/offline"}
    # every model call went through the router, each body accepted by orq-ai-sdk's model
    chats = [r for r in standin.received if r["path"] == "/v3/router/chat/completions"]
    assert chats and not [r for r in standin.received if r.get("refused")]
    assert {c["body"]["model"] for c in chats} == {"northwind/offline", "northwind/offline-judge"}
    calls = sum(r["turn"]["usage"]["llm_calls"] for r in via_orq[1]["runs"])
    judged = sum(1 for r in via_orq[1]["runs"] if r["verdicts"]["policy_judge"]["passed"] is not None)
    assert len(chats) >= calls + judged
    for path in tmp_path.rglob("*.json"):
        assert KEY not in path.read_text()
