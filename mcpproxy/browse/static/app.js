// The value browser's page. Every element that shows stored data is built
// with createElement and textContent: a value is data, never markup.
"use strict";

const api = "/values/api/";
const state = { session: null, handle: null, handlesNext: 0 };

function $(id) { return document.getElementById(id); }

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else if (k.startsWith("data-")) e.setAttribute(k, v);
    else e[k] = v;
  }
  for (const c of children) {
    if (c == null) continue;
    e.append(typeof c === "string" ? document.createTextNode(c) : c);
  }
  return e;
}

function clear(node) { while (node.firstChild) node.removeChild(node.firstChild); }

async function get(path, params) {
  const q = new URLSearchParams(params || {});
  const res = await fetch(api + path + "?" + q.toString(), { credentials: "same-origin" });
  let body;
  try { body = await res.json(); } catch (e) { body = { error: res.status + " " + res.statusText }; }
  if (!res.ok) throw new Error(body.error || (res.status + " " + res.statusText));
  return body;
}

function size(n) {
  if (n < 1024) return n + " B";
  const units = ["KiB", "MiB", "GiB", "TiB"];
  let u = -1;
  do { n /= 1024; u++; } while (n >= 1024 && u < units.length - 1);
  return n.toFixed(n < 10 ? 1 : 0) + " " + units[u];
}

function time(t) {
  if (!t) return "";
  const d = new Date(t);
  return isNaN(d) ? "" : d.toLocaleTimeString();
}

function statsText(s) {
  const saved = s.returned > 0 ? (100 * (1 - s.shown / s.returned)).toFixed(1) : 0;
  return [el("b", { text: String(s.results) }), " results stored; tools returned ", el("b", { text: size(s.returned) }),
    ", the model got ", el("b", { text: size(s.shown) }), s.returned > 0 ? " (" + saved + "% kept out)" : ""];
}

function showError(node, err) {
  clear(node);
  node.append(el("p", { class: "error", text: String(err.message || err) }));
}

// Location: #session=ID&handle=r3
function readHash() {
  const p = new URLSearchParams(location.hash.slice(1));
  return { session: p.has("session") ? p.get("session") : null, handle: p.get("handle") };
}

function writeHash() {
  const p = new URLSearchParams();
  if (state.session !== null) p.set("session", state.session);
  if (state.handle) p.set("handle", state.handle);
  history.replaceState(null, "", "#" + p.toString());
}

async function loadSessions() {
  const body = await get("sessions");
  const totals = $("totals");
  clear(totals);
  totals.append("All sessions: ", ...statsText(body.totals));
  const tbody = $("session-list").tBodies[0];
  clear(tbody);
  $("no-sessions").hidden = body.sessions.length > 0;
  for (const s of body.sessions) {
    const tr = el("tr", { class: "pick", "data-session": s.id },
      el("td", { text: s.id || "(stdio)", title: s.id }),
      el("td", { text: time(s.started) }),
      el("td", { class: "num", text: String(s.handles) }),
      el("td", { class: "num", text: size(s.stats.returned) }),
      el("td", { class: "num", text: size(s.stats.shown) }));
    if (s.id === state.session) tr.classList.add("selected");
    tr.addEventListener("click", () => openSession(s.id));
    tbody.append(tr);
  }
}

async function openSession(id) {
  state.session = id;
  state.handle = null;
  writeHash();
  for (const tr of $("session-list").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.session === id);
  $("handles").hidden = false;
  $("value").hidden = true;
  $("handles-session").textContent = id || "(stdio)";
  clear($("handle-list").tBodies[0]);
  state.handlesNext = 0;
  await loadHandles();
}

