"""The quick loop (`pytest -m "not slow"`, tests/conftest.py) still covers every layer of the
library: for each folder of turngate/, some test module it keeps imports from that folder."""
from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import SLOW_MODULES, SLOW_TESTS

TESTS = Path(__file__).parent
LIBRARY = TESTS.parent / "turngate"


def layers() -> list[str]:
    return sorted(p.name for p in LIBRARY.iterdir() if p.is_dir() and (p / "__init__.py").exists())


def quick_modules() -> dict[str, str]:
    return {p.stem: p.read_text() for p in TESTS.glob("test_*.py") if p.stem not in SLOW_MODULES}


def test_every_layer_has_tests_in_the_quick_loop():
    kept = quick_modules()
    missing = [layer for layer in layers()
               if not any(re.search(rf"\bturngate\.{layer}\b", text) for text in kept.values())]
    assert layers() and not missing, f"no quick test imports turngate.{missing}"


def test_the_slow_lists_name_tests_that_exist():
    names = {p.stem for p in TESTS.glob("test_*.py")}
    assert SLOW_MODULES <= names, SLOW_MODULES - names
    for test in SLOW_TESTS:
        module, name = test.split("::")
        assert f"def {name}(" in (TESTS / module).read_text(), test
