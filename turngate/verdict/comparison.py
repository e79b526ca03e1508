"""Comparing two versions over matched (row, trial) pairs: per-scorer differences with a
paired interval and an exact McNemar test, the flips, and one combined record. A library
module: turngate/commands/compare.py (`evals compare`) and turngate/verdict/decide.py use it.

Worse / better is decided over all the scorers compared at once: their McNemar p-values are
adjusted with Holm's step-down procedure, so the chance that an unchanged version is called
significantly different on some scorer (the family-wise error rate) is at most ALPHA, not
ALPHA per scorer (8 scorers tested alone at 0.05 flag something up to ~1 - 0.95^8 = 34% of the
time when independent). The family is the scorers with at least one discordant pair: the others
have p = 1 and cannot be flagged."""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from turngate.core.errors import ConfigError
from turngate.record.results import Record, RunResult
from turngate.verdict.policy import DEFAULT
from turngate.verdict.stats import holm_adjusted, mcnemar_exact, newcombe_paired_interval
from turngate.verdict.summary import scorer_names, summarise

ALPHA = DEFAULT.alpha_baseline  # the family-wise level (turngate/verdict/policy.py)
MAX_FLIPS_SHOWN = 12
METHOD = {"difference": "candidate - baseline over pairs where both verdicts apply; "
                        "95% Newcombe square-and-add interval for paired proportions",
          "test": "exact two-sided McNemar (binomial on the discordant pairs)",
          "correction": f"Holm's step-down over the scorers with a discordant pair (family-wise error rate {ALPHA})",
          "rule": f"worse: Holm-adjusted p < {ALPHA} and difference < 0; "
                  f"better: Holm-adjusted p < {ALPHA} and difference > 0"}


@dataclass
class VerdictTable:
    """One side's verdicts as columns, the only thing a comparison reads: the (row, trial) keys,
    and per scorer each run's passed (None: n/a or no verdict) and explanation, in key order.
    Small and plain: a side (turngate/gate/sides.py) is reduced to it once its file is read."""
    keys: list[tuple[str, int]]
    passed: dict[str, list[bool | None]]
    explanations: dict[str, list[str]]

    @classmethod
    def of(cls, runs: list[RunResult], names: list[str] | None = None) -> VerdictTable:
        # A resumed run may hold a (row, trial) twice; the later one is the one that counts.
        keys = [(r.row_id, r.trial) for r in runs]
        verdicts = [r.verdicts for r in runs]
        if len(set(keys)) != len(keys):
            last = dict(zip(keys, verdicts, strict=True))
            keys, verdicts = list(last), list(last.values())
        names = scorer_names(runs) if names is None else names
        passed, explanations = {}, {}
        # one object per distinct explanation: a big side holds a few thousand distinct texts
        # in hundreds of thousands of cells
        same = {"": ""}.setdefault
        for name in names:
            cells = [vs.get(name) for vs in verdicts]
            passed[name] = [None if v is None else v.passed for v in cells]
            explanations[name] = ["" if v is None else same(v.explanation, v.explanation) for v in cells]
        return cls(keys, passed, explanations)


def compare(baseline_runs: list[RunResult], candidate_runs: list[RunResult], scorer_names: list[str], *,
            baseline: str, candidate: str) -> dict:
    """The comparison section of a results record. Pure: the same runs give the same dict."""
    return compare_tables(VerdictTable.of(baseline_runs, scorer_names), VerdictTable.of(candidate_runs, scorer_names),
                          scorer_names, baseline=baseline, candidate=candidate)


