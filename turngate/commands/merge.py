"""Merge the records of a gate run as shards (--shard K/N) into one record and one verdict.

    evals merge results/v3-shard1.json results/v3-shard2.json results/v3-shard3.json --out merged.json

Each file is loaded as any record (its own plan and digest checked), then refused in one line,
exit 2, when a shard is missing, duplicated or incomplete, or the shards come from different
plans (dataset, version file, settings, seeds, agent). The merged record holds every run of
every shard (gate runs and confirmation reruns) and its verdict is recomputed from them
(turngate/gate/recheck.py recompute: the same decide() as an unsharded run). Exit code: that verdict's.

Confirmation reruns: each shard reran the rows its own numbers flagged; over all rows the
totals may flag others, or no longer call for some. Reruns the merged plan does not call for
are dropped (and counted); reruns it calls for that no shard made are run here, with the agent
and version every shard names (--version and --agent only to say it again: they must agree).

Outputs, as the gate's: --report (HTML), --junit (XML), --markdown (a PR comment), and the CI
step summary when GITHUB_STEP_SUMMARY is set (.github/workflows/gate.yml, docs/ci-and-scale.md).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from turngate.core import cli_support as cli
from turngate.core.agent_code import code_changed
from turngate.core.errors import ConfigError
from turngate.output.console import console
from turngate.record.results import Record, load_record, plan_of, save_record, shard_problem


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("merge"), description=__doc__.splitlines()[0])
    p.add_argument("shards", nargs="+", metavar="SHARD_FILE", help="the results file of every shard")
    p.add_argument("--out", required=True, metavar="PATH", help="the merged results file")
    p.add_argument("--force", action="store_true", help="replace --out if it exists")
    p.add_argument("--agent", help="the agent to run missing confirmation reruns with (default: the shards')")
    p.add_argument("--version", help="the agent version the shards ran (default: the one they name); "
                                     "confirmation reruns no shard made are run with it")
    p.add_argument("--no-upload", action="store_true", help="do not upload the reruns to orq.ai")
    p.add_argument("--report", metavar="PATH.html", help="write the merged verdict's self-contained HTML report")
    p.add_argument("--junit", metavar="PATH.xml", help="write the merged verdict as JUnit XML, one test case per row")
    p.add_argument("--markdown", metavar="PATH.md",
                   help="write the merged verdict as Markdown for a sticky PR comment ({report_url}: the report's link)")
    return p


def _differ(a: Record, b: Record) -> str:
    """What two shards' plans disagree on, in a few words."""
    pa, pb = a.plan, b.plan
    if a.meta.version != b.meta.version:
        return f"version {a.meta.version} vs {b.meta.version}"
    if pa.dataset != pb.dataset:
        return f"dataset {pa.dataset['name']} ({pa.dataset['sha256'][:12]}) vs {pb.dataset['name']} " \
               f"({pb.dataset['sha256'][:12]})"
    if pa.seeds != pb.seeds:
        return f"seeds {pa.seeds} vs {pb.seeds}"
    if pa.version_files != pb.version_files:
        return "version files differ (the agent changed between shards)"
    if changed := code_changed(pa.agent_code, pb.agent_code):
        return f"the agent's code differs between shards ({changed})"
    if pa.agent != pb.agent:
        return f"agent {pa.agent} vs {pb.agent}"
    for key in dict.fromkeys([*pa.settings, *pb.settings]):
        if pa.settings.get(key) != pb.settings.get(key):
            return f"setting {key} {pa.settings.get(key)!r} vs {pb.settings.get(key)!r}"
    if a.meta.shard["rows"] != b.meta.shard["rows"]:
        return "the whole plan's rows differ"
    if a.meta.shard["count"] != b.meta.shard["count"]:
        return f"{a.meta.shard['count']} vs {b.meta.shard['count']} shards"
    return "the whole plans' digests differ"


def _hints(shards: list[tuple[Path, Record]]) -> list[str]:
    """Which results file each shard took its cost hints from (turngate.jobs.shards.shard_hints)."""
    return sorted({s.meta.shard.get("hints") or "no stored counts" for _, s in shards})


