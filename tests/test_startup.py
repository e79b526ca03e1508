"""Start-up stays lean: what the offline gate never needs is never imported (checked by
module name with -X importtime, not by timing), and the in-process tool listing that lets the
gate skip fastmcp's client is the listing an MCP client gets."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from fastmcp import Client

from app.northwind import build_server

REPO = Path(__file__).resolve().parents[1]
NEVER_OFFLINE = ("scipy", "langchain_openai", "fastmcp.client", "fastmcp.client.auth", "vl_convert",
                 "turngate.commands.report")


def imported(*args: str) -> tuple[int, set[str]]:
    res = subprocess.run([sys.executable, "-X", "importtime", str(REPO / "evals" / "regression.py"), *args],
                         capture_output=True, text=True, timeout=300)
    return res.returncode, set(re.findall(r"^import time:.*\|\s*(\S+)\s*$", res.stderr, re.M))


def test_the_offline_gate_imports_nothing_it_does_not_use(tmp_path):
    code, modules = imported("--only", "status", "--no-upload", "--quiet", "--out", str(tmp_path))
    assert code == 0
    assert "langchain_core" in modules and "evaluatorq" in modules  # the parse really saw the imports
    assert sorted(m for m in NEVER_OFFLINE if m in modules) == []


def test_an_argument_error_exits_before_the_heavy_imports(tmp_path):
    code, modules = imported("--timeout", "0", "--out", str(tmp_path))
    assert code == 2
    assert sorted(m for m in ("evaluatorq", "openai", "langchain", "langgraph", "scipy") if m in modules) == []


async def test_the_in_process_tool_list_is_what_an_mcp_client_lists():
    for hardened in (False, True):
        server = build_server(hardened=hardened)
        direct = [t.to_mcp_tool().model_dump() for t in await server.list_tools()]
        async with Client(server) as client:
            wire = [t.model_dump() for t in await client.list_tools()]
        assert sorted(direct, key=lambda t: t["name"]) == sorted(wire, key=lambda t: t["name"])
        assert len(direct) == 22


def test_the_console_script_goes_through_the_quiet_start_up():
    import tomllib

    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"evals": "turngate.cli:run"}
    res = subprocess.run([sys.executable, "-c", "import sys; from turngate.cli import run; "
                          "sys.argv = ['evals', 'gate', '--timeout', '0']; run()"],
                         capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 2 and res.stderr.startswith("error: --timeout must be a positive")
