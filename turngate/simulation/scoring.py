"""Scoring a simulated conversation with the gate's scorers, the scenario's goal check,
and finding the user turn after which it went wrong.

The turn is found by re-scoring the conversation truncated after each user turn.
Replays are deterministic (same turns, same seed: the same Turn), so prefix k's Turn
is exactly the conversation's state after user turn k. For a failing scorer:

    after_turn = the first k from which the scorer fails on every longer prefix
                 (the last turn it passed on, plus one).

Prefix 0 is the empty conversation (no turns, no tool calls). A scorer that already
fails there checks for something that never happened (an action that should have been
taken, a fact the answer should state); it went wrong when the user stopped without
it, so after_turn is the last turn. A scorer that passes there and fails later was
broken by something the agent did in reply to turn `after_turn`.
"""
from __future__ import annotations

from turngate.core.errors import ConfigError
from turngate.core.turn import ToolCall, Turn
from turngate.record.results import ScorerVerdict as Verdict
from turngate.scoring.escalation import escalated
from turngate.scoring.grading import grade
from turngate.scoring.scorers import scorer_names
from turngate.sources.dataset import Row, matches, normalise

from .convert import GOAL
from .hooks import goal_checks
from .specs import GoalCheck


def order() -> list[str]:
    """How failures tie-break: the gate's order, the goal last."""
    return [*scorer_names(), GOAL]


def answered_ok(call: ToolCall) -> bool:
    """The call got a reply that is not an error (and, when the reply has an `ok` field, it is true)."""
    if call.result is None or call.error is not None:
        return False
    return not (isinstance(call.result, dict) and "ok" in call.result and call.result["ok"] is not True)


def goal_reached(check: GoalCheck, turn: Turn) -> bool:
    """Read off the Turn: its tool calls and replies (and a project's goal checks), not the answer's claims."""
    for spec in check.calls:
        if not any(c.name == spec.name and matches(c.arguments, spec.args) and answered_ok(c) for c in turn.tool_calls):
            return False
    if check.escalated is not None:
        if escalated(turn.tool_calls) != check.escalated:
            return False
    extra = check.model_extra or {}
    if extra:
        hooks = goal_checks()
        for key, value in extra.items():
            hook = hooks.get(key)
            if hook is None:  # validated when the scenario loaded; a plug-in that went away since
                raise ConfigError(f"goal_reached.{key}: no goal check {key!r} is registered")
            if not hook.check(value, turn):
                return False
    answer = normalise(turn.answer)
    return all(any(normalise(option) in answer for option in group) for group in check.answer)


def goal_verdict(check: GoalCheck, turn: Turn) -> Verdict:
    reached = goal_reached(check, turn)
    if check.expected:
        why = "goal reached: " if reached else "goal not reached: "
    else:
        why = "reached although the policy forbids it: " if reached else "not reached, as the policy requires: "
    return Verdict(passed=reached == check.expected, explanation=why + check.description)


async def score(row: Row, turn: Turn, evaluators: list[dict], check: GoalCheck | None,
                only: set[str] | None = None) -> dict[str, Verdict]:
    """The gate's verdicts on this Turn (optionally just some scorers), plus the goal."""
    chosen = [ev for ev in evaluators if only is None or ev["name"] in only]
    verdicts = await grade(row, turn.model_dump(mode="json"), chosen) if chosen else {}
    if check is not None and (only is None or GOAL in only):
        verdicts[GOAL] = goal_verdict(check, turn)
    return verdicts


def failing(verdicts: dict[str, Verdict]) -> list[str]:
    ranks = order()
    return sorted((n for n, v in verdicts.items() if v.passed is False), key=lambda n: ranks.index(n)
                  if n in ranks else len(ranks))


async def locate(row: Row, prefixes: list[Turn], evaluators: list[dict], check: GoalCheck | None,
                 names: list[str]) -> dict[str, int]:
    """after_turn for each failing scorer in `names`; prefixes[k-1] is the Turn after user turn k."""
    n = len(prefixes)
    empty = Turn(version=prefixes[-1].version, model=prefixes[-1].model, seed=prefixes[-1].seed)
    history = [await score(row, t, evaluators, check, set(names)) for t in [empty, *prefixes]]
    out = {}
    for name in names:
        fails = [h[name].passed is False for h in history]  # index 0: the empty conversation
        if all(fails):
            out[name] = n  # never right: wrong once the user stopped without it
        else:
            last_ok = max(k for k, f in enumerate(fails) if not f)
            out[name] = min(last_ok + 1, n)
    return out
