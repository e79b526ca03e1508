"""One self-contained HTML report of a results record: the verdict and why, each scorer's
mean and interval against its bar (a Vega-Lite chart), baseline vs candidate when the record
has a comparison, and a rows x scorers grid whose cells open the run behind them.

    write_report(record, "report.html")      # the command: evals report RESULTS [--out PATH.html]

Nothing is fetched when the file is opened: the data and the Vega / Vega-Lite / vega-embed
bundle (shipped by the vl-convert-python package, BSD-3-Clause) are inlined. Every text from
the record (user messages, answers, tool replies) is escaped: server-side with html.escape,
in the page only through textContent, never innerHTML.
"""
from __future__ import annotations

import functools
import json
import re
from html import escape
from pathlib import Path
from types import SimpleNamespace

from turngate.core import cli_support as cli
from turngate.core.atomic_write import write_atomic
from turngate.core.errors import ConfigError
from turngate.output.report_page import PAGE
from turngate.record.results import Record
from turngate.verdict.decide import job_label
from turngate.verdict.summary import row_kind, scorer_names

MAX_FLIPS = 300  # per direction, in the list; the grid marks every flip


@functools.lru_cache(maxsize=1)
def vega_bundle() -> str:
    """Vega, Vega-Lite and vega-embed as one script (sets window.vegaEmbed)."""
    try:
        import vl_convert
    except ImportError as exc:
        raise ConfigError("report: the chart library is missing; pip install vl-convert-python") from exc
    # A literal "</script" inside the bundle would end the inline tag early.
    return vl_convert.javascript_bundle().replace("</script", "<\\/script")


def _json_for_script(data) -> str:
    """JSON safe inside <script type="application/json">: no '<', '>' or '&' survive raw."""
    return (json.dumps(data, ensure_ascii=False, default=str)
            .replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))


def _f(v, fmt=".3f") -> str:
    return "-" if v is None else format(v, fmt)


# -- what the page shows ----------------------------------------------------------------

def versions_of(record: Record) -> list[str]:
    return record.meta.versions


def verdict_html(line: str, limit: int = 10) -> str:
    """The verdict as the terminal prints it: the headline, then one reason per line (at most
    `limit`, then how many more and where to read them)."""
    head, *reasons = line.splitlines() or [""]
    items = "".join(f"<li>{escape(r)}</li>" for r in reasons[:limit])
    if len(reasons) > limit:
        items += f"<li>... and {len(reasons) - limit} more ({cli.command('show')} &lt;results file&gt; --verdict)</li>"
    return f"<div class='headline'>{escape(head)}</div>" + (f"<ul class='reasons'>{items}</ul>" if items else "")


def sight_html(record: Record) -> str:
    """What the verdict could see (its sensitivity statement), as the terminal, JUnit and the PR
    comment state it; nothing when the record's verdict carries none (an earlier rule's, bars only)."""
    verdict = record.verdict
    sight = getattr(verdict, "sensitivity", None) if verdict is not None and not record.incomplete() else None
    if sight is None:
        return ""
    return f"<div id='sight' class='sight'><strong>What this verdict could see:</strong> {escape(sight.line)}</div>"


def verdict_of(record: Record) -> tuple[str, str]:
    """(css class, line): the record's verdict as the gate (or report.py, which
    recomputes it from the runs first: turngate/gate/recheck.py) put it there, else turngate.verdict.decide.decide
    on the summary and bars (the same decision the gate makes; no second rule here). An
    incomplete record has none: `incomplete: N of M runs`."""
    from turngate.output.wording import decide

    if line := record.incomplete():
        return "unjudged", f"{line}: no verdict over part of the runs"
    verdict = record.verdict
    if verdict is None:
        bars = record.meta.thresholds or {}
        registry = {n: SimpleNamespace(bar=b) for n, b in bars.items()} if bars else None
        verdict = decide(record, None, registry)
    code = verdict.exit_code
    # what it was judged with, when not its own (a stored verdict of an earlier rule, --reference): said on the page
    said = [n for n in verdict.notes if n.startswith(("judged by ", "judged against "))]
    return ("pass" if code == 0 else "fail" if code == 1 else "unjudged"), "\n".join([verdict.line, *said])


