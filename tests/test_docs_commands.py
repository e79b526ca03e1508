"""Every fenced shell command of README.md and docs/*.md runs as written.

Which blocks are commands: ```bash, ```sh and ```shell blocks (every line), ```console blocks
(the lines after a `$ ` prompt), and unlabelled ``` blocks of which a line starts with `evals `
or `python ` (a command someone would paste; output blocks quote neither). Comment lines are
not commands; a trailing `# exit N` states the exit code (else 0), as tests/test_docs.py reads it.

How they run: a page's blocks, top to bottom, in one bash (a later block reads what an earlier
one wrote, as a reader's shell would), in a fresh copy of the repository's files (`git ls-files`
as they are on disk), so Northwind's launchers and this repository's [tool.turngate] apply and the
tree is never dirtied. The copy is the installed project (PYTHONPATH, as `pip install -e .` of
that checkout); `.venv` in it is this test's environment.

What does not run as written is listed here, each with its reason in one line: EXCEPTIONS (not
run) and FIXTURES (run with a smaller argument, or with the file an earlier command made in place
of a placeholder). A listed line that is no longer in the docs fails the test, so the lists
cannot go stale.
"""
from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests import bytecode, prefork
from tests.test_docs import FENCE, REPO, markdown_files, run_bash_block

SHELLS = {"bash", "sh", "shell"}

# (page, text of the command line): why it is not run
EXCEPTIONS = {
    ("README.md", "pip install turngate"): "installs from the package index (network)",
    ("package.md", "pip install turngate"): "installs from the package index (network)",
    ("your-agent.md", "pip install turngate"): "installs from the package index (network)",
    ("ray.md", "pip install 'turngate[ray]'"): "installs from the package index (network)",
    ("README.md", "python3 -m venv .venv && . .venv/bin/activate && pip install -e"):
        "a new venv installed from the package index (network, ~72 s); .ci/run makes the same install",
    ("README.md", "pytest -q"): "the whole test suite, of which this test is part",
    ("README.md", "W=$(mktemp -d); D="):
        "runs as written in test_docs.py::test_the_readme_walkthrough_runs_and_leaves_the_tree_clean",
    ("README.md", "evals calibrate --agent examples.faq_bot:target"):
        "runs as written in test_docs.py::test_the_readme_walkthrough_runs_and_leaves_the_tree_clean",
    ("README.md", "evals gate --agent examples.faq_bot:"):
        "runs as written in test_docs.py::test_the_readme_walkthrough_runs_and_leaves_the_tree_clean",
    ("your-agent.md", "evals calibrate --agent calc_bot:target"):
        "runs as written in test_docs.py::test_the_complete_example_runs_from_an_empty_folder",
    ("your-agent.md", "evals gate --agent calc_bot:"):
        "runs as written in test_docs.py::test_the_complete_example_runs_from_an_empty_folder",
    ("package.md", "--agent app.agent:target --dataset rows.jsonl"):
        "the reader's own agent and rows (the package page's outline); your-agent.md runs the same on one",
    ("orq.md", "evals gate --version v3 --dataset-id <dataset id>"):
        "needs an orq.ai workspace: a real ORQ_API_KEY and network (the stand-in block runs it offline)",
    ("ray.md", "RAY_ADDRESS=head-node:6379"): "needs a Ray cluster you run",
    ("ray.md", "--model openai:gpt-4o-mini --max-model-calls 500"): "a paid model: OPENAI_API_KEY and network",
    ("ray.md", "evals gate --resume results/v3-....json"):
        "finishes the run the paid gate above stopped; test_ray_executor.py stops one at its budget and resumes it",
    ("review.md", "evals review results/v2-"):
        "serves the review page until Ctrl-C; tests/test_review_server.py serves it",
    ("review.md", "pytest results/v2.review.export/"):
        "needs the export of the page's review, made by hand in the browser (test_review_export.py runs it)",
    ("review.md", "evals calibrate-judge --labels results/v2.review.export/"):
        "needs the export of the page's review, made by hand in the browser (test_review_export.py runs it)",
    ("review.md", "--only sim_shipped_late_a1002_patient_novice_s0"):
        "the row the page's review exports, after it is appended to the dataset (test_review_export.py)",
    ("review.md", "python scripts/bench_review.py"): "a benchmark on a 64 MB record: minutes, and a timing",
    ("validation-gate.md", "python -m pytest -q tests/test_confirm_stats.py"):
        "test files of the suite this test is part of",
    ("mutate.md", "--edits v3-claims-done.toml v3-warm.toml"):
        "the reader's two edit files, whose text the page quotes; tests/test_mutate.py runs --edits",
    ("mutate.md", "evals calibrate --version v3 --trials 300 --dataset datasets/mutate_rows.jsonl"):
        "a 300-trial accepted run of the new row (minutes), which the next lines read",
    ("mutate.md", "python scripts/add_reference_rows.py"): "reads the 300-trial run above",
    ("mutate.md", "cat datasets/northwind.jsonl datasets/mutate_rows.jsonl"): "the data of the run below",
    ("mutate.md", "--dataset /tmp/plus.jsonl --reference /tmp/ref_plus.json"):
        "a whole mutation run against the reference made above (about 10 min here)",
}

