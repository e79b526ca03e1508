"""What tests/test_standalone.py needs to be a stranger to this repository: the wheel built from
it, a fresh venv holding only that wheel and its dependencies, and Northwind's names (its
scorers, tools, files and versions, read from its own sources) to prove none reaches a stranger."""
from __future__ import annotations

import ast
import fcntl
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import time
import zipfile
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata, util
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FAQ = REPO / "examples" / "faq_bot"
INSTALL_TIMEOUT = 1200  # safety nets only: nothing here asserts on time
RUN_TIMEOUT = 600
# STANDALONE_DEPS=project-venv: no index at all (an offline machine); see StrangerVenv.create
DEPS_MODE = os.environ.get("STANDALONE_DEPS", "index")


def _run(cmd: list[str], *, timeout: float, **kw) -> subprocess.CompletedProcess:
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)
    assert res.returncode == 0, f"{' '.join(map(str, cmd))}: exit {res.returncode}\n{res.stdout}\n{res.stderr}"
    return res


# --- the wheel ----------------------------------------------------------------------------

def source_copy(dest: Path) -> Path:
    """The repository's files as git sees them (tracked and untracked, not ignored), copied to
    dest: the build writes its build/ and *.egg-info there, not into the shared work tree, and
    no stale build/lib of an earlier build can slip a deleted module into the wheel."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO, timeout=120)
    for rel in filter(None, listed.stdout.split("\0")):
        src = REPO / rel
        if src.is_file():  # a tracked file deleted in the work tree is not copied
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


@contextmanager
def built_once(tmp_path_factory, name: str):
    """(folder, done): a folder of this test run shared by its xdist workers, under a lock. The
    first worker to take the lock builds in it (done False) and marks it done on success; the
    others wait for the lock and reuse it (done True): the wheel and the fresh venv are built once
    per run, not once per worker (30 s of CPU each)."""
    base = tmp_path_factory.getbasetemp()
    shared = base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base
    folder, marker = shared / name, shared / f"{name}.done"
    with open(shared / f"{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not marker.exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a worker that failed left
            folder.mkdir()
        yield folder, marker.exists()
        marker.touch()


def shared_wheel(tmp_path_factory) -> Path:
    """The wheel of this test run (built_once)."""
    with built_once(tmp_path_factory, "wheel") as (folder, done):
        return next((folder / "dist").glob("turngate-*.whl")) if done else build_wheel(folder)


def shared_venv(tmp_path_factory, wheel: Path, plugin: tuple[str, str, str]) -> StrangerVenv:
    """The fresh venv of this test run (built_once): the wheel and the entry-point plug-in
    `plugin` (dist, module, source) installed."""
    with built_once(tmp_path_factory, "stranger") as (folder, done):
        root = folder / "venv"
        if done:
            return StrangerVenv.existing(root)
        venv = StrangerVenv.create(root, wheel)
        venv.install_entry_point_plugin(*plugin)
        return venv


def _can_build_here() -> bool:
    """The running environment can build without isolation: setuptools >= 70.1 has bdist_wheel
    built in, an older one needs the `wheel` package (pyproject's requires says setuptools>=68)."""
    try:
        major, minor = (int(p) for p in metadata.version("setuptools").split(".")[:2])
    except (metadata.PackageNotFoundError, ValueError):
        return False
    return (major, minor) >= (70, 1) or ((major, minor) >= (68, 0) and util.find_spec("wheel") is not None)


def build_wheel(root: Path) -> Path:
    """`pip wheel --no-deps` of a copy of the repository. Without build isolation (no index
    needed) when this environment can build; otherwise (the project venv's setuptools is older
    than pyproject's `requires`, or lacks `wheel`) pip's isolated build, whose build
    requirements come from the configured find-links / index / cache."""
    src, out = source_copy(root / "src"), root / "dist"
    flags = ["--no-build-isolation"] if _can_build_here() else []
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", *flags, "-q", "-w", str(out), str(src)],
         timeout=INSTALL_TIMEOUT)
    (wheel,) = out.glob("turngate-*.whl")
    return wheel


