"""--resume finishes a record with the agent that started it, or refuses: the record's plan
stores a digest of the agent's code (turngate/core/agent_code.py), and the lock and the saves
go to the real file behind a symlink."""
import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from tests import prefork
from turngate.commands import regression
from turngate.core.agent_code import agent_code_of, code_changed
from turngate.record.results import holding, load_record, lock_path, save_record

REPO = Path(__file__).resolve().parents[1]
FAQ = REPO / "examples" / "faq_bot"


def cut(src: Path, dest: Path, keep: int = 3) -> Path:
    """The record as an interrupt leaves it: its first runs only, marked interrupted."""
    rec = load_record(src)
    rec.runs = rec.runs_for(rec.meta.version)[:keep]
    rec.meta.complete, rec.meta.interrupted, rec.meta.confirm = False, True, None
    rec.summary, rec.verdict = {}, None
    save_record(rec, dest)
    return dest


def evals(root: Path, *args: str) -> subprocess.CompletedProcess:
    """`evals ...` as a stranger types it in their project folder (its output to a pipe: not wrapped)."""
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}
    return subprocess.run([prefork.evals(), *args], cwd=root, env=env, capture_output=True, text=True, timeout=300)


def error_line(res: subprocess.CompletedProcess) -> str:
    lines = res.stderr.splitlines()
    assert res.returncode == 2 and len(lines) == 1 and "Traceback" not in res.stderr, res.stderr[-2000:]
    return lines[0]


class Project:
    """A tmp project holding a copy of the FAQ bot: as a package (botpkg/) or a plain module (bot.py)."""

    def __init__(self, root: Path, spec: str, code: Path):
        self.root, self.spec, self.code = root, spec, code
        shutil.copy(FAQ / "dataset.jsonl", root / "dataset.jsonl")
        shutil.copy(FAQ / "thresholds.toml", root / "thresholds.toml")

    def gate(self) -> Path:
        """A whole gate run, then the record an interrupt after three runs leaves."""
        res = evals(self.root, "gate", "--agent", self.spec, "--dataset", "dataset.jsonl", "--thresholds",
                    "thresholds.toml", "--no-reference", "--no-upload", "--quiet", "--out", "out")
        assert res.returncode == 0, res.stderr[-2000:]
        (full,) = (self.root / "out").glob("*.json")
        return cut(full, self.root / "cut.json")

    def resume(self, path: Path) -> subprocess.CompletedProcess:
        return evals(self.root, "gate", "--agent", self.spec, "--resume", str(path), "--no-upload", "--quiet")


@pytest.fixture
def package(tmp_path) -> Project:
    pkg = tmp_path / "botpkg"
    pkg.mkdir()
    shutil.copy(FAQ / "__init__.py", pkg / "__init__.py")
    (pkg / "prompts.py").write_text('SYSTEM = "Answer from the FAQ only."\n')
    return Project(tmp_path, "botpkg:target", pkg / "__init__.py")


@pytest.fixture
def module(tmp_path) -> Project:
    shutil.copy(FAQ / "__init__.py", tmp_path / "bot.py")
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_bot.py").write_text("def test_nothing():\n    pass\n")
    return Project(tmp_path, "bot:target", tmp_path / "bot.py")


def test_an_edit_of_the_agents_code_is_refused_naming_the_file(package):
    path = package.gate()
    code = load_record(path).plan.agent_code
    assert code["root"] == "botpkg" and sorted(code["files"]) == ["botpkg/__init__.py", "botpkg/prompts.py"]
    before, text = path.read_bytes(), package.code.read_text()
    package.code.write_text(text.replace("within 30 days of delivery", "within 60 days of delivery"))
    line = error_line(package.resume(path))
    assert line == (f"error: --resume {path}: the agent's code changed since the run (botpkg/__init__.py edited): "
                    "its runs would mix two agents; start a new run")
    assert path.read_bytes() == before and not lock_path(path).exists()  # nothing ran, nothing saved
    package.code.write_text(text)
    (package.root / "botpkg" / "tools.py").write_text("TOOLS = []\n")  # a new module is new code too
    assert "(botpkg/tools.py added)" in error_line(package.resume(path))
    (package.root / "botpkg" / "tools.py").unlink()
    (package.root / "botpkg" / "__pycache__").mkdir(exist_ok=True)  # what Python writes itself: not code
    (package.root / "botpkg" / "__pycache__" / "stray.py").write_text("x = 1\n")
    res = package.resume(path)  # the code as it was: resumable
    assert res.returncode == 0, res.stderr[-2000:]
    done = load_record(path)
    assert done.meta.complete and done.incomplete() is None and len(done.runs) == 10
    assert done.plan.agent_code == code


