"""What a mutation run found, three ways from one summary: the terminal table, --json and the
Markdown section for a PR (`--markdown FILE`)."""
from __future__ import annotations

from collections import Counter
from dataclasses import asdict
from typing import Any

from turngate.core.seeds import format_seeds
from turngate.mutate.classify import EQUIVALENT, ERROR, KILLED, NOT_RUN, SURVIVED
from turngate.mutate.runner import MutationRun, Outcome

SCHEMA = "mutate@1"
STATUSES = (KILLED, SURVIVED, EQUIVALENT, ERROR, NOT_RUN)


def score(run: MutationRun) -> float | None:
    """killed / (killed + survived): equivalent mutants, errors and mutants not run do not count."""
    counts = Counter(o.result.status for o in run.outcomes)
    judged = counts[KILLED] + counts[SURVIVED]
    return counts[KILLED] / judged if judged else None


def policy_lines(run: MutationRun) -> list[dict[str, Any]]:
    """Per policy line (a text mutant's site): its mutants' classes and the rows its edits change."""
    by_line: dict[tuple[int, str], list[Outcome]] = {}
    for o in run.outcomes:
        if o.mutant.line is not None and o.result.status != NOT_RUN:
            by_line.setdefault((o.mutant.line, o.mutant.site), []).append(o)
    out = []
    for (line, site), outcomes in sorted(by_line.items()):
        # a killed mutant's rows are those the gate named (its other runs differ by sampling noise)
        rows = sorted({r for o in outcomes for r in (o.result.rows if o.result.status == KILLED
                                                     else [c.row_id for c in o.result.changed])})
        counts = Counter(o.result.status for o in outcomes)
        if rows:
            said = f"changes rows {', '.join(rows)}"
        elif all(o.result.reason.startswith("the model does not act") for o in outcomes):
            said = "the model does not act on it"
        elif all(o.result.reason.startswith("no row exercises") for o in outcomes if o.result.status == EQUIVALENT):
            said = "no row exercises this line"
        else:
            said = "no row behaves differently"
        out.append({"line": line, "text": site, "mutants": len(outcomes),
                    **{s: counts[s] for s in (KILLED, SURVIVED, EQUIVALENT, ERROR)}, "rows": rows, "says": said})
    return out


def _shown(path: Any) -> Any:
    """A path as the user would write it: relative to the working directory when under it."""
    from pathlib import Path

    if not isinstance(path, (str, Path)):
        return path if isinstance(path, (bool, type(None))) else type(path).__name__
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def diff(base: Any, edited: Any) -> str:
    """The mutant's edit as a unified diff of the instructions (no context lines), then any
    switch or temperature it changes; "" when there is no base to compare with."""
    import difflib

    if base is None:
        return ""
    out = list(difflib.unified_diff(base.instructions.splitlines(), edited.instructions.splitlines(),
                                    "instructions", "mutant", n=0, lineterm=""))
    out += [f"{name}: {str(base.switches.get(name)).lower()} -> {str(on).lower()}"
            for name, on in edited.switches.items() if base.switches.get(name) != on]
    if edited.temperature != base.temperature:
        out.append(f"temperature: {base.temperature} -> {edited.temperature}")
    return "\n".join(out)


def summary(run: MutationRun) -> dict[str, Any]:
    counts = Counter(o.result.status for o in run.outcomes)
    return {
        "schema": SCHEMA, "agent": run.agent, "version": run.version, "seeds": format_seeds(run.seeds),
        "dataset": _shown(run.settings.dataset), "thresholds": _shown(run.settings.thresholds),
        "reference": _shown(run.settings.reference),
        "baseline": asdict(run.baseline), "budget": run.budget, "model_calls": run.spent,
        "counts": {s: counts[s] for s in STATUSES}, "score": score(run),
        "mutants": [{"id": o.mutant.id, "operator": o.mutant.operator, "line": o.mutant.line,
                     "site": o.mutant.site, "change": o.mutant.description, "status": o.result.status,
                     "exit_code": o.result.exit_code, "verdict": o.result.line, "findings": o.result.findings,
                     "rows": o.result.rows, "scorers": o.result.scorers, "reason": o.result.reason,
                     "changed": [asdict(c) for c in o.result.changed], "model_calls": o.calls, "runs": o.runs,
                     "results": o.results, "diff": diff(run.base, o.mutant.edited)} for o in run.outcomes],
        "policy_lines": policy_lines(run),
    }


def headline(data: dict[str, Any]) -> str:
    c = data["counts"]
    s = data["score"]
    text = (f"mutation score {'n/a' if s is None else f'{s:.2f}'} ({c[KILLED]} killed / "
            f"{c[KILLED] + c[SURVIVED]} killed or survived); {c[EQUIVALENT]} equivalent, {c[ERROR]} error(s)")
    return text + (f", {c[NOT_RUN]} not run (budget)" if c[NOT_RUN] else "")