async function loadHandles() {
  const body = await get("handles", { session: state.session, from: state.handlesNext });
  const tbody = $("handle-list").tBodies[0];
  for (const h of body.handles) {
    const tr = el("tr", { class: "pick", "data-handle": h.handle },
      el("td", { text: h.handle }),
      el("td", { text: h.tool || "", title: h.tool || "" }),
      el("td", { text: h.server || "" }),
      el("td", { text: time(h.time) }),
      el("td", { text: h.kind + (h.previewed ? " · previewed" : "") }),
      el("td", { class: "num", text: size(h.size) }));
    if (h.handle === state.handle) tr.classList.add("selected");
    tr.addEventListener("click", () => openValue(h.handle));
    tbody.append(tr);
  }
  state.handlesNext = body.next;
  $("more-handles").hidden = body.next >= body.total;
}

async function openValue(handle) {
  state.handle = handle;
  writeHash();
  for (const tr of $("handle-list").tBodies[0].rows) tr.classList.toggle("selected", tr.dataset.handle === handle);
  $("value").hidden = false;
  $("query-result").hidden = true;
  $("query-info").textContent = "";
  $("query-ref").textContent = "$" + handle;
  const view = $("view");
  clear(view);
  let body;
  try {
    body = await get("value", { session: state.session, ref: handle });
  } catch (err) { showError(view, err); return; }
  const v = body.value;
  $("value-title").textContent = "$" + v.handle;
  const meta = [v.kind, size(v.size)];
  if (v.kind === "array") meta.push(v.len + " items");
  if (v.kind === "object") meta.push(v.len + " keys");
  if (v.kind === "text") meta.push(body.lines + " lines");
  if (body.contentType) meta.push(body.contentType);
  if (v.tool) meta.push("from " + v.tool + (v.server ? " on " + v.server : ""));
  if (v.time) meta.push("at " + new Date(v.time).toLocaleString());
  $("value-meta").textContent = meta.join(" · ");
  const how = {
    preview: "A preview and hint, in place of the value:",
    whole: "The result whole (its text), then the line naming its handle:",
    query: "The query_value result:",
    content: "These are the content blocks of $" + body.contentOf + "; the model saw:",
    unknown: "Not noted by this process (an older value, or one from before a restart); as an agent loop shows it:",
  }[body.shownHow] || "";
  $("shown-how").textContent = how;
  $("shown").textContent = body.shown;
  const dl = el("a", { class: "button", id: "download", text: "Download", href: api + "download?" + new URLSearchParams({ session: state.session, ref: handle }) });
  view.append(el("div", { class: "pager" }, dl));
  switch (body.view) {
    case "table": await tableView(view, handle, body.columns, v.len); break;
    case "text":
      if (body.delim) await csvView(view, handle, body.delim);
      else await textView(view, handle);
      break;
    case "binary": binaryView(view, v, body.contentType); break;
    default: await treeView(view, handle);
  }
}

// cellText renders one JSON value of a row's column in a cell.
function cellText(v) {
  if (v === undefined) return "";
  if (typeof v === "string") return v;
  const s = JSON.stringify(v);
  return s.length > 300 ? s.slice(0, 300) + "…" : s;
}

