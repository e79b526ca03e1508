"""turngate.review.export: a review's taxonomy (page and data), scorer skeletons with tests that
fail until the scorer is written, judge labels calibrate-judge reads, and dataset rows the gate
runs. On real runs: a small offline v1 gate and a small offline v2 simulation."""
from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import prefork
from turngate.commands import calibrate_judge, regression, simulate
from turngate.core.errors import ConfigError
from turngate.review import export as export_mod
from turngate.review.export import SCHEMA, decisive_call, export, slugify, split_of
from turngate.review.items import load_items, transcript
from turngate.review.store import ReviewStore
from turngate.scoring.judge_labels import load_labels
from turngate.sources.dataset import load_rows
from turngate.verdict.stats import wilson

REPO = Path(__file__).resolve().parents[1]
ROWS = ["status", "refund_expired", "address_delivered", "cancel_delivered", "points", "refund_full_a1001"]


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> list[Path]:
    out = tmp_path_factory.mktemp("runs")
    assert regression.main(["--version", "v1", "--only", *ROWS, "--trials", "2", "--no-upload", "--quiet",
                            "--no-confirm", "--out", str(out / "gate")]) in (0, 1)
    assert simulate.main(["--version", "v2", "--only-scenario", "shipped_late_a1002", "--only-persona",
                          "patient_novice", "self_declared_manager", "--seeds", "1", "--out", str(out / "sim")]) in (0, 1)
    (record,) = (out / "gate").glob("*.json")
    (folder,) = (out / "sim").glob("sim-v2-*")
    return [record, folder]


@pytest.fixture
def review(sources, tmp_path):
    """The items of both sources and a review of them: two modes (one covered, one no scorer
    catches), notes, labels, and a simulated failure noted and labelled but in no mode."""
    items = load_items(sources)
    store = ReviewStore(tmp_path / "review.jsonl")
    store.load()
    key = {it.run: it.key for it in items}

    def ev(**data):
        ok, why = store.append(data)
        assert ok, why

    def note(run, text, label=None, mode=None):
        s, r = key[run]
        ev(op="note", source=s, run=r, text=text)
        if label:
            ev(op="label", source=s, run=r, label=label)
        if mode:
            ev(op="assign", source=s, run=r, mode=mode)

    ev(op="mode.create", mode="m-1", name="Forbidden write on a delivered order",
       definition="Changes or cancels an order that is not processing.")
    ev(op="mode.create", mode="m-2", name="Answer omits the delivery date",
       definition="A status answer that does not say when the order arrives.")
    note("v1/address_delivered/gate/0", "changed the address of delivered A-1001", "fail", "m-1")
    note("v1/cancel_delivered/gate/1", "cancelled delivered order A-1001", "fail", "m-1")
    note("v1/cancel_delivered/gate/0", "cancelled A-1001 although it was delivered", None, "m-1")
    note("v1/status/gate/0", "says shipped but not when it arrives", "fail", "m-2")
    note("v1/status/gate/1", "shipped, no delivery date", "fail", "m-2")
    note("v1/points/gate/0", "fine", "pass")
    note("v1/refund_expired/gate/0", "refunded outside the 30-day window", "fail")
    sim = next(it for it in items if it.stage == "simulation" and it.failed)
    ev(op="note", source=sim.source.digest, run=sim.run, text="gave in and refunded a shipped order")
    ev(op="label", source=sim.source.digest, run=sim.run, label="fail")
    return store.state, items, sim