def compare_tables(base: VerdictTable, cand: VerdictTable, scorer_names: list[str], *,
                   baseline: str, candidate: str) -> dict:
    """compare() over two sides' verdict tables."""
    base_at = {k: i for i, k in enumerate(base.keys)}
    cand_at = {k: i for i, k in enumerate(cand.keys)}
    keys = sorted(base_at.keys() & cand_at.keys())
    bi, ci = [base_at[k] for k in keys], [cand_at[k] for k in keys]
    scorers: dict[str, dict] = {}
    regressed: list[dict] = []
    fixed: list[dict] = []
    none = [None] * max(len(base.keys), len(cand.keys))
    # one column of verdicts per side and scorer, counted by Counter: comprehensions, not a
    # branching loop, so 100k pairs x 8 scorers take a fraction of a second
    for name in scorer_names:
        base_col, cand_col = base.passed.get(name, none), cand.passed.get(name, none)
        was, now = [base_col[i] for i in bi], [cand_col[i] for i in ci]
        # a (pass on both), b (pass -> fail), c (fail -> pass), d (fail on both); a pair n/a (or
        # missing) on either side is not a comparable pair
        if was == now:  # no pair differs (most scorers, most of the time): counted without pairing
            a, b, c, d = was.count(True), 0, 0, was.count(False)
        else:
            counts = Counter(zip(was, now, strict=True))
            a, b, c, d = (counts[True, True], counts[True, False], counts[False, True], counts[False, False])
        n = a + b + c + d
        skipped = len(keys) - n
        if b or c:
            base_why, cand_why = base.explanations.get(name), cand.explanations.get(name)
            for j, pair in enumerate(zip(was, now, strict=True)):
                if pair[0] is not pair[1] and None not in pair:
                    (regressed if pair[0] else fixed).append(
                        {"row_id": keys[j][0], "trial": keys[j][1], "scorer": name,
                         "baseline_explanation": base_why[bi[j]], "candidate_explanation": cand_why[ci[j]]})
        diff, low, high = newcombe_paired_interval(a, b, c, d)
        scorers[name] = {
            "n": n, "baseline_mean": (a + b) / n if n else None, "candidate_mean": (a + c) / n if n else None,
            "diff": diff if n else None, "low": low, "high": high,
            "both_pass": a, "b": b, "c": c, "both_fail": d, "p_value": mcnemar_exact(b, c), "skipped_pairs": skipped}
    # the family: every scorer with a discordant pair. One with none has p = 1 whatever happens
    # (conditionally on its discordant count, as McNemar's test is), so it can never be a
    # false alarm and would only make the others' thresholds stricter.
    family = [name for name, s in scorers.items() if s["b"] + s["c"]]
    adjusted = dict(zip(family, holm_adjusted([scorers[name]["p_value"] for name in family]), strict=True))
    for name, s in scorers.items():
        s["p_holm"] = adjusted.get(name, 1.0)
        significant = name in adjusted and s["p_holm"] < ALPHA
        s["worse"], s["better"] = significant and s["diff"] < 0, significant and s["diff"] > 0
    only_base = sorted(base_at.keys() - cand_at.keys())
    only_cand = sorted(cand_at.keys() - base_at.keys())
    return {
        "baseline": baseline, "candidate": candidate, "alpha": ALPHA, "method": METHOD,
        "correction": "holm", "family_size": len(family),
        "pairs": len(keys),
        "unmatched": {"baseline_only": len(only_base), "candidate_only": len(only_cand),
                      "examples": [f"{baseline} {r}#{t}" for r, t in only_base[:5]]
                                  + [f"{candidate} {r}#{t}" for r, t in only_cand[:5]]},
        "scorers": scorers,
        "worse": [n for n, s in scorers.items() if s["worse"]],
        "better": [n for n, s in scorers.items() if s["better"]],
        "flips": {"regressed": regressed, "fixed": fixed},
    }


def _num(v, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}".rstrip("0").rstrip(".")


def _holm(s: dict) -> float:
    # a comparison stored before the Holm correction has no p_holm: its raw p is what decided
    return s.get("p_holm", s["p_value"])


def worse_scorers(comparison: dict) -> list[tuple[str, float]]:
    """(scorer, its Holm-adjusted p) for each scorer significantly worse than the baseline
    (Holm-adjusted over the scorers compared); turngate/output/wording.py words each as a line."""
    return [(n, s["p_holm"]) for n, s in comparison["scorers"].items() if s["worse"]]


