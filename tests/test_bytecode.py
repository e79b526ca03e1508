"""tests/bytecode.py: the repository's modules compiled once for the commands the tests start."""
from __future__ import annotations

import os
import subprocess
import sys

from tests.bytecode import compile_tree


def imported_from(root, module: str) -> tuple[str, str]:
    """(value, how) of `module.VALUE` in a fresh interpreter that writes no bytecode."""
    res = subprocess.run([sys.executable, "-v", "-c", f"import {module} as m; print(m.VALUE)"], cwd=root,
                         capture_output=True, text=True, env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1"})
    source = str(root / module.replace(".", "/")) + ".py"
    how = "bytecode" if f"matches {source}" in res.stderr else "source"
    return res.stdout.strip(), how


def test_a_command_reads_the_compiled_module_and_an_edit_is_compiled_again(tmp_path):
    package = tmp_path / "turngate"
    package.mkdir()
    (package / "__init__.py").write_text("")
    module = package / "probe.py"
    module.write_text("VALUE = 'one'\n")
    assert imported_from(tmp_path, "turngate.probe") == ("one", "source")  # nothing compiled yet
    assert compile_tree(tmp_path) == 2
    assert imported_from(tmp_path, "turngate.probe") == ("one", "bytecode")
    assert compile_tree(tmp_path) == 0  # fresh: nothing again
    module.write_text("VALUE = 'two'\n")  # the same size: only the mtime tells
    st = module.stat()
    os.utime(module, (st.st_atime, st.st_mtime + 5))
    assert imported_from(tmp_path, "turngate.probe") == ("two", "source")  # the stale pyc is not taken
    assert compile_tree(tmp_path) == 1
    assert imported_from(tmp_path, "turngate.probe") == ("two", "bytecode")


def test_a_module_that_does_not_compile_is_left_to_its_importer(tmp_path):
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "bad.py").write_text("def f(:\n")
    assert compile_tree(tmp_path) == 0
    res = subprocess.run([sys.executable, "-c", "import app.bad"], cwd=tmp_path, capture_output=True, text=True)
    assert res.returncode == 1 and "SyntaxError" in res.stderr
