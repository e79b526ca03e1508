"""`evals mutate --executor ray`: every gate's conversations on Ray workers of a local Ray started
by the command (no RAY_ADDRESS), one provider budget for the run; each mutant is rebuilt in the
workers from the agent's spec (TargetOptions.derive). The same mutants and classes as in process."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests import prefork

REPO = Path(__file__).resolve().parents[1]
FAQ = ["--agent", "examples.faq_bot:target", "--dataset", str(REPO / "examples" / "faq_bot" / "dataset.jsonl"),
       "--thresholds", str(REPO / "examples" / "faq_bot" / "thresholds.toml"), "--no-reference",
       "--operators", "switch", "number", "--json"]
RUN_TIMEOUT_S = 600  # bounds a hung run; it takes well under a minute here


def mutate(out: Path, *args: str) -> tuple[subprocess.CompletedProcess, dict]:
    env = {k: v for k, v in os.environ.items() if k != "RAY_ADDRESS"}
    proc = subprocess.run([prefork.python(), "evals/mutate.py", *FAQ, "--out", str(out), *args], cwd=REPO,
                          capture_output=True, text=True, timeout=RUN_TIMEOUT_S,
                          env={**env, "PYTHONPATH": str(REPO), "RAY_AUTH_MODE": "disabled"})
    assert proc.returncode == 0, proc.stderr[-2000:]
    return proc, json.loads(proc.stdout)


def test_mutants_on_ray_workers_get_the_classes_they_get_in_process(tmp_path):
    pytest.importorskip("ray")
    _, local = mutate(tmp_path / "local")
    proc, ray = mutate(tmp_path / "ray", "--executor", "ray", "--workers", "2")
    assert "ray: 2 worker(s)" in proc.stderr and proc.stderr.count("ray: ") == 1  # one executor for every gate
    classes = [(m["id"], m["status"], m.get("rows")) for m in local["mutants"]]
    assert [(m["id"], m["status"], m.get("rows")) for m in ray["mutants"]] == classes
    assert {s for _, s, _ in classes} >= {"killed", "survived"} and ray["score"] == local["score"]
