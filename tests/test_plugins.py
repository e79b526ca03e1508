"""Plug-ins: one registry, loaded once, safely from many threads; the public plug-in API is one
typed module; and a plug-in that cannot be imported is one line naming where."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

RACE = """
import json, sys, threading
from turngate.scoring.judges import make_judge

n = int(sys.argv[1])
barrier, errors, built = threading.Barrier(n), [], []

def build():
    barrier.wait()  # every thread asks at once, before anyone has loaded the plug-ins
    try:
        built.append(type(make_judge(sys.argv[2])).__name__)
    except Exception as exc:
        errors.append(f"{type(exc).__name__}: {exc}")

threads = [threading.Thread(target=build) for _ in range(n)]
for t in threads: t.start()
for t in threads: t.join()
print(json.dumps({"built": built, "errors": errors}))
"""


def race(cwd: Path, judge: str, env: dict | None = None, threads: int = 8) -> dict:
    res = subprocess.run([sys.executable, "-c", RACE, str(threads), judge], cwd=cwd, capture_output=True,
                         text=True, timeout=300, env={**os.environ, **(env or {})})
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


@pytest.mark.parametrize("attempt", range(3))
def test_eight_threads_building_northwinds_judge_at_once_all_succeed(attempt):
    """Northwind's suite registers its judge while it is imported: a thread that saw the plug-ins
    'loaded' before that finished would get `unknown judge 'offline'` (3 of 4 threads did, before)."""
    out = race(REPO, "offline")
    assert out["errors"] == [] and out["built"] == ["OfflineJudge"] * 8


def test_a_slow_plug_in_is_waited_for_not_skipped(tmp_path):
    """A plug-in whose import takes a while (it waits until every other thread has started) is
    loaded once; no thread proceeds with a half-filled registry."""
    (tmp_path / "slowplug.py").write_text(textwrap.dedent('''
        import threading, time
        from turngate.plugin import register_judge
        IMPORTS = []
        IMPORTS.append(1)
        # hold the import until the other threads are queued behind the loader's lock
        deadline = time.monotonic() + 5
        while sum(t.name.startswith("Thread-") for t in threading.enumerate()) < 8 and time.monotonic() < deadline:
            time.sleep(0.01)

        class Judge:
            def __init__(self, *, timeout=60.0):
                pass

            async def __call__(self, case):
                return True, "fine"

        register_judge("slow", Judge)
    '''))
    (tmp_path / "pyproject.toml").write_text('[tool.turngate]\nplugins = ["slowplug"]\n')
    out = race(tmp_path, "slow", env={"PYTHONPATH": str(tmp_path), "TURNGATE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert out["errors"] == [] and out["built"] == ["Judge"] * 8


def test_a_plug_in_that_raises_at_import_is_one_line_naming_its_file_and_line(tmp_path):
    (tmp_path / "brokenplug.py").write_text("from turngate.plugin import register_scorer\n\nx = {}['missing']\n")
    (tmp_path / "pyproject.toml").write_text('[tool.turngate]\nplugins = ["brokenplug"]\n')
    code = "from turngate.scoring.scorers import scorer_names; scorer_names()"
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(tmp_path), "TURNGATE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert res.returncode != 0
    assert f"{tmp_path / 'brokenplug.py'}:3: plug-in brokenplug: importing it failed: KeyError: 'missing'" in res.stderr


def test_importing_the_library_registers_nothing():
    """No import-time side effects: the registry fills when a command first asks for it."""
    code = ("import json, turngate, turngate.plugin, turngate.scoring.scorers as s; from turngate.core.registry import REGISTRY; "
            "print(json.dumps([sorted(REGISTRY.judges), [n for n in REGISTRY.scorers if not n[0].isupper()]]))")
    res = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, timeout=120)
    judges, scorers = json.loads(res.stdout)
    assert judges == []  # Northwind's plug-in is named in this repo's config, but not imported yet
    assert "refund_outcome" not in scorers


def test_the_plug_in_api_is_one_typed_module_whose_names_all_resolve():
    import turngate.plugin as api

    assert (REPO / "turngate" / "py.typed").is_file()
    for name in api.__all__:
        assert getattr(api, name) is not None, name
    for needed in ("Turn", "ToolCall", "Target", "register_scorer", "register_judge", "Outcome", "Case"):
        assert needed in api.__all__
    with pytest.raises(AttributeError):
        api.not_a_name  # noqa: B018


def test_register_scorer_used_bare_registers_the_function():
    from turngate.plugin import register_scorer
    from turngate.scoring.registry import REGISTRY, unregister

    @register_scorer
    async def bare_scorer(case):
        """Always passes."""
        return True, "fine"

    try:
        assert "bare_scorer" in REGISTRY and callable(bare_scorer)
    finally:
        unregister("bare_scorer")


def test_a_plug_in_in_the_current_folder_imports_without_a_project_file(tmp_path):
    """No pyproject.toml, no PYTHONPATH: a plug-in beside the user, named in TURNGATE_PLUGINS."""
    (tmp_path / "localplug.py").write_text("from turngate.plugin import register_judge\n"
                                           "register_judge('local', lambda *, timeout=60.0: object())\n")
    out = race(tmp_path, "local", env={"TURNGATE_PLUGINS": "localplug", "TURNGATE_DISABLE_PLUGIN_AUTOLOAD": "1"},
               threads=2)
    assert out["errors"] == [] and out["built"] == ["object", "object"]


def test_a_plug_in_importing_a_missing_package_names_its_own_line(tmp_path):
    (tmp_path / "needsdep.py").write_text("import json\nimport no_such_package_xyz\n")
    code = "from turngate.scoring.scorers import scorer_names; scorer_names()"
    res = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                         env={**os.environ, "TURNGATE_PLUGINS": "needsdep", "TURNGATE_DISABLE_PLUGIN_AUTOLOAD": "1"})
    assert f"{tmp_path / 'needsdep.py'}:2: plug-in needsdep: importing it failed: ModuleNotFoundError" in res.stderr
