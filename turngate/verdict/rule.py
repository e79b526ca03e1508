"""The decision rule a record is judged by: its number (policy.RULE) and its knobs (a
GatePolicy, turngate/verdict/policy.py), stored in every results@5 record (meta.judged_with)
with the reference copy it used.

A reader re-judges a record under the rule and the knobs it was judged with (a gate run with
--rerun-budget is re-judged with that budget). One of another rule number (or of a layout before
results@5, which named none) keeps its stored verdict, shown as "judged by rule N" (or "by an
earlier rule"), and `evals regrade` re-judges it by today's rule."""
from __future__ import annotations

from typing import Any

from turngate.record.results import JudgedWith, reference_sha256
from turngate.verdict.policy import DEFAULT, RULE, GatePolicy

__all__ = ["RULE", "earlier", "judged_with", "policy_of"]

SET_BY_A_GATE = frozenset({"rerun_budget"})  # the knobs a gate's flags set (--rerun-budget)


def judged_with(ref: Any = None, source: dict[str, str] | None = None, policy: GatePolicy = DEFAULT) -> JudgedWith:
    """meta.judged_with for a record judged now against `ref` (a Reference narrowed to the
    record's rows and judge, or None: by the bars only) under `policy`; source: the reference
    file's path and sha256."""
    copy = ref.model_dump(mode="json") if ref is not None else None
    return JudgedWith(rule=RULE, policy=policy.as_dict(), reference=copy, reference_sha256=reference_sha256(copy),
                      reference_file=source if copy is not None else None)


def policy_of(meta: Any, where: Any = "results file") -> GatePolicy:
    """The policy a record was judged with (today's default for a record that names none)."""
    from turngate.core.errors import RecordError

    j = getattr(meta, "judged_with", None)
    if j is None or j.rule != RULE:
        return DEFAULT
    try:
        policy = GatePolicy.from_dict(j.policy)
    except (TypeError, ValueError) as exc:
        raise RecordError(f"{where}: meta.judged_with.policy: {exc} (the file was edited)") from None
    # a gate sets one knob (--rerun-budget); any other differing from the rule's is an edit
    default = DEFAULT.as_dict()
    for name, value in policy.as_dict().items():
        if name not in SET_BY_A_GATE and value != (want := default[name]):
            raise RecordError(f"{where}: meta.judged_with.policy: {name} is {value!r}, rule {RULE} says {want!r} "
                              "(the file was edited)")
    return policy


def earlier(meta: Any, where: Any = "results file") -> str | None:
    """Why a record is not judged by today's rule ("an earlier rule (results@4)", "rule 0"), or
    None: it is, and is re-judged from its runs with its own policy. A policy that is no
    GatePolicy was edited: refused (RecordError)."""
    from turngate.record.results import layout_of

    j = meta.judged_with
    if j is None:
        n = layout_of(meta.schema_)
        return f"an earlier rule (results@{n})" if n is not None else "an earlier rule"
    if j.rule != RULE:
        return f"rule {j.rule}" + (" (a later one than this library's)" if j.rule > RULE else "")
    policy_of(meta, where)
    return None
