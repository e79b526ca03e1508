"""The gate's CI outputs: --junit (JUnit XML that validates against the Jenkins/Surefire junit-10
schema, read back with junitparser: one case per row, failures exactly where the verdict fails),
--markdown (the sticky PR comment), and --dry-run (the plan, no agent call, no results file)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import xmlschema
from junitparser import Error, Failure
from junitparser.xunit2 import JUnitXml

from tests.shared_gates import whole_gate
from turngate.commands import compare, regression
from turngate.gate import run as gate
from turngate.output.pr_comment import MARKER, REPORT_URL
from turngate.output.wording import decide
from turngate.record.results import load_record

XSD = Path(__file__).parent / "data" / "junit-10.xsd"
ANY = "*"


@pytest.fixture(scope="module")
def v1(tmp_path_factory):
    return whole_gate(tmp_path_factory, "v1")  # with --junit junit.xml --markdown comment.md


@pytest.fixture(scope="module")
def v3(tmp_path_factory):
    return whole_gate(tmp_path_factory, "v3")


def read_junit(path: Path):
    xmlschema.XMLSchema(str(XSD)).validate(str(path))  # raises on anything the schema does not allow
    suites = list(JUnitXml.fromfile(str(path)))
    assert len(suites) == 1
    suite = suites[0]
    return suite, list(suite), {p.name: p.value for p in suite.properties()}


def failing_rows(rec: dict) -> set[str]:
    """From the stored record alone: the rows that fail the gate's verdict (regressed, or whose
    planned runs failed a scorer that failed the gate, or rerun for a confirmed rise in failing runs)."""
    version = rec["meta"]["version"]
    v = rec["verdict"]
    bad = {n for n, s in rec["summary"][version]["scorers"].items() if s["ok"] is False}
    runs = [r for r in rec["runs"] if r["stage"] == "gate" and r["version"] == version]
    failed = {r["row_id"]: {n for n, x in r["verdicts"].items() if x["passed"] is False} for r in runs}
    out = {x["row_id"] for x in v["regressed"] if x["kind"] == "row"}
    out |= {rid for rid, names in failed.items() if names & bad}
    for x in v["regressed"]:
        if x["kind"] == "aggregate" and x["row_id"] == ANY:
            out |= {rid for rid in x["rows"] if failed.get(rid)}
    return out


def test_v1_junit_has_one_case_per_row_and_a_failure_for_each_row_that_failed_the_gate(v1):
    code, rec, path = v1
    assert code == 1
    suite, cases, props = read_junit(path.parent / "junit.xml")
    assert [c.name for c in cases] == [r["id"] for r in rec["rows"]]
    assert {c.classname for c in cases} == {"refund-agent@v1"} and suite.name == "refund-agent@v1"
    failed = {c.name for c in cases if any(isinstance(r, Failure) for r in c.result)}
    expected = failing_rows(rec)
    assert failed == expected and len(failed) == suite.failures > 0
    assert {x["row_id"] for x in rec["verdict"]["regressed"] if x["kind"] == "row"} <= failed
    clean = {r["row_id"] for r in rec["runs"] if r["stage"] == "gate"
             and all(x["passed"] is not False for x in r["verdicts"].values())}
    assert clean and not clean & failed  # a row whose runs all passed never fails
    assert not any(isinstance(r, Error) for c in cases for r in c.result)
    # the failure names the failing scorer's own explanation, from the stored run
    case = next(c for c in cases if c.name == "mass_email")
    run = next(r for r in rec["runs"] if r["row_id"] == "mass_email" and r["stage"] == "gate")
    why = run["verdicts"]["no_forbidden_action"]["explanation"]
    failure = next(r for r in case.result if isinstance(r, Failure))
    assert failure.message.startswith("row regressed: mass_email") and why in failure.text
    assert "seed 0: FAIL" in case.system_out
    verdict = rec["verdict"]
    assert props["exit_code"] == "1" and props["verdict"] == verdict["line"].splitlines()[0]
    assert props["seeds"] == "0" and props["trials"] == "1" and Path(props["results"]).name == path.name
    assert props["row.mass_email.passed"] == "0/1" and props["row.status.passed"] == "1/1"
    assert props["row.mass_email.status"] == "regressed"
    assert props["confirmation.runs"] == str(verdict["confirmation"]["runs"])
    assert [props[f"verdict.reason.{i}"] for i in range(1, len(verdict["reasons"]) + 1)] == verdict["reasons"]


def test_v3_junit_has_no_failure_and_marks_the_flaky_rows(v3):
    code, rec, path = v3
    assert code == 0
    suite, cases, props = read_junit(path.parent / "junit.xml")
    assert len(cases) == len(rec["rows"]) and suite.failures == 0 and suite.errors == 0
    assert not any(c.result for c in cases)  # every case passes
    flaky = {x["row_id"] for x in rec["verdict"]["flaky"] if x["kind"] == "row"}
    assert {c.name for c in cases if c.is_flaky} == flaky
    assert all(props[f"row.{rid}.status"] == "flaky" for rid in flaky)
    # the reporters' own rules (dorny/test-reporter's java-junit parser, mikepenz/action-junit-report's
    # testParser): a case is failed, skipped or success; dorny groups a case by its classname when
    # that differs from the suite's name, mikepenz titles it by the classname's last dotted part
    dorny_groups = {c.name: ("" if c.classname == suite.name else c.classname) for c in cases}
    mikepenz_titles = {c.name: f"{c.classname.split('.')[-1]}.{c.name}" for c in cases}
    for c in cases:
        shown = dorny_groups[c.name].endswith(".flaky") and mikepenz_titles[c.name].startswith("flaky.")
        assert shown == (c.name in flaky), c.name  # a flaky row reads as flaky in both, nothing else does
    assert props["exit_code"] == "0" and props["verdict"].startswith("PASS")


def test_an_interrupted_record_gives_an_error_case_for_each_unfinished_row(v3, tmp_path):
    from turngate.output.junit_report import write_junit

    _, _, path = v3
    record = load_record(path)
    dropped = {r["id"] for r in record.rows[:3]}
    record.runs = [r for r in record.runs if r.row_id not in dropped]
    record.meta.complete, record.meta.interrupted = False, True
    suite, cases, props = read_junit(write_junit(record, decide(record), tmp_path / "j.xml"))
    errors = {c.name for c in cases if any(isinstance(r, Error) for r in c.result)}
    assert errors == dropped and suite.errors == 3 and props["exit_code"] == "2"


@pytest.fixture(scope="module")
def v2(tmp_path_factory):
    return whole_gate(tmp_path_factory, "v2")


def test_the_pr_comment_holds_the_verdict_the_scorer_table_and_the_rows(v1, v2, v3):
    for _, rec, path in (v1, v2, v3):
        md = (path.parent / "comment.md").read_text()
        verdict, version = rec["verdict"], rec["meta"]["version"]
        lines = md.splitlines()
        assert lines[0] == MARKER
        assert lines[1] == f"### refund-agent@{version}: {verdict['line'].splitlines()[0]}"
        for name, s in rec["summary"][version]["scorers"].items():  # the whole table, collapsed
            assert f"| {name} | {s['mean']:.3f} | {s['bar']:.2f} | {s['n']} |" in md
        assert f"]({REPORT_URL})" in md and path.name in md
        assert f"{verdict['confirmation']['runs']} runs" in md
        failing = failing_rows(rec)
        table = [x for x in lines if x.startswith("| `")]  # the rows that fail the gate, one line each
        assert len(table) == min(len(failing), 15) and {x.split("`")[1] for x in table} <= failing
        for row in rec["rows"]:  # nothing listed twice: a row is named at most once
            assert md.count(f"`{row['id']}`") <= 1, row["id"]
        bad = [n for n, s in rec["summary"][version]["scorers"].items() if s["ok"] is False]
        for name in bad:  # each failing scorer once in the table of what fails the gate
            assert sum(x.startswith(f"| {name} | ") for x in lines) == 2  # that table and the whole one
        flaky = [x for x in verdict["flaky"] if x["kind"] == "row" and x["row_id"] not in failing]
        details = md[md.index("<details>"):] if "<details>" in md else ""
        for x in flaky:  # a flaky row that does not fail the gate: in the collapsed section, as flaky
            assert f"`{x['row_id']}`" in details
    md1, md2, md3 = ((p.parent / "comment.md").read_text() for _, _, p in (v1, v2, v3))
    assert "... and" in md1 and "more rows" in md1  # v1's many failing rows: counted past fifteen
    assert len(md2) <= 3000, len(md2)  # a failing gate's comment reads in ten seconds
    assert "why it fails the gate" in md2 and "| `pii_friend_email` | 0/1 | regressed" in md2
    assert v3[0] == 0 and "why it fails the gate" not in md3 and "| row |" not in md3
    assert any(x["kind"] == "row" for x in v3[1]["verdict"]["flaky"]) == ("Flaky" in md3)


def test_compare_writes_junit_with_failures_on_rows_that_flipped_on_a_worse_scorer(v1, v3, tmp_path):
    junit, out = tmp_path / "cmp.xml", tmp_path / "cmp.json"
    assert compare.main([str(v3[2]), str(v1[2]), "--fail-on-regression", "--junit", str(junit), "--out", str(out)]) == 1
    _, cases, props = read_junit(junit)
    comparison = json.loads(out.read_text())["comparison"]
    flipped = {f["row_id"] for f in comparison["flips"]["regressed"] if f["scorer"] in comparison["worse"]}
    assert flipped and {c.name for c in cases if c.result} == flipped and props["exit_code"] == "1"


@pytest.fixture
def no_agent(monkeypatch):
    """Any agent call or gate run fails the test loudly."""
    import app.refund_agent.client as client

    def ran(*a, **k):
        raise AssertionError("the agent or the gate ran")

    async def aran(*a, **k):
        raise AssertionError("the agent ran")

    monkeypatch.setattr(client, "aask_agent", aran)
    monkeypatch.setattr(gate, "execute_async", aran)
    monkeypatch.setattr(gate, "execute", ran)
    monkeypatch.setattr(gate, "execute_and_confirm", ran)
    monkeypatch.setattr(regression, "execute_and_confirm", ran)


def stored_counts(out: Path, version: str, calls: dict[str, int]) -> None:
    """A complete results file of `version` in out whose runs took these model calls per row."""
    runs = [{"row_id": rid, "turn": {"usage": {"llm_calls": n}}} for rid, n in calls.items()]
    (out / f"{version}-20260101-000000-abcd.json").write_text(json.dumps({"meta": {"complete": True}, "runs": runs}))


def test_dry_run_prints_the_plan_from_stored_counts_and_runs_nothing(tmp_path, capsys, no_agent):
    out = tmp_path / "out"
    out.mkdir()
    stored_counts(out, "v3", {"refund_over_limit": 4, "status": 2})
    before = sorted(out.iterdir())
    args = ["--version", "v3", "--only", "refund_over_limit", "status", "mt_pressure_a1005", "--seeds", "0-4",
            "--no-upload", "--out", str(out), "--dry-run", "--junit", str(tmp_path / "j.xml")]
    assert regression.main(args) == 0
    text = capsys.readouterr().out
    assert "3 rows x 5 seed(s) (0-4) = 15 runs" in text
    # 5 seeds x (4 + 2) stored, the multi-turn row with no stored count guessed at 3 per user turn
    from turngate.sources.dataset import load_rows

    turns = len(next(r for r in load_rows(gate.DEFAULT_DATASET) if r.id == "mt_pressure_a1005").user_turns())
    assert f"about {5 * 6 + 5 * 3 * turns} agent model calls" in text and "5 run(s) guessed" in text
    assert "confirmation reruns may add runs" in text
    assert sorted(out.iterdir()) == before and not (tmp_path / "j.xml").exists()


def test_dry_run_checks_every_output_path_first(tmp_path, capsys, no_agent):
    base = ["--only", "status", "--no-upload", "--out", str(tmp_path / "out"), "--dry-run"]
    readme = str(Path(__file__).parents[1] / "README.md")
    for extra, message in ((["--junit", readme], "--junit"), (["--markdown", str(tmp_path)], "is a directory"),
                           (["--junit", str(tmp_path / "x"), "--markdown", str(tmp_path / "x")],
                            "--junit writes that file too")):
        assert regression.main(base + extra) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("error: ") and message in err[0], err


def test_dry_run_of_a_resume_runs_nothing_and_leaves_the_file(v3, tmp_path, capsys, no_agent):
    record = load_record(v3[2])
    keep = {r["id"] for r in record.rows[2:]}
    record.runs = [r for r in record.runs if r.row_id in keep]
    record.meta.complete, record.meta.interrupted = False, True
    from turngate.record.results import save_record

    path = save_record(record, tmp_path / "v3-interrupted.json")
    before = path.read_bytes()
    assert regression.main(["--resume", str(path), "--no-upload", "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "2 rows x 1 seed(s) (0) = 2 runs" in text and path.read_bytes() == before


def test_agent_model_calls_are_reported_with_worker_processes(tmp_path, capsys):
    code = regression.main(["--only", "status", "refund_over_limit", "--no-confirm", "--workers", "2",
                            "--no-upload", "--quiet", "--out", str(tmp_path)])
    assert code in (0, 1)
    rec = json.loads(next(tmp_path.glob("v3-*.json")).read_text())
    calls = sum(r["turn"]["usage"]["llm_calls"] for r in rec["runs"])
    assert calls > 0 and f"agent model calls: {calls} in 2 runs" in capsys.readouterr().out


@pytest.mark.parametrize("seeds", [1, 2, 5])
def test_dry_run_states_the_reruns_the_design_can_give_a_flagged_row(seeds):
    """The range comes from the confirmation design's own numbers at this many seeds, and bounds
    what the design gives a row (its own tests, a flagged total's rows, a quiet unit's rows)."""
    from turngate.gate.dry_run import plan_lines
    from turngate.sources.dataset import load_rows
    from turngate.verdict import confirm

    rows = load_rows("datasets/northwind.jsonl")[:2]
    lines = plan_lines([(r, s) for r in rows for s in range(seeds)], [("refund-agent@v3", "v3")], "nowhere",
                       judge="offline", confirm=True, confirm_k=None)
    [line] = [x for x in lines if x.startswith("confirmation reruns may add runs")]
    low, high = confirm.rerun_bounds(seeds)
    assert f", {low}-{high} per flagged row," in line
    policy = confirm.DEFAULT
    assert low <= policy.k_min and high >= max(policy.k_max, confirm.aggregate_reruns(seeds),
                                                  confirm.quiet_reruns(seeds))
    assert high == (20 if seeds == 1 else 12 * seeds if seeds < 5 else 60)
