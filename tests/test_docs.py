"""The README and docs/ stay true: size, links, the generated CLI reference, the commands they
quote, the figures a test can recompute cheaply, and the examples they show, run as written."""
from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

from tests import prefork

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
DOCS = REPO / "docs"
PAGES = ["concepts", "dataset", "scorers", "gate", "your-agent", "plugins", "real-models", "ci", "simulation",
         "northwind", "validation", "cli", "review"]
sys.path.insert(0, str(REPO / "scripts"))
import gen_cli_docs  # noqa: E402  (a script, not a package)

LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```(\w*)\n(.*?)^```$", re.S | re.M)


def markdown_files() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower().replace("`", ""))
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


def test_the_readme_fits_on_a_few_screens():
    assert README.stat().st_size < 8 * 1024, f"README.md is {README.stat().st_size} bytes"
    section = README.read_text().split("## Gate your own agent\n", 1)[1].split("\n## ", 1)[0]
    assert len(section.strip().splitlines()) <= 30


def test_the_readme_links_every_docs_page_and_they_exist():
    linked = {m.group(1).split("#")[0] for m in LINK.finditer(README.read_text())}
    for page in PAGES:
        assert f"docs/{page}.md" in linked, f"README does not link docs/{page}.md"
        assert (DOCS / f"{page}.md").is_file()


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.name)
def test_every_relative_link_resolves(path):
    for target in (m.group(1) for m in LINK.finditer(FENCE.sub("", path.read_text()))):
        if re.match(r"[a-z]+:", target):  # http:, https:, mailto:
            continue
        file, _, anchor = target.partition("#")
        dest = (path.parent / file).resolve() if file else path
        assert dest.exists(), f"{path.name}: link to {target}: no such file"
        if anchor and dest.suffix == ".md":
            assert anchor in anchors(dest), f"{path.name}: link to {target}: no such heading"


def test_the_two_commands_are_the_ones_ci_runs():
    text = README.read_text()
    install = ("python3 -m venv .venv && . .venv/bin/activate && pip install -e '.[dev,demo,review]' && "
               "python evals/regression.py --version v3")
    assert f"```bash\n{install}\n```" in text
    assert "```bash\npytest -q -n auto\n```" in text
    ci = (REPO / ".ci" / "run").read_text()
    assert "pip install -q -e '.[dev,demo,review,ray,browser,study]'" in ci  # CI skips no test
    assert [line for line in ci.splitlines() if line.startswith("pytest")] == ["pytest -q -n auto"]


def test_the_cli_reference_is_generated_from_the_parsers():
    assert (DOCS / "cli.md").read_text() == gen_cli_docs.render(), \
        "docs/cli.md is stale: run python scripts/gen_cli_docs.py"
    assert gen_cli_docs.main(["--check"]) == 0


# -- commands quoted in the docs -----------------------------------------------------------

# `evals <subcommand>` (the installed command) or this repository's launcher of it, python evals/<file>.py
SUBCOMMAND = {f"evals/{launcher}.py": sub for sub, launcher in gen_cli_docs.LAUNCHERS.items()}
_SUBS = "|".join(sorted(gen_cli_docs.COMMANDS, key=len, reverse=True))
COMMAND = re.compile(rf"(?:python3? (evals/\w+\.py|scripts/\w+\.py)|(?<![\w/.-])evals ({_SUBS}))(?![\w-])([^`\n|;&#\x22]*)")  # a command quoted in a JSON string ends at its quote (\x22)
OLD_SCRIPT = re.compile(r"(?<![\w/.#-])evals-(?:gate|regression|show|compare|regrade|report|calibrate|simulate|merge)\b")


def quoted_commands(text: str):
    """(`evals <sub>` or a file, its flags) for every command line the page quotes."""
    text = text.replace("\\\n", " ")  # shell line continuations
    for m in COMMAND.finditer(text):
        name = m.group(1) or f"evals {m.group(2)}"
        flags = [t.split("=")[0] for t in shlex.split(m.group(3).replace("'", ""), posix=True)
                 if t.startswith("--") and re.fullmatch(r"--[a-z][a-z0-9-]*(=.*)?", t)]
        yield name, flags


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.name)
def test_quoted_commands_exist_and_know_their_flags(path):
    seen = 0
    text = path.read_text()
    stale = OLD_SCRIPT.findall(text)
    assert not stale, f"{path.name}: {stale[0]} is gone: the command is `evals <subcommand>`"
    for name, flags in quoted_commands(text):
        if name.startswith("evals "):
            sub = name.removeprefix("evals ")
        else:
            assert (REPO / name).is_file(), f"{path.name}: {name} does not exist"
            if name.startswith("scripts/"):  # existence only
                continue
            assert name in SUBCOMMAND, f"{path.name}: {name} is not a launcher of a subcommand"
            sub = SUBCOMMAND[name]
        known = {o for action in gen_cli_docs.parser_for(sub)._actions for o in action.option_strings}
        for flag in flags:
            assert flag in known, f"{path.name}: {name} has no flag {flag}"
        seen += 1
    if path.name in ("README.md", "gate.md", "ci.md"):
        assert seen  # the pattern still finds commands


