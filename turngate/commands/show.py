"""Print one graded run from a results file: conversation, tool calls, verdicts.

    evals show results/v3-20261129-101500.json ROW_ID [TRIAL] [--version V]
    evals show results/v3-20261129-101500.json --verdict

The first line is the record's verdict, recomputed from its runs with what the record carries
(its bars, its rule, its copy of the reference: never today's reference file), or `incomplete:
N of M runs`; the second says what it was judged by. --reference FILE (or `current`) re-judges it
against another reference. A record of an earlier rule (results@4 and older) shows the verdict
stored with it, said so. A record whose runs do not match its plan, or whose rows are not its
dataset's selection, is one line and exit 2 (turngate/record/results.py).
"""
from __future__ import annotations

import argparse
import json

from turngate.core import cli_support as cli
from turngate.core.errors import ConfigError
from turngate.gate.recheck import headline, judged_by, rejudged
from turngate.output.console import console
from turngate.record.results import load_record


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=cli.command("show"), description=__doc__.splitlines()[0])
    p.add_argument("results")
    p.add_argument("row_id", nargs="?", help="the run to print (omit with --verdict)")
    p.add_argument("trial", nargs="?", type=int, default=0)
    p.add_argument("--version", help="which version's run (default: the candidate)")
    p.add_argument("--verdict", action="store_true", help="print the verdict with every reason and note, "
                                                          "recomputed from the runs")
    p.add_argument("--reference", metavar="FILE", help="re-judge against this reference (`current`: the project's "
                                                       "configured one), not the copy the record carries")
    return p


@cli.guarded
def main(argv=None) -> int:
    a = parser().parse_args(argv)
    if a.row_id is None and not a.verdict:
        raise ConfigError("show: give a ROW_ID (and TRIAL), or --verdict")
    record = load_record(a.results)  # its runs match its plan and digest, or a one-line error
    # never the verdict stored in the file (but an earlier rule's, said so)
    verdict, label = rejudged(record, a.results, a.reference, lambda note: console.print(
        f"note: {note}", markup=False, highlight=False))
    m = record.meta
    console.print(f"{a.results}: {m.job or m.version}, agent {m.agent or 'not named'} (as the file names it; not loaded): "
                  f"{record.incomplete() or headline(verdict)}", markup=False, highlight=False)
    console.print(f"  judged by {judged_by(record, label)}", markup=False, highlight=False)
    if a.verdict:
        for reason in verdict.reasons if verdict.exit_code in (1, 2) else []:
            console.print(f"  - {reason}", markup=False, highlight=False)
        for note in verdict.notes:
            console.print(f"  note: {note}", markup=False, highlight=False)
        if verdict.sensitivity is not None:  # what it could see, recomputed as the verdict is
            console.print(f"  sensitivity: {verdict.sensitivity.line}", markup=False, highlight=False)
        if a.row_id is None:
            return 0
    version = a.version or record.meta.version
    run = next((r for r in record.runs if r.row_id == a.row_id and r.trial == a.trial and r.version == version), None)
    if run is None:
        ids = sorted({r.row_id for r in record.runs})
        hint = f"known rows: {', '.join(ids[:10])}{' ...' if len(ids) > 10 else ''}"
        raise ConfigError(f"{a.results}: no run {a.row_id}#{a.trial} for {version}; {hint}")
    t = run.turn.model_dump(mode="json")
    failed = [n for n, v in run.verdicts.items() if v.passed is False]
    console.print(f"[bold]{run.row_id}#{run.trial}[/] {run.job} model={t.get('model')} seed={run.seed}: "
                  + ("[red]FAIL[/] " + ", ".join(failed) if failed else "[green]PASS[/]"))
    if t.get("error"):
        console.print(f"  agent error: {t['error']}", markup=False)
    for m in t.get("messages", []):
        console.print(f"  {m['role']:>9}: {m['content']}", markup=False)
    for c in t.get("tool_calls", []):
        reply = (f"error: {c['error']}" if c.get("error") is not None else
                 "NO REPLY" if c.get("result") is None else json.dumps(c["result"]))
        console.print(f"  -> {c['name']}({json.dumps(c['arguments'])})\n       <- {reply}", markup=False)
    for w in t.get("writes", []):
        console.print(f"  write {w.get('reference')}: {json.dumps(w)}", markup=False)
    u = t.get("usage", {})
    console.print(f"  {u.get('llm_calls', 0)} model calls, {u.get('prompt_tokens', 0)}+{u.get('completion_tokens', 0)} "
                  f"tokens, {t.get('seconds', 0)} s")
    for name, v in run.verdicts.items():
        mark = {True: "[green]pass[/]", False: "[red]FAIL[/]", None: "n/a "}[v.passed]
        console.print(f"  {mark} {name}: ", end="")
        console.print(v.explanation, markup=False)
    return 0