def print_report(data: dict[str, Any]) -> None:
    from rich.markup import escape
    from rich.table import Table

    from turngate.output.console import console

    t = Table(title=f"mutants of {data['version']} ({data['agent']}), seeds {data['seeds']}")
    for col in ("mutant", "change", "class", "rows and scorers, or why nothing changed"):
        t.add_column(col, overflow="fold")
    style = {KILLED: "green", SURVIVED: "red", EQUIVALENT: "dim", ERROR: "yellow", NOT_RUN: "dim"}
    for m in data["mutants"]:
        t.add_row(m["id"], escape(m["change"]), f"[{style[m['status']]}]{m['status']}[/]", escape(_cell(m)))
    console.print(t)
    survivors = [m for m in data["mutants"] if m["status"] == SURVIVED]
    if survivors:
        console.print("survivors: what changed, why no scorer failed, what would catch it", markup=False)
        for m in survivors:
            console.print(f"  {m['id']} ({m['change']})", markup=False, highlight=False)
            for c in m["changed"][:SHOWN - 1]:
                console.print(f"    {c['row_id']}: {c['what']}; {c['why']}; suggest {c['suggest']}",
                              markup=False, highlight=False)
            if len(m["changed"]) > SHOWN - 1:
                console.print(f"    and {len(m['changed']) - SHOWN + 1} more row(s)", markup=False)
    console.print("policy lines:", markup=False)
    for p in data["policy_lines"]:
        console.print(f"  line {p['line']} \"{p['text'][:60]}\": {p['mutants']} mutant(s), {p[KILLED]} killed, "
                      f"{p[SURVIVED]} survived, {p[EQUIVALENT]} equivalent: {_says(p)}", markup=False, highlight=False)
    console.print(f"{headline(data)}; {data['model_calls']} model calls"
                  + (f" of --max-model-calls {data['budget']}" if data["budget"] else ""), markup=False,
                  highlight=False)


SHOWN = 4  # rows named per cell and survivor: the rest counted ("+N"); --json has them all


def _some(items: list[str], n: int = SHOWN) -> str:
    return ", ".join(items[:n]) + (f" (+{len(items) - n})" if len(items) > n else "")


def _cell(m: dict[str, Any]) -> str:
    if m["status"] == KILLED:
        return f"rows {_some(m['rows']) or '-'}; scorers {', '.join(m['scorers']) or '-'}"
    if m["status"] == SURVIVED:
        shown = "; ".join(f"{c['row_id']}: {c['what']}" for c in m["changed"][:2])
        return shown + (f"; +{len(m['changed']) - 2} more row(s)" if len(m["changed"]) > 2 else "")
    return m["reason"]


def markdown(data: dict[str, Any]) -> str:
    """A section for a PR or the docs: the headline, the table, the survivors, the policy lines."""
    def esc(text: str) -> str:
        return text.replace("|", "\\|").replace("\n", " ")

    out = [f"### Mutation testing: {data['version']}", "",
           f"**{headline(data)}.** {len(data['mutants'])} mutants of `{data['agent']}` {data['version']}, "
           f"each through the gate on seeds {data['seeds']} (`{data['dataset']}`, `{data['thresholds']}`); "
           f"{data['model_calls']:,} agent model calls.", "",
           "| mutant | change | class | rows and scorers, or why nothing changed |", "|---|---|---|---|"]
    out += [f"| `{m['id']}` | {esc(m['change'])} | {m['status']} | {esc(_cell(m))} |" for m in data["mutants"]]
    survivors = [m for m in data["mutants"] if m["status"] == SURVIVED]
    if survivors:
        out += ["", "Survivors (behaviour changed, the gate passed): what changed, why no scorer failed, "
                    "what would catch it:", ""]
        for m in survivors:
            out.append(f"- `{m['id']}` ({esc(m['change'])}):")
            out += [f"  - `{c['row_id']}`: {esc(c['what'])}; {c['why']}; suggest {esc(c['suggest'])}"
                    for c in m["changed"][:SHOWN - 1]]
            if len(m["changed"]) > SHOWN - 1:
                out.append(f"  - and {len(m['changed']) - SHOWN + 1} more row(s)")
    out += ["", "| policy line | mutants | killed | survived | equivalent | rows |", "|---|---|---|---|---|---|"]
    out += [f"| {p['line']}: {esc(p['text'][:70])} | {p['mutants']} | {p[KILLED]} | {p[SURVIVED]} | "
            f"{p[EQUIVALENT]} | {esc(_says(p))} |" for p in data["policy_lines"]]
    return "\n".join(out) + "\n"


def _says(p: dict[str, Any]) -> str:
    return f"changes {len(p['rows'])} row(s): {_some(p['rows'], 3)}" if p["rows"] else p["says"]