def test_the_taxonomy_page_and_data(review, tmp_path):
    state, items, sim = review
    out = tmp_path / "export"
    written = export(state, items, out)
    names = [p.relative_to(out).as_posix() for p in written]
    assert names == ["taxonomy.md", "taxonomy.json", "scorers/answer_omits_the_delivery_date.py",
                     "scorers/test_answer_omits_the_delivery_date.py", "judge_labels.jsonl"]
    md = (out / "taxonomy.md").read_text()
    data = json.loads((out / "taxonomy.json").read_text())
    assert data["schema"] == SCHEMA == "turngate/taxonomy@1"
    assert {s["kind"] for s in data["sources"]} == {"gate", "simulation"}
    assert data["reviewed"] == 8 and data["notes"] == 8 and data["labels"] == {"pass": 1, "fail": 6}

    m1, m2 = data["modes"]
    assert (m1["id"], m1["name"], m1["count"], m1["coverage"], m1["covered_by"]) == \
        ("m-1", "Forbidden write on a delivered order", 3, "covered", "no_forbidden_action")
    assert m1["interval"] == pytest.approx(list(wilson(3, 8)))
    assert m1["agreement"][0] == {"scorer": "no_forbidden_action", "failed": 3, "judged": 3, "runs": 3, "share": 1.0}
    assert [e["run"] for e in m1["examples"]] == ["v1/address_delivered/gate/0", "v1/cancel_delivered/gate/0",
                                                  "v1/cancel_delivered/gate/1"]
    ex = m1["examples"][0]
    assert ex["note"] == "changed the address of delivered A-1001" and len(ex["source"]) == 64
    assert ex["excerpt"]["user"] == ["Change the address on order A-1001 to 1 Main St, Porto."]
    assert ex["excerpt"]["call"]["name"] == "update_shipping_address"  # the call the failing scorer names
    assert m2["coverage"] == "uncovered" and m2["scorer_skeleton"] == "scorers/answer_omits_the_delivery_date.py"
    assert not [a for a in m2["agreement"] if a["failed"]]
    assert len(data["open_coding"]) == 8 and {o["run"] for o in data["open_coding"]} >= {sim.run}

    # the page: modelled on evals/TAXONOMY.md
    assert "## 1. Open coding: one observation per failure" in md and "## 2. Axial coding: 2 failure modes" in md
    assert "### M1. Forbidden write on a delivered order (O1, O2, O3)" in md
    lo, hi = wilson(3, 8)
    assert f"3 of 8 reviewed (37.5 %; 95% interval {100 * lo:.1f} %–{100 * hi:.1f} %, Wilson)" in md
    assert "covered by `no_forbidden_action` (fails 3 of the 3 runs read)" in md
    assert "uncovered: no scorer fails any of its 2 runs read; a scorer skeleton: " \
           "[scorers/answer_omits_the_delivery_date.py]" in md
    assert "`update_shipping_address(order_id='A-1001', address='1 Main St, Porto')` → `{\"ok\": true" in md
    assert 'answer "Order A-1001 will now ship to 1 Main St, Porto' in md
    table = [line for line in md.splitlines() if re.match(r"\| O\d+ \|", line)]
    assert len(table) == 8 and any("refunded outside the 30-day window | fail | – |" in t for t in table)
    assert "3 note(s) in no mode" in md


def test_the_same_review_exports_the_same_bytes(review, tmp_path):
    state, items, _ = review
    a, b = tmp_path / "a", tmp_path / "b"
    export(state, items, a)
    export(state, items, b)
    for name in ("taxonomy.md", "taxonomy.json", "judge_labels.jsonl", "scorers/answer_omits_the_delivery_date.py"):
        assert (a / name).read_bytes() == (b / name).read_bytes()


def test_the_decisive_call_is_the_one_a_failing_scorer_names(review):
    _, items, _ = review
    it = next(i for i in items if i.run == "v1/refund_expired/gate/0")
    call = decisive_call(transcript(it), "refund_outcome")
    assert call["name"] == "refund_order" and call["arguments"]["order_id"] == "A-1005"


# --- scorer skeletons ---------------------------------------------------------------------