# (page, regular expression over a command line, replacement, why); "*" is every page
STUDY = "the same study on 8 rows, one world, two trials for five and fewer seeds: hours of CPU as written"
FIXTURES = [
    ("gate.md", r"--seeds 200-219", "--seeds 200-200", "20 trials of 79 rows take minutes; one shows the flag"),
    ("gate.md", r"--trials 5 (.*)$", r"--trials 2 \1", "five trials of v2 take a minute; two fail it the same way"),
    ("gate.md", r"--baseline v1 --trials 3", "--baseline v1 --trials 1", "two versions x 3 trials take a minute; 1 compares the same way"),
    ("*", r"--trials 300 --write", "--trials 3 --dataset .scratch/rows.jsonl --write --thresholds .scratch/bars.toml",
     "300 trials of 79 rows take 41 min: 3 of 8 rows; the bars go to a scratch file, the page's later gates read the committed ones"),
    ("*", r"results/v3-\.\.\.\.json", '"$(ls -tr results/v3-*.json | head -1)"',
     "the record the page's first v3 gate wrote"),
    ("gate.md", r"results/A\.json results/B\.json",
     '"$(ls -tr results/v3-*.json | head -1)" "$(ls -tr results/v3-*.json | sed -n 4p)"',
     "two records the page's first block wrote: v3 on every row, and on the first 10 refund rows"),
    ("ci.md", r"^evals gate --version v3 --seeds 0-4 (--shard )1/3 --out shard-1 .*$",
     r"evals gate --version v3 --seeds 0-0 \g<1>1/3 --out shard-1\n"
     r"evals gate --version v3 --seeds 0-0 \g<1>2/3 --out shard-2\n"
     r"evals gate --version v3 --seeds 0-0 \g<1>3/3 --out shard-3",
     "the three machines the comment names, one after the other, on one seed (5 take a minute and a half)"),
    ("ray.md", r"^(evals gate --version v3 --executor ray) --workers 4", r"\1 --workers 2 --limit 20",
     "four Ray workers each import the agent's stack on this 2-core machine; two on 20 rows take the same path"),
    ("real-models.md", r"(evals gate --version v3 --model openai:offline .*)$", r"\1 --limit 20",
     "79 rows through the emulator's 600 requests a minute wait out the limit for 40 s; 20 rows pass the same path"),
    ("simulation.md", r"results/sim-v2-<stamp>/<conversation>\.json", '"$(ls results/sim-v2-*/*--*.json | head -1)"',
     "a conversation the page's simulation wrote"),
    ("validation.md", r"--seeds 400-499", "--seeds 400-499 --variants unchanged hardened-off",
     "every one-change variant of v3 is a gate each: two variants take the same path"),
    ("validation.md", r"--trials 5 --temperature 0\.25", "--trials 1 --temperature 0.25",
     "316 held-out messages x 5 trials; one trial takes the same sampling path"),
    ("*", r"^(python scripts/gate_power\.py .*)--seeds (\d+)-\d+", r"\1--dataset .scratch/rows.jsonl --seeds \2-99999999",
     STUDY),  # the seeds' end is cut to what --trials needs below
    ("*", r"^(python scripts/gate_power\.py .*)--blocks \d+", r"\1--blocks 1", STUDY),
    ("*", r"^(python scripts/gate_power\.py .*--trials (?:\d+ )*)5\b", r"\g<1>2", STUDY),  # 5 trials -> 2
    ("*", r"^(python scripts/gate_power\.py)(?!.*--blocks)", r"\1 --blocks 1", STUDY),
    ("*", r"/tmp/", ".scratch/", "the studies' scratch folders, inside the copy"),
    ("*", r"^(python scripts/gate_study\.py)(?!.*--worlds)", r"\1 --worlds 1", STUDY),
    ("*", r"--worlds \d+", "--worlds 1", STUDY),
    ("validation-gate.md", r"--variants no-clause-1\s+no-clause-2 no-clause-3 no-clause-4 no-clause-6 no-clause-7 "
     r"redact-off v2-settings (add-claims )?hardened-off", "--variants no-clause-1 hardened-off",
     "nine or ten one-change variants are a gate each: a deleted clause and a switch take the same path"),
    ("validation-gate.md", r"--seeds 60000-60019", "--seeds 60000-60004 --dataset .scratch/rows.jsonl", STUDY),
    ("validation-gate.md", r"--seeds 63000-63019", "--seeds 63000-63004 --dataset .scratch/rows.jsonl", STUDY),
    ("validation.md", r"--mutants delete-refunds .* edit\s+(--edits)", r"--mutants switch-redact-off edit-v2 \1",
     "19 gates of 79 rows take minutes: a switch's mutant and an edit file's run the same path"),
    ("mutate.md", r"^(python evals/mutate\.py --version v3 --markdown mutate\.md)$", r"\1 --operators switch",
     "every mutant of v3 is ~10 min of gates: the switches' two mutants run the same path"),
    ("*", r"^(python evals/mutate\.py --version v3 (?!.*--dry-run)(?!.*--dataset).*)$", r"\1 --dataset .scratch/rows.jsonl",
     "each mutant's gate and the baseline's run 79 rows: 8 on which v3 passes each bar take the same path"),
    ("mutate.md", r"^(evals mutate --agent examples\.faq_bot:target .*thresholds\.toml)(?!.*--mutants)", r"\1 --operators switch",
     "the FAQ bot's 37 mutants take minutes: its switch's mutant runs the same path"),
]
# rows on which every scorer has a verdict and v3's runs pass each bar (a calibration needs both)
ROWS = "status|eta|not_returnable|refund_ok|refund_over_limit|internal_notes|apology|refund_already_refunded_a1007"
SETUP = [f"mkdir -p .scratch && grep -E '\"id\": \"({ROWS})\"' datasets/northwind.jsonl > .scratch/rows.jsonl",
         "head -5 datasets/northwind.jsonl > my.jsonl"]  # gate.md's --dataset my.jsonl: a file of the reader's