def test_one_console_script_and_the_launchers_are_the_subcommands():
    """`evals` is the only installed command; each subcommand documented is one it runs, and this
    repository's python evals/<file>.py launches exactly that subcommand."""
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
    assert scripts == {"evals": "turngate.cli:run"}
    from turngate import cli

    assert set(gen_cli_docs.COMMANDS) == set(cli.COMMANDS)
    for sub, launcher in gen_cli_docs.LAUNCHERS.items():
        assert f'run(["{sub}", *sys.argv[1:]])' in (REPO / "evals" / f"{launcher}.py").read_text(), launcher


PATH = re.compile(r"(?<![\w./-])((?:app|evals|scripts|tests|datasets|examples|docs|\.ci)/[\w./*-]*[\w*])")


@pytest.mark.parametrize("path", markdown_files(), ids=lambda p: p.name)
def test_every_repository_path_the_docs_name_exists(path):
    """Module and file paths quoted in prose (`turngate/verdict/decide.py`, `tests/data/...`): none stale."""
    text = re.sub(r"<[^>]*>", "*", path.read_text())  # placeholders: results/<version>-<stamp>.json
    for name in {m.group(1) for m in PATH.finditer(text)}:
        if name.startswith("results/") or name.startswith("turngate/commands/*"):
            continue
        hits = list(REPO.glob(name)) if "*" in name else [REPO / name]
        assert hits and all(h.exists() for h in hits), f"{path.name}: {name} does not exist"


def test_the_flag_check_catches_an_unknown_flag():
    (name, flags), = quoted_commands("`python evals/regression.py --version v3 --no-such-flag`")
    known = {o for a in gen_cli_docs.parser_for("gate")._actions for o in a.option_strings}
    assert name == "evals/regression.py" and "--version" in known and "--no-such-flag" not in known
    assert list(quoted_commands("run `evals gate --agent a:b --no-such-flag`; the evals use it")) == \
        [("evals gate", ["--agent", "--no-such-flag"])]
    assert OLD_SCRIPT.search("`evals-gate --version v3`") and not OLD_SCRIPT.search("northwind-evals/gate-json@1")


# -- figures -------------------------------------------------------------------------------

def test_dataset_figures_match_the_files():
    from turngate.sources.dataset import load_rows

    rows = load_rows(REPO / "datasets" / "northwind.jsonl")
    seed = sum(r.inputs.source == "seed" for r in rows)
    multi = sum("multi-turn" in r.inputs.tags for r in rows)
    text = (DOCS / "dataset.md").read_text()
    assert f"holds {len(rows)} rows: the {seed} tasks of the workshop seed" in text
    claims = sum("claims" in r.inputs.tags for r in rows)
    assert f"plus {len(rows) - seed} rows written by hand. {len(rows) - seed - claims} are on the refund policy" in text
    assert f"{claims} (tag `claims`) are on what the answer says was done" in text
    assert f"Of the {len(rows) - seed}, {multi} are multi-turn rows" in text
    assert f"{len(rows)} rows, 1 trial" in (DOCS / "gate.md").read_text()
    labels = [json.loads(line) for line in (REPO / "datasets" / "judge_labels.jsonl").read_text().splitlines() if line]
    assert f"holds {len(labels)} human-labelled examples" in (DOCS / "scorers.md").read_text()
    held = [line for line in (REPO / "tests" / "data" / "heldout_messages.jsonl").read_text().splitlines() if line]
    assert f"holds {len(held)} held-out messages" in (DOCS / "validation.md").read_text()


def test_the_quoted_row_is_the_dataset_row():
    rows = {json.loads(line)["id"]: json.loads(line)
            for line in (REPO / "datasets" / "northwind.jsonl").read_text().splitlines() if line}
    blocks = [json.loads(b) for lang, b in FENCE.findall((DOCS / "dataset.md").read_text())
              if lang == "json" and b.lstrip().startswith("{")]
    assert blocks and all(b == rows[b["id"]] for b in blocks)


