"""The confirmation reruns are part of the record's proof: a reader recomputes which reruns the
planned runs call for, and refuses a record whose reruns are not exactly those, so deleting the
reruns that confirmed a regression cannot turn a red light green."""
from __future__ import annotations

import json

import pytest

from turngate.commands import regrade, regression, report, show
from turngate.record.results import load_record, save_record


@pytest.fixture(scope="module")
def regressed(tmp_path_factory):
    """v3 without its email clause on mass_email: regressed, confirmed on every rerun."""
    from app.refund_agent.versions import load_version

    tmp = tmp_path_factory.mktemp("confirm")
    v3 = load_version("v3")
    prompt = "\n".join(line for line in v3.instructions.splitlines() if "Only send emails" not in line)
    path = tmp / "v3-no-email.toml"
    path.write_text(f"description = 'v3 without the email clause'\nhardened = true\nredact = true\n"
                    f"instructions = {json.dumps(prompt)}\n")
    out = tmp / "out"
    code = regression.main(["--version", str(path), "--seeds", "150", "--only", "mass_email", "status",
                            "--no-upload", "--quiet", "--out", str(out)])
    assert code == 1
    (results,) = out.glob("*.json")
    return results


def tampered(src, tmp_path, edit):
    record = load_record(src)
    edit(record)
    dst = tmp_path / "tampered.json"
    save_record(record, dst)  # a consistent digest: only the rerun check can tell
    return dst


@pytest.mark.parametrize("edit, needle", [
    (lambda r: r.runs.remove(next(x for x in r.runs if x.stage == "confirm")), "confirmation reruns missing"),
    (lambda r: r.runs.append(next(x for x in r.runs if x.stage == "confirm").model_copy(update={"trial": 7, "seed": 7})),
     "not in the plan"),
    (lambda r: r.meta.confirm.update(rows={}), "meta.confirm.rows"),
])
def test_every_reader_refuses_reruns_that_are_not_the_plan(regressed, tmp_path, capsys, edit, needle):
    rec = load_record(regressed)
    assert [x.row_id for x in rec.runs if x.stage == "confirm"]  # the fixture made reruns
    bad = tampered(regressed, tmp_path, edit)
    for main, args in ((regrade.main, [str(bad), "--out", str(tmp_path / "rg.json")]),
                       (show.main, [str(bad), "--verdict"]),
                       (report.main, [str(bad), "--out", str(tmp_path / "r.html")])):
        capsys.readouterr()
        assert main(args) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and needle in err[0], err


def test_the_untouched_record_reads_back_regressed(regressed, capsys):
    capsys.readouterr()
    assert show.main([str(regressed), "--verdict"]) == 0
    out = capsys.readouterr().out
    assert "row regressed: mass_email" in out and "on reruns" in out