async function tableView(view, handle, columns, total) {
  const t = { from: 0, n: 50, sort: "", desc: false };
  const info = el("span", { id: "page-info" });
  const prev = el("button", { id: "prev-page", type: "button", text: "◀ Previous" });
  const next = el("button", { id: "next-page", type: "button", text: "Next ▶" });
  const note = el("p", { class: "note", id: "sort-note" });
  const table = el("table", { class: "rows" });
  const headRow = el("tr", {}, el("th", { class: "num", text: "#" }));
  for (const c of columns) {
    const th = el("th", { text: c, "data-col": c, title: "sort by " + c });
    th.addEventListener("click", () => {
      if (t.sort === c) t.desc = !t.desc; else { t.sort = c; t.desc = false; }
      t.from = 0;
      load();
    });
    headRow.append(th);
  }
  table.append(el("thead", {}, headRow), el("tbody"));
  view.append(el("div", { class: "pager" }, prev, info, next), note, table);
  prev.addEventListener("click", () => { t.from = Math.max(0, t.from - t.n); load(); });
  next.addEventListener("click", () => { if (t.from + t.n < total) { t.from += t.n; load(); } });
  async function load() {
    let body;
    try {
      body = await get("rows", { session: state.session, ref: handle, from: t.from, n: t.n, sort: t.sort, desc: t.desc ? "1" : "0" });
    } catch (err) { note.textContent = String(err.message || err); note.classList.add("error"); return; }
    const rows = body.rows.map(r => ({ i: r.i, size: r.size, v: r.json === undefined ? undefined : r.json }));
    if (t.sort && !body.sorted) { // the server did not sort: sort the page
      rows.sort((a, b) => compareCells(a.v, b.v, t.sort) * (t.desc ? -1 : 1));
    }
    note.textContent = body.sortNote || "";
    for (const th of headRow.cells) {
      th.classList.toggle("sorted-asc", th.dataset.col === t.sort && !t.desc);
      th.classList.toggle("sorted-desc", th.dataset.col === t.sort && t.desc);
    }
    const tbody = el("tbody");
    for (const r of rows) {
      const tr = el("tr", { "data-row": String(r.i) }, el("td", { class: "num", text: String(r.i) }));
      for (const c of columns) {
        let text;
        if (r.v === undefined) text = c === columns[0] ? "(row of " + size(r.size) + ": open $" + handle + "." + r.i + " with jq)" : "";
        else text = r.v !== null && typeof r.v === "object" && !Array.isArray(r.v) ? cellText(r.v[c]) : (c === columns[0] ? cellText(r.v) : "");
        tr.append(el("td", { text, title: text.length > 40 ? text.slice(0, 2000) : "" }));
      }
      tbody.append(tr);
    }
    table.replaceChild(tbody, table.tBodies[0]);
    const last = t.from + body.rows.length;
    info.textContent = "rows " + (body.rows.length ? t.from + 1 : 0) + "–" + last + " of " + body.total +
      (t.sort ? " · sorted by " + t.sort + (t.desc ? " (descending)" : "") + (body.sorted ? "" : " within this page") : "");
    prev.disabled = t.from === 0;
    next.disabled = last >= body.total;
    view.dataset.loaded = String(Date.now());
  }
  await load();
}

function compareCells(a, b, col) {
  const x = a && typeof a === "object" ? a[col] : undefined;
  const y = b && typeof b === "object" ? b[col] : undefined;
  if (x === y) return 0;
  if (x === undefined || x === null) return 1;
  if (y === undefined || y === null) return -1;
  if (typeof x === "number" && typeof y === "number") return x - y;
  return String(cellText(x)).localeCompare(String(cellText(y)));
}

// bytePager shows a value a page of bytes at a time in view: fetch(offset)
// gets the page at offset, render(page) returns its element. extra goes in
// the pager's bar after the buttons, note under it.
async function bytePager(view, fetch, render, extra, note) {
  const stack = [];
  let cur = 0;
  let page;
  const info = el("span", { id: "page-info" });
  const prev = el("button", { id: "prev-page", type: "button", text: "◀ Previous" });
  const next = el("button", { id: "next-page", type: "button", text: "Next ▶" });
  const holder = el("div");
  view.append(el("div", { class: "pager" }, prev, info, next, ...extra), ...(note ? [note] : []), holder);
  async function load(offset) {
    try {
      page = await fetch(offset);
    } catch (err) { showError(holder, err); return; }
    cur = page.offset;
    const shown = render(page);
    clear(holder);
    holder.append(shown);
    info.textContent = "bytes " + page.offset + "–" + page.next + " of " + page.total;
    prev.disabled = stack.length === 0;
    next.disabled = !page.more;
    view.dataset.loaded = String(Date.now());
  }
  prev.addEventListener("click", () => { if (stack.length) load(stack.pop()); });
  next.addEventListener("click", () => { if (page && page.more) { stack.push(cur); load(page.next); } });
  await load(0);
}