def test_every_measured_table_names_its_command():
    """validation.md: each table or measured block has the command that produces it just above."""
    lines = (DOCS / "validation.md").read_text().splitlines()
    starts = [n for n, line in enumerate(lines) if line.startswith("| ---") or line.startswith("|---")]
    starts += [n for n, line in enumerate(lines) if line == "```" and n and lines[n - 1] == ""]  # output blocks
    assert len(starts) >= 6
    for n in starts:
        above = "\n".join(lines[max(0, n - 14):n])
        assert re.search(r"python3? (-m |-X importtime )?[\w./]+", above), f"validation.md:{n + 1}: no command above"


def test_simulation_size_matches_the_files():
    scenarios = tomllib.loads((REPO / "datasets" / "scenarios.toml").read_text())["scenario"]
    personas = tomllib.loads((REPO / "datasets" / "personas.toml").read_text())["persona"]
    text = (DOCS / "simulation.md").read_text()
    assert (f"{len(scenarios)} scenarios and {len(personas)} personas: "
            f"{len(scenarios) * len(personas) * 3} conversations at `--seeds 3`") in text


def judge_row(label: str, c: dict) -> str:
    cell = {k: f"{c[k]:.2f} [{c['intervals'][k][0]:.2f}, {c['intervals'][k][1]:.2f}]" for k in ("tpr", "tnr", "kappa")}
    return f"| {label} | {c['n']} | {cell['tpr']} | {cell['tnr']} | {cell['kappa']} |"


def test_the_judge_table_is_the_stored_calibration():
    c = json.loads((REPO / "evals" / "judge_calibration.json").read_text())
    text = (DOCS / "validation.md").read_text()
    assert judge_row("test split (stored)", c) in text, judge_row("test split (stored)", c)
    assert f"tp={c['tp']} fn={c['fn']} fp={c['fp']} tn={c['tn']}" in text


def test_the_judge_dev_split_figures_are_todays():
    """The dev row, recomputed as `evals calibrate-judge --split dev` does (the offline judge, ~10 s)."""
    from turngate.commands.calibrate_judge import DEFAULT_LABELS, load_labels, measure

    dev = [ex for ex in load_labels(DEFAULT_LABELS) if ex.split == "dev"]
    result, _ = measure(dev, "offline")
    assert judge_row("dev split", result) in (DOCS / "validation.md").read_text(), judge_row("dev split", result)


def test_the_server_has_the_tools_the_docs_count():
    import asyncio

    from app.northwind.server import build_server

    n = len(asyncio.run(build_server().list_tools()))
    assert f"a {n}-tool MCP server" in README.read_text()
    assert f"serves the {n} tools" in (DOCS / "northwind.md").read_text()


# -- examples, run as written --------------------------------------------------------------

class Ran(list):
    stderr = ""
    stdout = ""


def run_bash_block(block: str, cwd: Path, env: dict | None = None) -> list[tuple[str, int, int | None]]:
    """Run a bash block line by line in one shell; (command, exit code, the `# exit N` it states).
    `env` adds variables after the user's shell is made; a server the block starts with `&` is
    stopped when the shell ends."""
    lines = [ln for ln in block.replace("\\\n", " ").splitlines() if ln.strip()]
    # `evals` is the console script of this environment (sys.executable's); without one (a venv
    # installed before it existed), the same entry point through this interpreter
    script = [f'command -v evals >/dev/null 2>&1 || evals() {{ "{sys.executable}" -c '
              f'"import sys; from turngate.cli import run; sys.argv[0] = \'evals\'; run()" "$@"; }}',
              "trap 'kill $(jobs -p) 2>/dev/null; wait' EXIT"]
    for n, line in enumerate(lines):
        script += [line, f'echo "::rc {n} $?"']
    venv = prefork.shims()  # python and evals without importing the agent's stack each time
    bin_ = Path(venv) / "bin" if venv else Path(sys.executable).parent
    shell_env = {**os.environ, "PATH": f"{bin_}{os.pathsep}{os.environ['PATH']}",
                 "COLUMNS": "200"}
    shell_env.pop("PYTHONPATH", None)  # as a user's shell: the project is found from the folder the command runs in
    shell_env.update(env or {})
    done = subprocess.run(["bash", "-c", "\n".join(script)], cwd=cwd, env=shell_env, capture_output=True, text=True,
                          timeout=600)
    codes = dict(re.findall(r"^::rc (\d+) (\d+)$", done.stdout, re.M))
    out = Ran()
    out.stderr, out.stdout = done.stderr, done.stdout
    for n, line in enumerate(lines):
        stated = re.search(r"#\s*exit (\d)\b", line)
        assert str(n) in codes, f"{line!r} did not run:\n{done.stderr[-2000:]}"
        out.append((line, int(codes[str(n)]), int(stated.group(1)) if stated else None))
    return out


