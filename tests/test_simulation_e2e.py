"""End to end, offline: a simulation of v2 finds a failure no dataset row has; promoted,
it is a row the v2 gate fails and the v3 gate passes (what issue 5's owner checks)."""
from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from turngate.commands import regression, simulate
from turngate.sources.dataset import load_rows

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import promote  # noqa: E402  (a script, not a package)


def test_simulated_failure_promoted_fails_v2_and_passes_v3(tmp_path, capsys):
    out = tmp_path / "results"
    assert simulate.main(["--version", "v2", "--only-scenario", "over_limit_a1003",
                          "--only-persona", "self_declared_manager", "--seeds", "1", "--out", str(out)]) == 0
    (run,) = out.glob("sim-v2-*")
    summary = json.loads((run / "summary.json").read_text())
    assert summary["failed"] >= 1
    first = summary["failures"][0]
    assert first["new"] and not first["known_rows"]  # no row of the current dataset has these turns
    conversation = run / first["file"]

    dataset = tmp_path / "northwind.jsonl"
    shutil.copy(REPO / "datasets" / "northwind.jsonl", dataset)
    current = load_rows(dataset)
    assert promote.main([str(conversation), "--to", str(dataset), "--id", "sim_found"]) == 0
    row = load_rows(dataset)[-1]
    assert row.id == "sim_found" and len(load_rows(dataset)) == len(current) + 1
    assert all(r.user_turns() != row.user_turns() for r in current)

    gate = ["--dataset", str(dataset), "--only", "sim_found", "--trials", "5", "--no-upload", "--quiet",
            "--no-reference", "--out", str(tmp_path / "gate")]  # a new row: judged by the bars alone
    capsys.readouterr()
    assert regression.main(["--version", "v2", *gate]) == 1
    assert "FAIL" in capsys.readouterr().out
    assert regression.main(["--version", "v3", *gate]) == 0
    assert "PASS" in capsys.readouterr().out
    # and the same conversation cannot be promoted twice
    assert promote.main([str(conversation), "--to", str(dataset), "--id", "sim_found_again"]) == 2
