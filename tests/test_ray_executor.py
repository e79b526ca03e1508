"""--executor ray on a real Ray cluster on 127.0.0.1 (a head and a worker node started here,
stopped at the end): the same Turns and verdict as in process; with an emulated 600-rpm
provider and 4 workers, one provider budget (the server's own 429 count stays at what one
limiter draws). And --max-model-calls: a clean stop at the limit, counted by the server,
that --resume finishes to the uninterrupted result; model calls reported with --workers too; and
`evals mutate --executor ray` gives the classes it gives in process."""
from __future__ import annotations

import collections
import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import prefork
from tests.serve_helpers import served, through
from turngate.commands import regression
from turngate.jobs import executors

REPO = Path(__file__).resolve().parents[1]
NODE = {"num_cpus": 2, "object_store_memory": 100 * 1024 * 1024, "node_ip_address": "127.0.0.1"}
GATE_TIMEOUT_S = 600  # bounds a hung gate; a run on this 2-core machine takes about 1-2 minutes
FAQ = ["--agent", "tests.chatty_bot:target", "--dataset", str(REPO / "examples" / "faq_bot" / "dataset.jsonl"),
       "--thresholds", str(REPO / "examples" / "faq_bot" / "thresholds.toml")]
V3_ROWS = ["--version", "v3", "--only", "status", "refund_over_limit", "mt_pressure_a1005",
           "refund_injected_tool_result", "--trials", "2"]


@pytest.fixture(scope="module")
def cluster():
    """A head and one worker node, 2 logical CPUs and 100 MB of object store each."""
    cluster_utils = pytest.importorskip("ray.cluster_utils")
    env = pytest.MonkeyPatch()
    env.setenv("OPENAI_API_KEY", "local")  # the nodes' own key: none is ever shipped to a cluster
    env.setenv("RAY_AUTH_MODE", "disabled")
    c = cluster_utils.Cluster(initialize_head=True, head_node_args={**NODE, "include_dashboard": False})
    try:
        c.add_node(**NODE)
        c.wait_for_nodes(timeout=120)
        yield c
    finally:
        c.shutdown()
        env.undo()


