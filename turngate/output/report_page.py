"""The HTML page of `evals report` (turngate/output/html_report.py): markup, style and the script for the grid and the
drill-down. Placeholders are @@NAME@@; report.build_html fills them in one pass.

The script builds every piece of record text with textContent (never innerHTML), so user
messages and tool replies cannot inject markup."""

PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>@@TITLE@@</title>
<style>
:root { --pass: #1e8449; --pass-bg: #d5f5e3; --fail: #c0392b; --fail-bg: #fadbd8; --mixed-bg: #fdebd0;
        --na-bg: #eceff1; --ink: #1c2833; --muted: #5d6d7e; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: var(--ink); margin: 0; padding: 16px 24px; }
h1 { font-size: 20px; margin: 0 0 8px; } h2 { font-size: 16px; margin: 24px 0 8px; } h3 { font-size: 14px; margin: 14px 0 6px; }
.verdict { padding: 10px 14px; border-radius: 6px; font-weight: 600; margin: 8px 0 12px; white-space: pre-wrap; }
.verdict ul.reasons { margin: 6px 0 0; padding-left: 20px; font-weight: 400; white-space: normal; }
.verdict.pass { background: var(--pass-bg); color: var(--pass); }
.verdict.fail { background: var(--fail-bg); color: var(--fail); }
.sight { margin: -4px 0 12px; color: #444; }
.verdict.unjudged { background: var(--mixed-bg); color: #7e5109; }
dl.meta { display: grid; grid-template-columns: max-content 1fr; gap: 2px 12px; margin: 0; color: var(--muted); }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; }
table { border-collapse: collapse; }
table.scorers td, table.scorers th, table.comparison td, table.comparison th { padding: 3px 10px; border-bottom: 1px solid #e5e8e8; text-align: right; }
table.scorers td:first-child, table.comparison td:first-child, table.scorers th:first-child, table.comparison th:first-child { text-align: left; }
tr.corrected td { color: var(--muted); font-style: italic; }
.ok { color: var(--pass); font-weight: 600; } .bad { color: var(--fail); font-weight: 600; } .na { color: var(--muted); }
.small { font-size: 12px; color: var(--muted); }
.row2 { display: flex; flex-wrap: wrap; gap: 24px; align-items: flex-start; }
.chart { min-height: 40px; }
#layout { display: flex; gap: 20px; align-items: flex-start; }
#grid-wrap { overflow: auto; max-height: 80vh; flex: 0 1 auto; border: 1px solid #e5e8e8; }
#grid { font-size: 12px; }
#grid th { position: sticky; top: 0; background: #fff; z-index: 1; padding: 4px; vertical-align: bottom; }
#grid th.scorer span { writing-mode: vertical-rl; transform: rotate(180deg); white-space: nowrap; }
#grid td { padding: 1px; }
#grid td.rowid { padding: 0 8px 0 4px; white-space: nowrap; font-family: ui-monospace, monospace; }
#grid td.kind { color: var(--muted); padding-right: 8px; }
button.cell { width: 46px; height: 22px; border: 1px solid transparent; border-radius: 3px; cursor: pointer; font: 12px ui-monospace, monospace; }
button.cell.pass { background: var(--pass-bg); color: var(--pass); }
button.cell.fail { background: var(--fail-bg); color: var(--fail); }
button.cell.mixed { background: var(--mixed-bg); color: #7e5109; }
button.cell.na { background: var(--na-bg); color: var(--muted); }
button.cell.selected { outline: 2px solid var(--ink); }
button.reruns { height: 22px; border: 1px solid transparent; border-radius: 3px; cursor: pointer; white-space: nowrap; font: 12px ui-monospace, monospace; }
button.reruns.pass { background: var(--pass-bg); color: var(--pass); } button.reruns.fail { background: var(--fail-bg); color: var(--fail); }
button.cell.flip-regressed { border-color: var(--fail); } button.cell.flip-fixed { border-color: var(--pass); }
.picker button, .versions button { margin: 0 4px 4px 0; padding: 2px 8px; border: 1px solid #aab7b8; background: #fff; border-radius: 3px; cursor: pointer; }
.picker button.active, .versions button.active { background: var(--ink); color: #fff; }
button.link { background: none; border: none; color: #1a5276; cursor: pointer; padding: 0; text-decoration: underline; font: inherit; }
#detail { flex: 1 1 420px; min-width: 360px; border: 1px solid #e5e8e8; border-radius: 6px; padding: 10px 14px; position: sticky; top: 8px; max-height: 90vh; overflow: auto; }
#detail .empty { color: var(--muted); }
.msg { margin: 4px 0; padding: 6px 10px; border-radius: 6px; white-space: pre-wrap; }
.msg.user { background: #eaf2f8; } .msg.assistant { background: #f4f6f6; }
.msg .role { font-weight: 600; font-size: 11px; text-transform: uppercase; color: var(--muted); display: block; }
.call { border-left: 3px solid #aab7b8; margin: 6px 0; padding: 2px 8px; }
.call.error { border-left-color: var(--fail); }
pre { margin: 2px 0; white-space: pre-wrap; word-break: break-word; font: 12px/1.35 ui-monospace, monospace; background: #fbfcfc; }
.vbox { padding: 6px 10px; border-radius: 6px; margin: 6px 0; }
.vbox.pass { background: var(--pass-bg); } .vbox.fail { background: var(--fail-bg); } .vbox.na { background: var(--na-bg); }
details.flips { margin: 6px 0; } details.flips li { margin: 4px 0; }
</style>
</head>
<body>
<header>
<h1>@@TITLE@@</h1>
<div id="verdict" class="verdict @@VERDICT_CLASS@@">@@VERDICT_LINE@@</div>
@@SIGHT@@
@@META@@
</header>
<section id="scorers">
<h2>Scorers against their bars</h2>
<div class="row2">@@SCORER_TABLE@@<div id="chart-means" class="chart"></div></div>
</section>
@@COMPARISON@@
<section id="runs">
<h2>Rows × scorers</h2>
<p class="small">Each cell is one row's planned runs (its trials) for one scorer: green all pass, red all fail,
amber mixed (pass fraction shown), grey n/a. A border marks a flip against the baseline. Click a cell for the run.
A flagged row's confirmation reruns, on fresh seeds, are counted apart (reruns: failed/made) and never in a cell.</p>
<div class="versions" id="versions"></div>
<div id="layout">
<div id="grid-wrap"><table id="grid"></table></div>
<div id="detail"><p class="empty">Click a cell to see the run: the conversation, the tool calls and the scorer's explanation.</p></div>
</div>
</section>
<script type="application/json" id="report-data">@@DATA@@</script>
<script type="application/json" id="chart-specs">@@CHARTS@@</script>
<script>@@VEGA@@</script>
<script>
(function () {
  "use strict";
  const D = JSON.parse(document.getElementById("report-data").textContent);
  const C = JSON.parse(document.getElementById("chart-specs").textContent);
  let version = D.candidate;
  let selected = null;  // {row, scorer, trial, rerun}: rerun is an index into the row's reruns, or null

  // el("div", {class: "x"}, "text", child...): strings become text nodes, never markup.
  function el(tag, attrs) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined) continue;
      if (k === "onclick") node.addEventListener("click", v);
      else node.setAttribute(k, String(v));
    }
    for (let i = 2; i < arguments.length; i++) {
      const c = arguments[i];
      if (c === null || c === undefined || c === false) continue;
      node.appendChild(typeof c === "string" || typeof c === "number" ? document.createTextNode(String(c)) : c);
    }
    return node;
  }
  const json = (v) => JSON.stringify(v, null, 1);
  const mark = (p) => (p === true ? "pass" : p === false ? "fail" : "n/a");

  function chart(id, spec) {
    const node = document.getElementById(id);
    if (!node || !spec) return;
    if (typeof window.vegaEmbed !== "function") { node.textContent = "(chart library not loaded)"; return; }
    window.vegaEmbed(node, spec, {mode: "vega-lite", actions: false, renderer: "svg"})
      .catch((e) => { node.textContent = "chart failed: " + e.message; });
  }

  function runsOf(v, rowId) { return (D.runs[v] || {})[rowId] || {}; }
  function trialsOf(v, rowId) {
    return Object.values(runsOf(v, rowId)).sort((a, b) => a.trial - b.trial);
  }
  function rerunsOf(v, rowId) { return (D.reruns[v] || {})[rowId] || []; }
  const anyReruns = Object.values(D.reruns).some((byRow) => Object.keys(byRow).length > 0);
  function rerunCell(row) {
    const reruns = rerunsOf(version, row.id);
    if (!reruns.length) return "";
    const failed = reruns.filter((r) => r.failed).length;
    const first = reruns.findIndex((r) => r.failed);
    return el("button", {class: "reruns " + (failed ? "fail" : "pass"), "data-row": row.id,
                         title: row.id + ": " + reruns.length + " confirmation reruns on fresh seeds, " + failed + " failing a scorer",
                         onclick: () => {
                           const v = reruns[Math.max(first, 0)].verdicts;
                           const scorer = selected && selected.row === row.id ? selected.scorer
                             : D.scorers.find((s) => v[s] && v[s].passed === false) || D.scorers[0];
                           select(row.id, scorer, null, Math.max(first, 0));
                         }}, failed + "/" + reruns.length + " failed");
  }

  function flipKind(rowId, scorer) {
    if (!D.baseline || version !== D.candidate) return null;
    let kind = null;
    for (let t = 0; t < D.trials; t++) {
      const k = D.flips[rowId + "\\u0000" + scorer + "\\u0000" + t];
      if (k === "regressed") return k;
      if (k) kind = k;
    }
    return kind;
  }

  function cellFor(row, scorer) {
    const runs = trialsOf(version, row.id);
    const verdicts = runs.map((r) => (r.verdicts[scorer] || {passed: null}).passed).filter((p) => p !== null);
    const passed = verdicts.filter((p) => p).length;
    let cls = "na", text = "–";
    if (verdicts.length) {
      cls = passed === verdicts.length ? "pass" : passed === 0 ? "fail" : "mixed";
      text = runs.length > 1 ? passed + "/" + verdicts.length : passed ? "✓" : "✗";
    } else if (!runs.length) {
      text = "·";
    }
    const flip = flipKind(row.id, scorer);
    const classes = ["cell", cls];
    if (flip) { classes.push("flip-" + flip); text += flip === "regressed" ? "▼" : "▲"; }
    return el("button", {class: classes.join(" "), "data-row": row.id, "data-scorer": scorer,
                         title: row.id + " · " + scorer + (flip ? " (" + flip + ")" : ""),
                         onclick: () => select(row.id, scorer, null)}, text);
  }

  function drawGrid() {
    const table = document.getElementById("grid");
    table.replaceChildren();
    const head = el("tr", {}, el("th", {}, "row"), el("th", {}, "kind"), anyReruns ? el("th", {}, "reruns") : null);
    for (const s of D.scorers) head.appendChild(el("th", {class: "scorer"}, el("span", {}, s)));
    table.appendChild(el("thead", {}, head));
    const body = el("tbody");
    for (const row of D.rows) {
      const tr = el("tr", {"data-row": row.id}, el("td", {class: "rowid"}, row.id), el("td", {class: "kind"}, row.kind),
                    anyReruns ? el("td", {class: "reruns"}, rerunCell(row)) : null);
      for (const s of D.scorers) tr.appendChild(el("td", {}, cellFor(row, s)));
      body.appendChild(tr);
    }
    table.appendChild(body);
    markSelected();
  }

  function drawVersions() {
    const box = document.getElementById("versions");
    box.replaceChildren();
    if (D.versions.length < 2) return;
    box.appendChild(el("span", {class: "small"}, "show runs of: "));
    for (const v of D.versions) {
      box.appendChild(el("button", {class: v === version ? "active" : "", "data-version": v,
        onclick: () => { version = v; drawVersions(); drawGrid(); if (selected) drawDetail(); }},
        v + (v === D.candidate ? " (candidate)" : " (baseline)")));
    }
  }

  function markSelected() {
    document.querySelectorAll("button.cell.selected").forEach((b) => b.classList.remove("selected"));
    if (!selected) return;
    document.querySelectorAll("button.cell").forEach((b) => {
      if (b.dataset.row === selected.row && b.dataset.scorer === selected.scorer) b.classList.add("selected");
    });
  }

  function select(rowId, scorer, trial, rerun) {
    selected = {row: rowId, scorer: scorer, trial: trial, rerun: rerun === undefined ? null : rerun};
    markSelected();
    drawDetail();
    const detail = document.getElementById("detail");
    if (detail.getBoundingClientRect().top > window.innerHeight) detail.scrollIntoView({block: "start"});
  }

  function verdictBox(label, v) {
    const p = v ? v.passed : null;
    return el("div", {class: "vbox " + (p === true ? "pass" : p === false ? "fail" : "na")},
      el("strong", {}, label + ": " + mark(p)), v ? " — " + v.explanation : " — no verdict");
  }

  function drawDetail() {
    const box = document.getElementById("detail");
    box.replaceChildren();
    const row = D.rows.find((r) => r.id === selected.row);
    const runs = trialsOf(version, selected.row);
    const reruns = rerunsOf(version, selected.row);
    box.appendChild(el("h3", {id: "detail-title"}, selected.row + " · " + selected.scorer + " · " + version));
    if (!runs.length && !reruns.length) { box.appendChild(el("p", {class: "empty"}, "No run of this row for " + version + ".")); return; }
    const tick = (v) => (v && v.passed === true ? "✓" : v && v.passed === false ? "✗" : "–");
    const rerun = selected.rerun !== null && selected.rerun < reruns.length ? selected.rerun : null;
    let run = rerun !== null ? reruns[rerun] : runs.find((r) => r.trial === selected.trial) || runs[0] || reruns[0];
    selected.rerun = rerun !== null || runs.length ? rerun : 0;
    if (selected.rerun === null) selected.trial = run.trial;
    // the planned trials, by trial number (the seed in the tooltip)
    const picker = el("div", {class: "picker"}, el("span", {class: "small"}, "trial: "));
    for (const r of runs) {
      picker.appendChild(el("button", {class: selected.rerun === null && r.trial === run.trial ? "active" : "",
        "data-trial": r.trial, title: "seed " + r.seed,
        onclick: () => { selected.trial = r.trial; selected.rerun = null; drawDetail(); }},
        r.trial + " " + tick(r.verdicts[selected.scorer])));
    }
    box.appendChild(picker);
    // a flagged row's confirmation reruns, apart: numbered in the order they were made
    if (reruns.length) {
      const failing = reruns.filter((r) => { const v = r.verdicts[selected.scorer]; return v && v.passed === false; }).length;
      const again = el("div", {class: "picker reruns"}, el("span", {class: "small"},
        "confirmation reruns (fresh seeds): " + failing + "/" + reruns.length + " fail " + selected.scorer + " "));
      reruns.forEach((r, i) => again.appendChild(el("button", {class: selected.rerun === i ? "active" : "",
        "data-rerun": i, title: "seed " + r.seed,
        onclick: () => { selected.rerun = i; drawDetail(); }}, (i + 1) + " " + tick(r.verdicts[selected.scorer]))));
      box.appendChild(again);
    }
    const which = selected.rerun === null ? "trial " + run.trial : "rerun " + (selected.rerun + 1) + " of " + reruns.length;
    box.appendChild(verdictBox(selected.scorer + " (" + version + ", " + which + ")", run.verdicts[selected.scorer]));
    for (const other of selected.rerun === null ? D.versions : []) {
      if (other === version) continue;
      const twin = runsOf(other, selected.row)[String(run.trial)];
      if (twin) box.appendChild(verdictBox("same row and trial on " + other, twin.verdicts[selected.scorer]));
    }
    const turn = run.turn || {};
    if (turn.error) box.appendChild(el("div", {class: "vbox fail"}, el("strong", {}, "agent run failed: "), turn.error));
    if (row) {
      box.appendChild(el("h3", {}, "What the row expects"));
      box.appendChild(el("div", {class: "small"}, "kind " + row.kind + "; tags " + row.tags.join(", ")));
      box.appendChild(el("div", {}, row.expected_output));
      if (row.rubric) box.appendChild(el("div", {class: "small"}, "rubric: " + row.rubric));
    }
    box.appendChild(el("h3", {}, "Conversation"));
    const conv = el("div", {id: "conversation"});
    for (const m of turn.messages || []) {
      conv.appendChild(el("div", {class: "msg " + m.role}, el("span", {class: "role"}, m.role), m.content));
    }
    if (!(turn.messages || []).length) conv.appendChild(el("p", {class: "empty"}, "(no messages recorded)"));
    box.appendChild(conv);
    box.appendChild(el("h3", {}, "Tool calls (" + (turn.tool_calls || []).length + ")"));
    const calls = el("div", {id: "tool-calls"});
    for (const c of turn.tool_calls || []) {
      const failed = c.error !== null && c.error !== undefined;
      calls.appendChild(el("div", {class: "call" + (failed ? " error" : "")},
        el("strong", {}, c.name), el("pre", {}, json(c.arguments)),
        failed ? el("pre", {}, "error: " + c.error)
               : c.result === null || c.result === undefined ? el("pre", {}, "NO REPLY") : el("pre", {}, "→ " + json(c.result))));
    }
    box.appendChild(calls);
    if ((turn.writes || []).length) {
      box.appendChild(el("h3", {}, "Server write log"));
      box.appendChild(el("pre", {}, json(turn.writes)));
    }
    box.appendChild(el("h3", {}, "Every scorer on this run"));
    const all = el("table", {class: "scorers"});
    for (const s of D.scorers) {
      const v = run.verdicts[s];
      all.appendChild(el("tr", {}, el("td", {}, s), el("td", {class: v && v.passed === false ? "bad" : v && v.passed ? "ok" : "na"},
        mark(v ? v.passed : null)), el("td", {class: "small", style: "text-align:left"}, v ? v.explanation : "")));
    }
    box.appendChild(all);
    const u = turn.usage || {};
    box.appendChild(el("p", {class: "small"}, (turn.model || "?") + ", seed " + run.seed + ", " + (u.llm_calls || 0) +
      " model calls, " + (u.prompt_tokens || 0) + "+" + (u.completion_tokens || 0) + " tokens, " + (turn.seconds || 0) + " s"));
  }

  document.querySelectorAll("button.link[data-row]").forEach((b) => b.addEventListener("click", () => {
    version = D.candidate; drawVersions(); drawGrid();
    select(b.dataset.row, b.dataset.scorer, Number(b.dataset.trial));
    document.getElementById("detail").scrollIntoView({block: "start"});
  }));
  drawVersions();
  drawGrid();
  chart("chart-means", C.means);
  chart("chart-diff", C.diff);
})();
</script>
</body>
</html>
"""
