"""The Northwind refund agent. `target` is its evals Target factory (`--agent app.refund_agent:target`)."""
from .gate_target import target

__all__ = ["target"]
