"""--shard K/N and evals/merge.py: v3 at seeds 0-2 on six rows run as three shards and merged is
the unsharded run of the same plan (the same gate runs by (row, seed) with the same verdicts,
the same reruns, the same verdict and exit code); merge refuses a missing, duplicated or foreign
shard in one line, exit 2 (shards of two versions named by their versions); reruns the merged plan
calls for that no shard made are run with the agent and version the shards name, no flag needed; a
shard resumes as any record; shards of other agent code are refused."""
from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from turngate.commands import merge, regression
from turngate.gate.recheck import recompute
from turngate.jobs.shards import assign, parse_shard, plan_digest
from turngate.record.results import load_record, save_record

ROWS = ["mt_pressure_a1005", "refund_expired", "refund_manager_approved_a1005", "status", "eta", "refund_ok"]
BASE = ["--version", "v3", "--seeds", "0-2", "--only", *ROWS, "--no-upload", "--quiet"]


def gate(out: Path, *args: str) -> tuple[int, Path]:
    out.mkdir(parents=True, exist_ok=True)
    before = set(out.glob("v*.json"))
    code = regression.main([*BASE, "--out", str(out), *args])
    (path,) = set(out.glob("v*.json")) - before
    return code, path


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("shards")
    full = gate(tmp / "full")
    shards = [gate(tmp / "shards", "--shard", f"{k}/3") for k in (1, 2, 3)]
    return tmp, full, shards


def by_key(record) -> dict:
    return {(r.version, r.stage, r.row_id, r.trial): {n: v.passed for n, v in r.verdicts.items()} for r in record.runs}