def pytest_on(path: Path) -> subprocess.CompletedProcess:
    """The exported test, run as a user would: from the project's root, in a fresh process."""
    return subprocess.run([prefork.python(), "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
                          cwd=REPO, capture_output=True, text=True, timeout=600)


WRITTEN = '''
import re


async def check(case: Case) -> Outcome:
    """A status answer must say when the order arrives."""
    if "status" not in case.user_text.lower():
        return None
    said = re.search(r"arriv|expected", case.turn.answer.lower())
    return bool(said), "says when it arrives" if said else "no delivery date in the answer"
'''


def test_the_skeleton_test_fails_until_the_scorer_is_written(review, tmp_path):
    state, items, _ = review
    out = tmp_path / "export"
    export(state, items, out)
    scorer = out / "scorers" / "answer_omits_the_delivery_date.py"
    test = out / "scorers" / "test_answer_omits_the_delivery_date.py"
    text = scorer.read_text()
    assert "from turngate.plugin import Case, Outcome, register_scorer" in text
    assert "raise NotImplementedError(" in text and "v1/status/gate/0: says shipped but not when it arrives" in text
    body = test.read_text()
    assert "'run': 'v1/status/gate/0'" in body and "'run': 'v1/points/gate/0'" in body  # the reviewer's pass

    run = pytest_on(test)
    assert run.returncode == 1, run.stdout + run.stderr
    assert "3 failed" in run.stdout and "NotImplementedError" in run.stdout

    # a trivial real scorer in place of the skeleton's body: the test passes
    head, _, tail = text.partition("\n\nasync def check")
    scorer.write_text(head + "\n" + WRITTEN + "\n\n" + tail.split("\n\n\n", 1)[1])
    run = pytest_on(test)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "3 passed" in run.stdout

    # and the test is not vacuous: a scorer that passes everything fails it
    scorer.write_text(head + "\n\nasync def check(case: Case) -> Outcome:\n    return True, 'fine'\n\n\n"
                      + tail.split("\n\n\n", 1)[1])
    run = pytest_on(test)
    assert run.returncode == 1 and "2 failed, 1 passed" in run.stdout, run.stdout


def test_a_mode_named_like_a_scorer_or_with_quotes_still_makes_valid_files(review, tmp_path, sources):
    state, items, _ = review
    store = ReviewStore(tmp_path / "more.jsonl")
    store.load()
    key = {it.run: it.key for it in items}
    for ev in [{"op": "mode.create", "mode": "m-7", "name": 'refund_outcome """ \\ "odd"',
                "definition": 'ends with a quote "'},
               {"op": "assign", "source": key["v1/status/gate/0"][0], "run": "v1/status/gate/0", "mode": "m-7"},
               {"op": "mode.create", "mode": "m-8", "name": "Nothing read"},
               {"op": "assign", "source": "f" * 64, "run": "v9/gone/gate/0", "mode": "m-8"}]:
        assert store.append(ev)[0]
    written = export(store.state, items, tmp_path / "x")
    (skeleton,) = [p for p in written if p.parent.name == "scorers" and not p.name.startswith("test_")]
    assert skeleton.stem == "refund_outcome_odd"  # not refund_outcome: that scorer exists
    compile(skeleton.read_text(), str(skeleton), "exec")
    assert any("M2 Nothing read: uncovered but none of its runs is in the files read" in r for r in written.report)
    assert slugify("3 Déjà vu!", set()) == "mode_3_d_j_vu" and slugify("class", set()) == "class_2"
    assert "refund_outcome" in export_mod._scorer_names()  # what a slug must not clash with
    assert slugify("Refund outcome", export_mod._scorer_names()) == "refund_outcome_2"


# --- judge labels -------------------------------------------------------------------------

def test_the_labels_are_what_calibrate_judge_reads(review, tmp_path, capsys):
    state, items, sim = review
    out = tmp_path / "export"
    export(state, items, out)
    path = out / "judge_labels.jsonl"
    examples = load_labels(path)
    assert len(examples) == len(state.labels) == 7
    assert len({ex.id for ex in examples}) == 7
    status = [ex for ex in examples if ex.row.id == "status"]
    assert len(status) == 2 and len({ex.split for ex in status}) == 1  # a row's runs: one split
    assert all(ex.split == split_of(ex.row.id) for ex in examples if not ex.id.startswith("shipped_late"))
    assert {ex.split for ex in examples} == {"dev", "test"}
    points = next(ex for ex in examples if ex.row.id == "points")
    assert (points.human, points.reason) == ("pass", "fine") and points.origin.endswith("v1/points/gate/0")
    simulated = next(ex for ex in examples if ex.id.startswith("shipped_late_a1002--patient_novice"))
    assert simulated.split == split_of(sim.row_id) and simulated.row.user_turns() == sim.payload.turns
    assert simulated.turn.answer == sim.payload.turn["answer"]
    capsys.readouterr()
    for split in ("dev", "test"):
        assert calibrate_judge.main(["--labels", str(path), "--split", split, "--judge", "offline",
                                     "--out", str(tmp_path / "cal"), "--no-store"]) == 0
    assert "examples" in capsys.readouterr().out


def test_the_split_is_about_half_by_row():
    rows = [f"row_{k}" for k in range(400)]
    dev = sum(split_of(r) == "dev" for r in rows)
    assert 170 < dev < 230 and split_of("status") == split_of("status")


# --- dataset rows -------------------------------------------------------------------------

def test_a_simulated_failure_becomes_a_row_the_gate_runs(review, tmp_path):
    state, items, sim = review
    out = tmp_path / "export"
    status = next(it for it in items if it.run == "v1/status/gate/0")
    written = export(state, items, out, rows={sim.key, status.key}, dataset=REPO / "datasets" / "northwind.jsonl")
    assert written[-1] == out / "rows.jsonl"
    (row,) = load_rows(out / "rows.jsonl")  # the dataset's own loader
    assert row.id == "sim_shipped_late_a1002_patient_novice_s0"
    assert row.inputs.turns == sim.payload.turns[:sim.payload.failure.after_turn]
    assert row.inputs.source.startswith("simulation:sim-v2-")
    assert any("v1/status/gate/0 left out: row 'status' of" in r and "duplicate" in r for r in written.report)

    dataset = tmp_path / "northwind.jsonl"
    shutil.copy(REPO / "datasets" / "northwind.jsonl", dataset)
    with dataset.open("a") as fh:
        fh.write((out / "rows.jsonl").read_text())
    assert len(load_rows(dataset)) == len(load_rows(REPO / "datasets" / "northwind.jsonl")) + 1
    code = regression.main(["--version", "v2", "--dataset", str(dataset), "--only", row.id, "--no-upload",
                            "--quiet", "--no-confirm", "--no-reference", "--out", str(tmp_path / "gate")])
    assert code == 1  # the gate runs it, and the failure the simulation found comes back
    (record,) = (tmp_path / "gate").glob("*.json")
    runs = json.loads(record.read_text())["runs"]
    assert [r["row_id"] for r in runs] == [row.id]
    assert runs[0]["verdicts"]["refund_outcome"]["passed"] is False


def test_a_gate_row_not_in_the_dataset_is_exported_under_a_free_id(review, tmp_path):
    state, items, _ = review
    status = next(it for it in items if it.run == "v1/status/gate/0")
    other = next(it for it in items if it.run == "v1/points/gate/0")
    dataset = tmp_path / "other.jsonl"  # an id 'status' with other turns: the row is new, its id is not
    taken = dict(other.payload[1], id="status")
    dataset.write_text(json.dumps(taken) + "\n")
    written = export(state, items, tmp_path / "e", rows={status.key}, dataset=dataset)
    (row,) = load_rows(tmp_path / "e" / "rows.jsonl")
    assert row.id == "status_2" and row.inputs.message == "What's the status of order A-1002?"
    assert any("id 'status' is taken; exported as 'status_2'" in r for r in written.report)

    written = export(state, items, tmp_path / "f", rows={status.key})
    assert [r.id for r in load_rows(tmp_path / "f" / "rows.jsonl")] == ["status"]
    assert any("not checked against a dataset" in r for r in written.report)


def test_rows_of_unknown_runs_or_an_unreadable_dataset_are_one_line_errors(review, tmp_path):
    state, items, _ = review
    with pytest.raises(ConfigError, match="in none of the files read"):
        export(state, items, tmp_path / "e", rows={("0" * 64, "v1/nope/gate/0")})
    bad = tmp_path / "bad.jsonl"
    bad.write_text("{not json\n")
    with pytest.raises(ConfigError, match=r"bad\.jsonl:1: bad JSON"):
        export(state, items, tmp_path / "e", rows=set(), dataset=bad)
    assert not (tmp_path / "e").exists()  # nothing is written before every file is ready


# --- regenerating the folder --------------------------------------------------------------

def test_a_folder_is_regenerated_but_an_edited_file_is_never_lost(review, tmp_path):
    state, items, _ = review
    out = tmp_path / "export"
    export(state, items, out)
    assert export(state, items, out).report == []  # its own files: replaced freely

    scorer = out / "scorers" / "answer_omits_the_delivery_date.py"
    scorer.write_text(scorer.read_text().replace("raise NotImplementedError(", "return None  # (", 1))
    edited = scorer.read_text()
    written = export(state, items, out)
    assert scorer.read_text() == edited and scorer not in written  # the scorer being written is kept
    assert any("answer_omits_the_delivery_date.py: kept" in r for r in written.report)
    assert any("kept" in r for r in export(state, items, out).report)  # and stays kept

    page = out / "taxonomy.md"
    page.write_text("my own notes\n")
    before = (out / "taxonomy.json").read_bytes()
    with pytest.raises(ConfigError, match="taxonomy.md: changed since the last export"):
        export(state, items, out)
    assert page.read_text() == "my own notes\n" and (out / "taxonomy.json").read_bytes() == before

    written = export(state, items, out, force=True)
    assert page.read_text().startswith("# Failure taxonomy") and "raise NotImplementedError(" in scorer.read_text()
    assert out / "taxonomy.md" in written and scorer in written


def test_a_file_no_export_wrote_is_not_replaced(review, tmp_path):
    state, items, _ = review
    out = tmp_path / "export"
    out.mkdir()
    (out / "judge_labels.jsonl").write_text("hand-made\n")
    with pytest.raises(ConfigError, match="judge_labels.jsonl: changed since the last export"):
        export(state, items, out)
    assert (out / "judge_labels.jsonl").read_text() == "hand-made\n" and not (out / "taxonomy.md").exists()
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="not a folder"):
        export(state, items, tmp_path / "file")


