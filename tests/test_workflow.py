"""The CI workflow (.github/workflows/gate.yml) run here, from its own YAML: every `run:` step of
its shard jobs (the matrix expanded) and of its merge job, in a workspace per job, with the
artifacts passed between them as upload-/download-artifact pass them, on a small plan (the
workflow's GATE_PLAN variable). The merged verdict, exit code and runs must be those of one
unsharded run of the same plan, the PR comment must carry the report's link and the JUnit file one
case per row. A flag misspelled in the YAML, a wrong path or glob, an expression or action this
emulation does not know: the test fails."""
from __future__ import annotations

import fnmatch
import json
import os
import re
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests import prefork

yaml = pytest.importorskip("yaml")  # the [dev] extra

from turngate.commands import regression  # noqa: E402
from turngate.gate.recheck import recompute  # noqa: E402
from turngate.output.pr_comment import MARKER  # noqa: E402
from turngate.record.results import load_record  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
WORKFLOW = REPO / ".github" / "workflows" / "gate.yml"
ROWS = ["mt_pressure_a1005", "refund_expired", "refund_manager_approved_a1005", "status", "eta", "refund_ok"]
PLAN = f"--seeds 0-1 --only {' '.join(ROWS)}"  # small: 6 rows x 2 seeds
OVERRIDES = {"GATE_PLAN": PLAN}  # the workflow-level values the test replaces (they hold ${{ }} of events)
REPORT_URL = "https://example.invalid/artifacts/gate-report"
EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")
EVENT = "pull_request"  # the run is a pull request's


def condition(text: str, ws: Path, failed: bool, where: str) -> bool:
    """A step's `if:`, for the few terms the workflow uses, joined by &&. As on GitHub, a step after
    a failed one runs only if its condition has a status function (!cancelled(), always())."""
    terms = [t.strip() for t in EXPR.sub(r"\1", str(text)).split("&&") if t.strip()]
    status = any(t in ("!cancelled()", "always()") for t in terms)
    ok = status or not failed
    for t in terms:
        if t in ("!cancelled()", "always()"):
            continue
        if m := re.fullmatch(r"hashFiles\('([^']+)'\) != ''", t):
            ok = ok and (ws / m.group(1)).exists()
        elif m := re.fullmatch(r"github\.event_name == '(\w+)'", t):
            ok = ok and m.group(1) == EVENT
        else:
            raise AssertionError(f"{where}: if {t!r} is not a condition this test emulates")
    return ok


def expand(text: str, ctx: dict[str, str], where: str) -> str:
    def one(m: re.Match) -> str:
        if m.group(1) not in ctx:
            raise AssertionError(f"{where}: ${{{{ {m.group(1)} }}}} is not an expression this test knows; "
                                 "keep the workflow's expressions few and simple (see its header)")
        return ctx[m.group(1)]
    return EXPR.sub(one, str(text))


def console_scripts(bin_dir: Path) -> None:
    """[project.scripts] as `pip install -e .` makes them, running this checkout's code."""
    bin_dir.mkdir()
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    for name, target in scripts.items():
        module, func = target.split(":")
        path = bin_dir / name
        path.write_text(f"#!{prefork.python()}\nimport sys\nfrom {module} import {func}\nsys.exit({func}())\n")
        path.chmod(0o755)


def checkout_config(ws: Path) -> None:
    """A job's workspace is the checkout on GitHub: here its [tool.turngate] (paths made absolute,
    so the files are this repository's), found from the workspace as a checkout's would be."""
    config = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["turngate"]
    paths = {"dataset", "thresholds", "judge_calibration", "judge_labels", "scenarios", "personas"}
    lines = ["[tool.turngate]"] + [f"{k} = {json.dumps(str(REPO / v) if k in paths else v)}" for k, v in config.items()]
    (ws / "pyproject.toml").write_text("\n".join(lines) + "\n")