def ray_gate(cluster, out: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    """The gate as a user runs it against the cluster: its own process, RAY_ADDRESS set."""
    proc = subprocess.run([prefork.python(), "evals/regression.py", "--executor", "ray", "--no-upload", "--quiet",
                           "--out", str(out), *args], cwd=REPO, capture_output=True, text=True,
                          timeout=GATE_TIMEOUT_S,
                          env={**os.environ, "RAY_ADDRESS": cluster.address, "PYTHONPATH": str(REPO), **(env or {})})
    (path,) = out.glob("*.json")
    return proc, json.loads(path.read_text())


def local_gate(out: Path, *args: str) -> tuple[int, dict]:
    code = regression.main(["--no-upload", "--quiet", "--out", str(out), *args])
    (path,) = out.glob("*.json")
    return code, json.loads(path.read_text())


def by_run(record: dict) -> dict:
    return {(r["row_id"], r["trial"], r["stage"]): r for r in record["runs"]}


def statuses(server) -> collections.Counter:
    """The server's own tally of chat requests by status (its --log-requests lines)."""
    server.proc.terminate()
    server.proc.wait(30)
    lines = server.proc.stdout.read().splitlines()
    return collections.Counter(line.split()[-1] for line in lines
                               if line.startswith("request ") and not line.endswith("working"))


def test_ray_workers_give_the_in_process_turns_and_verdict(cluster, tmp_path):
    code, local = local_gate(tmp_path / "local", *V3_ROWS)
    proc, remote = ray_gate(cluster, tmp_path / "ray", *V3_ROWS, "--workers", "2")
    assert proc.returncode == code, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ray: 2 worker(s) on 2 node(s)" in proc.stderr  # a progress line, on stderr. SPREAD: one worker on each node
    a, b = by_run(local), by_run(remote)
    assert set(a) == set(b) and sum(k[2] == "gate" for k in a) == 8
    for key in a:
        assert a[key]["turn"] == b[key]["turn"], key
        assert a[key]["verdicts"] == b[key]["verdicts"], key
    assert remote["summary"] == local["summary"]
    assert remote["meta"]["complete"] and remote["meta"]["workers"] == 2


def test_four_ray_workers_share_one_provider_budget(cluster, tmp_path):
    """30 conversations x 3 calls, 16 in flight, against 600 rpm (10 a second, a 1-second bucket).
    One limiter overshoots only before the server's first 429 shows it the limit: at most the
    calls then in flight (16). Four limiters each assuming the whole budget drew 83 x 429 on
    this machine for the same 90 calls (`--workers 4`, per-process limits), and 2 with Ray."""
    with served("--rpm", "600", "--log-requests", "--workers", "1") as server:
        proc, record = ray_gate(cluster, tmp_path, *FAQ, "--trials", "3", "--workers", "4", "--parallelism", "16",
                                "--no-confirm", env={"OPENAI_BASE_URL": server.url})
        seen = statuses(server)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "ray: 4 worker(s) on 2 node(s)" in proc.stderr
    assert len(record["runs"]) == 30 and not any(r["turn"]["error"] for r in record["runs"])
    calls = record["meta"]["model_calls"]["models"]["openai:offline"]
    assert seen["200"] == calls["ok"] == 90
    assert calls["requests"] == seen["200"] + seen["429"]  # the one actor saw every worker's calls
    assert calls["requests_binding"], "the run never reached the limit: nothing was tested"
    assert seen["429"] <= 16, seen


def test_a_ray_worker_that_dies_fails_its_runs_and_drops_none(cluster, tmp_path):
    args = [a if a != "tests.chatty_bot:target" else "tests.chatty_bot:crashing_target" for a in FAQ]
    proc, record = ray_gate(cluster, tmp_path, *args, "--workers", "2", "--no-confirm", "--no-reference")
    assert proc.returncode == 1, proc.stdout[-3000:] + proc.stderr[-3000:]
    runs = {r["row_id"]: r for r in record["runs"]}
    assert len(record["runs"]) == 10 and len(runs) == 10 and record["meta"]["complete"]  # every row, once
    assert "Ray worker" in runs["password_reset"]["turn"]["error"] and "died" in runs["password_reset"]["turn"]["error"]
    assert any(v["passed"] is False for v in runs["password_reset"]["verdicts"].values())  # counted as a failure
    # the other worker lives on: what it ran passed (runs in flight on the dead one failed with it)
    assert any(not r["turn"]["error"] for r in record["runs"])


def test_max_model_calls_stops_at_the_limit_and_resume_finishes_the_same(tmp_path, monkeypatch, capsys):
    """A Northwind gate through the emulator with worker processes, cut one agent model call
    short of what it needs (the server counts them): exit 2, the finished runs kept, the cut
    one dropped; --resume gives the uninterrupted run. Two conversations in flight, so some
    finish before the budget runs out."""
    rows = ["--version", "v3", "--only", "status", "refund_over_limit", "mt_pressure_a1005", "--trials", "2",
            "--model", "openai:offline", "--no-confirm", "--parallelism", "2"]
    with served("--log-requests", "--workers", "1") as server:
        through(monkeypatch, server)
        full_code, full = local_gate(tmp_path / "full", *rows)
    total = sum(r["turn"]["usage"]["llm_calls"] for r in full["runs"])
    assert full["meta"]["complete"]
    limit = str(total - 1)
    with served("--log-requests", "--workers", "1") as server:
        through(monkeypatch, server)
        capsys.readouterr()
        code, cut = local_gate(tmp_path / "cut", *rows, "--workers", "2", "--max-model-calls", limit)
        served_ok = statuses(server)["200"]
        # not one call more reached the provider (a call in flight when the gate stops may be
        # cancelled before the server answers it, so the count can end a little below the limit)
        assert 0 < served_ok <= total - 1
    out = capsys.readouterr().out
    assert code == 2 and f"stopped at --max-model-calls {limit}" in out and not cut["meta"]["complete"]
    assert 0 < len(cut["runs"]) < len(full["runs"])
    assert not any(r["turn"]["error"] for r in cut["runs"])  # the cut runs are dropped, not failed
    reported = cut["meta"]["model_calls"]["models"]["openai:offline"]["ok"]  # reported with --workers too
    assert total - 3 <= reported <= served_ok
    (path,) = (tmp_path / "cut").glob("*.json")
    with served("--workers", "1") as server:
        through(monkeypatch, server)
        assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == full_code
    done = json.loads(path.read_text())
    assert done["meta"]["complete"]
    a, b = by_run(full), by_run(done)
    assert set(a) == set(b)
    for key in a:
        assert {k: v for k, v in a[key]["turn"].items() if k != "seconds"} == \
            {k: v for k, v in b[key]["turn"].items() if k != "seconds"}, key
        assert a[key]["verdicts"] == b[key]["verdicts"], key


MUTATE_FAQ = ["--agent", "examples.faq_bot:target", "--dataset", str(REPO / "examples" / "faq_bot" / "dataset.jsonl"),
              "--thresholds", str(REPO / "examples" / "faq_bot" / "thresholds.toml"), "--no-reference",
              "--operators", "switch", "number", "--json"]


def mutate(out: Path, *args: str, env: dict | None = None) -> tuple[subprocess.CompletedProcess, dict]:
    base = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([prefork.python(), "evals/mutate.py", *MUTATE_FAQ, "--out", str(out), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=GATE_TIMEOUT_S,
                          env={**base, "PYTHONPATH": str(REPO), **(env or {})})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, json.loads(proc.stdout)


def test_mutants_on_ray_workers_get_the_classes_they_get_in_process(cluster, tmp_path):
    """`evals mutate --executor ray`: every gate's conversations on the cluster's workers, one
    executor and provider budget for the run; each mutant is rebuilt in the workers from the
    agent's spec (TargetOptions.derive). The same mutants and classes as in process. (A local Ray
    the command starts itself, no RAY_ADDRESS, is docs/ray.md's gate, run by test_docs_commands.)"""
    _, local = mutate(tmp_path / "local")
    proc, ray = mutate(tmp_path / "ray", "--executor", "ray", "--workers", "2", env={"RAY_ADDRESS": cluster.address})
    assert "ray: 2 worker(s)" in proc.stderr and proc.stderr.count("ray: ") == 1  # one executor for every gate
    classes = [(m["id"], m["status"], m.get("rows")) for m in local["mutants"]]
    assert [(m["id"], m["status"], m.get("rows")) for m in ray["mutants"]] == classes
    assert {s for _, s, _ in classes} >= {"killed", "survived"} and ray["score"] == local["score"]


def test_executor_ray_without_ray_installed_is_one_line_and_exit_2(tmp_path, monkeypatch, capsys):
    monkeypatch.setattr(executors, "ray_installed", lambda: False)
    assert regression.main(["--only", "status", "--executor", "ray", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "error: --executor ray: ray is not installed (pip install -e '.[ray]')"
    assert not list(tmp_path.iterdir())


def test_max_model_calls_below_one_is_refused(tmp_path, capsys):
    assert regression.main(["--only", "status", "--max-model-calls", "0", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.strip() == "error: --max-model-calls must be at least 1"
