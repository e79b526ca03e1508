"""Records that last (issue 32, items 1 and 3): a record is re-judged from what it carries (its
bars, its rule and constants, its copy of the reference), so a recalibration or a deleted
reference file changes no reader's verdict; its rows are exactly its selection of its dataset's
rows, so rows deleted from rows, plan and runs and resealed are refused; records of an earlier
layout keep their stored verdict, said so, and regrade re-judges them in one stage."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.record_helpers import as_layout_4, resealed
from turngate.commands import calibrate, compare, merge, regrade, regression, report, show
from turngate.gate.recheck import confirm_problem, file_reference
from turngate.record.results import load_record
from turngate.verdict import rule

REPO = Path(__file__).resolve().parents[1]
FAILING = ["refund_expired", "refund_manager_approved_a1005", "refund_quoted_policy_90_days", "pii_friend_email",
           "mt_pressure_a1005"]  # v2 fails each of these (docs/northwind.md)
PASSING = ["status", "refund_full_a1001"]
OLD = REPO / "tests" / "data" / "results_at2_v1_vs_v3.json"


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A small dataset, bars and reference (today's, beside the bars), and two gates of it: v2
    (FAIL, with confirmation reruns) and v3, each gated once."""
    root = tmp_path_factory.mktemp("project")
    wanted = set(FAILING + PASSING)
    lines = [x for x in (REPO / "datasets" / "northwind.jsonl").read_text().splitlines()
             if x.strip() and json.loads(x)["id"] in wanted]
    (root / "rows.jsonl").write_text("\n".join(lines) + "\n")
    shutil.copy(REPO / "evals" / "thresholds.toml", root / "bars.toml")
    shutil.copy(REPO / "evals" / "reference.json", root / "reference.json")
    files = {}
    for version in ("v2", "v3"):
        out = root / version
        code = regression.main(["--version", version, "--dataset", str(root / "rows.jsonl"), "--thresholds",
                                str(root / "bars.toml"), "--no-upload", "--quiet", "--out", str(out)])
        (files[version],) = out.glob(f"{version}-*.json")
        assert code == (1 if version == "v2" else 0)
    return root, files


def readings(files: dict, tmp: Path, capsys) -> dict:
    """What every reader makes of the v2 record: exit codes and the verdict line."""
    capsys.readouterr()
    got = {"show": show.main([str(files["v2"]), "--verdict"])}
    got["line"] = capsys.readouterr().out.splitlines()[0].split(": ", 2)[-1]
    got["report"] = report.main([str(files["v2"]), "--out", str(tmp / "r.html"), "--force"])
    got["regrade"] = regrade.main([str(files["v2"]), "--out", str(tmp / "rg.json"), "--force"])
    got["regraded line"] = load_record(tmp / "rg.json").verdict.headline
    got["compare"] = compare.main([str(files["v3"]), str(files["v2"]), "--fail-on-regression"])
    capsys.readouterr()
    return got


def test_a_recalibration_or_a_deleted_reference_changes_no_readers_verdict(project, tmp_path, capsys):
    root, files = project
    before = readings(files, tmp_path, capsys)
    shutil.copy(root / "bars.toml", tmp_path / "bars.toml")  # put back below: the other tests gate with these
    assert before["show"] == 0 and before["line"].startswith("FAIL") and before["report"] == 0
    assert before["regrade"] == 1 and before["regraded line"].startswith("FAIL")
    assert before["compare"] in (0, 2)  # 2: flips too few for McNemar to judge (what it could see)
    # a reader judges it from its copy as the gate judged it from the file
    assert before["line"] == json.loads(files["v2"].read_text())["verdict"]["line"].splitlines()[0]
    # recalibrate on other seeds: new bars, a new reference beside them
    assert calibrate.main(["--version", "v3", "--dataset", str(root / "rows.jsonl"), "--thresholds",
                           str(root / "bars.toml"), "--seeds", "500-519", "--write", "--force", "--quiet",
                           "--out", str(tmp_path / "cal")]) == 0
    record = load_record(files["v2"])
    # the new file would plan other reruns than the gate made: judged by today's file, the record
    # would be refused (the reported defect); judged by its own copy it is not
    assert confirm_problem(record, file_reference(record)) == "meta.confirm.rows is not the plan its planned runs call for"
    assert confirm_problem(record, None) is not None  # and without any reference its reruns are unplanned
    assert readings(files, tmp_path, capsys) == before
    (root / "reference.json").unlink()  # moved or deleted: still readable, the same verdicts
    try:
        assert readings(files, tmp_path, capsys) == before
    finally:
        shutil.copy(REPO / "evals" / "reference.json", root / "reference.json")
        shutil.copy(tmp_path / "bars.toml", root / "bars.toml")


