"""evals/TAXONOMY.md is the review workbench's export of Northwind's committed review
(evals/review/northwind.review.jsonl and the records it keys on), not a hand-kept page: the
command at its top makes it again, byte for byte, with taxonomy.json and judge_labels.jsonl
beside it. Editing the page instead of the review fails here."""
from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

from turngate.commands import review

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "evals" / "TAXONOMY.md"


def documented_command() -> list[str]:
    """The command in the page's header (a ```bash block), as argv after `evals review`."""
    block = re.search(r"```bash\n(evals review [^\n]+)\n```", PAGE.read_text(encoding="utf-8"))
    assert block, "evals/TAXONOMY.md has no `evals review ... --export` command at its top"
    argv = shlex.split(block.group(1))
    assert argv[:2] == ["evals", "review"]
    return argv[2:]


def test_the_command_is_documented_where_people_look():
    line = shlex.join(["evals", "review", *documented_command()])
    for doc in ("docs/review.md", "docs/northwind.md", "evals/review/README.md"):
        assert line in (ROOT / doc).read_text(encoding="utf-8"), f"{doc} does not give the command that makes the taxonomy"


def test_the_committed_taxonomy_is_the_export_of_the_committed_review(tmp_path, monkeypatch, capsys):
    argv = documented_command()
    out = argv[argv.index("--export") + 1]
    assert out == "evals"
    argv[argv.index("--export") + 1] = str(tmp_path)
    monkeypatch.chdir(ROOT)  # the files are named relative to the repository, as in the command
    notes = ROOT / argv[argv.index("--notes") + 1]
    before = notes.read_bytes()
    assert review.main(argv) == 0, capsys.readouterr().err
    assert notes.read_bytes() == before  # an export reads the review file, never writes it

    manifest = json.loads((ROOT / "evals" / ".turngate-export.json").read_text())
    assert {"TAXONOMY.md", "taxonomy.json", "judge_labels.jsonl"} <= set(manifest["files"])
    for rel in manifest["files"]:
        made = (tmp_path / rel).read_text(encoding="utf-8").replace(f"--export {tmp_path}", "--export evals")
        committed = (ROOT / "evals" / rel).read_text(encoding="utf-8")
        assert made == committed, (f"evals/{rel} is not the export of the review: make it again with "
                                   f"`{shlex.join(['evals', 'review', *documented_command()])}`")


@pytest.mark.parametrize("number,name,scorer", [
    (1, "Policy-violating refund", "refund_outcome"),
    (2, "Wrong amount or currency", "refund_outcome"),
    (3, "Skipped verification", "tool_use"),
    (4, "Missed escalation", "escalation"),
    (5, "Forbidden side effect", "no_forbidden_action"),
    (6, "Privacy leak", "no_pii_leak"),
    (8, "Claims the trail contradicts", "claims_match_actions"),
])
def test_the_modes_the_docs_name_are_in_it_with_their_scorers(number, name, scorer):
    """docs/concepts.md, scorers.md and dataset.md name these modes by number (M8: claims)."""
    data = json.loads((ROOT / "evals" / "taxonomy.json").read_text())
    mode = next(m for m in data["modes"] if m["number"] == number)
    assert mode["name"] == name
    assert mode["covered_by"] == scorer
    assert f"### M{number}. {name} (" in PAGE.read_text(encoding="utf-8")


def test_the_answer_mode_is_shared_by_the_fact_check_and_the_judge():
    data = json.loads((ROOT / "evals" / "taxonomy.json").read_text())
    m7 = next(m for m in data["modes"] if m["number"] == 7)
    assert m7["name"] == "Unfaithful or incomplete answer"
    assert {a["scorer"] for a in m7["agreement"] if a["failed"]} == {"answer_facts", "policy_judge"}
