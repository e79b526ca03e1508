"""The offline model's and the offline judge's figures on the issue-22 sets, as docs/offline-model.md
quotes them (this script is the only source of those numbers).

    python -m scripts.offline_figures [--version v3] [--markdown]   # from the repository root

Sets: tests/data/sure_dev.jsonl (written before the change; tuned on), tests/data/sure_fresh.jsonl
(written after it, measured once as written), tests/data/heldout_messages*.jsonl (the older held-out
and blind sets), and the judge's tests/data/judge_sure.jsonl. The model runs at temperature 0 through
the real agent and the code scorers (tests/offline_heldout.py); a run passes when every code scorer
passes, and a row tagged negated / question-only / no-write / ask counts a write if any write tool
was even attempted. A clarifying question is an answer offering a write ("do you want me to ...?");
it also answers when answer_facts did not fail; the trail check is tests/offline_trail.py.
"""
from __future__ import annotations

import argparse
import asyncio
from pathlib import Path

from evals.judge.offline import OfflineJudge
from tests.offline_heldout import run_file, score_record
from tests.offline_trail import trail_figures
from turngate.commands.calibrate_judge import load_labels
from turngate.scoring.case import Case

REPO = Path(__file__).resolve().parents[1]

DATA = REPO / "tests" / "data"
MODEL_SETS = [("dev (before the change, tuned on)", DATA / "sure_dev.jsonl"),
              ("fresh (after the change)", DATA / "sure_fresh.jsonl"),
              ("standin_dev (issue 37, tuned on)", DATA / "standin_dev.jsonl"),
              ("standin_fresh (issue 37, after the change)", DATA / "standin_fresh.jsonl")] + \
    [(p.stem, p) for p in sorted(DATA.glob("heldout_messages*.jsonl"))]
JUDGE_SETS = [("judge fresh (after the change)", DATA / "judge_sure.jsonl")]


def judge_rates(path: Path) -> tuple[int, int, int, int]:
    tp = tn = pos = neg = 0
    for ex in load_labels(path):
        passed, _ = OfflineJudge().judge(Case(ex.row, ex.turn))
        if ex.human == "pass":
            pos, tp = pos + 1, tp + passed
        else:
            neg, tn = neg + 1, tn + (not passed)
    return tp, pos, tn, neg


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--version", default="v3")
    ap.add_argument("--markdown", action="store_true", help="print the tables docs/offline-model.md shows")
    a = ap.parse_args()
    rows = []
    for name, path in MODEL_SETS:
        record = asyncio.run(run_file(path, version=a.version, temperature=0.0))
        s, t = score_record(record), trail_figures(record)
        rows.append((name, f"{s.passed}/{s.runs}", f"{len(s.no_write_violations)} of {s.no_write_runs}",
                     f"{t['clarify_answers']} of {t['clarify']}", str(len(t["misstated"]))))
    if a.markdown:
        print(f"| set ({a.version}, temperature 0) | every code scorer passed | writes on no-write rows "
              "| clarifying questions that also answer | answers misstating the trail |")
        print("|---|---|---|---|---|")
        for r in rows:
            print(f"| {' | '.join(r)} |")
        print()
        print("| judge set | TPR (passes what humans pass) | TNR (fails what humans fail) |")
        print("|---|---|---|")
    else:
        for name, passed, wrote, clarify, misstated in rows:
            print(f"{name}: {passed} pass every code scorer; writes on no-write rows: {wrote}; clarifying "
                  f"questions that also answer: {clarify}; misstating the trail: {misstated}")
    for name, path in JUDGE_SETS:
        tp, pos, tn, neg = judge_rates(path)
        print(f"| {name} | {tp}/{pos} | {tn}/{neg} |" if a.markdown else f"{name}: TPR {tp}/{pos}, TNR {tn}/{neg}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
