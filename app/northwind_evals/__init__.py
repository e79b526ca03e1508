"""Northwind's evals plug-in: what the generic library (evals/) knows about the Northwind
support desk only through this package. Its scorers and `expect` keys (refunds,
allowed_refunds, escalate) register through the same decorator any adopter uses
(evals.scoring.registry.register_scorer); pyproject.toml names this package in the
`evals.plugins` entry-point group, so an installed project loads it."""
from app.northwind_evals import scorers  # noqa: F401  (registers on import)
from app.refund_agent import models  # noqa: F401  (registers Northwind's offline model as `offline`)


def _register_judge() -> None:
    from evals.scoring.judges import register_judge, register_policy
    from evals.scoring.judges.policy import POLICY

    def offline(*, timeout: float = 60.0):
        from evals.scoring.judges.offline import OfflineJudge

        return OfflineJudge()

    register_judge("offline", offline)  # --judge offline: the deterministic rules of Northwind's policy
    register_policy(POLICY)  # what an LLM judge (--judge openai:<m>) grades Northwind's answers against


_register_judge()