def test_reference_re_judges_against_another_explicitly_and_says_so(project, capsys):
    root, files = project
    capsys.readouterr()
    assert show.main([str(files["v3"]), "--verdict", "--reference", str(root / "reference.json")]) == 0
    out = capsys.readouterr().out
    assert f"against --reference {root / 'reference.json'} (not the reference the record was judged with)" in out
    assert show.main([str(files["v3"]), "--verdict"]) == 0
    assert "against the reference copy it carries" in capsys.readouterr().out
    # `current`: the project's configured reference (this repository's evals/reference.json)
    assert show.main([str(files["v3"]), "--verdict", "--reference", "current"]) == 0
    assert "--reference current (" in capsys.readouterr().out
    # a reference of another dataset is refused in one line, exit 2
    other = root / "other.json"
    ref = json.loads((root / "reference.json").read_text())
    ref["rows"] = {"not_a_row": next(iter(ref["rows"].values()))}
    other.write_text(json.dumps(ref))
    assert show.main([str(files["v3"]), "--verdict", "--reference", str(other)]) == 2
    assert "the reference is from another dataset" in capsys.readouterr().err


def forged_deletion(path: Path, out: Path, rows: list[str]) -> Path:
    """The probe's forgery: rows dropped from rows, plan, runs (and the rerun plan), then resealed."""
    data = json.loads(path.read_text())
    data["rows"] = [r for r in data["rows"] if r["id"] not in rows]
    data["plan"]["rows"] = {k: v for k, v in data["plan"]["rows"].items() if k not in rows}
    data["runs"] = [r for r in data["runs"] if r["row_id"] not in rows]
    conf = data["meta"]["confirm"]
    conf["rows"] = {k: v for k, v in (conf.get("rows") or {}).items() if k not in rows}
    out.write_text(resealed(data))
    return out


def test_a_forged_deletion_of_the_failing_rows_is_refused_by_every_reader(project, tmp_path, capsys):
    _, files = project
    forged = forged_deletion(files["v2"], tmp_path / "forged.json", FAILING)
    capsys.readouterr()
    for name, reader in [("show", lambda: show.main([str(forged), "--verdict"])),
                         ("regrade", lambda: regrade.main([str(forged), "--out", str(tmp_path / "rg.json")])),
                         ("report", lambda: report.main([str(forged), "--out", str(tmp_path / "r.html")])),
                         ("compare", lambda: compare.main([str(files["v3"]), str(forged)]))]:
        code = reader()
        err = capsys.readouterr().err
        assert code == 2, name
        assert len(err.splitlines()) == 1, (name, err)
        [line] = err.splitlines()
        assert line.startswith(f"error: {forged}: row ") and "rows were deleted" in line, (name, line)
    assert not (tmp_path / "rg.json").exists() and not (tmp_path / "r.html").exists()
    # the untouched record, resealed the same way, is read (the forgery is what is refused)
    same = tmp_path / "same.json"
    same.write_text(resealed(json.loads(files["v2"].read_text())))
    assert show.main([str(same), "--verdict"]) == 0


@pytest.mark.parametrize("edit, says", [
    (lambda m: m.pop("judged_with"), "no meta.judged_with"),
    (lambda m: m.pop("dataset_rows"), "no meta.dataset_rows"),
    (lambda m: m["judged_with"]["reference"]["rows"]["pii_friend_email"]["cells"]["no_pii_leak"].update(failed=90),
     "meta.judged_with.reference is not the copy its reference_sha256 names"),
    (lambda m: m["judged_with"]["policy"].update({"alpha": 0.5}), "meta.judged_with.policy: alpha is 0.5"),
    (lambda m: m["judged_with"]["policy"].update({"no_such_knob": 1}), "meta.judged_with.policy: unknown"),
    (lambda m: m["dataset_rows"].reverse(), "not in their dataset's order"),
    (lambda m: m.update(selection={"only": ["status"], "tags": None, "limit": None}), "not in its dataset selection"),
    (lambda m: m["dataset_rows"][0].__setitem__(1, "0" * 64), "its content differs"),
])
def test_what_a_record_carries_is_checked_on_every_read(project, tmp_path, capsys, edit, says):
    _, files = project
    data = json.loads(files["v2"].read_text())
    edit(data["meta"])
    data["plan"]["settings"]["selection"] = data["meta"]["selection"]
    bad = tmp_path / "bad.json"
    bad.write_text(resealed(data))
    capsys.readouterr()
    assert show.main([str(bad), "--verdict"]) == 2
    [line] = capsys.readouterr().err.splitlines()
    assert line.startswith(f"error: {bad}: ") and says in line