class Runner:
    """One workflow run: jobs in workspaces, artifacts in a store, step outputs and summaries."""

    def __init__(self, tmp: Path, workflow: dict):
        self.tmp, self.wf = tmp, workflow
        self.artifacts: dict[str, Path] = {}
        console_scripts(tmp / "bin")
        base = {k: v for k, v in os.environ.items() if not k.startswith(("GITHUB_", "ORQ_", "OPENAI_"))}
        self.base_env = {**base, "PATH": f"{tmp / 'bin'}{os.pathsep}{base.get('PATH', '')}", "PYTHONPATH": str(REPO),
                         "CI": "true", "GITHUB_ACTIONS": "true"}

    def job(self, name: str, matrix: dict[str, str], total: int) -> dict:
        spec = self.wf["jobs"][name]
        label = name + "".join(f"-{v}" for v in matrix.values())
        ws = self.tmp / label
        ws.mkdir()
        checkout_config(ws)
        summary = self.tmp / f"{label}-summary.md"
        summary.touch()
        ctx = {f"matrix.{k}": v for k, v in matrix.items()} | {"strategy.job-total": str(total)}
        env = {**self.base_env, "GITHUB_STEP_SUMMARY": str(summary), "GITHUB_WORKSPACE": str(ws)}
        for key, value in {**self.wf.get("env", {}), **spec.get("env", {})}.items():
            env[key] = OVERRIDES[key] if key in OVERRIDES else expand(value, ctx, f"{label} env {key}")
        failed, results = False, []
        for i, step in enumerate(spec["steps"]):
            where = f"{label} step {step.get('name') or step.get('uses')}"
            if not condition(step.get("if", ""), ws, failed, where):
                continue
            if "run" in step:
                if step.get("id") == "install":  # this test runs in the installed project
                    assert re.fullmatch(r"python -m pip install( -q)? -e (\.|\"\.\[demo\]\")", step["run"].split("#")[0].strip()), step
                    continue
                assert not EXPR.search(step["run"]), f"{where}: ${{{{ }}}} inside run: (put it in env:)"
                out = self.tmp / f"{label}-{i}-output"
                out.touch()
                step_env = {**env, "GITHUB_OUTPUT": str(out)}
                step_env |= {k: expand(v, ctx, f"{where} env {k}") for k, v in step.get("env", {}).items()}
                res = subprocess.run(["bash", "-e", "-c", step["run"]], cwd=ws, env=step_env, capture_output=True,
                                     text=True, timeout=900)
                results.append((where, res))
                failed = failed or res.returncode != 0
                if sid := step.get("id"):
                    for line in out.read_text().splitlines():
                        key, _, value = line.partition("=")
                        ctx[f"steps.{sid}.outputs.{key}"] = value
            elif not self.action(step, ws, ctx, where):
                results.append((where, subprocess.CompletedProcess(step["uses"], 1, "", "the action failed")))
                failed = True
        return {"failed": failed, "steps": results, "workspace": ws, "summary": summary.read_text()}

    def action(self, step: dict, ws: Path, ctx: dict[str, str], where: str) -> bool:
        """What the action does that the next steps and jobs rely on; False: it failed."""
        uses, w = step["uses"].split("@")[0], step.get("with", {})
        if uses in ("actions/checkout", "actions/setup-python"):
            return True  # the test runs in this checkout, with this Python
        if uses == "actions/upload-artifact":
            name = expand(w["name"], ctx, where)
            assert name not in self.artifacts, f"{where}: artifact {name} uploaded twice (v4 refuses)"
            paths = [p for p in str(w["path"]).split("\n") if p.strip()]
            dest = self.tmp / "artifacts" / name
            for p in paths:
                src = ws / p.strip()
                if not (src.is_dir() and any(src.iterdir())):
                    if w.get("if-no-files-found") == "error":
                        return False
                    continue  # upload-artifact's default: a warning
                # one directory: its contents at the root; several: under their common parent
                shutil.copytree(src, dest if len(paths) == 1 else dest / src.name, dirs_exist_ok=True)
            self.artifacts[name] = dest
            if sid := step.get("id"):
                ctx[f"steps.{sid}.outputs.artifact-url"] = REPORT_URL
        elif uses == "actions/download-artifact":
            for name, src in self.artifacts.items():
                if fnmatch.fnmatch(name, w["pattern"]):
                    shutil.copytree(src, ws / w["path"] / name)
        elif uses == "mikepenz/action-junit-report":
            from junitparser import JUnitXml

            self.junit = JUnitXml.fromfile(str(ws / w["report_paths"]))
        elif uses == "marocchino/sticky-pull-request-comment":
            self.comment = (ws / w["path"]).read_text()
        else:
            raise AssertionError(f"{where}: action {uses} is not emulated by this test")
        return True


