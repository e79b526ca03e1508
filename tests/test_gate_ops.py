"""Running the gate for real: cache, interrupt and resume, secrets, redaction, isolation."""
from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from app.refund_agent import versions
from app.refund_agent.client import aask_agent
from tests import prefork
from tests.fakes.openai_server import FakeOpenAI, text_completion
from turngate.commands import regression
from turngate.jobs import model_cache as cache_mod

REPO = Path(__file__).resolve().parents[1]
FEW = ["refund_full_a1001", "refund_over_limit", "status", "mt_pressure_a1005"]


def only_result(tmp_path):
    (path,) = tmp_path.glob("*.json")
    return json.loads(path.read_text())


@pytest.fixture
def no_global_cache():
    yield
    cache_mod.disable_cache()


def test_second_cached_run_makes_no_model_calls(tmp_path, no_global_cache, capsys):
    db = tmp_path / "cache.sqlite"
    args = ["--version", "v3", "--only", *FEW, "--no-upload", "--quiet", "--cache", str(db)]
    regression.main([*args, "--out", str(tmp_path / "a")])
    first = only_result(tmp_path / "a")
    assert first["meta"]["cache"]["model_calls_made"] > 0 and first["meta"]["cache"]["served_from_cache"] == 0
    regression.main([*args, "--out", str(tmp_path / "b")])
    second = only_result(tmp_path / "b")
    assert second["meta"]["cache"] == {"served_from_cache": first["meta"]["cache"]["model_calls_made"],
                                       "model_calls_made": 0}
    assert "0 made" in capsys.readouterr().out
    assert [r["turn"]["answer"] for r in first["runs"]] == [r["turn"]["answer"] for r in second["runs"]]


async def test_a_changed_prompt_misses_the_cache_for_the_calls_it_changes(tmp_path, monkeypatch, no_global_cache):
    vdir = tmp_path / "versions"
    vdir.mkdir()
    original = (versions.VERSIONS_DIR / "v3.toml").read_text()
    (vdir / "v3.toml").write_text(original)
    (vdir / "v3b.toml").write_text(original.replace("Answer briefly", "Answer politely and briefly"))
    monkeypatch.setattr(versions, "VERSIONS_DIR", vdir)
    versions.load_version.cache_clear()
    cache = cache_mod.enable_cache(tmp_path / "c.sqlite")
    try:
        await aask_agent("What's the status of order A-1002?", "v3")
        made = cache.misses
        await aask_agent("What's the status of order A-1002?", "v3")
        assert cache.misses == made  # unchanged: all served
        await aask_agent("What's the status of order A-1002?", "v3b")
        assert cache.misses == 2 * made  # the system prompt is in every call, so every call misses
    finally:
        versions.load_version.cache_clear()


def _gate_cmd(out, *extra, parallelism=2):
    return [prefork.python(), str(REPO / "evals" / "regression.py"), "--version", "v3", "--trials", "2",
            "--no-upload", "--quiet", "--parallelism", str(parallelism), "--model", "offline:latency=40ms",
            "--out", str(out), *extra]


def _wait_until(ready, proc, what: str, limit_s: float = 180.0):
    """Wait for a readiness condition the child makes true (never a fixed sleep); fail if the
    child exits first. The limit only stops a broken run from hanging the suite."""
    deadline = time.monotonic() + limit_s
    while not ready():
        if proc.poll() is not None:
            raise AssertionError(f"the gate exited ({proc.returncode}) before {what}: {proc.stderr.read()[-1500:]}")
        if time.monotonic() > deadline:
            proc.kill()
            raise AssertionError(f"no {what} within {limit_s:g} s")
        time.sleep(0.05)


def _runs_on_disk(out: Path) -> int:
    """Runs in the results file the gate is writing (it replaces the file atomically)."""
    for path in out.glob("v3-*.json"):
        try:
            return len(json.loads(path.read_text())["runs"])
        except (ValueError, KeyError):
            return 0  # created, not yet written
    return 0


HANGS = "not_returnable"  # one of the first 12 rows; its runs never finish, so the cut run cannot end first