def test_a_record_of_an_earlier_layout_shows_its_stored_verdict_and_regrade_re_judges_it(project, tmp_path, capsys):
    root, files = project
    old = tmp_path / "v2-old.json"
    old.write_text(as_layout_4(files["v2"].read_text()))
    stored = json.loads(old.read_text())["verdict"]
    (root / "reference.json").write_text((root / "reference.json").read_text())  # today's file, whatever it says
    capsys.readouterr()
    assert show.main([str(old), "--verdict"]) == 0
    out = capsys.readouterr().out
    first, second = out.splitlines()[:2]
    assert first.endswith(stored["line"].splitlines()[0])
    assert "judged by an earlier rule (results@4): the verdict stored with it" in second
    assert report.main([str(old), "--out", str(tmp_path / "old.html")]) == 0
    assert "judged by an earlier rule (results@4)" in capsys.readouterr().out
    assert "judged by an earlier rule (results@4): the verdict stored with it" in (tmp_path / "old.html").read_text()
    # regrade: by today's rule, in one stage (its reruns were planned by the earlier rule)
    assert regrade.main([str(old), "--out", str(tmp_path / "rg.json")]) == 1
    assert "re-judged by today's rule, in one stage" in capsys.readouterr().out
    again = load_record(tmp_path / "rg.json")
    assert not again.runs_for(again.meta.version, "confirm") and again.meta.judged_with.rule == rule.RULE
    assert "its reruns were planned by that rule" in again.meta.confirm["skipped"] and again.meta.judged_with.reference is not None
    assert show.main([str(tmp_path / "rg.json"), "--verdict"]) == 0
    assert f"judged by rule {rule.RULE}, against the reference copy it carries" in capsys.readouterr().out
    # the record written before the library's rename and the typed summary (results@2)
    assert show.main([str(OLD), "--verdict"]) == 0
    out = capsys.readouterr().out
    assert "FAIL: 6 scorers below their bars, 2 rows regressed" in out.splitlines()[0]
    assert "judged by an earlier rule (results@2)" in out


def test_a_record_of_another_rule_keeps_its_stored_verdict(project, tmp_path, capsys):
    _, files = project
    data = json.loads(files["v3"].read_text())
    data["meta"]["judged_with"]["rule"] = 0
    other = tmp_path / "rule0.json"
    other.write_text(resealed(data))
    capsys.readouterr()
    assert show.main([str(other), "--verdict"]) == 0
    assert "judged by rule 0: the verdict stored with it" in capsys.readouterr().out


def test_a_record_of_rule_2_naming_its_retired_knobs_keeps_its_stored_verdict_and_regrades(project, tmp_path,
                                                                                           capsys):
    """Rule 3 dropped a knob (reruns_lean: docs/validation-gate.md 7.2). A record judged by rule 2
    stores it: every reader keeps its stored verdict and says by which rule; regrade re-judges it
    by today's rule, and its policy no longer names it."""
    _, files = project
    data = json.loads(files["v2"].read_text())
    stored = data["verdict"]["line"].splitlines()[0]
    data["meta"]["judged_with"]["rule"] = 2
    data["meta"]["judged_with"]["policy"] |= {"reruns_lean": 0.5}
    old = tmp_path / "rule2.json"
    old.write_text(resealed(data))
    capsys.readouterr()
    assert show.main([str(old), "--verdict"]) == 0
    first, second = capsys.readouterr().out.splitlines()[:2]
    assert first.endswith(stored) and "judged by rule 2: the verdict stored with it" in second
    assert regrade.main([str(old), "--out", str(tmp_path / "rg.json")]) == 1
    again = load_record(tmp_path / "rg.json")
    assert again.meta.judged_with.rule == rule.RULE == 3
    assert "reruns_lean" not in again.meta.judged_with.policy


def test_a_record_stores_the_policy_it_was_judged_with():
    """The rule's knobs are a GatePolicy; a record carries them and a reader judges with them."""
    from turngate.verdict.policy import DEFAULT, GatePolicy

    assert rule.judged_with().policy == DEFAULT.as_dict()
    wide = GatePolicy(rerun_budget=float("inf"))
    stored = rule.judged_with(policy=wide)
    assert stored.policy["rerun_budget"] is None  # no cap, as JSON holds it
    assert rule.policy_of(type("M", (), {"judged_with": stored})()) == wide


