"""Northwind's eval suite, written on turngate's public plug-in API (turngate.plugin) as any
adopter's would be. The repository's pyproject.toml names it in `[tool.turngate] plugins`, so
every `evals ...` command run here imports it; importing it registers Northwind's failure
modes (scorers.py, TAXONOMY.md), the `expect` keys they read, how the agent escalates
(escalation.py), its offline judge and policy (judge/), its offline model, and how a --fault
reaches its MCP server. Its bars, reference and judge calibration sit beside this file."""
from pathlib import Path

from app.refund_agent import models  # noqa: F401  (registers Northwind's offline model as `offline`)
from evals import escalation, scorers  # noqa: F401  (register on import)
from turngate.plugin import PII_SOURCE, register_judge, register_policy, register_server_faults

HERE = Path(__file__).parent


def _offline_judge(*, timeout: float = 60.0):
    from evals.judge.offline import OfflineJudge

    return OfflineJudge()


def _server_fault(fault: str) -> dict[str, str]:
    """--fault tool-hangs / server-dies: the MCP server's own switch (app/northwind/faults.py)."""
    return {"NORTHWIND_FAULT": fault}


# --judge offline: the deterministic rules of Northwind's policy; its fingerprint covers every
# module of the judge and the PII detector it uses (derived: a new module is never left out)
register_judge("offline", _offline_judge, sources=[*sorted((HERE / "judge").glob("*.py")), PII_SOURCE])
register_server_faults(_server_fault)


def _register_policy() -> None:
    from evals.judge.policy import POLICY

    register_policy(POLICY)  # what an LLM judge (--judge openai:<m>) grades Northwind's answers against


_register_policy()
from evals import simulation  # noqa: E402, F401  (registers Northwind's simulated customer and its `refunded` goal)
