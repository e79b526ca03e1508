"""A deterministic offline tool-calling chat model (no network, no API keys).

    from app.refund_agent.offline import OfflineChatModel
    model = OfflineChatModel(seed=0, temperature=0.25)

Modules: transcript (messages -> state), entities/intents/request (what the user
wants), policy (which rules the system prompt states), session/planner/actions/
lookups (the next tool calls or the answer), answer (formatting), noise (seeded slips).
"""
from .model import OfflineChatModel
from .policy import Policy, parse_policy

__all__ = ["OfflineChatModel", "Policy", "parse_policy"]
