"""turngate: regression gates for tool-calling agents.

    from turngate import JsonlSource, TargetOptions, Turn, run_gate
The three layers and their contracts: a RowSource gives Rows, a Target turns a row's inputs
into a Turn, the scorers (registry: `scorers`) grade it; `run_gate` runs all three and
decides, as `evals gate` does: `run_gate(bot, rows="rows.jsonl", thresholds="bars.toml")`
returns a GateResult (`.passed`, `.verdict`, `.record`, `.path`); `run_gate_async` inside an
event loop. Names load on first use, so `import turngate` stays cheap.
"""
from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

# public name -> module it lives in
_EXPORTS = {
    "Turn": "turngate.core.turn", "ToolCall": "turngate.core.turn", "Message": "turngate.core.turn", "Usage": "turngate.core.turn",
    "Row": "turngate.sources.dataset", "Expect": "turngate.sources.dataset", "DatasetError": "turngate.sources.dataset",
    "RowSource": "turngate.sources.row_sources", "JsonlSource": "turngate.sources.row_sources", "OrqSource": "turngate.sources.row_sources",
    "ListSource": "turngate.sources.row_sources", "Loaded": "turngate.sources.row_sources",
    "Target": "turngate.jobs.target", "TargetOptions": "turngate.jobs.target", "target_factory": "turngate.jobs.target",
    "load_target": "turngate.jobs.target", "user_turns": "turngate.jobs.target",
    "Case": "turngate.scoring.case", "ConfigError": "turngate.core.errors",
    "Record": "turngate.record.results", "RunResult": "turngate.record.results", "Meta": "turngate.record.results", "load_record": "turngate.record.results",
    "AgentSpec": "turngate.gate.run", "execute": "turngate.gate.run",
    "run_gate": "turngate.gate.api", "run_gate_async": "turngate.gate.api", "GateResult": "turngate.gate.api",
    "scorers": "turngate.scoring.scorers", "decide": "turngate.verdict.decide", "Verdict": "turngate.verdict.decide",
    "VersionSummary": "turngate.record.summaries", "StoredVerdict": "turngate.record.summaries",
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
    from turngate.core.errors import ConfigError
    from turngate.core.turn import Message, ToolCall, Turn, Usage
    from turngate.gate.api import GateResult, run_gate, run_gate_async
    from turngate.gate.run import AgentSpec, execute
    from turngate.jobs.target import Target, TargetOptions, load_target, target_factory, user_turns
    from turngate.output.wording import decide
    from turngate.record.results import Meta, Record, RunResult, load_record
    from turngate.record.summaries import StoredVerdict, VersionSummary
    from turngate.scoring import scorers
    from turngate.scoring.case import Case
    from turngate.sources.dataset import DatasetError, Expect, Row
    from turngate.sources.row_sources import JsonlSource, ListSource, Loaded, OrqSource, RowSource
    from turngate.verdict.decide import Verdict
