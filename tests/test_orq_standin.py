"""The orq.ai stand-in holds to the clients' own models: what orq-ai-sdk and evaluatorq send
is accepted, anything else is refused with the field named; pages chain by cursor."""
from __future__ import annotations

import asyncio
import json
from datetime import UTC, datetime

import httpx
import pytest

from tests import prefork
from tests.orq_helpers import KEY, as_datapoint, dataset_rows, orq


def points(n: int) -> list[dict]:
    return [as_datapoint(r) for r in dataset_rows(["status", "eta", "tracking", "usd_total", "restock"][:n])]


def test_datapoints_come_page_by_page_through_orq_ai_sdk(monkeypatch):
    from evaluatorq.fetch_data import setup_orq_client

    with orq(monkeypatch, page_size=2, datasets={"ds": points(5)}) as standin:
        client = setup_orq_client(KEY)
        first = client.datasets.list_datapoints(dataset_id="ds", limit=50)
        second = client.datasets.list_datapoints(dataset_id="ds", limit=50, starting_after=first.data[-1].id)
        third = client.datasets.list_datapoints(dataset_id="ds", limit=50, starting_after=second.data[-1].id)
    assert [len(p.data) for p in (first, second, third)] == [2, 2, 1]
    assert (first.has_more, second.has_more, third.has_more) == (True, True, False)
    assert [p.inputs["id"] for p in first.data + second.data + third.data] == [
        "status", "eta", "tracking", "usd_total", "restock"]
    assert standin.received[1]["query"] == {"limit": "50", "starting_after": first.data[-1].id}


def test_a_wrong_key_an_unknown_dataset_and_a_bad_query_are_refused(monkeypatch):
    with orq(monkeypatch, datasets={"ds": points(1)}) as standin:
        url = f"{standin.url}/v2/datasets/ds/datapoints"
        assert httpx.get(url, headers={"Authorization": "Bearer wrong"}).status_code == 401
        assert httpx.get(url).status_code == 401
        ok = {"Authorization": f"Bearer {KEY}"}
        assert httpx.get(url, headers=ok).status_code == 200
        assert httpx.get(url.replace("/ds/", "/nope/"), headers=ok).status_code == 404
        bad = httpx.get(url, params={"limit": "many"}, headers=ok)
        assert bad.status_code == 400 and "integer" in bad.json()["message"]
        assert httpx.get(url, params={"page": "2"}, headers=ok).status_code == 400
    assert KEY not in json.dumps(standin.received)  # what it keeps never holds the key


def evaluatorq_results(value, pass_):
    from evaluatorq import DataPoint, EvaluationResult
    from evaluatorq.types import DataPointResult, EvaluatorScore, JobResult

    score = EvaluationResult(value=value, pass_=pass_, explanation="why")
    return [DataPointResult(data_point=DataPoint(inputs={"id": "status"}, expected_output="x"),
                            job_results=[JobResult(job_name="j", output={"answer": "a"},
                                                   evaluator_scores=[EvaluatorScore(evaluator_name="s", score=score)])])]


def test_evaluatorqs_own_upload_is_accepted_and_recorded(monkeypatch):
    from evaluatorq.send_results import send_results_to_orq

    with orq(monkeypatch) as standin:
        now = datetime.now(UTC)
        reply = asyncio.run(send_results_to_orq(KEY, "exp", "desc", None, evaluatorq_results(None, None), now, now,
                                                raise_on_error=True))
    assert reply.rows_created == 1 and reply.experiment_name == "exp"
    (body,) = standin.experiments
    assert body["_name"] == "exp" and body["_description"] == "desc"
    score = body["results"][0]["jobResults"][0]["evaluatorScores"][0]["score"]
    assert score == {"value": None, "explanation": "why"}  # n/a: an explicit null, no pass


@pytest.mark.parametrize("change, field", [
    (lambda b: b.update(extra=1), "body.extra"),
    (lambda b: b["results"][0]["jobResults"][0].update(job_name="j"), "job_name"),  # not the wire name
    (lambda b: b.update(_evaluationDuration="long"), "evaluation_duration"),
    (lambda b: b["results"][0]["jobResults"][0]["evaluatorScores"][0]["score"].update({"pass": "maybe"}), "pass"),
    (lambda b: b.pop("_name"), "name"),
])
def test_an_upload_evaluatorq_would_not_send_is_refused_naming_the_field(monkeypatch, change, field):
    from evaluatorq.send_results import SendResultsPayload

    from app.orq_standin import evaluatorq_dump

    now = datetime.now(UTC).isoformat()
    body = evaluatorq_dump(SendResultsPayload(name="exp", created_at=now, ended_at=now, evaluation_duration=1,
                                              results=evaluatorq_results(True, True)))
    change(body)
    with orq(monkeypatch) as standin:
        res = httpx.post(f"{standin.url}/v2/spreadsheets/evaluations/receive", json=body,
                         headers={"Authorization": f"Bearer {KEY}"})
    assert res.status_code == 422 and field in res.json()["message"]
    assert standin.experiments == []


def test_the_router_takes_orq_ai_sdk_chat_bodies_and_answers_with_the_offline_model(monkeypatch):
    with orq(monkeypatch) as standin:
        url, auth = f"{standin.router_url}/chat/completions", {"Authorization": f"Bearer {KEY}"}
        good = {"model": "northwind/offline", "messages": [{"role": "user", "content": "Status of A-1002?"}], "seed": 0}
        res = httpx.post(url, json=good, headers=auth, timeout=60)
        assert res.status_code == 200 and res.json()["choices"][0]["message"]["role"] == "assistant"
        bogus = httpx.post(url, json={**good, "temprature": 0.2}, headers=auth)
        assert bogus.status_code == 422 and "temprature" in bogus.json()["message"]
        wrong = httpx.post(url, json={**good, "messages": "hello"}, headers=auth)
        assert wrong.status_code == 422 and "messages" in wrong.json()["message"]
        assert httpx.post(url, json={**good, "model": "offline"}, headers=auth).status_code == 404  # no provider/
        assert httpx.post(url, json=good, headers={"Authorization": "Bearer nope"}).status_code == 401


def test_python_m_app_orq_standin_serves_a_jsonl_dataset(tmp_path):
    import select
    import subprocess

    from tests.orq_helpers import REPO

    log = tmp_path / "received.jsonl"
    proc = subprocess.Popen([prefork.python(), "-m", "app.orq_standin", "--port", "0", "--page-size", "30",
                             "--dataset", f"ds_nw={REPO / 'datasets' / 'northwind.jsonl'}", "--key", KEY,
                             "--log", str(log)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
    try:
        ready, _, _ = select.select([proc.stdout], [], [], 60)  # a bound on the wait for the readiness line
        line = proc.stdout.readline() if ready else ""
        assert line.startswith("serving on http://127.0.0.1:"), (line, proc.stderr.read() if not ready else "")
        url = line.split()[-1]
        assert proc.stdout.readline().split() == [f"ORQ_BASE_URL={url}", f"ORQ_ROUTER_URL={url}/v3/router"]
        page = httpx.get(f"{url}/v2/datasets/ds_nw/datapoints", params={"limit": 50},
                         headers={"Authorization": f"Bearer {KEY}"}).json()
        assert len(page["data"]) == 30 and page["has_more"] is True and page["data"][0]["inputs"]["id"] == "status"
    finally:
        proc.terminate()
        proc.wait(30)
        proc.stdout.close()
        proc.stderr.close()
    (entry,) = map(json.loads, log.read_text().splitlines())
    assert entry["path"] == "/v2/datasets/ds_nw/datapoints" and KEY not in log.read_text()
