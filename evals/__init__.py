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
    "Turn": "evals.turn", "ToolCall": "evals.turn", "Message": "evals.turn", "Usage": "evals.turn",
    "Row": "evals.dataset", "Expect": "evals.dataset", "DatasetError": "evals.dataset",
    "RowSource": "evals.sources", "JsonlSource": "evals.sources", "OrqSource": "evals.sources",
    "ListSource": "evals.sources", "Loaded": "evals.sources",
    "Target": "evals.target", "TargetOptions": "evals.target", "target_factory": "evals.target",
    "load_target": "evals.target", "user_turns": "evals.target",
    "Case": "evals.case", "ConfigError": "evals.errors",
    "Record": "evals.record", "RunResult": "evals.record", "Meta": "evals.record", "load_record": "evals.record",
    "AgentSpec": "evals.gate", "execute": "evals.gate",
    "run_gate": "evals.api", "run_gate_async": "evals.api", "GateResult": "evals.api",
    "scorers": "evals.scorers", "decide": "evals.verdict", "Verdict": "evals.verdict",
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
    from evals import scorers
    from evals.api import GateResult, run_gate, run_gate_async
    from evals.case import Case
    from evals.dataset import DatasetError, Expect, Row
    from evals.errors import ConfigError
    from evals.gate import AgentSpec, execute
    from evals.record import Meta, Record, RunResult, load_record
    from evals.sources import JsonlSource, ListSource, Loaded, OrqSource, RowSource
    from evals.target import Target, TargetOptions, load_target, target_factory, user_turns
    from evals.turn import Message, ToolCall, Turn, Usage
    from evals.verdict import Verdict, decide
