"""The library's layering (pyproject.toml [tool.importlinter]) holds, and the check is not
vacuous: an `import app` or `import evals` added to the library, an upward import, or a private
module imported by Northwind's suite, breaks it."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests import prefork

REPO = Path(__file__).resolve().parents[1]
LINT = [sys.executable, "-c", "import sys; from importlinter.cli import lint_imports_command as c; sys.exit(c())"]


def lint(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(LINT, cwd=root, env=env, capture_output=True, text=True, timeout=600)


def copy_tree(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for part in ("turngate", "evals", "app"):
        shutil.copytree(REPO / part, root / part, ignore=ignore)
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    return root


def test_the_layering_holds():
    res = lint(REPO)
    assert res.returncode == 0, res.stdout + res.stderr
    assert "BROKEN" not in res.stdout and "KEPT" in res.stdout


@pytest.mark.parametrize("module, line, broken", [
    ("turngate/verdict/stats.py", "import app.refund_agent  # noqa", "imports nothing of the repository's own"),
    ("turngate/verdict/stats.py", "import evals.scorers  # noqa", "imports nothing of the repository's own"),
    ("turngate/sources/dataset.py", "import turngate.scoring.scorers  # noqa", "turngate layers"),
    ("turngate/core/errors.py", "from turngate.commands import regression  # noqa", "turngate layers"),
    ("evals/scorers.py", "from turngate.scoring.case import Case  # noqa", "written on the public API only"),
])
def test_an_illegal_import_breaks_the_check(tmp_path, module, line, broken):
    root = copy_tree(tmp_path)
    path = root / module
    path.write_text(path.read_text() + f"\n{line}\n")
    res = lint(root)
    assert res.returncode != 0
    assert f"{broken}" in res.stdout and "BROKEN" in res.stdout, res.stdout


def test_a_plug_in_that_cannot_be_imported_is_one_line_and_exit_2():
    """Its scorers would otherwise vanish from the gate without a word."""
    env = {**os.environ, "TURNGATE_PLUGINS": "no_such_plugin_here"}
    res = subprocess.run([prefork.python(), str(REPO / "evals" / "regression.py"), "--version", "v3"], cwd=REPO,
                         env=env, capture_output=True, text=True, timeout=300)
    assert res.returncode == 2
    assert res.stderr.strip() == ("error: plug-in no_such_plugin_here: cannot import it "
                                  "(No module named 'no_such_plugin_here')")