def check_codes(ran):
    for line, code, stated in ran:
        assert code == (0 if stated is None else stated), f"{line!r} exited {code}:\n{ran.stderr[-3000:]}"


def test_the_complete_example_runs_from_an_empty_folder(tmp_path, monkeypatch):
    text = (DOCS / "your-agent.md").read_text()
    for name, body in re.findall(r"<!-- example-file: (\S+) -->\n```\w*\n(.*?)^```$", text, re.S | re.M):
        (tmp_path / name).write_text(body)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["calc_bot.py", "rows.jsonl"]
    block = re.search(r"<!-- example-run -->\n```bash\n(.*?)^```$", text, re.S | re.M).group(1)
    ran = run_bash_block(block, tmp_path)
    check_codes(ran)
    assert [stated for *_, stated in ran] == [None, 0, 1]
    assert (tmp_path / "bars.toml").is_file() and (tmp_path / "reference.json").is_file()
    assert len(list((tmp_path / "results").glob("calc-bot-*.json"))) == 2  # the results land here
    # then the same gate from Python, as the page's next block shows it
    python = re.search(r"## From Python\n.*?```python\n(.*?)^```$", text, re.S | re.M).group(1)
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    import calc_bot

    namespace = {"target": calc_bot.target}
    exec(compile(python, "your-agent.md", "exec"), namespace)  # its assert is the test
    assert namespace["result"].path.parent.resolve() == (tmp_path / "results").resolve()
    sys.modules.pop("calc_bot")


def test_the_scorer_example_registers_a_scorer_and_its_key(request):
    from turngate.scoring import scorers
    from turngate.sources.dataset import DatasetError, validate_row

    request.addfinalizer(lambda: scorers.unregister("short_answer"))  # the block adds it
    block = re.search(r"## Adding a scorer\n.*?```python\n(.*?)^```$", (DOCS / "scorers.md").read_text(),
                      re.S | re.M).group(1)
    exec(compile(block, "scorers.md", "exec"), {})
    spec = scorers.REGISTRY["short_answer"]
    assert spec.reads == ("max_words",) and not spec.is_judge
    row = {"id": "r", "inputs": {"message": "hi", "expect": {"max_words": 40}}, "expected_output": "Greets."}
    assert validate_row(row, "r").expect.value("max_words") == 40
    row["inputs"]["expect"] = {"max_words": "forty"}  # the declared type is checked
    with pytest.raises(DatasetError, match="max_words"):
        validate_row(row, "r")
    row["inputs"]["expect"] = {"max_wordz": 40}
    with pytest.raises(DatasetError, match="max_wordz: unknown key"):
        validate_row(row, "r")


def test_the_readme_walkthrough_runs_and_leaves_the_tree_clean(tmp_path):
    section = README.read_text().split("## Gate your own agent\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"```bash\n(.*?)^```$", section, re.S | re.M).group(1)
    # where a stray write would land: the example, the project's own bars and reference, the rows,
    # or the root (results/ is ignored); the rest of the tree may change under others' hands meanwhile
    status = ["git", "status", "--porcelain", "--untracked-files=all", "--", "examples", "evals", "datasets",
              ":(glob)*.toml", ":(glob)*.json"]
    tracked = subprocess.run(status, cwd=REPO, capture_output=True, text=True).stdout
    ran = run_bash_block(block, REPO)
    check_codes(ran)
    assert [stated for *_, stated in ran][-2:] == [0, 1]
    assert subprocess.run(status, cwd=REPO, capture_output=True, text=True).stdout == tracked


def test_the_plugin_example_is_a_module_that_imports_and_registers(tmp_path):
    """your-agent.md's calc_scorers.py, written as the page shows it, is what [tool.turngate]
    plugins = ["calc_scorers"] imports: it must import in a fresh process and register its
    scorer and judge."""
    text = (DOCS / "your-agent.md").read_text()
    body = re.search(r"```python\n# calc_scorers.py\n(.*?)^```$", text, re.S | re.M).group(1)
    (tmp_path / "calc_scorers.py").write_text(body)
    check = ("import calc_scorers; from turngate.core.registry import REGISTRY as R; "
             "print('short_answer' in R.scorers, 'my_judge' in R.judges, len(R.policy))")
    env = {k: v for k, v in os.environ.items() if k != "TURNGATE_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", check], cwd=tmp_path, capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.split() == ["True", "True", "1"]