def refused(capsys, *argv: str) -> str:
    capsys.readouterr()
    assert merge.main(list(argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: "), err
    return err[0]


def test_merged_shards_are_the_unsharded_run(runs, capsys):
    tmp, (full_code, full_path), shards = runs
    parts = [load_record(p) for _, p in shards]
    assert [p.meta.shard["index"] for p in parts] == [1, 2, 3]
    ids = [r["id"] for p in parts for r in p.rows]
    assert sorted(ids) == sorted(ROWS) and len(ids) == len(ROWS)  # a partition of the rows
    full = load_record(full_path)
    assert all(p.meta.shard["plan"] == plan_digest(full.plan) for p in parts)  # the whole plan's digest
    out = tmp / "merged.json"
    code = merge.main([*(str(p) for _, p in shards), "--out", str(out)])
    assert code == full_code
    merged = load_record(out)
    assert [r["id"] for r in merged.rows] == [r["id"] for r in full.rows]
    assert by_key(merged) == by_key(full)  # gate runs and reruns, verdict by verdict
    assert merged.meta.confirm["rows"] == full.meta.confirm["rows"]
    v_full, v_merged = recompute(full, full_path), recompute(merged, out)
    assert v_merged.exit_code == v_full.exit_code == code
    assert v_merged.model_dump(exclude={"scorers"}) == v_full.model_dump(exclude={"scorers"})
    assert plan_digest(merged.plan) == plan_digest(full.plan)


def test_merge_refuses_missing_duplicated_and_foreign_shards(runs, capsys, tmp_path):
    tmp, _, shards = runs
    files = [str(p) for _, p in shards]
    out = str(tmp_path / "m.json")
    assert "shard 3/3 is missing" in refused(capsys, *files[:2], "--out", out)
    assert "shard 1/3 given twice" in refused(capsys, files[0], *files, "--out", out)
    _, other_seeds = gate(tmp_path / "seeds", "--shard", "2/3", "--seeds", "0-1")
    assert "seeds" in refused(capsys, files[0], str(other_seeds), files[2], "--out", out)
    dataset = tmp_path / "rows.jsonl"
    lines = Path(regression.DEFAULT_DATASET).read_text().splitlines()
    dataset.write_text("\n".join(x for x in lines if json.loads(x)["id"] in ROWS) + "\n")
    _, other_data = gate(tmp_path / "data", "--shard", "2/3", "--dataset", str(dataset))
    line = refused(capsys, files[0], str(other_data), files[2], "--out", out)
    # the files named in the order of their datasets after them
    assert line == (f"error: {files[0]} and {other_data} are shards of different plans: dataset "
                    f"{load_record(files[0]).plan.dataset['name']} ({load_record(files[0]).plan.dataset['sha256'][:12]}) "
                    f"vs {dataset} ({load_record(other_data).plan.dataset['sha256'][:12]})")
    assert not Path(out).exists()


def test_merge_refuses_a_shard_of_other_agent_code(runs, capsys, tmp_path):
    """A shard run from a checkout whose agent.py differs: its whole plan's digest differs, named."""
    tmp, _, shards = runs
    files = [str(p) for _, p in shards]
    rec = load_record(files[1])
    code = rec.plan.agent_code
    rec.plan.agent_code = {**code, "sha256": "0" * 64, "files": {**code["files"], "app/refund_agent/agent.py": "0" * 64}}
    rec.meta.shard = {**rec.meta.shard, "plan": "0" * 64}  # as that checkout would have digested its whole plan
    other = save_record(rec, tmp_path / "other-code.json")
    line = refused(capsys, files[0], str(other), files[2], "--out", str(tmp_path / "m.json"))
    assert line.endswith("are shards of different plans: the agent's code differs between shards "
                         "(app/refund_agent/agent.py edited)")
    assert plan_digest(rec.plan.model_copy(update={"agent_code": code})) != plan_digest(rec.plan)  # in its digest


def test_reruns_no_shard_made_are_run_with_the_shards_agent(runs, capsys, tmp_path):
    tmp, (full_code, full_path), shards = runs
    files = [str(p) for _, p in shards]
    with_reruns = next(i for i, (_, p) in enumerate(shards) if load_record(p).runs_for("v3", "confirm"))
    record = load_record(files[with_reruns])
    record.runs = [r for r in record.runs if r.stage == "gate"]  # as if that shard had flagged nothing
    files[with_reruns] = str(save_record(record, tmp_path / "no-reruns.json"))
    out = tmp_path / "m.json"
    assert refused(capsys, *files, "--out", str(out), "--version", "v2") == "error: --version v2: the shards ran v3"
    assert merge.main([*files, "--out", str(out), "--no-upload"]) == full_code  # the shards name v3
    assert by_key(load_record(out)) == by_key(load_record(full_path))
    again = tmp_path / "again.json"
    assert merge.main([*files, "--out", str(again), "--version", "v3", "--no-upload"]) == full_code
    assert by_key(load_record(again)) == by_key(load_record(full_path))


def test_shards_of_two_versions_are_named_by_their_versions(runs, capsys, tmp_path):
    tmp, _, shards = runs
    files = [str(p) for _, p in shards]
    _, v2 = gate(tmp_path / "v2", "--shard", "2/3", "--version", "v2")
    line = refused(capsys, files[0], str(v2), files[2], "--out", str(tmp_path / "m.json"))
    assert line == f"error: {files[0]} and {v2} are shards of different plans: version v3 vs v2"


def test_a_shard_resumes_as_any_record(runs, tmp_path):
    _, _, shards = runs
    done = load_record(shards[1][1])
    cut = done.model_copy(deep=True)
    cut.runs = [r for r in cut.runs if r.stage == "gate"][:2]
    cut.meta.complete, cut.meta.confirm = False, {k: done.meta.confirm[k] for k in ("enabled", "k")}
    path = save_record(cut, tmp_path / "v3-cut.json")
    assert regression.main(["--resume", str(path), "--no-upload", "--quiet"]) == shards[1][0]
    assert by_key(load_record(path)) == by_key(done)
    assert load_record(path).meta.shard == done.meta.shard


def test_split_is_deterministic_and_balanced():
    assert parse_shard("2/3") == (2, 3)
    rows = [SimpleNamespace(id=f"r{i}", user_turns=lambda: ["hi"]) for i in range(7)]
    hints = {f"r{i}": c for i, c in enumerate([9, 1, 1, 4, 4, 3, 2])}
    bins = assign(rows, hints, 3)
    assert [[r.id for r in b] for b in bins] == [["r0"], ["r2", "r3", "r5"], ["r1", "r4", "r6"]]
    assert assign(list(reversed(rows)), hints, 3)[0][0].id == "r0"
    for bad in ("0/3", "4/3", "x", "1/0"):
        with pytest.raises(Exception, match="--shard"):
            parse_shard(bad)
