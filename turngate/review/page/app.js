// turngate review: the page of `evals review` (turngate/review/server.py serves it).
// Plain script, no build step, no dependency. Every text from a record goes into the page
// through textContent (el() below), never as markup: a transcript cannot run anything here.
"use strict";

(() => {
  const TOKEN = new URLSearchParams(location.search).get("t") || "";
  const $ = (id) => document.getElementById(id);

  // --- state ---------------------------------------------------------------------------------
  const S = {
    sources: [], queue: [], filtered: [], at: 0, view: "review",
    events: 0, notes: new Map(), labels: new Map(), assigned: new Map(), modes: [], position: null,
    runs: new Map(), taxonomy: null, armed: null, selected: new Set(), noteAt: 0, pendingPosition: null,
    positionTimer: null, shown: null,
  };
  const key = (source, run) => source + "\u0000" + run;
  const unkey = (k) => { const i = k.indexOf("\u0000"); return [k.slice(0, i), k.slice(i + 1)]; };
  const itemKey = (it) => key(S.sources[it.s].digest, it.run);
  const modeById = (id) => S.modes.find((m) => m.id === id);
  const itemsByKey = new Map();

  // --- the DOM, by textContent only ------------------------------------------------------------
  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k === "class") node.className = v;
      else if (k === "text") node.textContent = v;
      else if (k.startsWith("on")) node.addEventListener(k.slice(2), v);
      else if (k === "dataset") Object.assign(node.dataset, v);
      else node.setAttribute(k, v === true ? "" : String(v));
    }
    for (const c of children) {
      if (c === null || c === undefined || c === false) continue;
      node.append(typeof c === "string" ? document.createTextNode(c) : c);
    }
    return node;
  }
  const clear = (node) => { while (node.firstChild) node.removeChild(node.firstChild); return node; };
  const asText = (v) => (typeof v === "string" ? v : JSON.stringify(v, null, 2));
  const pct = (x) => (100 * x).toFixed(0) + "%";

  function status(text, bad) {
    const s = $("status");
    s.textContent = text;
    s.className = bad ? "bad" : "";
  }

  // --- the API ----------------------------------------------------------------------------------
  async function api(path, body) {
    const init = { headers: { "X-Review-Token": TOKEN }, cache: "no-store" };
    if (body !== undefined) {
      init.method = "POST";
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify(body);
    }
    let res;
    try {
      res = await fetch(path, init);
    } catch (e) {
      return { status: 0, data: { error: "the review server is not answering (was it stopped?)" } };
    }
    let data = null;
    try { data = await res.json(); } catch (e) { data = { error: res.statusText }; }
    return { status: res.status, data };
  }

  function foldState(d) {
    S.events = d.events;
    S.notes = new Map(d.notes.map(([s, r, t]) => [key(s, r), t]));
    S.labels = new Map(d.labels.map(([s, r, v]) => [key(s, r), v]));
    S.assigned = new Map(d.assigned.map(([s, r, m]) => [key(s, r), m]));
    S.modes = d.modes;
    S.position = d.position ? key(d.position[0], d.position[1]) : null;
  }

  async function refreshState(force) {
    const r = await api("/api/state" + (force ? "" : "?events=" + S.events));
    if (r.status !== 200) { status(r.data.error || "cannot read the state", true); return false; }
    if (r.data.same) return false;
    foldState(r.data);
    renderAll();
    return true;
  }

  // one event as the server folds it (turngate/review/store.py ReviewState.apply)
  function applyLocal(ev) {
    const k = ev.source !== undefined ? key(ev.source, ev.run) : null;
    const set = (map, v) => (v === null || v === undefined || v === "" ? map.delete(k) : map.set(k, v));
    if (ev.op === "note") set(S.notes, ev.text.trim());
    else if (ev.op === "label") set(S.labels, ev.label);
    else if (ev.op === "assign") set(S.assigned, ev.mode);
    else if (ev.op === "position") S.position = k;
    else if (ev.op === "mode.create") S.modes.push({ id: ev.mode, name: ev.name.trim(), definition: (ev.definition || "").trim() });
    else if (ev.op === "mode.update") {
      const m = modeById(ev.mode);
      if (ev.name !== undefined) m.name = ev.name.trim();
      if (ev.definition !== undefined) m.definition = ev.definition.trim();
    } else if (ev.op === "mode.merge") {
      for (const [rk, m] of S.assigned) if (m === ev.mode) S.assigned.set(rk, ev.into);
      S.modes = S.modes.filter((m) => m.id !== ev.mode);
    } else if (ev.op === "mode.split") {
      S.modes.push({ id: ev.new, name: ev.name.trim(), definition: (ev.definition || "").trim() });
      for (const [s, r] of ev.runs) S.assigned.set(key(s, r), ev.new);
    } else if (ev.op === "mode.delete") {
      for (const [rk, m] of [...S.assigned]) if (m === ev.mode) S.assigned.delete(rk);
      S.modes = S.modes.filter((m) => m.id !== ev.mode);
    }
  }

  // one event to the sidecar; the page shows it once the server has it on disk
  async function send(ev, quiet) {
    const before = S.events;
    const r = await api("/api/event", ev);
    if (r.status === 200) {
      applyLocal(ev);
      S.events = r.data.events;
      if (r.data.events !== before + 1) await refreshState(true); // another tab wrote meanwhile
      if (!quiet) status("saved");
      return true;
    }
    status((r.status === 409 ? "not applied: " : "NOT SAVED: ") + (r.data.error || r.status), true);
    if (r.status === 409) await refreshState(true);
    return false;
  }

  const newModeId = () => "m-" + Date.now().toString(36) + Math.random().toString(36).slice(2, 8);

  // --- the queue and its filters ------------------------------------------------------------------
  function reviewedKey(k) { return S.labels.has(k) || S.notes.has(k) || S.assigned.has(k); }

  function fillSelect(id, values, labels) {
    const sel = $(id);
    const was = sel.value;
    clear(sel);
    sel.append(el("option", { value: "", text: "all" }));
    values.forEach((v, i) => sel.append(el("option", { value: v, text: labels ? labels[i] : v })));
    if ([...sel.options].some((o) => o.value === was)) sel.value = was;
  }

  function fillFilters() {
    const rows = [...new Set(S.queue.map((it) => it.row))].sort();
    const scorers = [...new Set(S.queue.flatMap((it) => it.failing))].sort();
    const versions = [...new Set(S.queue.map((it) => it.version))].sort();
    fillSelect("f-row", rows);
    fillSelect("f-scorer", scorers);
    fillSelect("f-version", versions);
    fillModeFilter();
  }

  function fillModeFilter() {
    fillSelect("f-mode", ["-", ...S.modes.map((m) => m.id)], ["no mode", ...S.modes.map((m) => m.name)]);
  }

  function applyFilters(keepCurrent) {
    const current = S.filtered[S.at];
    const row = $("f-row").value, scorer = $("f-scorer").value, mode = $("f-mode").value;
    const version = $("f-version").value, st = $("f-status").value;
    S.filtered = S.queue.filter((it) => {
      const k = itemKey(it);
      if (row && it.row !== row) return false;
      if (scorer && !it.failing.includes(scorer)) return false;
      if (version && it.version !== version) return false;
      if (mode === "-" ? S.assigned.has(k) : mode && S.assigned.get(k) !== mode) return false;
      if (st === "unreviewed" && reviewedKey(k)) return false;
      if (st === "unlabelled" && S.labels.has(k)) return false;
      if (st === "labelled" && !S.labels.has(k)) return false;
      if (st === "noted" && !S.notes.has(k)) return false;
      if (st === "failing" && !it.failed) return false;
      if (st === "passing" && it.failed) return false;
      return true;
    });
    const i = keepCurrent && current ? S.filtered.indexOf(current) : -1;
    S.at = i >= 0 ? i : keepCurrent ? 0 : Math.min(S.at, Math.max(S.filtered.length - 1, 0));
  }

  function renderProgress() {
    let done = 0, labelled = 0, noted = 0;
    for (const it of S.queue) {
      const k = itemKey(it);
      if (reviewedKey(k)) done++;
      if (S.labels.has(k)) labelled++;
      if (S.notes.has(k)) noted++;
    }
    $("progress").textContent = `${done} of ${S.queue.length} reviewed · ${labelled} labelled · ${noted} noted`;
    $("showing").textContent = S.filtered.length === S.queue.length ? "" :
      `showing ${S.filtered.length} of ${S.queue.length}`;
  }

  const WINDOW = 150; // queue entries drawn either side of the current one
  function renderQueue() {
    const list = clear($("queue-list"));
    const lo = Math.max(0, S.at - WINDOW), hi = Math.min(S.filtered.length, S.at + WINDOW + 1);
    if (lo > 0) list.append(el("li", { class: "more", text: `… ${lo} before` }));
    for (let i = lo; i < hi; i++) {
      const it = S.filtered[i], k = itemKey(it);
      if (!it.failed && (i === 0 || S.filtered[i - 1].failed)) {
        list.append(el("li", { class: "section", text: "passing: a sample" }));
      } else if (it.failed && i === lo) {
        list.append(el("li", { class: "section", text: "failing runs" }));
      }
      const label = S.labels.get(k), mode = S.assigned.get(k);
      const li = el("li", {
        class: ["q", it.failed ? "failing" : "passing", i === S.at ? "current" : "", reviewedKey(k) ? "done" : ""].join(" "),
        dataset: { i: String(i) }, onclick: () => go(i), title: it.failing.join(", ") || "passed every scorer",
      },
      el("span", { class: "mark " + (label || "none"), text: label === "pass" ? "P" : label === "fail" ? "F" : "·" }),
      el("span", { class: "qrow", text: it.row }),
      el("span", { class: "qmeta", text: it.stage === "gate" ? `${it.version} #${it.trial}` : `${it.version} ${it.stage}` }),
      S.notes.has(k) ? el("span", { class: "noted", text: "✎" }) : null,
      mode && modeById(mode) ? el("span", { class: "qmode", text: modeById(mode).name }) : null);
      if (i === S.at) li.setAttribute("aria-current", "true");
      list.append(li);
    }
    if (hi < S.filtered.length) list.append(el("li", { class: "more", text: `… ${S.filtered.length - hi} after` }));
    const cur = list.querySelector(".current");
    if (cur) cur.scrollIntoView({ block: "nearest" });
  }

  // --- one run ------------------------------------------------------------------------------------
  async function fetchRun(it) {
    const k = itemKey(it);
    if (S.runs.has(k)) return S.runs.get(k);
    const src = S.sources[it.s].digest;
    const p = api(`/api/run?source=${encodeURIComponent(src)}&run=${encodeURIComponent(it.run)}`).then((r) => {
      if (r.status !== 200) { S.runs.delete(k); throw new Error(r.data.error || String(r.status)); }
      return r.data;
    });
    S.runs.set(k, p);
    if (S.runs.size > 64) S.runs.delete(S.runs.keys().next().value);
    return p;
  }

  function go(i) {
    if (!S.filtered.length) { renderRunEmpty(); renderQueue(); renderProgress(); return; }
    S.at = Math.max(0, Math.min(i, S.filtered.length - 1));
    renderProgress();
    renderQueue();
    showRun();
    schedulePosition();
  }

  function current() { return S.filtered[S.at]; }

  async function showRun() {
    const it = current();
    if (!it) return renderRunEmpty();
    const k = itemKey(it);
    S.shown = k;
    renderAnnotate();
    let t;
    try {
      t = await fetchRun(it);
    } catch (e) {
      if (S.shown === k) { clear($("run-error")).append(el("p", { class: "bad", text: "cannot load the run: " + e.message })); }
      return;
    }
    if (S.shown !== k) return; // the reviewer moved on meanwhile
    renderTranscript(t);
    const next = S.filtered[S.at + 1];
    if (next) fetchRun(next).catch(() => {});
  }

  function renderRunEmpty() {
    S.shown = null;
    clear($("run-head")).append(el("p", { text: "No run matches the filters." }));
    for (const id of ["conversation", "tools", "answer", "verdicts", "expect"]) clear($(id).querySelector(".body"));
  }

  function renderAnnotate() {
    const it = current();
    if (!it) return;
    const k = itemKey(it);
    const label = S.labels.get(k);
    $("label-pass").setAttribute("aria-pressed", String(label === "pass"));
    $("label-fail").setAttribute("aria-pressed", String(label === "fail"));
    $("label-now").textContent = label ? "labelled " + label : "not labelled";
    const note = $("note");
    if (document.activeElement !== note) note.value = S.notes.get(k) || "";
    const mode = S.assigned.get(k);
    $("mode-now").textContent = mode && modeById(mode) ? modeById(mode).name : "no mode";
    $("note-status").textContent = "";
  }

  function renderTranscript(t) {
    clear($("run-error"));
    const head = clear($("run-head"));
    const src = t.file ? t.file + " · " : "";
    head.append(
      el("h2", { class: t.failed ? "failing" : "passing" },
        el("span", { class: "badge " + (t.failed ? "fail" : "pass"), text: t.failed ? "FAIL" : "PASS" }), " ",
        el("span", { class: "row-id", text: t.row_id })),
      el("p", { class: "meta", text: `${src}${t.version} · trial ${t.trial} · seed ${t.seed} · ${t.stage} · ${S.at + 1} of ${S.filtered.length}` }),
      t.failing.length ? el("p", { class: "failing-list" }, "failed: ",
        ...t.failing.map((n) => el("span", { class: "chip fail", text: n }))) : el("p", { class: "failing-list", text: "passed every scorer" }));
    if (t.error) $("run-error").append(el("p", { class: "agent-error", text: "agent error: " + asText(t.error) }));

    const conv = clear($("conversation").querySelector(".body"));
    if (t.stage === "simulation") {
      conv.append(el("p", { class: "meta", text: `scenario ${t.scenario} · persona ${t.persona} · ended: ${t.ended}` }));
      if (t.failure) conv.append(el("pre", { class: "failure", text: asText(t.failure) }));
    }
    const msgs = t.messages && t.messages.length ? t.messages : (t.user_turns || []).map((u) => ({ role: "user", content: u }));
    for (const m of msgs) {
      conv.append(el("div", { class: "msg " + String(m.role || "") },
        el("span", { class: "role", text: String(m.role || "?") }),
        el("div", { class: "content", text: asText(m.content === undefined ? "" : m.content) })));
    }
    if (!msgs.length) conv.append(el("p", { class: "meta", text: "no messages" }));

    const tools = clear($("tools").querySelector(".body"));
    (t.tool_calls || []).forEach((c, i) => {
      const result = c.result;
      const refused = result && typeof result === "object" && (result.ok === false || "error" in result);
      const cls = c.error !== null && c.error !== undefined ? "call error" : refused ? "call notok" : result === null || result === undefined ? "call noreply" : "call";
      tools.append(el("div", { class: cls },
        el("div", { class: "call-head" }, el("span", { class: "n", text: `${i + 1}.` }), " ",
          el("code", { class: "name", text: String(c.name) }),
          cls.includes("error") ? el("span", { class: "chip fail", text: "error" }) : null,
          cls.includes("notok") ? el("span", { class: "chip warn", text: "ok: false" }) : null,
          cls.includes("noreply") ? el("span", { class: "chip warn", text: "no reply" }) : null),
        el("div", { class: "kv" }, el("span", { class: "k", text: "arguments" }), el("pre", { text: asText(c.arguments) })),
        c.error !== null && c.error !== undefined
          ? el("div", { class: "kv" }, el("span", { class: "k", text: "error" }), el("pre", { class: "err", text: asText(c.error) }))
          : el("div", { class: "kv" }, el("span", { class: "k", text: "result" }), el("pre", { text: result === undefined ? "null" : asText(result) }))));
    });
    if (!(t.tool_calls || []).length) tools.append(el("p", { class: "meta", text: "no tool calls" }));

    clear($("answer").querySelector(".body")).append(el("div", { class: "answer-text", text: asText(t.answer || "") }));

    const v = clear($("verdicts").querySelector(".body"));
    const table = el("table", { class: "verdicts" });
    const entries = Object.entries(t.verdicts || {});
    entries.sort((a, b) => (a[1].passed === false ? 0 : 1) - (b[1].passed === false ? 0 : 1));
    for (const [name, vd] of entries) {
      const mark = vd.passed === true ? "pass" : vd.passed === false ? "FAIL" : "n/a";
      table.append(el("tr", { class: vd.passed === false ? "fail" : vd.passed === true ? "pass" : "na" },
        el("td", { class: "mark", text: mark }), el("td", { class: "scorer", text: name }),
        el("td", { class: "expl", text: asText(vd.explanation || "") })));
    }
    v.append(table);

    const ex = clear($("expect").querySelector(".body"));
    const row = t.row || {};
    const expect = t.stage === "simulation" ? t.expect : row.inputs && row.inputs.expect;
    ex.append(el("pre", { class: "expect", text: expect === undefined || expect === null ? "(none)" : asText(expect) }));
    if (row.expected_output) ex.append(el("p", { class: "expected-output", text: "expected: " + asText(row.expected_output) }));
  }

  // --- annotating ---------------------------------------------------------------------------------
  function runEvent(op, extra) {
    const it = current();
    if (!it) return null;
    return Object.assign({ op, source: S.sources[it.s].digest, run: it.run }, extra);
  }

  async function setLabel(label) {
    const it = current();
    if (!it) return;
    const k = itemKey(it);
    const value = S.labels.get(k) === label ? null : label;
    if (await send(runEvent("label", { label: value }))) { renderAnnotate(); renderQueue(); renderProgress(); }
  }

  async function saveNote() {
    const it = current();
    if (!it) return;
    const k = itemKey(it);
    const text = $("note").value;
    if ((S.notes.get(k) || "") === text.trim()) return;
    if (await send(runEvent("note", { text }))) {
      $("note-status").textContent = "note saved";
      renderQueue(); renderProgress();
    }
  }

  function schedulePosition() {
    const it = current();
    if (!it) return;
    const k = itemKey(it);
    if (S.position === k) { S.pendingPosition = null; return; }
    S.pendingPosition = runEvent("position");
    clearTimeout(S.positionTimer);
    S.positionTimer = setTimeout(flushPosition, 400);
  }

  function flushPosition(leaving) {
    const ev = S.pendingPosition;
    S.pendingPosition = null;
    clearTimeout(S.positionTimer);
    if (!ev || S.position === key(ev.source, ev.run)) return;
    if (leaving) {
      fetch("/api/event", { method: "POST", keepalive: true, body: JSON.stringify(ev),
        headers: { "X-Review-Token": TOKEN, "Content-Type": "application/json" } }).catch(() => {});
      return;
    }
    send(ev, true);
  }

  async function assign(runKeyPair, modeId) {
    const [source, run] = runKeyPair;
    return send({ op: "assign", source, run, mode: modeId });
  }

  async function createMode(name, definition) {
    name = name.trim();
    if (!name) return null;
    const id = newModeId();
    if (!(await send({ op: "mode.create", mode: id, name, definition: (definition || "").trim() }))) return null;
    return id;
  }

  // --- the mode picker --------------------------------------------------------------------------
  let pickerTarget = null, pickerHi = 0;
  function openPicker(target) {
    if (!target) return;
    pickerTarget = target;
    $("picker").hidden = false;
    const input = $("picker-input");
    input.value = "";
    pickerHi = 0;
    renderPicker();
    input.focus();
  }
  function closePicker() {
    $("picker").hidden = true;
    pickerTarget = null;
    restoreFocus();
  }
  function pickerChoices() {
    const q = $("picker-input").value.trim();
    const all = S.modes.map((m, i) => ({ n: i + 1, id: m.id, name: m.name }));
    if (/^\d+$/.test(q)) {
      const n = Number(q);
      if (n === 0) return [{ n: 0, id: null, name: "no mode" }];
      return all.filter((c) => c.n === n);
    }
    const lower = q.toLowerCase();
    const found = all.filter((c) => c.name.toLowerCase().includes(lower));
    const out = q ? found : [{ n: 0, id: null, name: "no mode" }, ...found];
    if (q && !all.some((c) => c.name.toLowerCase() === lower)) out.push({ n: null, id: "new", name: q });
    return out;
  }
  function renderPicker() {
    const list = clear($("picker-list"));
    const choices = pickerChoices();
    pickerHi = Math.max(0, Math.min(pickerHi, choices.length - 1));
    choices.forEach((c, i) => list.append(el("li", { class: i === pickerHi ? "hi" : "", onclick: () => choose(c) },
      el("span", { class: "n", text: c.n === null ? "+" : String(c.n) }),
      el("span", { text: c.id === "new" ? `create “${c.name}”` : c.name }))));
  }
  async function choose(c) {
    const target = pickerTarget;
    closePicker();
    if (!c || !target) return;
    let id = c.id;
    if (id === "new") id = await createMode(c.name);
    if (id === undefined || (c.id === "new" && !id)) return;
    if (await assign(target, id)) renderAll();
  }
  $("picker-input").addEventListener("input", () => { pickerHi = 0; renderPicker(); });
  $("picker-input").addEventListener("keydown", (e) => {
    if (e.key === "Escape") { e.preventDefault(); closePicker(); }
    else if (e.key === "Enter") { e.preventDefault(); choose(pickerChoices()[pickerHi]); }
    else if (e.key === "ArrowDown") { e.preventDefault(); pickerHi++; renderPicker(); }
    else if (e.key === "ArrowUp") { e.preventDefault(); pickerHi = Math.max(0, pickerHi - 1); renderPicker(); }
    e.stopPropagation();
  });

  // --- the modes view (axial coding) ------------------------------------------------------------
  function noteEntries() {
    const only = $("only-unassigned").checked;
    const out = [];
    for (const [k, text] of S.notes) {
      if (only && S.assigned.has(k)) continue;
      out.push({ k, text, item: itemsByKey.get(k) });
    }
    return out;
  }

  function renderNotes() {
    const list = clear($("notes-list"));
    const entries = noteEntries();
    S.noteAt = Math.max(0, Math.min(S.noteAt, entries.length - 1));
    if (!entries.length) list.append(el("li", { class: "meta", text: "No notes yet: write one per failing run in the review view (n)." }));
    entries.forEach((e, i) => {
      const mode = S.assigned.get(e.k);
      const sel = el("select", { "aria-label": "mode of this note", onchange: async (ev) => {
        const v = ev.target.value;
        if (await assign(unkey(e.k), v || null)) renderAll();
      } }, el("option", { value: "", text: "no mode" }),
      ...S.modes.map((m, j) => el("option", { value: m.id, text: `${j + 1}. ${m.name}`, selected: m.id === mode })));
      const it = e.item;
      list.append(el("li", { class: "note" + (i === S.noteAt ? " current" : "") + (S.selected.has(e.k) ? " selected" : ""),
        dataset: { i: String(i) }, onclick: () => { S.noteAt = i; renderNotes(); } },
      el("input", { type: "checkbox", "aria-label": "select", checked: S.selected.has(e.k), onchange: (ev) => {
        if (ev.target.checked) S.selected.add(e.k); else S.selected.delete(e.k);
        renderNotes();
      } }),
      el("div", { class: "body" },
        el("span", { class: "where", text: it ? `${it.row} · ${it.version} ${it.stage === "gate" ? "#" + it.trial : it.stage}`
          : "(a run of another file)" }),
        el("span", { class: "text", text: e.text })),
      sel,
      it ? el("button", { type: "button", class: "open", text: "open", onclick: () => openRun(e.k) }) : null));
    });
    const cur = list.querySelector(".current");
    if (cur) cur.scrollIntoView({ block: "nearest" });
  }

  function openRun(k) {
    const it = itemsByKey.get(k);
    if (!it) return;
    let i = S.filtered.indexOf(it);
    if (i < 0) {
      for (const id of ["f-row", "f-scorer", "f-mode", "f-version", "f-status"]) $(id).value = "";
      applyFilters(false);
      i = S.filtered.indexOf(it);
    }
    setView("review");
    go(i);
  }

  function coverageText(m) {
    if (m.coverage === "covered") return `covered by ${m.covered_by}`;
    if (m.coverage === "partly covered") {
      const a = m.agreement[0];
      return `partly covered (${a.scorer} fails ${a.failed} of ${a.runs})`;
    }
    return "UNCOVERED: no scorer fails these runs";
  }

  async function refreshTaxonomy() {
    const r = await api("/api/taxonomy");
    if (r.status !== 200) { status(r.data.error || "cannot read the taxonomy", true); return; }
    S.taxonomy = r.data;
    renderModes();
  }

  function renderModes() {
    const active = document.activeElement;
    if (active && active.tagName === "INPUT" && $("modes-list").contains(active)) {
      S.modesStale = true; // a rename or split being typed: drawn again once it is done
      return;
    }
    S.modesStale = false;
    // a background refresh must not take the focus from a keyboard user: the control focused
    // before the list is drawn again is focused again (by its mode and its action)
    const was = active && $("modes-list").contains(active) && active.dataset.act
      ? { id: active.closest("li.mode").dataset.id, act: active.dataset.act } : null;
    const list = clear($("modes-list"));
    const tax = S.taxonomy && S.taxonomy.events === S.events ? S.taxonomy : null;
    const byId = new Map(((tax && tax.modes) || []).map((m) => [m.id, m]));
    $("taxonomy-head").textContent = tax ? `${tax.reviewed} runs reviewed · ${tax.unassigned_notes} notes in no mode` : "";
    S.modes.forEach((m, j) => {
      const sum = byId.get(m.id);
      const count = sum ? sum.count : [...S.assigned.values()].filter((x) => x === m.id).length;
      const stats = sum
        ? `${count} run${count === 1 ? "" : "s"} · ${pct(sum.share)} of ${sum.reviewed} reviewed [${pct(sum.interval[0])}–${pct(sum.interval[1])}]`
        : `${count} run${count === 1 ? "" : "s"}`;
      const merge = el("select", { "aria-label": "merge into", dataset: { act: "merge" } }, el("option", { value: "", text: "merge into…" }),
        ...S.modes.filter((o) => o.id !== m.id).map((o) => el("option", { value: o.id, text: o.name })));
      merge.addEventListener("change", async () => {
        if (merge.value && await send({ op: "mode.merge", mode: m.id, into: merge.value })) afterModeChange();
      });
      const li = el("li", { class: "mode " + (sum ? sum.coverage.replace(" ", "-") : ""), dataset: { id: m.id } },
        el("div", { class: "mode-head" },
          el("span", { class: "n", text: String(j + 1) }),
          el("span", { class: "name", text: m.name }),
          el("span", { class: "count", text: stats })),
        m.definition ? el("p", { class: "definition", text: m.definition }) : null,
        sum ? el("p", { class: "coverage " + sum.coverage.replace(" ", "-"), text: coverageText(sum) }) : null,
        sum && sum.agreement.some((a) => a.failed) ? el("p", { class: "agreement", text: "scorers failing its runs: " +
          sum.agreement.filter((a) => a.failed).slice(0, 4).map((a) => `${a.scorer} ${a.failed}/${a.runs}`).join(", ") }) : null,
        el("div", { class: "actions" },
          el("button", { type: "button", text: "rename", dataset: { act: "rename" }, onclick: () => startRename(li, m) }),
          merge,
          el("button", { type: "button", text: `split ${selectedOf(m.id).length} selected`, dataset: { act: "split" }, disabled: !selectedOf(m.id).length,
            onclick: () => startSplit(li, m) }),
          el("button", { type: "button", class: "danger", dataset: { act: "delete" }, text: S.armed === m.id ? "delete: click again" : "delete",
            onclick: () => {
              if (S.armed !== m.id) { S.armed = m.id; renderModes(); return; } // a second click deletes
              S.armed = null;
              send({ op: "mode.delete", mode: m.id }).then((ok) => ok && afterModeChange());
            } })));
      list.append(li);
    });
    if (!S.modes.length) list.append(el("li", { class: "meta", text: "No modes yet: create one above, or suggest groups from the notes." }));
    if (was) {
      const again = [...list.querySelectorAll("li.mode")].find((li) => li.dataset.id === was.id);
      const control = again && again.querySelector(`[data-act="${was.act}"]`);
      if (control && !control.disabled) control.focus();
    }
  }

  function selectedOf(modeId) {
    return [...S.selected].filter((k) => S.assigned.get(k) === modeId);
  }

  function startRename(li, m) {
    const name = el("input", { value: m.name, maxlength: "200", "aria-label": "name" });
    const def = el("input", { value: m.definition, maxlength: "4000", "aria-label": "definition", placeholder: "definition" });
    const form = el("form", { class: "inline", onsubmit: async (ev) => {
      ev.preventDefault();
      if (!name.value.trim()) return;
      if (await send({ op: "mode.update", mode: m.id, name: name.value, definition: def.value })) {
        document.activeElement.blur();
        afterModeChange();
      }
    } }, name, def, el("button", { type: "submit", text: "save" }));
    leaveForm(form);
    li.append(form);
    name.focus();
  }

  // Esc leaves a rename or split form; so does moving the focus out of it
  function leaveForm(form) {
    form.addEventListener("keydown", (ev) => {
      if (ev.key === "Escape") { ev.stopPropagation(); document.activeElement.blur(); renderModes(); }
    });
    form.addEventListener("focusout", () => setTimeout(() => {
      if (!form.contains(document.activeElement) && form.isConnected) renderModes();
    }, 0));
  }

  function startSplit(li, m) {
    const runs = selectedOf(m.id).map(unkey);
    const name = el("input", { maxlength: "200", placeholder: "the new mode's name", "aria-label": "new mode name" });
    const form = el("form", { class: "inline", onsubmit: async (ev) => {
      ev.preventDefault();
      if (!name.value.trim()) return;
      if (await send({ op: "mode.split", mode: m.id, new: newModeId(), name: name.value, definition: "", runs })) {
        document.activeElement.blur();
        S.selected.clear();
        afterModeChange();
      }
    } }, name, el("button", { type: "submit", text: `split ${runs.length} run(s) out` }));
    leaveForm(form);
    li.append(form);
    name.focus();
  }

  function afterModeChange() {
    renderAll();
    if (S.view === "modes") refreshTaxonomy();
  }

  $("new-mode").addEventListener("submit", async (ev) => {
    ev.preventDefault();
    const id = await createMode($("new-mode-name").value, $("new-mode-def").value);
    if (id) { $("new-mode-name").value = ""; $("new-mode-def").value = ""; afterModeChange(); }
  });

  $("suggest-button").addEventListener("click", async () => {
    const box = clear($("suggestions"));
    box.append(el("p", { class: "meta", text: "grouping the notes…" }));
    const r = await api("/api/suggest", {});
    clear(box);
    if (r.status !== 200) { box.append(el("p", { class: "bad", text: r.data.error || String(r.status) })); return; }
    const groups = r.data.suggestions.filter((g) => g.runs.length > 1);
    const alone = r.data.suggestions.length - groups.length;
    box.append(el("h3", { text: `Suggested groups (${groups.length})` }));
    for (const w of r.data.warnings || []) box.append(el("p", { class: "meta", text: "warning: " + w }));
    if (!groups.length) box.append(el("p", { class: "meta", text: "no two notes alike enough to group" }));
    for (const g of groups) {
      const inModes = g.runs.filter(([src, run]) => S.assigned.has(key(src, run))).length;
      const li = el("div", { class: "suggestion" },
        el("p", {}, el("strong", { text: g.name }), ` · ${g.runs.length} notes` + (inModes ? ` (${inModes} already in a mode)` : "")),
        g.definition ? el("p", { class: "definition", text: g.definition }) : null,
        el("ul", {}, ...g.notes.slice(0, 5).map((n) => el("li", { text: n }))),
        g.notes.length > 5 ? el("p", { class: "meta", text: `and ${g.notes.length - 5} more` }) : null);
      li.append(el("button", { type: "button", text: "make this a mode", onclick: async (ev) => {
        ev.target.disabled = true;
        const id = await createMode(g.name, g.definition);
        if (!id) return;
        for (const k of g.runs) if (!(await assign(k, id))) break;
        li.remove();
        afterModeChange();
      } }));
      box.append(li);
    }
    if (alone) box.append(el("p", { class: "meta", text: `${alone} note(s) like no other: give them a mode by hand` }));
  });

  $("export-button").addEventListener("click", async () => {
    const box = clear($("export-result"));
    box.append(el("p", { class: "meta", text: "exporting…" }));
    const body = {};
    if ($("export-rows").checked) {
      // the runs labelled fail, as dataset rows (rows.jsonl)
      body.rows = [...S.labels].filter(([k, v]) => v === "fail" && itemsByKey.has(k)).map(([k]) => unkey(k));
    }
    const r = await api("/api/export", body);
    clear(box);
    if (r.status !== 200) { box.append(el("p", { class: "bad", text: "export: " + (r.data.error || r.status) })); return; }
    box.append(el("h3", { text: `Exported to ${r.data.dir}` }), el("ul", {}, ...r.data.paths.map((p) => el("li", {}, el("code", { text: p })))));
    for (const line of r.data.report || []) box.append(el("p", { class: "meta", text: "note: " + line }));
    status("exported " + r.data.paths.length + " file(s)");
  });

  $("only-unassigned").addEventListener("change", () => { S.noteAt = 0; renderNotes(); });

  // --- views and keys ---------------------------------------------------------------------------
  function setView(view) {
    S.view = view;
    $("review-view").hidden = view !== "review";
    $("filters").hidden = view !== "review";
    $("modes-view").hidden = view !== "modes";
    $("tab-review").setAttribute("aria-pressed", String(view === "review"));
    $("tab-modes").setAttribute("aria-pressed", String(view === "modes"));
    if (view === "modes") { renderNotes(); renderModes(); refreshTaxonomy(); }
    document.activeElement && document.activeElement.blur && document.activeElement.blur();
  }
  $("tab-review").addEventListener("click", () => setView("review"));
  $("tab-modes").addEventListener("click", () => setView("modes"));
  $("help-button").addEventListener("click", () => toggleHelp());
  $("label-pass").addEventListener("click", () => setLabel("pass"));
  $("label-fail").addEventListener("click", () => setLabel("fail"));
  $("mode-button").addEventListener("click", () => { const it = current(); if (it) openPicker([S.sources[it.s].digest, it.run]); });
  for (const id of ["f-row", "f-scorer", "f-mode", "f-version", "f-status"]) {
    $(id).addEventListener("change", () => { applyFilters(true); go(S.at); });
  }

  function toggleHelp(show) {
    const h = $("help");
    h.hidden = show === undefined ? !h.hidden : !show;
    if (h.hidden) restoreFocus();
  }
  function restoreFocus() { if (document.activeElement && document.activeElement.blur) document.activeElement.blur(); }

  const note = $("note");
  note.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); note.blur(); } // the blur saves it
    else if (e.key === "Escape") {
      e.preventDefault();
      const it = current();
      note.value = it ? S.notes.get(itemKey(it)) || "" : "";
      note.blur();
    }
    e.stopPropagation();
  });
  note.addEventListener("blur", () => saveNote());

  function nextUnreviewed() {
    for (let i = S.at + 1; i < S.filtered.length; i++) if (!reviewedKey(itemKey(S.filtered[i]))) return go(i);
    status("every run after this one is reviewed");
  }

  function modesKey(e) {
    const entries = noteEntries();
    const cur = entries[S.noteAt];
    if (e.key === "j" || e.key === "ArrowDown") { S.noteAt = Math.min(S.noteAt + 1, entries.length - 1); renderNotes(); }
    else if (e.key === "k" || e.key === "ArrowUp") { S.noteAt = Math.max(S.noteAt - 1, 0); renderNotes(); }
    else if (/^[0-9]$/.test(e.key) && cur) {
      const n = Number(e.key);
      const m = n === 0 ? null : S.modes[n - 1];
      if (n !== 0 && !m) { status(`no mode ${n}`, true); return true; }
      assign(unkey(cur.k), m ? m.id : null).then((ok) => ok && afterModeChange());
    } else if (e.key === "x" && cur) {
      if (S.selected.has(cur.k)) S.selected.delete(cur.k); else S.selected.add(cur.k);
      renderNotes(); renderModes();
    } else if (e.key === "m" && cur) openPicker(unkey(cur.k));
    else if (e.key === "Enter" && cur) openRun(cur.k);
    else if (e.key === "c") $("new-mode-name").focus();
    else return false;
    return true;
  }

  document.addEventListener("keydown", (e) => {
    if (e.ctrlKey || e.metaKey || e.altKey) return;
    const tag = (e.target && e.target.tagName) || "";
    if (!$("help").hidden) {
      if (e.key === "Escape" || e.key === "?") { e.preventDefault(); toggleHelp(false); }
      return;
    }
    if (tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT") {
      if (e.key === "Escape") { e.preventDefault(); e.target.blur(); }
      return;
    }
    if (tag === "BUTTON" && e.key === "Enter") return;
    let handled = true;
    if (e.key === "?") toggleHelp(true);
    else if (e.key === "g") setView(S.view === "modes" ? "review" : "modes");
    else if (e.key === "r") setView("review");
    else if (e.key === "Escape") restoreFocus();
    else if (S.view === "modes") handled = modesKey(e);
    else if (e.key === "j" || e.key === "ArrowDown" || e.key === "ArrowRight") go(S.at + 1);
    else if (e.key === "k" || e.key === "ArrowUp" || e.key === "ArrowLeft") go(S.at - 1);
    else if (e.key === "u") nextUnreviewed();
    else if (e.key === "p") setLabel("pass");
    else if (e.key === "f") setLabel("fail");
    else if (e.key === "n") { note.focus(); note.setSelectionRange(note.value.length, note.value.length); }
    else if (e.key === "m") { const it = current(); if (it) openPicker([S.sources[it.s].digest, it.run]); }
    else if (e.key === "/") $("f-row").focus();
    else if (e.key === "Home") go(0);
    else if (e.key === "End") go(S.filtered.length - 1);
    else handled = false;
    if (handled) e.preventDefault();
  });

  function renderAll() {
    fillModeFilter();
    renderProgress();
    if (S.view === "review") { renderQueue(); renderAnnotate(); }
    else { renderNotes(); renderModes(); }
  }

  // another tab, or another server on the same review file: look again when this tab comes back
  window.addEventListener("focus", () => refreshState(false));
  document.addEventListener("visibilitychange", () => {
    if (document.visibilityState === "visible") refreshState(false);
    else flushPosition(true);
  });
  window.addEventListener("pagehide", () => flushPosition(true));

  async function start() {
    status("loading…");
    const [q, st] = await Promise.all([api("/api/queue"), api("/api/state")]);
    if (q.status !== 200 || st.status !== 200) {
      status((q.data && q.data.error) || (st.data && st.data.error) || "cannot load the review", true);
      return;
    }
    S.sources = q.data.sources;
    S.queue = q.data.items;
    for (const it of S.queue) itemsByKey.set(itemKey(it), it);
    foldState(st.data);
    document.title = `turngate review · ${S.sources.map((s) => s.label).join(", ")}`;
    fillFilters();
    applyFilters(false);
    const at = S.position ? S.filtered.findIndex((it) => itemKey(it) === S.position) : -1;
    S.at = at >= 0 ? at : 0;
    status(`${q.data.failing} failing of ${q.data.runs} runs; ${S.queue.length} to read`);
    document.body.dataset.ready = "1";
    go(S.at);
  }
  start();
})();