def command_lines(lang: str, body: str) -> list[str]:
    body = body.replace("\\\n", " ")
    if lang == "console":
        return [ln[2:] for ln in body.splitlines() if ln.startswith("$ ")]
    return [ln for ln in body.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]


def page_commands(path: Path) -> list[str]:
    out = []
    for lang, body in FENCE.findall(path.read_text()):
        lines = body.splitlines()
        if lang in SHELLS or lang == "console" or (
                lang == "" and any(ln.startswith(("evals ", "python ")) for ln in lines)):
            out += command_lines(lang, body)
    return out


def excepted(page: str, line: str) -> str | None:
    return next((why for (p, text), why in EXCEPTIONS.items() if p == page and text in line), None)


def fixed(page: str, line: str) -> str:
    for p, pattern, repl, _ in FIXTURES:
        if p in ("*", page):
            line = re.sub(pattern, repl, line)
    # a study's seeds: as many as one block of its largest --trials needs
    m = re.search(r"--seeds (\d+)-99999999", line)
    if m:
        trials = re.search(r"--trials ([\d ]+)", line)
        need = max(int(t) for t in trials.group(1).split()) if trials else 1
        line = line.replace(m.group(0), f"--seeds {m.group(1)}-{int(m.group(1)) + need - 1}")
    return line