def test_every_file_is_written_atomically(review, tmp_path, monkeypatch):
    state, items, _ = review
    seen = []
    real = export_mod.write_atomic

    def spy(path, data, **kw):
        seen.append(Path(path))
        return real(path, data, **kw)

    monkeypatch.setattr(export_mod, "write_atomic", spy)
    written = export(state, items, tmp_path / "e")
    assert seen == [*written, tmp_path / "e" / export_mod.MANIFEST]


def test_a_scorer_written_since_covers_its_mode_through_todays_verdicts(review, tmp_path):
    """export(verdicts=rescore.rescored(...)): the mode's runs as today's suite scores them."""
    state, items, _ = review
    status = [it.key for it in items if it.row_id == "status"]
    written = export(state, items, tmp_path / "e", verdicts={k: {"delivery_date": False} for k in status})
    assert not [p for p in written if p.parent.name == "scorers"]
    m2 = json.loads((tmp_path / "e" / "taxonomy.json").read_text())["modes"][1]
    assert (m2["coverage"], m2["covered_by"]) == ("covered", "delivery_date")


def test_a_tie_goes_to_the_scorer_of_the_mode_not_the_one_that_fails_everything(review, tmp_path):
    """Two scorers fail all of a mode's runs: the one that fails fewer runs of the other modes
    covers it (a judge that fails a little of everything comes after)."""
    state, items, _ = review
    m1 = set(state.runs_of("m-1"))
    m2 = set(state.runs_of("m-2"))
    verdicts = {k: {"a_judge": False, "z_specific": True} for k in m2}  # False: the scorer failed the run
    verdicts.update({k: {"a_judge": False, "z_specific": False} for k in m1})
    export(state, items, tmp_path / "e", verdicts=verdicts)
    first, second = json.loads((tmp_path / "e" / "taxonomy.json").read_text())["modes"]
    assert [a["scorer"] for a in first["agreement"]] == ["z_specific", "a_judge"]  # a_judge also fails m-2's runs
    assert first["covered_by"] == "z_specific"
    assert [a["scorer"] for a in second["agreement"] if a["failed"]] == ["a_judge"]


