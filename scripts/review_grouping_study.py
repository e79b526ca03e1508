"""How turngate.review.grouping's threshold was chosen, and how it does on held-out notes.

    python scripts/review_grouping_study.py            # the sweep on the tuning notes, then held-out

Each notes file is JSONL: {"set": ..., "theme": ..., "note": ...}; a set is scored on its own
(its themes are its own labels). The score is B-cubed F1 (precision: how much of a note's
group shares its theme; recall: how much of its theme is in its group; averaged over notes).
The threshold is chosen on tests/data/review/notes_tune.jsonl only; the held-out file is read
at the chosen threshold, never swept.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
TUNE = REPO / "tests" / "data" / "review" / "notes_tune.jsonl"
HELDOUT = REPO / "tests" / "data" / "review" / "notes_heldout.jsonl"


def load(path: Path) -> dict[str, list[dict]]:
    sets: dict[str, list[dict]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            item = json.loads(line)
            sets.setdefault(item["set"], []).append(item)
    return sets


def bcubed(pred: list[int], gold: list[str]) -> tuple[float, float, float]:
    """(F1, precision, recall), B-cubed, over the notes."""
    n = len(gold)
    p = r = 0.0
    for i in range(n):
        same_p = {j for j in range(n) if pred[j] == pred[i]}
        same_g = {j for j in range(n) if gold[j] == gold[i]}
        both = len(same_p & same_g)
        p += both / len(same_p)
        r += both / len(same_g)
    p, r = p / n, r / n
    return (2 * p * r / (p + r) if p + r else 0.0), p, r


def score(items: list[dict], threshold: float) -> tuple[float, float, float]:
    from turngate.review.grouping import suggest

    notes = {("study", f"{k:04d}"): it["note"] for k, it in enumerate(items)}
    pred = [0] * len(items)
    for g, s in enumerate(suggest(notes, threshold=threshold)):
        for _, run in s.runs:
            pred[int(run)] = g
    return bcubed(pred, [it["theme"] for it in items])


def mean_score(sets: dict[str, list[dict]], threshold: float) -> tuple[float, float, float]:
    scores = [score(items, threshold) for items in sets.values()]
    return tuple(sum(s[k] for s in scores) / len(scores) for k in range(3))  # type: ignore[return-value]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--tune", default=str(TUNE))
    p.add_argument("--heldout", default=str(HELDOUT))
    a = p.parse_args(sys.argv[1:] if argv is None else argv)
    from turngate.review.grouping import THRESHOLD

    tune = load(Path(a.tune))
    print(f"tuning notes: {', '.join(f'{k} ({len(v)})' for k, v in tune.items())}; mean over the sets")
    print("threshold  F1     precision recall")
    for t in [x / 100 for x in range(40, 81, 2)]:
        f1, prec, rec = mean_score(tune, t)
        print(f"{t:9.2f}  {f1:.3f}  {prec:.3f}     {rec:.3f}" + ("   <- THRESHOLD" if abs(t - THRESHOLD) < 1e-9 else ""))
    print(f"\nheld-out notes at THRESHOLD = {THRESHOLD}:")
    for name, items in load(Path(a.heldout)).items():
        f1, prec, rec = score(items, THRESHOLD)
        print(f"  {name} ({len(items)} notes, {len({i['theme'] for i in items})} themes): "
              f"F1 {f1:.3f}, precision {prec:.3f}, recall {rec:.3f}")
    merged = [it for items in load(Path(a.heldout)).values() for it in items]
    f1, prec, rec = score(merged, THRESHOLD)
    print(f"  all together ({len(merged)} notes): F1 {f1:.3f}, precision {prec:.3f}, recall {rec:.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