def wheel_top_level(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as z:
        return {name.split("/", 1)[0] for name in z.namelist()}


def wheel_texts(wheel: Path):
    """(path, text) of every file in the wheel."""
    with zipfile.ZipFile(wheel) as z:
        for name in z.namelist():
            yield name, z.read(name).decode("utf-8", "replace")


# --- the fresh venv -----------------------------------------------------------------------

def stranger_env(cache: Path, **extra: str) -> dict[str, str]:
    """The environment a stranger's shell has: none of this repository's or this venv's
    variables (no PYTHONPATH, no VIRTUAL_ENV, no TURNGATE_* / EVALS_* / provider keys), pip's
    own configuration kept (find-links, cache)."""
    drop = ("PYTHON", "VIRTUAL_ENV", "TURNGATE_", "EVALS_", "ORQ_", "OPENAI_", "PYTEST", "CONDA", "COV_")
    env = {k: v for k, v in os.environ.items() if not k.startswith(drop)}
    here = str(Path(sys.prefix) / "bin")
    env["PATH"] = os.pathsep.join(p for p in env.get("PATH", "").split(os.pathsep) if p != here)
    env["TURNGATE_CACHE_DIR"] = str(cache)  # never the user's cache
    env.update(extra)
    return env


@dataclass
class StrangerVenv:
    root: Path
    mode: str  # "index" | "project-venv"
    site: Path = field(init=False)
    deps_paths: list[str] = field(default_factory=list)  # what the .pth adds (mode project-venv)
    timings: dict[str, float] = field(default_factory=dict)

    @property
    def python(self) -> Path:
        return self.root / "bin" / "python"

    @property
    def evals(self) -> Path:
        return self.root / "bin" / "evals"

    @classmethod
    def create(cls, root: Path, wheel: Path, mode: str = DEPS_MODE) -> StrangerVenv:
        """`python -m venv`, then the wheel. mode "index" (the default): `pip install WHEEL`,
        its dependencies resolved from the configured index / find-links / cache as a
        stranger's would be, which also proves the wheel declares every dependency the library
        imports (the project venv has the demo's extras too: they would hide a missing one).
        It took ~45 s here, well under the 3 minutes that would make it worth avoiding.
        mode "project-venv" (STANDALONE_DEPS=project-venv, for a machine with no index):
        `pip install --no-deps WHEEL`, and a .pth line naming this venv's site-packages makes
        its installed dependencies importable. A plain path line: the .pth files inside that
        folder (the editable install's finder among them) are not processed, so this
        repository's turngate stays invisible; the fresh venv's own site-packages comes first."""
        venv = cls(root, mode)
        started = time.monotonic()
        _run([sys.executable, "-m", "venv", str(root)], timeout=INSTALL_TIMEOUT, cwd=root.parent)
        venv.timings["venv"] = time.monotonic() - started
        venv.site = Path(venv.py("import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
        started = time.monotonic()
        # --no-compile: pip's byte-compiling of every installed package was 11 of its 29 s; the
        # modules a command imports are compiled on first use instead (same code, same checks)
        pip = [str(venv.python), "-m", "pip", "install", "-q", "--disable-pip-version-check", "--no-compile"]
        env = stranger_env(root / "cache")
        if mode == "index":
            _run([*pip, str(wheel)], timeout=INSTALL_TIMEOUT, cwd=root, env=env)
        elif mode == "project-venv":
            _run([*pip, "--no-deps", str(wheel)], timeout=INSTALL_TIMEOUT, cwd=root, env=env)
            here = sysconfig.get_paths()["purelib"]  # this venv's: the editable turngate's finder is a .pth there
            (venv.site / "zz_project_venv_deps.pth").write_text(f"{here}\n")
            venv.deps_paths.append(here)
        else:
            raise ValueError(f"STANDALONE_DEPS={mode!r}: index or project-venv")
        venv.timings["install"] = time.monotonic() - started
        return venv

    @classmethod
    def existing(cls, root: Path, mode: str = DEPS_MODE) -> StrangerVenv:
        """The venv another worker of this run made with create()."""
        venv = cls(root, mode)
        venv.site = Path(venv.py("import sysconfig; print(sysconfig.get_paths()['purelib'])").stdout.strip())
        if mode == "project-venv":
            venv.deps_paths.append(sysconfig.get_paths()["purelib"])
        venv.timings.update(venv=0.0, install=0.0)
        return venv

    def py(self, code: str, *, cwd: Path | None = None) -> subprocess.CompletedProcess:
        """`python -c code` in the fresh venv, from cwd (default: the venv's own folder)."""
        return subprocess.run([str(self.python), "-c", code], cwd=cwd or self.root, capture_output=True, text=True,
                              env=stranger_env(self.root / "cache"), timeout=RUN_TIMEOUT)

    def install_entry_point_plugin(self, dist: str, module: str, source: str) -> None:
        """An installed distribution offering `module` in the turngate.plugins entry-point group:
        the module and a dist-info as pip would lay them out (no build, no index)."""
        (self.site / f"{module}.py").write_text(source)
        info = self.site / f"{dist}-0.1.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
        (info / "entry_points.txt").write_text(f"[turngate.plugins]\n{module} = {module}\n")
        (info / "top_level.txt").write_text(f"{module}\n")
        (info / "RECORD").write_text(f"{module}.py,,\n{info.name}/METADATA,,\n{info.name}/entry_points.txt,,\n"
                                     f"{info.name}/top_level.txt,,\n{info.name}/RECORD,,\n")


# --- Northwind's names --------------------------------------------------------------------

def _decorated(path: Path, suffix: str) -> set[str]:
    """Names of the functions in path decorated with something ending in suffix."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for d in node.decorator_list:
                if ast.unparse(d.func if isinstance(d, ast.Call) else d).endswith(suffix):
                    out.add(node.name)
    return out


def northwind_scorers() -> set[str]:
    return _decorated(REPO / "evals" / "scorers.py", "register_scorer")


def northwind_tools() -> set[str]:
    return _decorated(REPO / "app" / "northwind" / "server.py", ".tool")


def northwind_versions() -> set[str]:
    return {p.stem for p in (REPO / "app" / "refund_agent" / "versions").glob("*.toml")}


def northwind_files() -> set[str]:
    """Northwind's files as a message would name them: evals/calibrate.py, evals/thresholds.toml,
    app/refund_agent, datasets/scenarios.toml ... (a stranger's own evals/__init__.py,
    app/__init__.py and app/agent.py are not Northwind's)."""
    names = {"app/refund_agent", "app.refund_agent", "app/northwind", "app.northwind", "evals.judge", "evals/judge"}
    for folder in ("evals", "datasets"):
        for p in (REPO / folder).iterdir():
            if p.is_file() and p.name != "__init__.py":
                names.add(f"{folder}/{p.name}")
                if p.suffix == ".py":
                    names.add(f"{folder}.{p.stem}")
    return names


def _word(name: str) -> re.Pattern:
    return re.compile(r"(?<![\w])" + re.escape(name) + r"(?![\w])", re.IGNORECASE)


def wheel_terms() -> dict[str, re.Pattern]:
    """What no file of the wheel may mention: "northwind", Northwind's scorers and tools. Its
    `escalation` scorer is left out: the word is the library's own hook vocabulary
    (turngate.plugin.register_escalation)."""
    names = {"northwind", "refund_agent", *northwind_tools(), *(n for n in northwind_scorers() if "_" in n)}
    return {n: _word(n) for n in sorted(names)}


def output_terms() -> dict[str, re.Pattern]:
    """What no output a stranger sees may name: the wheel's terms, every Northwind scorer,
    Northwind's files and its agent's versions (v1, v2, v3, refund-agent@...)."""
    terms = wheel_terms()
    for n in sorted(northwind_scorers() | northwind_files() | {"refund-agent"}):
        terms[n] = _word(n)
    for v in sorted(northwind_versions()):
        terms[v] = re.compile(r"(?<![\w.@/-])" + re.escape(v) + r"(?![\w.-])")
    return terms


def hits(text: str, terms: dict[str, re.Pattern], where: str = "") -> list[str]:
    """`where:LINE: [term] line` for each line of text naming a term."""
    out = []
    for i, line in enumerate(text.splitlines(), 1):
        found = [n for n, pattern in terms.items() if pattern.search(line)]
        if found:
            out.append(f"{where}:{i}: [{', '.join(found)}] {line.strip()[:160]}")
    return out
