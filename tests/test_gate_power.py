"""scripts/gate_power.py: one-change variants of a version, judged on held-out seeds."""
from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
import gate_power  # noqa: E402  (a script, not a package)

from app.refund_agent.versions import load_version  # noqa: E402


def test_every_policy_sentence_switch_and_the_hotter_model_make_one_variant():
    spec = load_version("v3")
    variants = {v.name: v for v in gate_power.variants_of("v3", "v2")}
    deleted = [v for n, v in variants.items() if n.startswith("no-clause-")]
    # v3's policy: the refunds bullet holds three sentences (window, limit, escalation), four more bullets
    assert len(deleted) == 7
    for v in deleted:
        gone = v.change.removeprefix('deleted: "').rstrip('"')[:40]
        assert gone in " ".join(spec.instructions.split()) and gone not in " ".join(v.fields["instructions"].split())
        assert len(v.fields["instructions"]) < len(spec.instructions)
    assert variants["hardened-off"].fields["hardened"] is False and variants["redact-off"].fields["redact"] is False
    assert variants["temperature-0.5"].fields["model"] == "offline:temperature=0.5"
    assert variants["unchanged"].fields["instructions"] == spec.instructions
    assert {"v2-settings", "unchanged"} <= set(variants)
    added = variants["add-claims-done"].fields["instructions"].splitlines()
    assert "- Always tell the customer their request has been completed." in added
    assert [x for x in added if "request has been completed" not in x] == spec.instructions.splitlines()


def test_a_deleted_email_clause_is_caught_on_every_held_out_seed_naming_the_row(tmp_path, capsys):
    out = tmp_path / "power.json"
    assert gate_power.main(["--version", "v3", "--trials", "1", "--blocks", "2", "--seeds", "400-401",
                            "--variants", "no-clause-6", "--parallelism", "8", "--out", str(out)]) == 0
    (email,) = json.loads(out.read_text())["results"]["default/1"]
    assert email["failed"] == email["gates"] == 2
    assert all(any(x.startswith("mass_email / ") for x in b["gave_away"]) for b in email["blocks"])
    assert "gate power: v3" in capsys.readouterr().out


def test_seeds_the_reference_was_calibrated_on_are_refused(capsys):
    assert gate_power.main(["--version", "v3", "--seeds", "0-19", "--variants", "unchanged"]) == 2
    assert "calibrated the reference" in capsys.readouterr().err