def means_chart_data(record: Record) -> list[dict]:
    """One entry per (scorer, version), the versions of a scorer next to each other."""
    versions = versions_of(record)
    per_version = {v: s.scorers if (s := record.summary.get(v)) is not None else {} for v in versions}
    names = [n for v in versions for n in per_version[v]]
    data = []
    for name in dict.fromkeys(names):
        for version in versions:
            s = per_version[version].get(name)
            if s is None:
                continue
            label = name if not record.meta.baseline else f"{name} · {version}"
            data.append({"scorer": name, "version": version, "label": label, "mean": s.mean,
                         "low": s.low, "high": s.high, "bar": s.bar, "n": s.n, "estimate": "raw"})
            corr = s.corrected
            if corr is not None and corr.theta is not None:
                data.append({"scorer": name, "version": version, "label": f"{label} (bias-corrected)",
                             "mean": corr.theta, "low": corr.low, "high": corr.high,
                             "bar": s.bar, "n": s.n, "estimate": "bias-corrected"})
    return data


def means_spec(data: list[dict]) -> dict:
    order = [d["label"] for d in data]
    y = {"field": "label", "type": "nominal", "sort": order, "title": None, "axis": {"labelLimit": 260}}
    tip = [{"field": "label", "title": "scorer"}, {"field": "mean", "format": ".3f"},
           {"field": "low", "title": "95% low", "format": ".3f"}, {"field": "high", "title": "95% high", "format": ".3f"},
           {"field": "bar", "format": ".2f"}, {"field": "n"}]
    x = {"type": "quantitative", "scale": {"domain": [0, 1]}}
    return {
        "data": {"values": data}, "width": 460, "height": {"step": 22},
        "title": "mean pass rate, 95% interval, and the bar (black tick)",
        "encoding": {"y": y},
        "layer": [
            {"mark": {"type": "rule", "strokeWidth": 2},
             "encoding": {"x": {**x, "field": "low", "title": "pass rate"}, "x2": {"field": "high"},
                          "color": {"field": "version", "type": "nominal"}, "tooltip": tip}},
            {"mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {"x": {**x, "field": "mean"}, "color": {"field": "version", "type": "nominal"},
                          "shape": {"field": "estimate", "type": "nominal", "title": "estimate"},
                          "tooltip": tip}},
            {"transform": [{"filter": "datum.bar != null"}],
             "mark": {"type": "tick", "color": "black", "thickness": 2, "size": 16},
             "encoding": {"x": {**x, "field": "bar"}, "tooltip": tip}},
        ],
    }


def diff_spec(comparison: dict) -> dict:
    data = [{"scorer": n, "diff": s["diff"], "low": s["low"], "high": s["high"], "p": s["p_value"],
             "b": s["b"], "c": s["c"], "n": s["n"],
             "status": "worse" if s["worse"] else "better" if s["better"] else "not significant"}
            for n, s in comparison["scorers"].items() if s["n"]]
    colour = {"field": "status", "type": "nominal",
              "scale": {"domain": ["worse", "not significant", "better"], "range": ["#c0392b", "#7f8c8d", "#1e8449"]}}
    tip = [{"field": "scorer"}, {"field": "diff", "format": "+.3f"}, {"field": "low", "format": "+.3f"},
           {"field": "high", "format": "+.3f"}, {"field": "p", "title": "McNemar p", "format": ".3g"},
           {"field": "b", "title": "pass->fail"}, {"field": "c", "title": "fail->pass"}, {"field": "n", "title": "pairs"}]
    x = {"type": "quantitative", "scale": {"domain": [-1, 1]}}
    y = {"field": "scorer", "type": "nominal", "sort": [d["scorer"] for d in data], "title": None}
    return {
        "width": 460, "height": {"step": 22},
        "title": f"{comparison['candidate']} - {comparison['baseline']}: difference with 95% interval",
        "layer": [
            {"data": {"values": [{"zero": 0}]}, "mark": {"type": "rule", "strokeDash": [4, 3], "color": "#555"},
             "encoding": {"x": {"field": "zero", "type": "quantitative"}}},
            {"data": {"values": data}, "mark": {"type": "rule", "strokeWidth": 2},
             "encoding": {"y": y, "x": {**x, "field": "low", "title": "difference in pass rate"},
                          "x2": {"field": "high"}, "color": colour, "tooltip": tip}},
            {"data": {"values": data}, "mark": {"type": "point", "filled": True, "size": 70},
             "encoding": {"y": y, "x": {**x, "field": "diff"}, "color": colour, "tooltip": tip}},
        ],
    }