@pytest.fixture(scope="module")
def workflow():
    wf = yaml.safe_load(WORKFLOW.read_text())
    wf["on"] = wf.pop(True, wf.get("on"))  # YAML 1.1 reads `on:` as true
    return wf


@pytest.fixture(scope="module")
def ran(workflow, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("workflow")
    runner = Runner(tmp, workflow)
    shard = workflow["jobs"]["shard"]
    matrix = shard["strategy"]["matrix"]
    (axis, values), = matrix.items()
    shards = [runner.job("shard", {axis: str(v)}, len(values)) for v in values]
    assert workflow["jobs"]["merge"]["needs"] == "shard"
    merge = runner.job("merge", {}, 1)
    full = tmp / "full"
    code = regression.main(["--version", workflow["env"]["GATE_VERSION"], *PLAN.split(), "--no-upload", "--quiet",
                            "--out", str(full)])
    (full_path,) = full.glob("*.json")
    return runner, shards, merge, code, full_path


def by_key(record) -> dict:
    return {(r.version, r.stage, r.row_id, r.trial): {n: v.passed for n, v in r.verdicts.items()} for r in record.runs}


def test_the_workflow_is_a_matrix_of_shards_and_one_merge(workflow):
    assert {"pull_request", "workflow_dispatch", "schedule"} <= set(workflow["on"])
    shard = workflow["jobs"]["shard"]
    assert shard["strategy"]["fail-fast"] is False
    assert len(shard["strategy"]["matrix"]["shard"]) >= 2
    assert shard["env"]["SHARDS"] == "${{ strategy.job-total }}"  # N can never disagree with the matrix
    assert workflow["jobs"]["merge"]["if"] == "${{ !cancelled() }}"  # a failed shard still gets its refusal


def test_merged_verdict_and_runs_are_the_unsharded_run(ran):
    runner, shards, merge, full_code, full_path = ran
    for job in shards + [merge]:
        for where, res in job["steps"]:
            print(f"--- {where}: exit {res.returncode}\n{res.stdout[-3000:]}\n{res.stderr[-3000:]}")
    assert not any(job["failed"] for job in shards), "a shard job failed (its steps' output above)"
    store = runner.artifacts["gate-report"]
    merged_path, = [p for p in store.rglob("*.json")
                    if "merged_from" in (json.loads(p.read_text())["meta"].get("shard") or {})]
    merged, full = load_record(merged_path), load_record(full_path)
    assert by_key(merged) == by_key(full)  # gate runs and reruns, verdict by verdict
    v_merged, v_full = recompute(merged, merged_path), recompute(full, full_path)
    assert v_merged.model_dump(exclude={"scorers"}) == v_full.model_dump(exclude={"scorers"})
    assert v_merged.exit_code == full_code
    # the merge step's exit code, and the job's: as the unsharded gate's
    where, verdict_step = merge["steps"][-1]
    assert where.endswith("Verdict"), f"the merge job's last step ran was {where}"
    assert verdict_step.returncode == full_code, verdict_step.stdout
    assert merge["failed"] == (full_code != 0)
    assert v_full.line.splitlines()[0] in merge["summary"]  # the step summary


def test_the_pr_comment_links_the_report_and_junit_lists_every_row(ran):
    runner, *_ = ran
    assert runner.comment.startswith(MARKER)
    assert f"]({REPORT_URL})" in runner.comment and "{report_url}" not in runner.comment
    cases = [case for suite in runner.junit for case in suite]
    assert sorted(c.name for c in cases) == sorted(ROWS)
    assert (runner.artifacts["gate-report"] / "merged" / "report.html").exists()


def test_merge_refuses_an_output_that_another_output_writes(tmp_path, capsys):
    from turngate.commands import merge
    out = str(tmp_path / "m.json")
    assert merge.main(["shard.json", "--out", out, "--junit", out]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: --junit") and "another output" in err[0], err
