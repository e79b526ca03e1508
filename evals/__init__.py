"""northwind-evals: regression evals for tool-calling agents.

    from evals import JsonlSource, TargetOptions, Turn, run_gate
The three layers and their contracts: a RowSource gives Rows, a Target turns a row's inputs
into a Turn, the scorers (registry: `scorers`) grade it; `run_gate` runs all three and
decides, as `evals-gate` does: `run_gate(bot, rows="rows.jsonl", thresholds="bars.toml")`
returns a GateResult (`.passed`, `.verdict`, `.record`, `.path`); `run_gate_async` inside an
event loop. Names load on first use, so `import evals` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module it lives in
_EXPORTS = {
    "Turn": "evals.core.turn", "ToolCall": "evals.core.turn", "Message": "evals.core.turn", "Usage": "evals.core.turn",
    "Row": "evals.sources.dataset", "Expect": "evals.sources.dataset", "DatasetError": "evals.sources.dataset",
    "RowSource": "evals.sources.row_sources", "JsonlSource": "evals.sources.row_sources", "OrqSource": "evals.sources.row_sources",
    "ListSource": "evals.sources.row_sources", "Loaded": "evals.sources.row_sources",
    "Target": "evals.jobs.target", "TargetOptions": "evals.jobs.target", "target_factory": "evals.jobs.target",
    "load_target": "evals.jobs.target", "user_turns": "evals.jobs.target",
    "Case": "evals.scoring.case", "ConfigError": "evals.core.errors",
    "Record": "evals.record.results", "RunResult": "evals.record.results", "Meta": "evals.record.results", "load_record": "evals.record.results",
    "AgentSpec": "evals.gate.run", "execute": "evals.gate.run",
    "run_gate": "evals.gate.api", "run_gate_async": "evals.gate.api", "GateResult": "evals.gate.api",
    "scorers": "evals.scoring.scorers", "decide": "evals.verdict.decide", "Verdict": "evals.verdict.decide",
    "VersionSummary": "evals.record.summaries", "StoredVerdict": "evals.record.summaries",
}

__all__ = [
    "AgentSpec",
    "Case",
    "ConfigError",
    "DatasetError",
    "Expect",
    "GateResult",
    "JsonlSource",
    "ListSource",
    "Loaded",
    "Message",
    "Meta",
    "OrqSource",
    "Record",
    "Row",
    "RowSource",
    "RunResult",
    "Target",
    "TargetOptions",
    "ToolCall",
    "Turn",
    "Usage",
    "Verdict",
    "VersionSummary",
    "StoredVerdict",
    "decide",
    "execute",
    "load_record",
    "load_target",
    "run_gate",
    "run_gate_async",
    "scorers",
    "target_factory",
    "user_turns",
]


def __getattr__(name: str) -> Any:
    where = _EXPORTS.get(name)
    if where is None:
        raise AttributeError(f"module 'evals' has no attribute {name!r}")
    module, _, attr = where.partition(":")
    mod = importlib.import_module(module)
    value = mod if name == module.rsplit(".", 1)[-1] else getattr(mod, attr or name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


if TYPE_CHECKING:  # for type checkers and IDEs; at run time names load lazily
    from evals.core.errors import ConfigError
    from evals.core.turn import Message, ToolCall, Turn, Usage
    from evals.gate.api import GateResult, run_gate, run_gate_async
    from evals.gate.run import AgentSpec, execute
    from evals.jobs.target import Target, TargetOptions, load_target, target_factory, user_turns
    from evals.record.results import Meta, Record, RunResult, load_record
    from evals.record.summaries import StoredVerdict, VersionSummary
    from evals.scoring import scorers
    from evals.scoring.case import Case
    from evals.sources.dataset import DatasetError, Expect, Row
    from evals.sources.row_sources import JsonlSource, ListSource, Loaded, OrqSource, RowSource
    from evals.verdict.decide import Verdict, decide