async function textView(view, handle) {
  const starts = new Map([[0, 1]]); // page offset -> its first line's number
  await bytePager(view, offset => get("page", { session: state.session, ref: handle, offset }), page => {
    let line = starts.get(page.offset) || 1;
    const table = el("table", { class: "text" });
    const lines = page.content.split("\n");
    if (lines.length > 1 && lines[lines.length - 1] === "") lines.pop();
    for (const l of lines) {
      table.append(el("tr", {}, el("td", { class: "ln", text: String(line) }), el("td", { text: l })));
      line++;
    }
    if (page.more) starts.set(page.next, page.content.endsWith("\n") ? line : line - 1);
    return table;
  }, []);
}

async function csvView(view, handle, delim) {
  const raw = el("button", { type: "button", text: "As text" });
  raw.addEventListener("click", () => { clear(view); textView(view, handle); });
  let header = null;
  await bytePager(view, offset => get("textrows", { session: state.session, ref: handle, offset, delim }), page => {
    let rows = page.rows;
    if (page.offset === 0 && rows.length) { header = rows[0]; rows = rows.slice(1); }
    const table = el("table", { class: "csv" });
    const head = el("tr");
    let sortCol = -1, desc = false;
    const body = el("tbody");
    function fill() {
      clear(body);
      const shown = rows.slice();
      if (sortCol >= 0) {
        shown.sort((a, b) => {
          const x = a[sortCol] ?? "", y = b[sortCol] ?? "";
          const nx = Number(x), ny = Number(y);
          const c = x !== "" && y !== "" && !isNaN(nx) && !isNaN(ny) ? nx - ny : x.localeCompare(y);
          return desc ? -c : c;
        });
      }
      for (const r of shown) body.append(el("tr", {}, ...r.map(f => el("td", { text: f, title: f.length > 40 ? f : "" }))));
    }
    (header || rows[0] || []).forEach((h, i) => {
      const th = el("th", { text: header ? h : "#" + (i + 1) });
      th.addEventListener("click", () => { desc = sortCol === i ? !desc : false; sortCol = i; fill(); });
      head.append(th);
    });
    table.append(el("thead", {}, head), body);
    fill();
    return table;
  }, [raw], el("p", { class: "note", text: "read as " + delim.toUpperCase() + "; click a column to sort the rows of this page" }));
}

function binaryView(view, v, contentType) {
  view.append(el("p", { text: "Binary: " + (contentType || "application/octet-stream") + ", " + size(v.size) + " (" + v.size + " bytes). Download it to open it." }));
  view.dataset.loaded = String(Date.now());
}

// Tree: a JSON value parsed in the page (at most the server's inline bound),
// or a stub the server lists with its size and reference, opened on demand.
function jsonNode(key, value) {
  const li = el("li");
  const label = [];
  if (key !== null) label.push(el("span", { class: "key", text: JSON.stringify(key) }), ": ");
  if (value !== null && typeof value === "object") {
    const isArr = Array.isArray(value);
    const entries = isArr ? value.map((x, i) => [i, x]) : Object.entries(value);
    const toggle = el("span", { class: "toggle", text: "▾" });
    const summary = el("span", { class: "dim", text: (isArr ? "[" + entries.length + " items]" : "{" + entries.length + " keys}") });
    li.append(toggle, ...label, summary);
    const ul = el("ul");
    const shown = entries.slice(0, 500);
    for (const [k, x] of shown) ul.append(jsonNode(isArr ? null : k, x));
    if (entries.length > shown.length) ul.append(el("li", { class: "dim", text: "… " + (entries.length - shown.length) + " more" }));
    li.append(ul);
    toggle.addEventListener("click", () => { li.classList.toggle("closed"); toggle.textContent = li.classList.contains("closed") ? "▸" : "▾"; });
    if (entries.length > 20) { li.classList.add("closed"); toggle.textContent = "▸"; }
  } else {
    const cls = typeof value === "string" ? "str" : typeof value === "number" ? "num" : "lit";
    li.append(el("span", { class: "toggle", text: " " }), ...label, el("span", { class: cls, text: JSON.stringify(value) }));
  }
  return li;
}

