"""Comparing two versions over matched (row, trial) pairs: per-scorer differences with a
paired interval and an exact McNemar test, the flips, and one combined record. A library
module: evals/compare.py (the command) and evals/verdict/decide.py use it.

Worse / better is decided over all the scorers compared at once: their McNemar p-values are
adjusted with Holm's step-down procedure, so the chance that an unchanged version is called
significantly different on some scorer (the family-wise error rate) is at most ALPHA, not
ALPHA per scorer (8 scorers tested alone at 0.05 flag something up to ~1 - 0.95^8 = 34% of the
time when independent). The family is the scorers with at least one discordant pair: the others
have p = 1 and cannot be flagged."""
from __future__ import annotations

from collections import Counter

from evals.core.errors import ConfigError
from evals.record.results import Record, RunResult
from evals.verdict.stats import holm_adjusted, mcnemar_exact, newcombe_paired_interval
from evals.verdict.summary import scorer_names, summarise

ALPHA = 0.05
MAX_FLIPS_SHOWN = 12
METHOD = {"difference": "candidate - baseline over pairs where both verdicts apply; "
                        "95% Newcombe square-and-add interval for paired proportions",
          "test": "exact two-sided McNemar (binomial on the discordant pairs)",
          "correction": f"Holm's step-down over the scorers with a discordant pair (family-wise error rate {ALPHA})",
          "rule": f"worse: Holm-adjusted p < {ALPHA} and difference < 0; "
                  f"better: Holm-adjusted p < {ALPHA} and difference > 0"}


def _by_key(runs: list[RunResult]) -> dict[tuple[str, int], RunResult]:
    # A resumed run may hold a (row, trial) twice; the later one is the one that counts.
    return {r.key: r for r in runs}


def _explanation(run: RunResult, name: str) -> str:
    v = run.verdicts.get(name)
    return "" if v is None else v.explanation


def compare(baseline_runs: list[RunResult], candidate_runs: list[RunResult], scorer_names: list[str], *,
            baseline: str, candidate: str) -> dict:
    """The comparison section of a results record. Pure: the same runs give the same dict."""
    base, cand = _by_key(baseline_runs), _by_key(candidate_runs)
    keys = sorted(base.keys() & cand.keys())
    scorers: dict[str, dict] = {}
    regressed: list[dict] = []
    fixed: list[dict] = []
    # one column of verdicts per side and scorer, counted by Counter: comprehensions, not a
    # branching loop, so 100k pairs x 8 scorers take a fraction of a second
    base_v, cand_v = [base[k].verdicts for k in keys], [cand[k].verdicts for k in keys]
    for name in scorer_names:
        was = [None if (v := vs.get(name)) is None else v.passed for vs in base_v]
        now = [None if (v := vs.get(name)) is None else v.passed for vs in cand_v]
        counts = Counter(zip(was, now, strict=True))
        # a (pass on both), b (pass -> fail), c (fail -> pass), d (fail on both); a pair n/a (or
        # missing) on either side is not a comparable pair
        a, b, c, d = (counts[True, True], counts[True, False], counts[False, True], counts[False, False])
        n = a + b + c + d
        skipped = len(keys) - n
        for flips, kind, count in ((regressed, (True, False), b), (fixed, (False, True), c)):
            if count:
                flips += [_flip(keys[i], name, base[keys[i]], cand[keys[i]])
                          for i, pair in enumerate(zip(was, now, strict=True)) if pair == kind]
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
    only_base = sorted(base.keys() - cand.keys())
    only_cand = sorted(cand.keys() - base.keys())
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


def _flip(key: tuple[str, int], name: str, was: RunResult, now: RunResult) -> dict:
    return {"row_id": key[0], "trial": key[1], "scorer": name,
            "baseline_explanation": _explanation(was, name), "candidate_explanation": _explanation(now, name)}


def _num(v, fmt: str = ".3f") -> str:
    return "-" if v is None else format(v, fmt)


def _p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}".rstrip("0").rstrip(".")


def describe_scorer(name: str, s: dict, baseline: str) -> str:
    return (f"{name}: significantly {'worse' if s['worse'] else 'better'} than {baseline} "
            f"({_num(s['baseline_mean'])} -> {_num(s['candidate_mean'])}, difference {s['diff']:+.3f} "
            f"[{s['low']:+.3f}, {s['high']:+.3f}], McNemar p={s['p_value']:.3g}, "
            f"Holm-adjusted p={_holm(s):.3g}: "
            f"{s['b']} pass->fail vs {s['c']} fail->pass over {s['n']} pairs)")


def _holm(s: dict) -> float:
    # a comparison stored before the Holm correction has no p_holm: its raw p is what decided
    return s.get("p_holm", s["p_value"])


def regressions(comparison: dict) -> list[str]:
    """One line per scorer that is significantly worse than the baseline (Holm-adjusted over
    the scorers compared), naming the rule."""
    base = comparison["baseline"]
    return [f"regression rule: {describe_scorer(n, s, base)}"
            for n, s in comparison["scorers"].items() if s["worse"]]


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
    base_runs = [r.model_copy(update={"version": base_label}) for r in a.runs_for(a.meta.version) if r.row_id in keep]
    cand_runs = [r.model_copy(update={"version": cand_label}) for r in b.runs_for(b.meta.version) if r.row_id in keep]
    meta = b.meta.model_copy(update={"version": cand_label, "baseline": base_label,
                                     "compared_files": None})
    record = Record(meta=meta, rows=rows, runs=cand_runs + base_runs)
    bars = b.meta.thresholds if isinstance(b.meta.thresholds, dict) else {}
    by_id = record.row_by_id()
    record.summary = {cand_label: summarise(cand_runs, by_id, bars, b.meta.trials),
                      base_label: summarise(base_runs, by_id, bars, a.meta.trials)}
    names = list(dict.fromkeys(scorer_names(cand_runs) + scorer_names(base_runs)))
    record.comparison = compare(base_runs, cand_runs, names, baseline=base_label, candidate=cand_label)
    return record