def _cut_run(tmp_path, sig):
    """A gate run with one row that never finishes, interrupted once some runs are on disk."""
    cut = tmp_path / "cut"
    proc = subprocess.Popen(_gate_cmd(cut, "--limit", "12", "--fault", f"run-hangs:{HANGS}", parallelism=4),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_until(lambda: _runs_on_disk(cut) > 0, proc, "finished runs in the results file")
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, (out[-1500:], err[-1500:])
    assert "Traceback" not in err
    (path,) = cut.glob("v3-*.json")
    record = json.loads(path.read_text())
    assert record["meta"]["complete"] is False and record["meta"]["interrupted"] is True
    assert 0 < len(record["runs"]) <= 22 and HANGS not in {r["row_id"] for r in record["runs"]}
    assert record["verdict"] is None
    return path, record


def test_interrupted_run_is_kept_and_resume_completes_it(tmp_path):
    full = subprocess.run(_gate_cmd(tmp_path / "full", "--limit", "12"), capture_output=True, text=True, timeout=300)
    assert full.returncode in (0, 1), full.stderr[-2000:]  # judged; which verdict is not the point here
    cut_path, _ = _cut_run(tmp_path, signal.SIGINT)
    from turngate.record.results import load_record, save_record

    cut = load_record(cut_path)
    cut.meta.faults = []  # resume without the injected hang: the missing runs then finish normally
    cut.replan()  # as if planned so (a file edited by hand is refused: its plan and digest)
    save_record(cut, cut_path)
    resumed = subprocess.run([prefork.python(), str(REPO / "evals" / "regression.py"), "--resume", str(cut_path),
                              "--no-upload", "--quiet"], capture_output=True, text=True, timeout=300)
    assert resumed.returncode == full.returncode, resumed.stderr[-2000:]
    done = json.loads(cut_path.read_text())
    (full_path,) = (tmp_path / "full").glob("*.json")
    whole = json.loads(full_path.read_text())
    assert done["meta"]["complete"] is True and len(done["runs"]) == 24
    assert done["summary"]["v3"]["scorers"] == whole["summary"]["v3"]["scorers"]
    assert [(r["row_id"], r["trial"], r["turn"]["answer"]) for r in done["runs"]] == \
        [(r["row_id"], r["trial"], r["turn"]["answer"]) for r in whole["runs"]]


def test_sigterm_keeps_what_finished_too(tmp_path):
    _cut_run(tmp_path, signal.SIGTERM)


@pytest.mark.parametrize("how", ["script", "console entry point"])
def test_ctrl_c_during_start_up_is_one_line_and_exit_2(tmp_path, how):
    # -X importtime reports each import as it completes: once the module that installs the
    # handler has been imported, the next reported import means the command's own (module
    # level) imports are under way: the readiness signal for a Ctrl-C "during start-up"
    args = ["--no-upload", "--out", str(tmp_path)]
    # (turngate.cli installs it first thing in main(), before importing the subcommand)
    if how == "script":
        start = [str(REPO / "evals" / "regression.py"), *args]
    else:
        start = ["-c", f"import sys; from turngate.cli import run; sys.argv = ['evals', 'gate', *{args!r}]; run()"]
    marker = "| turngate.cli"
    proc = subprocess.Popen([sys.executable, "-X", "importtime", *start],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    seen, armed = [], False
    for line in proc.stderr:
        seen.append(line)
        if armed:
            break
        armed = line.rstrip().endswith(marker)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    said = [line for line in "".join(seen + [err]).splitlines() if not line.startswith("import time:")]
    assert proc.returncode == 2, (out[-1000:], said)
    assert said == ["interrupted"]


def test_api_keys_never_reach_results_reports_or_output(tmp_path):
    key = "sk-fake-0123456789abcdefSECRET"

    with FakeOpenAI([text_completion("hi")] * 2, fail_first=100, fail_status=401) as server:
        env = {**os.environ, "OPENAI_API_KEY": key, "OPENAI_BASE_URL": server.url}
        # make the server's error text carry the key, as a careless proxy would
        server.fail_body = key
        res = subprocess.run([prefork.python(), str(REPO / "evals" / "regression.py"), "--version", "v3",
                              "--only", "status", "--model", "openai:gpt-test", "--max-retries", "0",
                              "--no-upload", "--out", str(tmp_path), "--report", str(tmp_path / "r.html")],
                             capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 1
    assert server.headers and any(key in str(h) for h in server.headers)  # the key was really used
    for text in (res.stdout, res.stderr, *(p.read_text() for p in tmp_path.iterdir())):
        assert key not in text


def test_redact_results_masks_emails_everywhere(tmp_path):
    code = regression.main(["--version", "v3", "--only", "find_by_email", "--no-upload", "--quiet",
                            "--out", str(tmp_path), "--redact-results"])
    assert code in (0, 1)
    text = next(tmp_path.glob("*.json")).read_text()
    assert "dana.kim@example.com" not in text and "[email]" in text
    assert json.loads(text)["meta"]["redacted"] is True


async def test_32_concurrent_refund_conversations_never_see_each_others_writes():
    turns = await asyncio.gather(*(aask_agent("Refund order A-1001 in full.", "v1", seed=i) for i in range(32)))
    for t in turns:
        assert t.error is None
        refunds = [w for w in t.writes if w["action"] == "refund"]
        assert refunds == [{"action": "refund", "order_id": "A-1001", "amount": 129.0, "reference": "W-0001"}]
        assert any(c.name == "refund_order" and c.result and c.result.get("ok") for c in t.tool_calls)


def test_a_failed_orq_upload_is_one_scrubbed_log_line(tmp_path):
    key = "orq-fake-0123456789SECRETKEY"
    # the "platform" answers every request with an error that quotes the credentials back
    with FakeOpenAI([], fail_first=1000, fail_status=500) as server:
        server.fail_body = f"bad token Bearer {key} ({key})"
        env = {**os.environ, "ORQ_API_KEY": key, "ORQ_BASE_URL": server.url.removesuffix("/v1")}
        res = subprocess.run([prefork.python(), str(REPO / "evals" / "regression.py"), "--version", "v3",
                              "--only", "status", "--out", str(tmp_path)],
                             capture_output=True, text=True, env=env, timeout=120)
    assert res.returncode == 0, res.stderr[-1500:]
    assert server.requests, "evaluatorq should have tried to upload"
    assert key not in res.stdout + res.stderr
    assert "Traceback" not in res.stderr
    assert "[secret]" in res.stderr or "Could not" in res.stderr  # the failure was reported, scrubbed
    assert key not in next(tmp_path.glob("*.json")).read_text()
