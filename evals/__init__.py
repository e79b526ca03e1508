"""Northwind's evals plug-in: what the generic library (evals/) knows about the Northwind
support desk only through this package: its scorers and `expect` keys (refunds,
allowed_refunds, escalate) register through the same decorator any adopter uses
(turngate.scoring.registry.register_scorer), its offline model, its policy text and its offline
judge (judge/). pyproject.toml names this package in the
`turngate.plugins` entry-point group, so an installed project loads it."""
from app.refund_agent import models  # noqa: F401  (registers Northwind's offline model as `offline`)
from evals import scorers  # noqa: F401  (registers on import)


def _register_judge() -> None:
    from pathlib import Path

    from evals.judge.policy import POLICY
    from turngate.scoring.judges import register_judge, register_policy

    def offline(*, timeout: float = 60.0):
        from evals.judge.offline import OfflineJudge

        return OfflineJudge()

    # --judge offline: the deterministic rules of Northwind's policy; its fingerprint covers every
    # module of the judge and the PII detector it uses (derived: a new module is never left out)
    here = Path(__file__).parent
    import turngate.core.pii as pii

    register_judge("offline", offline, sources=[*sorted((here / "judge").glob("*.py")), Path(pii.__file__)])
    register_policy(POLICY)  # what an LLM judge (--judge openai:<m>) grades Northwind's answers against


_register_judge()
