"""The run summary: summary.json and the printed table of failures, each with its
failing scorer and the user turn after which it went wrong."""
from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from rich.table import Table

from evals.console import console

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
    path = out_dir / "summary.json"
    path.write_text(json.dumps(summary, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def print_summary(summary: dict, out_dir: Path, *, max_rows: int = 40) -> None:
    console.print(f"[bold]simulation of {summary['version']}[/]: {summary['conversations']} conversations "
                  f"({len(summary['scenarios'])} scenarios x {len(summary['personas'])} personas x "
                  f"{summary['seeds']} seed(s)), {summary['failed']} failed, {summary['new_failures']} of them "
                  f"with turns no dataset row has; user stopped: "
                  + ", ".join(f"{k} {v}" for k, v in sorted(summary["ended"].items())))
    if not summary["failures"]:
        console.print("[green]no failures[/]")
    else:
        t = Table(title="failures: the first scorer to fail, and the user turn after which it went wrong")
        for col in ("conversation", "scorer", "after turn", "that user turn", "why"):
            t.add_column(col, overflow="fold")
        for f in summary["failures"][:max_rows]:
            turn = f["user_turn"] if len(f["user_turn"]) <= 70 else f["user_turn"][:67] + "..."
            also = f" (+{', '.join(f['also'])})" if f["also"] else ""
            t.add_row(f["conversation"] + ("" if f["new"] else " [dim](in dataset)[/]"), f["scorer"] + also,
                      f"{f['after_turn']} of {f['of_turns']}", turn, f["explanation"][:120])
        console.print(t)
        if len(summary["failures"]) > max_rows:
            console.print(f"... and {len(summary['failures']) - max_rows} more in {out_dir / 'summary.json'}")
        first = summary["failures"][0]["file"]
        console.print(f"promote one to a dataset row: python scripts/promote.py {out_dir / first}", markup=False)
    console.print(f"results: {out_dir}", markup=False)