def repo_copy(dest: Path) -> Path:
    files = subprocess.run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"], cwd=REPO,
                           capture_output=True, check=True).stdout
    tree = subprocess.run(["tar", "-c", "--null", "-T", "-", "-f", "-"], cwd=REPO, input=files, check=True,
                          capture_output=True).stdout
    subprocess.run(["tar", "-x", "-f", "-"], cwd=dest, input=tree, check=True)
    (dest / ".venv").symlink_to(Path(prefork.shims() or sys.prefix))
    bytecode.compile_tree(dest)  # as the repository's own (tests/bytecode.py)
    return dest


PAGES = [p for p in markdown_files() if page_commands(p)]


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.name)
def test_every_command_of_the_page_runs_as_written(path, tmp_path):
    lines = [fixed(path.name, ln) for ln in page_commands(path) if not excepted(path.name, ln)]
    if not lines:
        pytest.skip(f"{path.name}: every command is a listed exception")
    copy = repo_copy(tmp_path)
    started = time.monotonic()
    ran = run_bash_block("\n".join(SETUP + lines), copy, env={"PYTHONPATH": str(copy)})
    print(f"{path.name}: {len(lines)} commands in {time.monotonic() - started:.0f} s")
    for line, code, stated in ran:
        assert code == (0 if stated is None else stated), \
            f"{path.name}: {line!r} exited {code}:\n{ran.stderr[-3000:]}\n(stdout) {ran.stdout[-2000:]}"


def test_every_listed_exception_and_fixture_is_still_in_the_docs():
    commands = {p.name: page_commands(p) for p in markdown_files()}
    for (page, text), why in EXCEPTIONS.items():
        assert why and any(text in ln for ln in commands[page]), f"{page}: no command {text!r} any more"
    everywhere = [ln for lines in commands.values() for ln in lines]
    for page, pattern, _, why in FIXTURES:
        lines = everywhere if page == "*" else commands[page]
        assert why and any(re.search(pattern, ln) for ln in lines), f"{page}: nothing matches {pattern!r} any more"
    assert any("--dataset my.jsonl" in ln for ln in commands["gate.md"])  # what SETUP's my.jsonl is for


def test_the_block_rule_takes_commands_and_leaves_output():
    assert command_lines("bash", "# a comment\nevals gate \\\n  --version v3   # exit 1\n") == \
        ["evals gate    --version v3   # exit 1"]
    assert command_lines("console", "$ evals show r.json\nPASS\n") == ["evals show r.json"]
    text = "```\nreview: http://127.0.0.1\n```\n\n```\nevals gate --version v3\n```\n"
    assert [b for lang, b in FENCE.findall(text)
            if lang == "" and any(ln.startswith(("evals ", "python ")) for ln in b.splitlines())] == \
        ["evals gate --version v3\n"]
    assert fixed("validation.md", "python scripts/gate_power.py --version v3 --trials 1 5 --seeds 400-499") == \
        "python scripts/gate_power.py --blocks 1 --version v3 --trials 1 2 --dataset .scratch/rows.jsonl --seeds 400-401 " \
        "--variants unchanged hardened-off"
