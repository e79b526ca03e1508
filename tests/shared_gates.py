"""Whole-dataset gates that several test modules only read. Each version's default gate (79
rows, one trial, seed 0, confirmation on) runs once per test run, shared by the xdist workers
(standalone_helpers.built_once), with every output a reader checks: the record, --junit,
--markdown and the step summary ($GITHUB_STEP_SUMMARY); --json as test_sensitivity ran it (its
stdout is not kept). A test gets its own copy of the folder, so it may write beside the files or
edit them."""
from __future__ import annotations

import contextlib
import io
import json
import shutil
from pathlib import Path
from typing import NamedTuple

import pytest

from tests.standalone_helpers import built_once


class Gate(NamedTuple):
    code: int
    record: dict
    path: Path  # the record, in the caller's copy; junit.xml, comment.md and summary.md beside it


def _run(folder: Path, version: str) -> None:
    from turngate.commands import regression

    out = folder / "out"
    with pytest.MonkeyPatch.context() as env, contextlib.redirect_stdout(io.StringIO()):
        env.setenv("GITHUB_STEP_SUMMARY", str(out / "summary.md"))
        code = regression.main(["--version", version, "--no-upload", "--quiet", "--json", "--out", str(out),
                                "--junit", str(out / "junit.xml"), "--markdown", str(out / "comment.md")])
    (folder / "code").write_text(str(code))


def whole_gate(tmp_path_factory, version: str) -> Gate:
    """`evals gate --version VERSION` on the whole dataset, run once per test run; a fresh copy."""
    with built_once(tmp_path_factory, f"gate-{version}") as (folder, done):
        if not done:
            _run(folder, version)
    copy = tmp_path_factory.mktemp(f"gate-{version}")
    shutil.copytree(folder / "out", copy, dirs_exist_ok=True)
    (path,) = copy.glob(f"{version}-*.json")
    return Gate(int((folder / "code").read_text()), json.loads(path.read_text()), path)