function childNode(c, depth) {
  if (c.json !== undefined) return jsonNode(c.key === undefined ? null : c.key, c.json);
  const li = el("li", { class: "closed" });
  const toggle = el("span", { class: "toggle", text: "▸" });
  li.append(toggle);
  if (c.key !== undefined) li.append(el("span", { class: "key", text: JSON.stringify(c.key) }), ": ");
  li.append(el("span", { class: "dim", text: c.kind + ", " + size(c.size) + (c.ref ? "" : " (no reference names it)") }));
  const ul = el("ul");
  li.append(ul);
  let loaded = false;
  toggle.addEventListener("click", async () => {
    li.classList.toggle("closed");
    toggle.textContent = li.classList.contains("closed") ? "▸" : "▾";
    if (loaded || !c.ref) return;
    loaded = true;
    if (c.kind === "object" || c.kind === "array") await loadChildren(ul, c.ref, 0, depth + 1);
    else {
      try {
        const p = await get("page", { session: state.session, ref: c.ref, offset: 0 });
        ul.append(el("li", {}, el("span", { class: "str", text: p.content + (p.more ? "…" : "") })));
        if (p.more) ul.append(el("li", { class: "dim", text: "(" + size(p.total) + " in all: read " + c.ref + " with read_value or jq)" }));
      } catch (err) { ul.append(el("li", { class: "error", text: String(err.message || err) })); }
    }
  });
  return li;
}

async function loadChildren(ul, ref, from, depth) {
  let body;
  try {
    body = await get("children", { session: state.session, ref, from });
  } catch (err) { ul.append(el("li", { class: "error", text: String(err.message || err) })); return; }
  for (const c of body.children) ul.append(childNode(c, depth));
  if (body.more) {
    const more = el("li", {}, el("button", { type: "button", text: "More" }));
    more.firstChild.addEventListener("click", () => { more.remove(); loadChildren(ul, ref, body.next, depth); });
    ul.append(more);
  }
}

async function treeView(view, handle) {
  const root = el("ul", { class: "tree" });
  view.append(root);
  const v = await get("page", { session: state.session, ref: handle, offset: 0 }).catch(err => ({ error: err }));
  if (v.error) { showError(view, v.error); return; }
  if (!v.more) {
    let parsed;
    try { parsed = JSON.parse(v.content); } catch (e) { parsed = undefined; }
    if (parsed !== undefined) { root.append(jsonNode(null, parsed)); view.dataset.loaded = String(Date.now()); return; }
  }
  await loadChildren(root, handle, 0, 0);
  view.dataset.loaded = String(Date.now());
}

async function runQuery(ev) {
  ev.preventDefault();
  const out = $("query-result"), info = $("query-info");
  info.classList.remove("error");
  info.textContent = "running…";
  out.hidden = true;
  try {
    const r = await get("query", { session: state.session, ref: state.handle, jq: $("jq").value });
    info.textContent = (r.values === 1 ? "1 value" : r.values + " values (as an array)") + ", " + size(r.size) + (r.cut ? "; shown cut at " + size(r.result.length) : "");
    let text = r.result;
    if (!r.cut) { try { text = JSON.stringify(JSON.parse(r.result), null, 2); } catch (e) { /* as it is */ } }
    out.textContent = text;
    out.hidden = false;
  } catch (err) {
    info.textContent = String(err.message || err);
    info.classList.add("error");
  }
}

async function start() {
  $("refresh").addEventListener("click", () => refresh());
  $("more-handles").addEventListener("click", () => loadHandles());
  $("query-form").addEventListener("submit", runQuery);
  await refresh();
}

async function refresh() {
  const want = readHash();
  if (state.session === null) state.session = want.session;
  try {
    await loadSessions();
  } catch (err) { showError($("totals"), err); return; }
  if (state.session !== null) {
    const handle = state.handle || want.handle;
    await openSession(state.session);
    if (handle) await openValue(handle);
  }
  document.body.dataset.ready = "1";
}

start();
