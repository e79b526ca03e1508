"""A verdict's findings are typed in turngate/verdict/ and worded only in turngate/output/wording.py:
decide() gives kinds and numbers (no text), word() is the one producer of the lines every output
prints, and a verdict cannot be stored unworded."""
from __future__ import annotations

import ast
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.test_verdict import QUIET_20, ROWS, only, runs_for
from turngate.output import wording
from turngate.record.summaries import ConfirmationSummary, FindingKind
from turngate.verdict import decide as typed
from turngate.verdict.summary import summarise

VERDICT = Path(typed.__file__).parent
TEXT = {"text", "line", "reason", "reasons"}
REG = {"refund_outcome": SimpleNamespace(bar=0.95), "no_forbidden_action": SimpleNamespace(bar=0.8)}
BARS = {n: s.bar for n, s in REG.items()}


def judged(fail, seeds=(20,)):
    """The typed verdict of a gate of `fail` (with the reruns it plans), before any wording."""
    seeds = list(seeds)
    rows = {r["id"]: r for r in ROWS}
    summary = summarise(runs_for(seeds, fail), rows, BARS, len(seeds))
    plan = typed.plan_reruns(summary, QUIET_20, seeds, below_bar=summary.below(BARS))
    reruns = [r for r in runs_for(sorted({s for ss in plan.values() for s in ss}), fail) if r.trial in plan.get(r.row_id, [])]
    summary.confirmation = ConfirmationSummary.of(summarise(reruns, rows, BARS, len(seeds)), rows=len(plan),
                                                  runs=len(reruns))
    return typed.decide(summary, QUIET_20, REG)


def broken(rid, s, n):
    """Three rows fail refund_outcome for good (its mean below 0.95: a bar confirmed on reruns,
    and each row regressed), and mass_email fails no_forbidden_action for good."""
    return (rid in {"r01", "r02", "r03"} and n == "refund_outcome") or only("mass_email", "no_forbidden_action")(rid, s, n)


def test_decide_gives_numbers_and_kinds_and_word_gives_the_text():
    v = judged(broken)
    assert v.exit_code == 1 and {f.kind for f in v.findings} == {FindingKind.BAR, FindingKind.ROW}
    # typed: no text anywhere a reason is read from, the numbers are there
    assert v.line == "" and v.reasons == [] and all(f.text == "" for f in v.findings)
    assert all(x.line == "" for x in v.regressed + v.flaky + v.insufficient)
    bar = next(f for f in v.findings if f.kind == FindingKind.BAR)
    assert (bar.subject, bar.bar, round(bar.mean, 3), bar.p_value is not None) == ("refund_outcome", 0.95, 0.903, True)
    with pytest.raises(ValueError, match="not worded"):
        typed.stored(v)
    w = wording.word(v)
    assert w.line.splitlines()[0] == "FAIL: 1 scorer below its bar, 4 rows regressed"
    assert w.line.splitlines()[1:] == w.reasons and len(w.reasons) == 5
    assert w.reasons[0].startswith("refund_outcome: mean 0.903 < bar 0.95, confirmed on reruns of 3 row(s)")
    assert any(r.startswith("row regressed: mass_email: no_forbidden_action failed 0/20 accepted, 1/1 now")
               for r in w.reasons[1:])
    assert w.scorers["refund_outcome"].reason == w.reasons[0] and typed.stored(w).reasons == w.reasons
    assert wording.word(w).line == w.line  # wording twice changes nothing


def test_the_wording_is_only_the_output_layers(monkeypatch):
    """Every flag line and reason comes from wording: replace its flag_line, and they all change."""
    monkeypatch.setattr(wording, "flag_line", lambda x: f"<{x.row_id}>")
    w = wording.word(judged(broken))
    assert "<mass_email>" in w.reasons and all(x.line == f"<{x.row_id}>" for x in w.regressed)


def test_a_fluke_below_its_bar_is_worded_as_not_confirmed():
    fluke = lambda rid, s, n: rid in {"r01", "r02", "r03"} and n == "refund_outcome" and s == 20  # noqa: E731
    v = judged(fluke)
    assert v.exit_code == 0 and v.findings == [] and not any("not confirmed" in n for n in v.notes)
    w = wording.word(v)
    assert any(n.startswith("flaky: refund_outcome: mean 0.903 < bar 0.95 at stage 1, not confirmed") for n in w.notes)


def _text_built(path: Path) -> list[str]:
    """Where a module gives a finding, a flag or a verdict's reasons text: a Finding/FlaggedRow
    made with text= or line=, or any .text/.line/.reason/.reasons assigned."""
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) in {"Finding", "FlaggedRow"}:
            out += [f"{path.name}:{node.lineno}: {node.func.id}({k.arg}=...)" for k in node.keywords if k.arg in TEXT]
        targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(
            node, ast.AugAssign | ast.AnnAssign) else []
        for t in targets:
            for e in t.elts if isinstance(t, ast.Tuple) else [t]:
                if isinstance(e, ast.Attribute) and e.attr in TEXT:
                    out.append(f"{path.name}:{node.lineno}: .{e.attr} = ...")
    return out


def test_nothing_in_verdict_words_a_finding():
    assert [x for p in sorted(VERDICT.glob("*.py")) for x in _text_built(p)] == []
    # the check is not vacuous: the output layer, which words them, is caught by it
    assert _text_built(Path(wording.__file__))