def scorer_table(record: Record) -> str:
    summary = record.summary.get(record.meta.version)
    trials = record.meta.trials
    head = ["scorer", "mean", "95% CI", "n", "n/a", "bar", "verdict"] + (
        [f"pass@{trials}", f"pass^{trials}"] if trials > 1 else [])
    out = ["<table class='scorers'><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head) + "</tr></thead><tbody>"]
    for name, s in (summary.scorers if summary is not None else {}).items():
        ok = s.ok
        mark = ("<span class='na'>n/a</span>" if ok is None else
                "<span class='ok'>pass</span>" if ok else "<span class='bad'>FAIL</span>")
        cells = [escape(name), _f(s.mean), f"{_f(s.low, '.2f')}-{_f(s.high, '.2f')}",
                 escape(str(s.n)), escape(str(s.na)), _f(s.bar, ".2f"), mark]
        if trials > 1:
            cells += [_f(s.pass_at_k), _f(s.pass_hat_k)]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
        corr = s.corrected
        if corr is not None:
            cells = [f"&nbsp;&nbsp;{escape(name)} (bias-corrected)", _f(corr.theta),
                     f"{_f(corr.low, '.2f')}-{_f(corr.high, '.2f')}", "", "", "",
                     f"<span class='na' title='{escape(corr.method, quote=True)}'>info</span>"]
            cells += [""] * (2 if trials > 1 else 0)
            out.append("<tr class='corrected'>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def comparison_table(comparison: dict) -> str:
    base, cand = comparison["baseline"], comparison["candidate"]
    head = ["scorer", base, cand, "difference", "95% CI", "pass→fail", "fail→pass", "McNemar p", "pairs", ""]
    out = ["<table class='comparison'><thead><tr>" + "".join(f"<th>{escape(h)}</th>" for h in head)
           + "</tr></thead><tbody>"]
    for name, s in comparison["scorers"].items():
        mark = ("<span class='bad'>worse</span>" if s["worse"] else "<span class='ok'>better</span>" if s["better"]
                else "n.s." if s["n"] else "<span class='na'>n/a</span>")
        cells = [escape(name), _f(s["baseline_mean"]), _f(s["candidate_mean"]),
                 "-" if s["diff"] is None else f"{s['diff']:+.3f}",
                 f"{s['low']:+.2f} … {s['high']:+.2f}" if s["n"] else "-",
                 str(s["b"]), str(s["c"]), f"{s['p_value']:.3g}", str(s["n"]), mark]
        out.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    out.append("</tbody></table>")
    um = comparison.get("unmatched") or {}
    out.append(f"<p class='small'>{comparison['pairs']} matched (row, trial) pairs; unmatched: "
               f"{um.get('baseline_only', 0)} baseline only, {um.get('candidate_only', 0)} candidate only. "
               f"{escape(comparison.get('method', {}).get('test', ''))}; "
               f"{escape(comparison.get('method', {}).get('rule', ''))}.</p>")
    return "".join(out)


def flips_html(comparison: dict) -> str:
    base, cand = comparison["baseline"], comparison["candidate"]
    out = []
    for kind, title in (("regressed", f"passed on {base}, fail on {cand}"), ("fixed", f"failed on {base}, pass on {cand}")):
        flips = comparison["flips"][kind]
        out.append(f"<details class='flips {kind}'{' open' if kind == 'regressed' and flips else ''}>"
                   f"<summary>{escape(kind)} ({len(flips)}): {escape(title)}</summary><ul>")
        for f in flips[:MAX_FLIPS]:
            out.append(f"<li><button class='link' data-row='{escape(f['row_id'], quote=True)}' "
                       f"data-scorer='{escape(f['scorer'], quote=True)}' data-trial='{int(f['trial'])}'>"
                       f"{escape(f['row_id'])}#{int(f['trial'])} · {escape(f['scorer'])}</button>"
                       f"<div class='small'>{escape(base)}: {escape(f['baseline_explanation'])}</div>"
                       f"<div class='small'>{escape(cand)}: {escape(f['candidate_explanation'])}</div></li>")
        if len(flips) > MAX_FLIPS:
            out.append(f"<li>... {len(flips) - MAX_FLIPS} more in the results JSON (the grid marks every flip)</li>")
        out.append("</ul></details>")
    return "".join(out)


def meta_html(record: Record) -> str:
    m = record.meta
    items = [("version", f"{m.version}" + (f" — {m.version_description}" if m.version_description else "")),
             ("baseline", m.baseline or "none"), ("model", m.model), ("judge", m.judge),
             ("dataset", f"{m.dataset} (sha256 {m.dataset_sha256[:12]})"), ("trials", str(m.trials)),
             ("git commit", (m.git_commit or "?")[:12]), ("started", m.started),
             ("elapsed", f"{m.elapsed_s:.1f} s"), ("agent", f"{m.agent} (as the file names it)" if m.agent else "not named in the file"),
             ("complete", record.incomplete() or "yes ({} of {} runs)".format(*record.progress()))]
    return "<dl class='meta'>" + "".join(f"<dt>{escape(k)}</dt><dd>{escape(str(v))}</dd>" for k, v in items) + "</dl>"


def payload(record: Record) -> dict:
    """What the page's script needs for the grid and the drill-down."""
    versions = versions_of(record)
    names = scorer_names([r for r in record.runs if r.version in versions])
    # The grid and the trial chips are the planned runs (stage "gate"); a flagged row's
    # confirmation reruns (fresh seeds) are kept apart, in the order they were made.
    runs: dict[str, dict[str, dict[str, dict]]] = {v: {} for v in versions}
    reruns: dict[str, dict[str, list[dict]]] = {v: {} for v in versions}
    for r in record.runs:
        if r.version not in runs:
            continue
        item = {"trial": r.trial, "seed": r.seed, "job": r.job, "turn": r.turn.model_dump(mode="json"),
                "verdicts": {n: {"passed": v.passed, "explanation": v.explanation} for n, v in r.verdicts.items()}}
        if r.stage == "gate":
            runs[r.version].setdefault(r.row_id, {})[str(r.trial)] = item
        else:
            item["failed"] = r.agent_error is not None or any(v.passed is False for v in r.verdicts.values())
            reruns[r.version].setdefault(r.row_id, []).append(item)
    rows = []
    for row in record.rows:
        inputs = row.get("inputs", {})
        expect = inputs.get("expect", {})
        rows.append({"id": row["id"], "kind": row_kind(row), "tags": inputs.get("tags", []),
                     "user": [inputs["message"]] if inputs.get("message") is not None else inputs.get("turns", []),
                     "expected_output": row.get("expected_output", ""), "rubric": expect.get("rubric")})
    flips = {}
    if record.comparison:
        for kind in ("regressed", "fixed"):
            for f in record.comparison["flips"][kind]:
                flips[f"{f['row_id']}\u0000{f['scorer']}\u0000{f['trial']}"] = kind
    return {"versions": versions, "candidate": record.meta.version, "baseline": record.meta.baseline,
            "scorers": names, "rows": rows, "runs": runs, "reruns": reruns, "flips": flips,
            "trials": record.meta.trials}


def build_html(record: Record) -> str:
    css, line = verdict_of(record)
    sections = {
        "TITLE": escape((record.meta.job or job_label(record, record.meta.version)) + (f" vs {record.meta.baseline}" if record.meta.baseline else "")),
        "VERDICT_CLASS": css,
        "VERDICT_LINE": verdict_html(line),
        "SIGHT": sight_html(record),
        "META": meta_html(record),
        "SCORER_TABLE": scorer_table(record),
        "COMPARISON": "",
        "DATA": _json_for_script(payload(record)),
        "CHARTS": _json_for_script({"means": means_spec(means_chart_data(record)),
                                    "diff": diff_spec(record.comparison) if record.comparison else None}),
        "VEGA": vega_bundle(),
    }
    if record.comparison:
        sections["COMPARISON"] = (
            f"<section id='comparison'><h2>{escape(record.comparison['candidate'])} vs baseline "
            f"{escape(record.comparison['baseline'])}</h2>{comparison_table(record.comparison)}"
            f"<div id='chart-diff' class='chart'></div>{flips_html(record.comparison)}</section>")
    # One pass over the placeholders, so text inside a replacement is never re-substituted.
    return re.sub(r"@@([A-Z_]+)@@", lambda m: sections[m.group(1)], PAGE)


def write_report(record: Record, path: str | Path, *, force: bool = True) -> Path:
    """The page, written whole or not at all (a WriteError naming the path); without force
    never over a file that appeared since the command checked."""
    return write_atomic(path, build_html(record), what="the report", exclusive=not force)
