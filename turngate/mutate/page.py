"""The mutation report as one self-contained HTML page (`evals mutate --report PATH.html`): the
score, the counts, a table of every mutant (class, change, its diff, the rows and scorers that
killed it, a survivor's changed rows with what would catch them, why an equivalent one changed
nothing), the policy lines. Built from report.summary's data, as --json and --markdown are.

Rendered on the server, no script: every piece of text (prompts, rows' answers, tool arguments,
ids) goes through html.escape, so a hostile prompt or answer stays text. Written atomically."""
from __future__ import annotations

from html import escape
from typing import Any

from turngate.mutate.classify import EQUIVALENT, ERROR, KILLED, NOT_RUN, SURVIVED
from turngate.mutate.report import headline

STYLE = """
:root { --pass: #1e8449; --pass-bg: #d5f5e3; --fail: #c0392b; --fail-bg: #fadbd8; --mixed-bg: #fdebd0;
        --na-bg: #eceff1; --ink: #1c2833; --muted: #5d6d7e; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); margin: 0; padding: 16px 24px; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 24px 0 8px; }
.verdict { padding: 10px 14px; border-radius: 6px; font-weight: 600; margin: 8px 0 12px; background: var(--na-bg); }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; color: var(--muted); }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; }
table { border-collapse: collapse; }
td, th { padding: 4px 10px; border-bottom: 1px solid #e5e8e8; text-align: left; vertical-align: top; }
td.id { font-family: ui-monospace, monospace; font-size: 12px; white-space: nowrap; }
.class { font-weight: 600; padding: 1px 6px; border-radius: 3px; white-space: nowrap; }
.class.killed { background: var(--pass-bg); color: var(--pass); }
.class.survived { background: var(--fail-bg); color: var(--fail); }
.class.equivalent, .class.not-run { background: var(--na-bg); color: var(--muted); }
.class.error { background: var(--mixed-bg); color: #7e5109; }
pre { margin: 2px 0; white-space: pre-wrap; word-break: break-word; font: 12px/1.35 ui-monospace, monospace; background: #fbfcfc; }
ul { margin: 2px 0; padding-left: 18px; } .small { font-size: 12px; color: var(--muted); }
"""


def page(data: dict[str, Any]) -> str:
    """The whole page for report.summary's data."""
    title = f"Mutation testing: {data['version']}"
    c = data["counts"]
    meta = [("agent", data["agent"]), ("version", data["version"]), ("seeds", data["seeds"]),
            ("dataset", data["dataset"]), ("thresholds", data["thresholds"]), ("reference", "none: the bars only" if data["reference"] is False else data["reference"] or "beside the bars"),
            ("baseline", data["baseline"]["line"]),
            ("model calls", f"{data['model_calls']:,}" + (f" of --max-model-calls {data['budget']:,}"
                                                            if data["budget"] else "")),
            ("mutants", ", ".join(f"{c[s]} {s}" for s in (KILLED, SURVIVED, EQUIVALENT, ERROR, NOT_RUN)))]
    out = ["<!doctype html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width, initial-scale=1">', f"<title>{_e(title)}</title>",
           f"<style>{STYLE}</style>", "</head>", "<body>", f"<h1>{_e(title)}</h1>",
           f'<div class="verdict" id="score">{_e(headline(data))}</div>',
           '<dl class="meta">' + "".join(f"<dt>{_e(k)}</dt><dd>{_e(v)}</dd>" for k, v in meta) + "</dl>",
           '<section id="mutants"><h2>Mutants</h2>',
           "<table><thead><tr><th>mutant</th><th>class</th><th>change</th><th>what the suite did</th></tr></thead><tbody>"]
    out += [_row(m) for m in data["mutants"]]
    out += ["</tbody></table></section>", '<section id="lines"><h2>Policy lines</h2>',
            "<table><thead><tr><th>line</th><th>text</th><th>mutants</th><th>killed</th><th>survived</th>"
            "<th>equivalent</th><th>rows</th></tr></thead><tbody>"]
    out += [f"<tr><td>{p['line']}</td><td>{_e(p['text'])}</td><td>{p['mutants']}</td><td>{p[KILLED]}</td>"
            f"<td>{p[SURVIVED]}</td><td>{p[EQUIVALENT]}</td>"
            f"<td>{_e(', '.join(p['rows']) if p['rows'] else p['says'])}</td></tr>" for p in data["policy_lines"]]
    out += ["</tbody></table></section>",
            '<p class="small">Mutation score = killed / (killed + survived). docs/mutate.md says what each class means.</p>',
            "</body>", "</html>"]
    return "\n".join(out) + "\n"


def _e(text: Any) -> str:
    return escape(str(text), quote=True)


def _row(m: dict[str, Any]) -> str:
    status = m["status"]
    change = f"<div>{_e(m['change'])}</div>" + (f"<pre class=\"diff\">{_e(m['diff'])}</pre>" if m.get("diff") else "")
    return (f'<tr id="{_e(m["id"])}" class="{_e(status.replace(" ", "-"))}"><td class="id">{_e(m["id"])}</td>'
            f'<td><span class="class {_e(status.replace(" ", "-"))}">{_e(status)}</span></td>'
            f"<td>{change}</td><td>{_detail(m)}</td></tr>")


def _detail(m: dict[str, Any]) -> str:
    if m["status"] == KILLED:
        parts = [f"<div>rows: {_e(', '.join(m['rows']) or '-')}</div>",
                 f"<div>scorers: {_e(', '.join(m['scorers']) or '-')}</div>"]
        if m["findings"]:
            parts.append("<ul>" + "".join(f"<li>{_e(f)}</li>" for f in m["findings"]) + "</ul>")
        return "".join(parts)
    if m["status"] == SURVIVED:
        return '<ul class="changed">' + "".join(
            f"<li><b>{_e(ch['row_id'])}</b>: {_e(ch['what'])}; {_e(ch['why'])}; suggest {_e(ch['suggest'])}</li>"
            for ch in m["changed"]) + "</ul>"
    return f"<div>{_e(m['reason'])}</div>"