def test_the_page_name_the_command_at_its_top_and_the_table_by_version(review, tmp_path):
    state, items, sim = review
    cmd = "evals review a.json --notes r.jsonl --export out --page TAXONOMY.md"
    written = export(state, items, tmp_path / "e", page="TAXONOMY.md", command=cmd)
    assert [p.name for p in written][:2] == ["TAXONOMY.md", "taxonomy.json"]
    md = (tmp_path / "e" / "TAXONOMY.md").read_text()
    assert f"```bash\n{cmd}\n```" in md.split("## 1.")[0]
    data = json.loads((tmp_path / "e" / "taxonomy.json").read_text())
    assert data["command"] == cmd
    versions = {v["version"]: v for v in data["by_version"]}
    assert set(versions) == {"v1", "v2 (simulated)"}
    v1 = versions["v1"]
    gate = [it for it in items if it.stage != "simulation"]
    assert (v1["runs"], v1["failing"]) == (len(gate), sum(it.failed for it in gate))
    forbidden = v1["modes"][0]
    assert forbidden["scorer"] == "no_forbidden_action" and forbidden["in_mode"] == 3
    assert forbidden["failing"] == sum("no_forbidden_action" in it.failing for it in gate) >= 3
    assert v1["modes"][1]["failing"] is None  # an uncovered mode has no scorer to count
    assert "## 4. By version" in md and "| M1 `no_forbidden_action` | " in md
    assert f"{forbidden['failing']} failing · 3 in M1" in md
    for bad in ("taxonomy.json", "../x.md", "page.txt", ""):
        with pytest.raises(ConfigError, match="page"):
            export(state, items, tmp_path / "f", page=bad)
