"""Hand-built results records with known verdict counts, for compare / report tests."""
from __future__ import annotations

from turngate.record.results import Meta, Record, RunResult, ScorerVerdict
from turngate.verdict.rule import judged_with

SCORERS = ["refund_outcome", "policy_judge"]


def row(row_id: str, message: str = "Refund order A-1001 in full.") -> dict:
    return {"id": row_id, "inputs": {"message": message, "tags": ["refund"], "source": "manual",
                                     "expect": {"refunds": [{"order_id": "A-1001"}]}},
            "expected_output": "Refunds A-1001 in full (129 EUR)."}


def turn(version: str, seed: int, answer: str = "Refunded 129.00 EUR for A-1001 (W-0001).",
         user: str = "Refund order A-1001 in full.") -> dict:
    return {"version": version, "model": "offline", "seed": seed, "answer": answer,
            "messages": [{"role": "user", "content": user}, {"role": "assistant", "content": answer}],
            "tool_calls": [{"name": "refund_order", "arguments": {"order_id": "A-1001", "amount": 129.0},
                            "result": {"ok": True, "reference": "W-0001"}, "error": None}],
            "writes": [{"action": "refund", "order_id": "A-1001", "amount": 129.0, "reference": "W-0001"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "llm_calls": 2}, "seconds": 0.0, "error": None}


def run(version: str, row_id: str, trial: int, verdicts: dict[str, bool | None], **turn_kw) -> RunResult:
    return RunResult(row_id=row_id, trial=trial, seed=trial, version=version, job=f"refund-agent@{version}",
                     turn=turn(version, trial, **turn_kw),
                     verdicts={n: ScorerVerdict(passed=p, explanation=f"{version} {row_id}#{trial} {n}: "
                                          + {True: "pass", False: "fail", None: "n/a"}[p])
                               for n, p in verdicts.items()})


def runs_from_pairs(version_a: str, version_b: str, pairs: list[tuple[bool | None, bool | None]],
                    scorer: str = "refund_outcome", trials: int = 1):
    """Two run lists whose (row, trial) k carries verdict pairs[k] for `scorer` (the other
    scorer always passes on both)."""
    a, b = [], []
    for k, (pa, pb) in enumerate(pairs):
        rid, trial = f"r{k // trials:03d}", k % trials
        other = "policy_judge" if scorer != "policy_judge" else "refund_outcome"
        a.append(run(version_a, rid, trial, {scorer: pa, other: True}))
        b.append(run(version_b, rid, trial, {scorer: pb, other: True}))
    return a, b


def record(version: str, runs: list[RunResult], rows: list[dict], *, baseline: str | None = None,
           sha: str = "a" * 64, trials: int = 1) -> Record:
    meta = Meta(version=version, baseline=baseline, model="offline", judge="offline", dataset="datasets/x.jsonl",
                dataset_sha256=sha, trials=trials, seeds=list(range(trials)), parallelism=1,
                thresholds={"refund_outcome": 0.8, "policy_judge": 0.7}, started="2026-11-29T10:00:00+00:00",
                complete=True, judged_with=judged_with())  # today's rule, by the bars only
    return Record(meta=meta, rows=rows, runs=runs)


def resealed(data: dict) -> str:
    """A record's JSON (its digest and seal dropped) as save_record would write it: its digest
    recomputed and its seal added, as a forger or a script that edits a record and reseals it would."""
    import json

    from turngate.record.results import SEAL, digest_of, seal_text

    data = {k: v for k, v in data.items() if k not in ("digest", SEAL)}
    data["digest"] = digest_of(data)
    return seal_text(json.dumps(data, indent=1))


def as_layout_4(text: str, **meta) -> str:
    """A results@5 record's text as a results@4 library wrote it (no judged_with, no dataset
    rows: its reference read from the file meta.reference names), resealed; meta: fields to set."""
    import json

    data = json.loads(text)
    data["meta"]["schema"] = "turngate/results@4"
    data["meta"].pop("judged_with", None)
    data["meta"].pop("dataset_rows", None)
    data["meta"].update(meta)
    if "reference" in meta:
        data["plan"]["settings"]["reference"] = meta["reference"]
    return resealed(data)
