"""The agent graph: LangChain's create_agent over the Northwind MCP tools."""
from __future__ import annotations

from langchain.agents import create_agent

from .mcp_tools import Connection
from .models import make_model
from .versions import Version


def build_graph(version: Version, model_spec: str, seed: int, conn: Connection, *, max_retries: int = 2,
                timeout: float | None = None):
    """Compiled once per (version, model, seed) on a connection: compiling costs more than a run."""
    key = (version, model_spec, seed, max_retries, timeout)
    graph = conn.graphs.get(key)
    if graph is None:
        model = make_model(model_spec, seed=seed, max_retries=max_retries, timeout=timeout)
        graph = conn.graphs[key] = create_agent(model, conn.tools, system_prompt=version.instructions)
    return graph
