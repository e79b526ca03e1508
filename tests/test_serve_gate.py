"""The gate through the local OpenAI-compatible server: the same Turns and verdicts as in
process, no run lost to rate limits or 5xx while retries remain, and a server killed mid-run
failing every unfinished run closed."""
from __future__ import annotations

import json
from pathlib import Path

from tests.serve_helpers import served, through
from turngate.commands import regression

MULTI_TURN = ["mt_pressure_a1005", "mt_switch_order_id", "mt_split_over_limit", "mt_identify_then_refund",
              "mt_refund_then_more"]
SINGLE = ["status", "refund_full_a1001", "refund_over_limit", "refund_injected_tool_result"]
HTTP = ["--model", "openai:offline", "--judge", "openai:offline-judge"]


def gate(out: Path, *args: str) -> tuple[int, dict]:
    code = regression.main(["--version", "v3", "--no-upload", "--quiet", "--out", str(out), *args])
    (path,) = out.glob("*.json")
    return code, json.loads(path.read_text())


def by_run(record: dict) -> dict:
    return {(r["row_id"], r["trial"]): r for r in record["runs"]}


def same_turn(a: dict, b: dict) -> bool:
    """Equal apart from what names the transport: the model spec and wall-clock seconds
    (usage is compared too: the server reports the offline model's own counts)."""
    drop = ("model", "seconds")
    return {k: v for k, v in a.items() if k not in drop} == {k: v for k, v in b.items() if k not in drop}


def test_http_gives_the_in_process_turns_and_verdicts_for_the_same_seeds(tmp_path, monkeypatch):
    rows = ["--only", *SINGLE, *MULTI_TURN, "--trials", "2"]
    code_local, local = gate(tmp_path / "local", *rows)
    with served() as server:
        through(monkeypatch, server)
        code_http, http = gate(tmp_path / "http", *rows, *HTTP)
    assert code_http == code_local
    a, b = by_run(local), by_run(http)
    # the same runs, reruns included (their seeds derive from the gate's: the same on both sides)
    assert set(a) == set(b) and sum(r["stage"] == "gate" for r in a.values()) == 2 * (len(SINGLE) + len(MULTI_TURN))
    for key in a:
        assert b[key]["turn"]["model"] == "openai:offline"
        assert same_turn(a[key]["turn"], b[key]["turn"]), key
        assert a[key]["verdicts"] == b[key]["verdicts"], key
    # meta.model_calls counts the planned runs' calls; the confirmation reruns' are in meta.confirm
    planned = [r for r in http["runs"] if r["stage"] == "gate"]
    reruns = [r for r in http["runs"] if r["stage"] == "confirm"]
    calls = http["meta"]["model_calls"]["models"]
    assert calls["openai:offline"]["ok"] == sum(r["turn"]["usage"]["llm_calls"] for r in planned)
    assert calls["openai:offline-judge"]["ok"] == len(planned)
    if reruns:
        extra = http["meta"]["confirm"]["model_calls"]["models"]
        assert extra["openai:offline"]["ok"] == sum(r["turn"]["usage"]["llm_calls"] for r in reruns)


def test_small_gate_passes_through_a_rate_limited_flaky_server(tmp_path, monkeypatch):
    """docs/real-models.md's example: a small gate through the server with a provider's rate limit and 5xx."""
    code_local, local = gate(tmp_path / "local", "--limit", "12")
    with served("--rpm", "300", "--error-rate", "0.1", "--latency", "20ms", "--seed", "1") as server:
        through(monkeypatch, server)
        code_http, http = gate(tmp_path / "http", "--limit", "12", "--parallelism", "8", *HTTP)
    assert code_local == code_http == 0
    a, b = by_run(local), by_run(http)
    assert all(r["turn"]["error"] is None for r in http["runs"])
    assert {k: r["verdicts"] for k, r in a.items()} == {k: r["verdicts"] for k, r in b.items()}
    models = http["meta"]["model_calls"]["models"]
    # the agent and the judge share the server: which of them draws a seeded 5xx depends on the
    # order their requests arrive in, so the limits are counted over both
    assert sum(m["rate_limited"] for m in models.values()) > 0  # the limits really bit ...
    assert sum(m["server_errors"] for m in models.values()) > 0
    for m in models.values():  # ... and cost no run
        assert m["gave_up"] == 0 and m["retries"] == m["requests"] - m["ok"]
    limited = [m for m in models.values() if m["rate_limited"]]
    assert all(m["requests_binding"] and m["min_limit"] < 8 for m in limited)  # whoever drew a 429 backed off


def test_server_killed_mid_run_fails_every_unfinished_run_closed(tmp_path, monkeypatch):
    with served("--die-after", "6") as server:
        through(monkeypatch, server)
        # --no-confirm: the failed rows' reruns would each meet the dead server again (22 s of
        # refused retries); the gate's own runs are what this test is about
        code, record = gate(tmp_path, "--only", *SINGLE, *MULTI_TURN, "--parallelism", "2",
                            "--max-retries", "1", "--model", "openai:offline", "--no-confirm")
        assert server.proc.wait(30) == 3  # it died when request 7 arrived
    assert code in (1, 2)
    planned = [r for r in record["runs"] if r["stage"] == "gate"]
    assert record["meta"]["complete"] and len(planned) == len(SINGLE) + len(MULTI_TURN)
    failed = [r for r in planned if r["turn"]["error"]]
    assert failed, "some runs were still going when the server died"
    for run in failed:
        error = run["turn"]["error"]
        assert "connection failed" in error and "refused" in error.lower() and "after 1 retry" in error, error
        assert all(v["passed"] is False for v in run["verdicts"].values()), run["row_id"]
    st = record["meta"]["model_calls"]["models"]["openai:offline"]
    assert st["gave_up"] >= len(failed) and st["ok"] <= 6