def load_shards(paths: list[str]) -> list[tuple[Path, Record]]:
    """Every shard once, complete, of one plan; else a ConfigError (one line)."""
    shards = []
    for p in paths:
        record = load_record(p)  # its own plan and digest, or a one-line RecordError
        sh = record.meta.shard
        if sh and "merged_from" in sh:
            raise ConfigError(f"{p}: already a merged record of {sh['count']} shard(s); give the shards' own files")
        if not sh or "index" not in sh:
            raise ConfigError(f"{p}: not a shard record (no meta.shard; it was not run with --shard K/N)")
        if problem := shard_problem(sh):
            raise ConfigError(f"{p}: meta.shard.{problem} (the file was edited)")
        if line := record.incomplete():
            raise ConfigError(f"{p}: shard {sh['index']}/{sh['count']} is {line}; finish it with "
                              f"{cli.command('gate')} --resume {p}")
        shards.append((Path(p), record))
    first_path, first = shards[0]
    for p, r in shards[1:]:
        if r.meta.shard["plan"] != first.meta.shard["plan"] or r.meta.shard["count"] != first.meta.shard["count"]:
            raise ConfigError(f"{first_path} and {p} are shards of different plans: {_differ(first, r)}")
        for part, what in (("dataset_rows", "different datasets"), ("judged_with", "different references or rules")):
            if getattr(r.meta, part) != getattr(first.meta, part):
                raise ConfigError(f"{first_path} and {p} are shards of {what} (meta.{part} differs)")
    n = first.meta.shard["count"]
    seen: dict[int, Path] = {}
    for p, r in shards:
        k = r.meta.shard["index"]
        if k in seen:
            raise ConfigError(f"shard {k}/{n} given twice ({seen[k]} and {p})")
        seen[k] = p
    if missing := [k for k in range(1, n + 1) if k not in seen]:
        raise ConfigError(f"shard {missing[0]}/{n} is missing" + (f" (and {len(missing) - 1} more)" if len(missing) > 1
                                                                  else "") + f": {len(shards)} of {n} shards given")
    return sorted(shards, key=lambda x: x[1].meta.shard["index"])


def merged_record(shards: list[tuple[Path, Record]], argv: list[str]) -> Record:
    """One record of the whole plan from its shards: rows in the plan's order, every run."""
    from turngate.jobs.shards import plan_digest

    first = shards[0][1]
    whole = first.meta.shard["rows"]
    rows = {r["id"]: r for _, s in shards for r in s.rows}
    owner: dict[str, Path] = {}
    for p, s in shards:
        for r in s.rows:
            if r["id"] in owner:
                used = _hints(shards)
                raise ConfigError(f"row {r['id']!r} is in two shards ({owner[r['id']]} and {p}; split by cost "
                                  f"hints {', '.join(used)}): run every shard against the same results directory")
            owner[r["id"]] = p
    if set(rows) != set(whole):
        rid = next(i for i in whole if i not in rows)
        used = _hints(shards)
        raise ConfigError(f"row {rid!r} of the plan is in no shard (the shards were split by different cost "
                          f"hints: {', '.join(used)}; run every shard against the same results directory)")
    meta = first.meta.model_copy(deep=True)
    meta.shard = {"count": first.meta.shard["count"], "plan": first.meta.shard["plan"],
                  "merged_from": [str(p) for p, _ in shards]}
    meta.argv, meta.resumed = argv, []
    meta.elapsed_s = round(sum(s.meta.elapsed_s for _, s in shards), 3)
    meta.model_calls = None  # per shard, in each shard's record
    meta.cache = None
    meta.complete, meta.interrupted = True, False
    meta.confirm = {k: v for k, v in (first.meta.confirm or {}).items() if k in ("enabled", "k")} or None
    record = Record(meta=meta, rows=[rows[i] for i in whole], runs=[r for _, s in shards for r in s.runs])
    record.plan = plan_of(record, version_files=first.plan.version_files, seeds=first.plan.seeds,
                          agent_code=first.plan.agent_code)
    if plan_digest(record.plan) != first.meta.shard["plan"]:
        raise ConfigError("the merged rows do not make the plan the shards name (a row's content differs)")
    return record