def regressions(comparison: dict) -> list[str]:
    """The scorers significantly worse than the baseline."""
    return [n for n, _ in worse_scorers(comparison)]


def _label(record, other, suffix: str) -> str:
    """Version names as labels; the same version on both sides gets the file named."""
    v = record.meta.version
    return v if v != other.meta.version else f"{v} ({suffix})"


def align(a, b, allow_different_rows: bool) -> tuple[list[dict], str | None]:
    """The rows both records ran, or ConfigError when they are different datasets.
    With allow_different_rows: the rows with the same id and the same content, and a note."""
    rows_a, rows_b = a.row_by_id(), b.row_by_id()
    same_rows = rows_a.keys() == rows_b.keys()
    same_data = a.meta.dataset_sha256 == b.meta.dataset_sha256
    if same_rows and same_data:
        return [rows_b[i] for i in rows_b], None
    if not allow_different_rows:
        if not same_data:
            why = f"dataset_sha256 {a.meta.dataset_sha256[:12]} != {b.meta.dataset_sha256[:12]}"
        else:
            why = f"row ids differ ({len(rows_a.keys() - rows_b.keys())} only in A, {len(rows_b.keys() - rows_a.keys())} only in B)"
        raise ConfigError(f"compare: the two runs are over different datasets ({why}); "
                          "pass --allow-different-rows to compare the rows they share")
    common = [i for i in rows_b if i in rows_a and rows_a[i] == rows_b[i]]
    changed = sum(1 for i in rows_b if i in rows_a and rows_a[i] != rows_b[i])
    note = (f"comparing {len(common)} common rows; dropped {len(rows_a.keys() - rows_b.keys())} only in A, "
            f"{len(rows_b.keys() - rows_a.keys())} only in B, {changed} whose content differs")
    if not common:
        raise ConfigError("compare: the two runs share no row (same id and same content)")
    return [rows_b[i] for i in common], note


def combined_record(a, b, rows: list[dict], base_label: str, cand_label: str):
    """One record holding both sides (relabelled), so the report reads it like a --baseline run."""
    keep = {r["id"] for r in rows}
    base_runs = [r for r in a.runs_for(a.meta.version) if r.row_id in keep]
    cand_runs = [r for r in b.runs_for(b.meta.version) if r.row_id in keep]
    by_id = {r["id"]: r for r in rows}
    record = combined(b.meta, rows, base_label, cand_label,
                      summaries=(summarise(base_runs, by_id, {}, a.meta.trials),
                                 summarise(cand_runs, by_id, {}, b.meta.trials)),
                      tables=(VerdictTable.of(base_runs), VerdictTable.of(cand_runs)))
    record.runs = ([r.model_copy(update={"version": cand_label}) for r in cand_runs]
                   + [r.model_copy(update={"version": base_label}) for r in base_runs])
    return record


def combined(meta_b, rows: list[dict], base_label: str, cand_label: str, *, summaries, tables) -> Record:
    """The combined record from each side's summary and verdict table (over `rows`), without
    runs: turngate/gate/sides.py reduces each side to these."""
    bars = meta_b.thresholds if isinstance(meta_b.thresholds, dict) else {}
    base_summary, cand_summary = summaries
    for summary in summaries:  # the candidate's bars on both sides, as the report shows them
        for name, entry in summary.scorers.items():
            entry.bar = bars.get(name)
    meta = meta_b.model_copy(update={"version": cand_label, "baseline": base_label, "compared_files": None})
    record = Record(meta=meta, rows=rows, runs=[])
    record.summary = {cand_label: cand_summary, base_label: base_summary}
    base_table, cand_table = tables
    names = list(dict.fromkeys([*cand_table.passed, *base_table.passed]))
    record.comparison = compare_tables(base_table, cand_table, names, baseline=base_label, candidate=cand_label)
    return record
