"""Northwind's simulated customer for `evals simulate`, registered through turngate.plugin:

    user "northwind"   policy.UserPolicy: a persona pushing for a refund with its tactics
                       (scenario keys: policy.NorthwindScenario; LLM-played: llm.py)
    goal "refunded"    a refund on each of these orders went through (the server's write log)

datasets/scenarios.toml names it with `user = "northwind"`."""
from __future__ import annotations

from evals.simulation.llm import TACTIC_TEXT, facts, stop
from evals.simulation.policy import NorthwindScenario, OrderId, UserPolicy
from turngate.plugin import register_goal_check, register_simulated_user


def refunded(orders: list[str], turn) -> bool:
    """Read off the server's own write log, not the answer's claims."""
    done = {str(w.get("order_id", "")).upper() for w in turn.writes if w.get("action") == "refund"}
    return all(o in done for o in orders)


register_simulated_user("northwind", UserPolicy, scenario_fields=NorthwindScenario,
                        tactics={str(t): text for t, text in TACTIC_TEXT.items()}, brief=facts, stop=stop)
register_goal_check("refunded", refunded, value_type=list[OrderId])