def rerun_plan(record: Record, reference) -> tuple[dict[str, list[int]], dict]:
    """The confirmation reruns the merged gate runs call for (as turngate.gate.run.confirm_async plans them),
    and the rows among them that stop early."""
    from turngate.verdict.decide import plan_reruns
    from turngate.verdict.summary import summarise

    conf = record.meta.confirm
    if not conf or not conf.get("enabled"):
        return {}, {}
    bars = record.meta.thresholds
    cand = summarise(record.runs_for(record.meta.version), record.row_by_id(), bars, record.meta.trials)
    from turngate.verdict.decide import rerun_stops
    from turngate.verdict.rule import policy_of

    policy = policy_of(record.meta)
    return (plan_reruns(cand, reference, record.meta.seeds, fixed=conf.get("k"), below_bar=cand.below(bars),
                        policy=policy),
            rerun_stops(cand, reference, fixed=conf.get("k"), below_bar=cand.below(bars), policy=policy))


def run_reruns(a: argparse.Namespace, record: Record, reference, out: Path) -> bool:
    """Run the planned reruns no shard made (turngate.gate.run.confirm_async), with the shards' settings."""
    import asyncio

    from turngate.core.faults import parse_faults
    from turngate.core.provenance import built_agent_code
    from turngate.gate.run import agents_for, confirm_async, gate_evaluators
    from turngate.jobs.runner import Settings
    from turngate.jobs.target import TargetOptions, version_file_of
    from turngate.record.results import planned_file

    m = record.meta
    options = TargetOptions(version=a.version or m.agent_version, model=m.model_override, transport=m.transport,
                            max_retries=m.max_retries, timeout=m.timeout)
    agents = agents_for(a.agent or m.agent, options)
    if agents[0].version != m.version:
        raise ConfigError(f"--version: the agent builds version {agents[0].version!r}, the shards ran {m.version!r}")
    planned, now = planned_file(record), version_file_of(agents[0].target)
    if (planned or {}).get("sha256") != (now or {}).get("sha256"):
        raise ConfigError(f"{m.version}'s version file changed since the shards ran: its reruns would mix two agents")
    if record.plan.agent_code is not None and (changed := code_changed(record.plan.agent_code,
                                                                      built_agent_code(a.agent or m.agent))):
        raise ConfigError(f"the agent's code changed since the shards ran ({changed}): its reruns would mix two agents")
    faults = parse_faults(m.faults)
    settings = Settings(model=m.model_override, judge=m.judge, trials=m.trials, seeds=list(m.seeds),
                        parallelism=m.parallelism, timeout=m.timeout or 120.0, transport=m.transport,
                        max_retries=m.max_retries, upload=not a.no_upload, judge_timeout=m.judge_timeout,
                        faults=faults, fault_specs=list(m.faults), workers=m.workers)
    evaluators = gate_evaluators(settings, m.thresholds)
    return asyncio.run(confirm_async(record, reference, settings, out, agents, evaluators))