def test_a_module_outside_a_package_is_pinned_with_its_folder(module):
    path = module.gate()
    assert sorted(load_record(path).plan.agent_code["files"]) == ["bot.py"]  # not tests/ below it
    (module.root / "tests" / "test_bot.py").write_text("def test_other():\n    pass\n")
    (module.root / "helpers.py").write_text("PROMPT = 'be brief'\n")  # a sibling bot.py could import
    assert "(helpers.py added)" in error_line(module.resume(path))
    (module.root / "helpers.py").unlink()
    module.code.write_text(module.code.read_text() + "\n# another agent now\n")
    assert "(bot.py edited)" in error_line(module.resume(path))


def test_a_record_from_before_the_digest_resumes_with_a_note_and_stores_it(package):
    path = package.gate()
    rec = load_record(path)
    code, rec.plan.agent_code = rec.plan.agent_code, None
    data = json.loads(rec.model_dump_json(by_alias=True))
    del data["plan"]["agent_code"], data["digest"]  # as an earlier turngate wrote it: no such field
    old = package.root / "old.json"
    from turngate.record.results import digest_of

    data["digest"] = digest_of(data)
    old.write_text(json.dumps(data, indent=1))
    assert load_record(old).plan.agent_code is None  # it loads as it is
    res = package.resume(old)
    assert res.returncode == 0, res.stderr[-2000:]
    assert f"note: {old} stored no digest of the agent's code (an earlier record): not checked" in res.stdout
    assert load_record(old).plan.agent_code == code  # a later --resume of it checks it


def test_two_resumes_through_a_symlink_and_its_file_exclude_each_other(package):
    path = package.gate()
    link = package.root / "link.json"
    link.symlink_to(path)
    assert lock_path(link) == lock_path(path) == path.with_name("cut.json.lock")
    for held, given in ((path, link), (link, path)):
        with holding(held, "the first --resume"):
            line = error_line(package.resume(given))
            assert f"in use by pid {os.getpid()} " in line and "(the first --resume)" in line
    assert not lock_path(path).exists()
    res = package.resume(link)
    assert res.returncode == 0, res.stderr[-2000:]
    assert link.is_symlink() and link.resolve() == path.resolve()  # the link kept, its file written
    assert load_record(path).meta.complete and not list(package.root.glob(".tmp-*"))


def test_a_save_through_a_symlink_writes_its_file(tmp_path, small_gate_record):
    real = tmp_path / "data" / "results.json"
    real.parent.mkdir()
    real.write_text(small_gate_record)
    link = tmp_path / "results.json"
    link.symlink_to(real)
    rec = load_record(link)
    rec.meta.argv = ["saved through the link"]
    assert save_record(rec, link) == link
    assert link.is_symlink() and load_record(real).meta.argv == ["saved through the link"]


def test_northwinds_offline_agent_is_pinned_by_its_package(tmp_path, small_gate_record, capsys):
    """The repository's own agent: a changed system prompt (app/refund_agent/agent.py) is named;
    the record is edited to say so, since the test never edits the repository."""
    full = tmp_path / "full.json"
    full.write_text(small_gate_record)
    code = load_record(full).plan.agent_code
    assert code["root"] == "app" and code == agent_code_of("app.refund_agent:target")
    assert {"app/refund_agent/agent.py", "app/northwind/server.py"} <= set(code["files"])
    same = cut(full, tmp_path / "same.json", keep=1)
    assert regression.main(["--resume", str(same), "--no-upload", "--quiet"]) == 0
    assert load_record(same).incomplete() is None
    other = cut(full, tmp_path / "other.json", keep=1)
    rec = load_record(other)
    rec.plan.agent_code = {**code, "sha256": "0" * 64,
                           "files": {**code["files"], "app/refund_agent/agent.py": "0" * 64}}
    save_record(rec, other)
    capsys.readouterr()
    assert regression.main(["--resume", str(other), "--no-upload", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "the agent's code changed since the run (app/refund_agent/agent.py edited)" in err


def test_the_digest_is_deterministic_and_names_what_changed(tmp_path, monkeypatch):
    pkg = tmp_path / "digestpkg"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "sub" / "b.py").write_text("B = 1\n")
    (pkg / "notes.md").write_text("not code\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import digestpkg  # noqa: F401

    first = agent_code_of("digestpkg:target")
    assert list(first["files"]) == ["digestpkg/__init__.py", "digestpkg/sub/b.py"]
    assert agent_code_of("digestpkg.sub.b:x") == first  # any module of the package: the whole package
    (pkg / "notes.md").write_text("edited, still not code\n")
    assert code_changed(first, agent_code_of("digestpkg:target")) is None
    (pkg / "sub" / "b.py").write_text("B = 2\n")
    (pkg / "sub" / "b.py").rename(pkg / "sub" / "c.py")
    assert code_changed(first, agent_code_of("digestpkg:target")) == "digestpkg/sub/b.py removed, digestpkg/sub/c.py added"
    assert code_changed(first, None) == "its code under digestpkg is not found now"
    assert agent_code_of("no_such_module_here:target") is None
