"""The run summary: summary.json and the printed table of failures, each with its
failing scorer and the user turn after which it went wrong."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from rich.table import Table

from turngate.core.atomic_write import write_atomic
from turngate.output.console import console

from .run import ConversationRecord


def summarise(records: list[ConversationRecord], meta: dict) -> dict:
    failed = [r for r in records if r.failure is not None]
    failures = [{"conversation": r.conversation, "file": f"{r.conversation}.json", "scenario": r.scenario,
                 "persona": r.persona, "seed": r.seed, "scorer": r.failure.scorer,
                 "explanation": r.failure.explanation, "after_turn": r.failure.after_turn,
                 "of_turns": len(r.turns), "user_turn": r.failure.user_turn,
                 "also": [f.scorer for f in r.failures[1:]], "new": not r.known_rows, "known_rows": r.known_rows}
                for r in failed]
    return {
        **meta,
        "conversations": len(records),
        "failed": len(failed),
        "new_failures": sum(1 for f in failures if f["new"]),
        "goal_reached": sum(1 for r in records if r.goal_reached),
        "by_scorer": dict(Counter(f.scorer for r in failed for f in r.failures)),
        "by_scenario": {s: {"conversations": sum(1 for r in records if r.scenario == s),
                            "failed": sum(1 for r in failed if r.scenario == s)}
                        for s in dict.fromkeys(r.scenario for r in records)},
        "ended": dict(Counter(r.ended for r in records)),
        "failures": failures,
    }


def write_summary(summary: dict, out_dir: Path) -> Path:
    return write_atomic(out_dir / "summary.json", json.dumps(summary, indent=2, ensure_ascii=False) + "\n",
                        what="the simulation summary")


def print_summary(summary: dict, out_dir: Path, *, max_rows: int = 40) -> None:
    console.print(f"[bold]simulation of {summary['version'] or 'the agent'}[/]: {summary['conversations']} conversations "
                  f"({len(summary['scenarios'])} scenarios x {len(summary['personas'])} personas x "
                  f"{summary['seeds']} seed(s)); user stopped: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(summary["ended"].items())))
    t = Table(title="failed conversations per scenario")
    t.add_column("scenario")
    t.add_column("failed", justify="right")
    for name, c in summary["by_scenario"].items():
        t.add_row(name, f"{c['failed']}/{c['conversations']}")
    console.print(t)
    failures = summary["failures"]
    if not failures:
        console.print("[green]no failures[/]")
    for f in failures[:max_rows]:
        also = f" (+{', '.join(f['also'])})" if f["also"] else ""
        known = "" if f["new"] else f"  [dim]same turns as dataset row {', '.join(f['known_rows'])}[/]"
        console.print(f"[red]FAIL[/] {f['conversation']}  [bold]{f['scorer']}[/]{also}{known}")
        console.print(f"     after user turn {f['after_turn']} of {f['of_turns']}: {f['user_turn']!r}", markup=False)
        console.print(f"     {f['explanation']}", markup=False)
    if len(failures) > max_rows:
        console.print(f"... and {len(failures) - max_rows} more in {out_dir / 'summary.json'}", markup=False)
    if failures:
        console.print(f"[bold]{summary['failed']} of {summary['conversations']} conversations failed[/] "
                      f"({summary['new_failures']} with turns no dataset row has)")
        console.print(f"promote one to a dataset row: python scripts/promote.py {out_dir / failures[0]['file']}",
                      markup=False)
    console.print(f"results: {out_dir}", markup=False)