@cli.guarded
def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    a = parser().parse_args(argv)
    started = time.perf_counter()
    out = cli.check_new_file(a.out, "--out", force=a.force, inputs=a.shards)
    outputs = [a.out]
    for flag, path in (("--report", a.report), ("--junit", a.junit), ("--markdown", a.markdown)):
        if path:  # as the gate's: new files (or --force), never a shard, --out or one another
            if any(Path(path).resolve() == Path(o).resolve() for o in outputs):
                raise ConfigError(f"{flag} {path}: another output of this merge writes that file; give each its own")
            cli.check_new_file(path, flag, force=a.force, inputs=a.shards)
            outputs.append(path)
    shards = load_shards(a.shards)
    record = merged_record(shards, argv)
    from turngate.gate.recheck import earlier_rule, file_reference, reference_of, wanted_reruns
    from turngate.gate.run import keep_reference

    if earlier_rule(record, a.shards[0]):  # shards of an earlier layout carry no copy: their file, kept now
        reference = file_reference(record)
        keep_reference(record, reference, record.meta.reference)
    else:
        reference = reference_of(record)
    want, stops = rerun_plan(record, reference)
    reruns = [r for r in record.runs if r.stage == "confirm"]
    # a row that stops early: the shards' reruns of it, in plan order, up to what the merged rule calls for
    wanted = set(wanted_reruns(record, reference, want, stops))
    extra = [r for r in reruns if (r.row_id, r.trial) not in wanted or r.version != record.meta.version]
    missing = wanted - {(r.row_id, r.trial) for r in reruns if r.version == record.meta.version}
    if a.version and a.version not in (record.meta.version, record.meta.agent_version):
        raise ConfigError(f"--version {a.version}: the shards ran {record.meta.version}")
    if extra:
        keep = {id(r) for r in extra}
        record.runs = [r for r in record.runs if id(r) not in keep]
        console.print(f"dropped {len(extra)} confirmation rerun(s) the merged plan does not call for (their rows "
                      "are not flagged over all rows)", markup=False, highlight=False)
    if record.meta.confirm is not None:
        record.meta.confirm["rows"] = want
    cli.claim_file(out, "--out", force=a.force)
    try:
        return _finish(a, record, reference, missing, out, started)
    except Exception:
        if out.exists() and out.stat().st_size == 0:  # nothing saved: the claimed empty file goes
            out.unlink()
        raise


def _finish(a: argparse.Namespace, record: Record, reference, missing: set, out: Path, started: float) -> int:
    """main(), once --out is claimed: the missing reruns, then the verdict from the saved record."""
    from turngate.gate.recheck import recompute

    if missing:
        console.print(f"running {len(missing)} confirmation rerun(s) no shard made", markup=False, highlight=False)
        record.meta.complete = False
        done = run_reruns(a, record, reference, out)
        record.meta.complete = done
        record.meta.interrupted = not done
    record.runs.sort(key=lambda r: (r.version != record.meta.version, r.stage != "gate", r.row_id, r.trial))
    record.meta.elapsed_s = round(record.meta.elapsed_s + time.perf_counter() - started, 3)
    save_record(record, out)
    if not record.meta.complete:
        console.print(f"interrupted: {out} kept without a verdict; run the merge again", markup=False)
        return cli.EXIT_UNJUDGED
    record = load_record(out)  # read back as every reader reads it
    verdict = recompute(record, out)
    save_record(record, out)
    n = record.meta.shard["count"]
    console.print(f"merged {n} shard(s): {len(record.rows)} rows, {len(record.runs_for(record.meta.version))} gate "
                  f"runs, {len(record.runs_for(record.meta.version, 'confirm'))} confirmation reruns",
                  markup=False, highlight=False)
    head, *rest = verdict.lines(results=str(out))
    console.print(head, markup=False, highlight=False)
    for line in rest:
        console.print(line, markup=False, highlight=False)
    from turngate.gate.sight import line as sight_line

    if said := sight_line(verdict.sensitivity):
        console.print(said, markup=False, highlight=False)
    _outputs(a, record, verdict, out)
    console.print(f"results: {out}", markup=False, highlight=False)
    return verdict.exit_code


def _outputs(a: argparse.Namespace, record: Record, verdict, out: Path) -> None:
    """What the gate writes after its verdict (turngate.verdict.conclude): the CI step summary,
    --report, --junit and --markdown, from the merged record."""
    from turngate.gate.conclude import write_ci_outputs
    from turngate.gate.recheck import fail_on_regression
    from turngate.gate.sight import markdown as sight_markdown
    from turngate.output.console import append_step_summary, markdown
    from turngate.verdict.decide import job_label

    m = record.meta
    append_step_summary(markdown(record.summary[m.version], job_label(record, m.version), verdict.line)
                        + sight_markdown(verdict.sensitivity))
    if a.report:
        from turngate.output.html_report import write_report

        console.print(f"report: {write_report(record, a.report, force=a.force)}", markup=False, highlight=False)
    write_ci_outputs(record, verdict, out, junit=a.junit, pr_comment=a.markdown,
                     fail_on_regression=fail_on_regression(m), force=a.force)

