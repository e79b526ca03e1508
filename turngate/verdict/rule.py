"""The decision rule a record is judged by, by number: its version and its constants (the
levels, screens and rerun counts of turngate/verdict/confirm.py and decide.py, the comparison's
level), stored in every results@5 record (meta.judged_with) with the reference copy it used.

A reader re-judges a record only under the rule it was judged by: one of another rule (or of a
layout before results@5, which named none) keeps its stored verdict, shown as "judged by rule
N" (or "by an earlier rule"), and `evals regrade` re-judges it by today's rule. Changing any
constant is a new rule: add it to RULES under a new number (tests/test_records_last.py holds
RULE's constants to the modules' own)."""
from __future__ import annotations

from typing import Any

from turngate.record.results import JudgedWith, reference_sha256
from turngate.verdict import comparison, confirm, decide, reference

RULE = 1
RULES: dict[int, dict[str, int | float]] = {
    1: {"confirm.SCREEN_P": 0.3, "confirm.SCREEN_P_AGG": 0.25, "confirm.ALPHA": 0.005, "confirm.RERUNS_LEAN": 0.5,
        "confirm.ROW_SHARE": 0.5, "confirm.ALPHA_STAGE1_ROWS": 0.001, "confirm.ALPHA_ONE_STAGE": 0.01,
        "confirm.K_MIN": 3, "confirm.K_MAX": 20, "confirm.K_AGG_MIN": 5, "confirm.K_AGG_PER_TRIAL": 8,
        "confirm.K_AGG_MAX": 30, "confirm.QUIET_RATE": 0.015, "confirm.K_QUIET_MIN": 5,
        "confirm.K_QUIET_PER_TRIAL": 12, "confirm.K_QUIET_MAX": 60, "confirm.POWER_RATE": 0.9, "confirm.POWER": 0.9,
        "confirm.EVIDENCE_STEP": 0.05, "confirm.CONFIRM_BASE": 1_000_000_000, "confirm.CONFIRM_STRIDE": 4096,
        "decide.ALPHA_MEANS": 0.1, "decide.ROW_P_CAP": 0.05, "reference.PRIOR": 0.5, "comparison.ALPHA": 0.05},
}
_MODULES = {"confirm": confirm, "decide": decide, "reference": reference, "comparison": comparison}


def policy() -> dict[str, int | float]:
    """The constants as the modules hold them now, under RULE's names."""
    return {name: getattr(_MODULES[name.split(".")[0]], name.split(".")[1]) for name in RULES[RULE]}


def judged_with(ref: Any = None, source: dict[str, str] | None = None) -> JudgedWith:
    """meta.judged_with for a record judged now against `ref` (a Reference narrowed to the
    record's rows and judge, or None: by the bars only); source: the reference file's path and sha256."""
    copy = ref.model_dump(mode="json") if ref is not None else None
    return JudgedWith(rule=RULE, policy=dict(RULES[RULE]), reference=copy, reference_sha256=reference_sha256(copy),
                      reference_file=source if copy is not None else None)


def earlier(meta: Any, where: Any = "results file") -> str | None:
    """Why a record is not judged by today's rule ("an earlier rule (results@4)", "rule 0"), or
    None: it is, and is re-judged from its runs. A record naming today's rule with other
    constants was edited: refused (RecordError)."""
    from turngate.core.errors import RecordError
    from turngate.record.results import layout_of

    j = meta.judged_with
    if j is None:
        n = layout_of(meta.schema_)
        return f"an earlier rule (results@{n})" if n is not None else "an earlier rule"
    if j.rule != RULE:
        return f"rule {j.rule}" + (" (a later one than this library's)" if j.rule > RULE else "")
    if j.policy != RULES[RULE]:
        bad = next(k for k in dict.fromkeys([*j.policy, *RULES[RULE]]) if j.policy.get(k) != RULES[RULE].get(k))
        raise RecordError(f"{where}: meta.judged_with.policy: {bad} is {j.policy.get(bad)!r}, rule {RULE} says "
                          f"{RULES[RULE].get(bad)!r} (the file was edited)")
    return None