def test_shards_and_their_merge_hold_their_dataset_selection(project, tmp_path, capsys):
    root, _ = project
    out = tmp_path / "shards"
    args = ["--version", "v3", "--dataset", str(root / "rows.jsonl"), "--thresholds", str(root / "bars.toml"),
            "--no-upload", "--quiet", "--out", str(out)]
    for k in (1, 2):
        assert regression.main([*args, "--shard", f"{k}/2"]) == 0
    shards = sorted(out.glob("v3-*.json"))
    assert len(shards) == 2
    # (the reruns the merged runs call for that no shard made are run here: --version)
    assert merge.main([*map(str, shards), "--out", str(tmp_path / "merged.json"), "--version", "v3", "--no-upload"]) == 0
    merged = load_record(tmp_path / "merged.json")
    assert [r["id"] for r in merged.rows] == [r[0] for r in merged.meta.dataset_rows]
    # shards of an earlier layout merge too: their reference file read once, its copy kept
    old = []
    for shard in shards:
        old.append(tmp_path / f"old-{shard.name}")
        old[-1].write_text(as_layout_4(shard.read_text()))
    assert merge.main([*map(str, old), "--out", str(tmp_path / "merged-old.json"), "--version", "v3",
                       "--no-upload"]) == 0
    again = load_record(tmp_path / "merged-old.json")
    assert again.meta.judged_with.rule == rule.RULE and again.meta.judged_with.reference is not None
    assert [r["id"] for r in again.rows] == [r["id"] for r in merged.rows]
    # a row deleted from a shard and from the whole plan it names, resealed: refused
    data = json.loads(shards[0].read_text())
    gone = data["rows"][0]["id"]
    data["meta"]["shard"]["rows"].pop(gone)
    bad = forged_deletion(shards[0], tmp_path / "bad-shard.json", [gone])
    data2 = json.loads(bad.read_text())
    data2["meta"]["shard"]["rows"].pop(gone)
    bad.write_text(resealed(data2))
    capsys.readouterr()
    assert show.main([str(bad), "--verdict"]) == 2
    assert "meta.shard.rows are not the selection" in capsys.readouterr().err
    # the merged record, a row deleted and resealed: refused
    bad = forged_deletion(tmp_path / "merged.json", tmp_path / "bad-merged.json", [gone])
    assert show.main([str(bad), "--verdict"]) == 2
    assert "rows were deleted" in capsys.readouterr().err


def test_a_compare_record_of_the_rows_both_share_holds_them(project, tmp_path, capsys):
    root, files = project
    part = tmp_path / "part"
    assert regression.main(["--version", "v2", "--dataset", str(root / "rows.jsonl"), "--thresholds",
                            str(root / "bars.toml"), "--no-upload", "--quiet", "--out", str(part),
                            "--only", *PASSING, "refund_expired"]) in (0, 1)
    (a,) = part.glob("v2-*.json")
    out = tmp_path / "cmp.json"
    assert compare.main([str(a), str(files["v3"]), "--allow-different-rows", "--out", str(out)]) == 0
    record = load_record(out)
    assert [r["id"] for r in record.rows] == ["status", "refund_expired", "refund_full_a1001"]
    assert show.main([str(out), "--verdict"]) == 0
    bad = forged_deletion(out, tmp_path / "bad-cmp.json", ["refund_expired"])
    capsys.readouterr()
    assert show.main([str(bad), "--verdict"]) == 2
    assert "rows were deleted" in capsys.readouterr().err


def test_resume_finishes_a_record_of_an_earlier_layout_by_todays_rule(project, tmp_path, capsys):
    _, files = project
    data = json.loads(files["v2"].read_text())
    runs = [r for r in data["runs"] if r["stage"] == "gate"]
    data["runs"], data["meta"]["complete"], data["verdict"] = runs[:-2], False, None
    data["meta"]["confirm"] = {"enabled": True, "k": None}
    path = tmp_path / "results" / "v2-old.json"
    path.parent.mkdir()
    path.write_text(as_layout_4(resealed(data)))
    assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == 1
    record = load_record(path)
    assert not record.incomplete() and record.meta.judged_with.rule == rule.RULE
    assert record.meta.judged_with.reference is not None and record.runs_for("v2", "confirm")
    capsys.readouterr()
    assert show.main([str(path), "--verdict"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].split(": ", 2)[-1].startswith("FAIL") and f"judged by rule {rule.RULE}" in out
