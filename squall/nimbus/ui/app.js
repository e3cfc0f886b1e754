// squall's web UI: one page, three views (cluster, topology, component), read from Nimbus's
// REST API under /api/v1 (Storm UI's endpoints plus squall's history and graph). Changes
// (activate, deactivate, rebalance, kill) send the Nimbus token the user typed, kept in this
// tab's sessionStorage only. Every text from the API is inserted as text, never as HTML.
"use strict";

const API = "/api/v1";
const WINDOWS = [["600", "10 min"], ["10800", "3 h"], ["86400", "1 day"], [":all-time", "All time"]];
const COLORS = ["#2a6fdb", "#e8743b", "#19a979", "#ed4a7b", "#945ecf", "#13a4b4", "#525df4", "#bf399e", "#6c8893", "#ee6868"];
const REFRESH_MS = 10000;
let refreshTimer = null;
let samplesShown = null;  // the samples table survives the periodic refresh

// ---- DOM helpers ------------------------------------------------------------------------

function h(tag, attrs, ...children) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === null || v === undefined || v === false) continue;
    if (k.startsWith("on")) el.addEventListener(k.slice(2), v);
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function s(tag, attrs, ...children) {
  const el = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v !== null && v !== undefined) el.setAttribute(k, String(v));
  }
  for (const c of children.flat()) {
    if (c !== null && c !== undefined) el.append(c instanceof Node ? c : document.createTextNode(String(c)));
  }
  return el;
}

function fmt(v) {
  if (v === null || v === undefined || v === "") return "";
  if (typeof v === "number") return Number.isInteger(v) ? v.toLocaleString("en-US") : v.toFixed(3);
  return String(v);
}

function table(id, columns, rows) {
  // columns: [header, key or fn, "text"?]
  const head = h("tr", {}, columns.map(([name, , kind]) => h("th", { class: kind === "text" ? "text" : null }, name)));
  const body = rows.map((row) => h("tr", {}, columns.map(([, key, kind]) => {
    const v = typeof key === "function" ? key(row) : row[key];
    const cls = kind === "text" ? "text" : kind === "wrap" ? "wrap" : null;
    const plain = ["port", "pid", "worker", "task"].includes(key);  // identifiers, not quantities
    return h("td", { class: cls, "data-key": typeof key === "string" ? key : null }, v instanceof Node ? v : plain && v !== null && v !== undefined ? String(v) : fmt(v));
  })));
  return h("table", { id }, h("thead", {}, head), h("tbody", {}, body));
}

function flash(text, error) {
  const box = document.getElementById("flash");
  box.replaceChildren(h("div", { class: error ? "msg error" : "msg", id: error ? "flash-error" : "flash-ok" }, text));
}

// ---- the API ----------------------------------------------------------------------------

async function get(path) {
  // with the token (entered in this tab) reads include what is hidden from everyone else:
  // error texts and tracebacks, which can hold tuple values
  const headers = { Accept: "application/json" };
  if (token()) headers.Authorization = `Bearer ${token()}`;
  const resp = await fetch(API + path, { headers });
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) throw new Error(body.error || `${resp.status} ${resp.statusText}`);
  return body;
}

function token() { return sessionStorage.getItem("squall.token") || ""; }

function showTokenState() {
  document.getElementById("token-state").textContent = token() ? "token set" : "no token (read only)";
}

function askToken() {
  return new Promise((resolve) => {
    const dialog = document.getElementById("token-dialog");
    const input = document.getElementById("token-input");
    input.value = "";
    const done = (value) => { dialog.close(); showTokenState(); resolve(value); };
    document.getElementById("token-ok").onclick = (e) => {
      e.preventDefault();
      if (input.value.trim()) sessionStorage.setItem("squall.token", input.value.trim());
      done(token());
    };
    document.getElementById("token-cancel").onclick = () => done("");
    document.getElementById("token-clear").onclick = () => { sessionStorage.removeItem("squall.token"); done(""); };
    dialog.showModal();
    input.focus();
  });
}

async function post(path, body) {
  let t = token();
  if (!t) t = await askToken();
  if (!t) throw new Error("this needs the Nimbus token");
  const resp = await fetch(API + path, {
    method: "POST",
    headers: { "Content-Type": "application/json", Authorization: `Bearer ${t}` },
    body: JSON.stringify(body || {}),
  });
  const answer = await resp.json().catch(() => ({}));
  if (resp.status === 401 || resp.status === 403) sessionStorage.removeItem("squall.token");
  showTokenState();
  if (!resp.ok) throw new Error(answer.error || `${resp.status} ${resp.statusText}`);
  return answer;
}

// ---- routing ----------------------------------------------------------------------------

function route() {
  const hash = location.hash.replace(/^#/, "") || "/";
  const [path, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  const parts = path.split("/").filter(Boolean).map(decodeURIComponent);
  if (parts[0] === "topology" && parts.length === 2) return { view: topologyView, args: [parts[1], params] };
  if (parts[0] === "topology" && parts[2] === "component" && parts.length === 4) {
    return { view: componentView, args: [parts[1], parts[3], params] };
  }
  return { view: clusterView, args: [params] };
}

async function render(quiet) {
  clearTimeout(refreshTimer);
  const main = document.getElementById("main");
  const { view, args } = route();
  try {
    const content = await view(...args);
    if (document.querySelector("dialog[open]")) return schedule();  // do not redraw under a dialog
    main.replaceChildren(...content);
    main.setAttribute("data-loaded", String(Date.now()));
    const [topo, comp] = args.length === 3 ? [args[0], args[1]] : [args[0], null];
    if (samplesShown && samplesShown[0] === topo && samplesShown[1] === comp && token()) showSamples(topo, comp);
  } catch (e) {
    if (!quiet) main.replaceChildren(h("p", { class: "error", id: "load-error" }, `Cannot load: ${e.message}`));
  }
  schedule();
}

function schedule() { refreshTimer = setTimeout(() => render(true), REFRESH_MS); }

function topoLink(t) { return h("a", { href: `#/topology/${encodeURIComponent(t.name)}`, class: "topology-link" }, t.name); }

function statusCell(status) { return h("span", { class: `status ${status}`, "data-status": status }, status); }

// ---- cluster view -----------------------------------------------------------------------

async function clusterView() {
  const [cluster, nimbuses, supervisors, topologies] = await Promise.all([
    get("/cluster/summary"), get("/nimbus/summary"), get("/supervisor/summary"), get("/topology/summary")]);
  document.title = "squall: cluster";
  return [
    h("h1", {}, "Cluster"),
    table("cluster-summary", [
      ["Version", "stormVersion"], ["Leader", "leaderUrl", "text"], ["Store", "store", "text"],
      ["Spark master", "sparkMaster", "text"], ["Hosts", "supervisors"], ["Topologies", "topologies"],
      ["Slots", "slotsTotal"], ["Used slots", "slotsUsed"], ["Free slots", "slotsFree"],
      ["Executors", "executorsTotal"], ["Tasks", "tasksTotal"]], [cluster]),
    h("h2", {}, "Nimbus"),
    table("nimbus-summary", [["URL", "url", "text"], ["Host", "host", "text"], ["Port", "port"],
      ["Status", "status", "text"], ["Uptime", "nimbusUpTime"], ["Version", "version"]], nimbuses.nimbuses),
    h("h2", {}, "Topologies"),
    topologies.topologies.length === 0 ? h("p", { class: "muted", id: "no-topologies" }, "No topology is running.") :
      table("topology-summary", [
        ["Name", topoLink, "text"], ["Id", "id", "text"], ["Status", (t) => statusCell(t.status), "text"],
        ["Uptime", "uptime"], ["Workers", "workersTotal"], ["Tasks", "tasksTotal"], ["Version", "version"],
        ["Emitted", "emitted"], ["Acked", "acked"], ["Failed", "failed"], ["Errors", "numErrors"]],
      topologies.topologies),
    h("h2", {}, "Hosts (Spark executors)"),
    table("supervisor-summary", [["Host", "host", "text"], ["Uptime", "uptime"], ["Used slots", "slotsUsed"],
      ["Free slots", "slotsFree"], ["Topologies", (r) => r.topologies.join(", "), "text"]], supervisors.supervisors),
  ];
}

// ---- topology view ----------------------------------------------------------------------

function windowLinks(base, current) {
  return h("p", { class: "windows" }, "Window: ", WINDOWS.map(([w, label]) =>
    h("a", { href: `${base}?window=${encodeURIComponent(w)}`, class: w === current ? "current" : null, "data-window": w }, label)));
}

function actions(topo) {
  const id = encodeURIComponent(topo.id);
  const run = (label, fn) => async () => {
    try {
      await fn();
      flash(`${label}: done`);
    } catch (e) {
      flash(`${label}: ${e.message}`, true);
    }
    render(true);
  };
  return h("div", { class: "actions" },
    h("button", { id: "activate", onclick: run("activate", () => post(`/topology/${id}/activate`)) }, "Activate"),
    h("button", { id: "deactivate", onclick: run("deactivate", () => post(`/topology/${id}/deactivate`)) }, "Deactivate"),
    h("button", { id: "rebalance", onclick: () => rebalanceDialog(topo, run) }, "Rebalance"),
    h("button", { id: "kill", class: "danger", onclick: () => killDialog(topo) }, "Kill"));
}

function rebalanceDialog(topo, run) {
  const dialog = document.getElementById("rebalance-dialog");
  document.getElementById("rebalance-workers").value = topo.workersTotal;
  const box = document.getElementById("rebalance-components");
  box.replaceChildren(...[...topo.spouts.map((c) => c.spoutId), ...topo.bolts.map((c) => c.boltId)].map((c) =>
    h("label", {}, `${c} tasks `, h("input", { type: "number", min: "1", "data-component": c, placeholder: "unchanged" }))));
  document.getElementById("rebalance-cancel").onclick = () => dialog.close();
  document.getElementById("rebalance-ok").onclick = (e) => {
    e.preventDefault();
    dialog.close();
    const executors = {};
    for (const input of box.querySelectorAll("input")) if (input.value) executors[input.dataset.component] = Number(input.value);
    const workers = Number(document.getElementById("rebalance-workers").value);
    const wait = Number(document.getElementById("rebalance-wait").value || 0);
    const options = { executors };
    if (workers && workers !== topo.workersTotal) options.numWorkers = workers;
    run("rebalance", () => post(`/topology/${encodeURIComponent(topo.id)}/rebalance/${wait}`, { rebalanceOptions: options }))();
  };
  dialog.showModal();
}

function killDialog(topo) {
  const dialog = document.getElementById("kill-dialog");
  document.getElementById("kill-name").textContent = topo.name;
  document.getElementById("kill-wait").value = topo.msgTimeout;
  document.getElementById("kill-cancel").onclick = () => dialog.close();
  document.getElementById("kill-ok").onclick = async (e) => {
    e.preventDefault();
    dialog.close();
    try {
      const wait = Number(document.getElementById("kill-wait").value || 0);
      flash(`kill: waiting ${wait}s for ${topo.name} to drain…`);
      await post(`/topology/${encodeURIComponent(topo.id)}/kill/${wait}`);
      flash("kill: done");
      location.hash = "#/";
    } catch (err) {
      flash(`kill: ${err.message}`, true);
    }
  };
  dialog.showModal();
}

function capClass(c) {
  const v = Number(c);
  return v >= 0.8 ? "cap-high" : v >= 0.5 ? "cap-mid" : "cap-low";
}

function capColor(c) {
  if (c === null || c === undefined) return "#e1e5ea";
  const v = Math.max(0, Math.min(1, Number(c)));
  // green (low) -> yellow -> red (saturated), as Storm's visualisation
  const hue = 130 - 130 * v;
  return `hsl(${hue}, 65%, 72%)`;
}

function graphView(g, name) {
  const W = 190, H = 64, GX = 170, GY = 50, PAD = 24;
  const cols = Math.max(1, ...g.nodes.map((n) => n.column + 1));
  const rows = Math.max(1, ...g.nodes.map((n) => n.row + 1));
  const width = PAD * 2 + cols * W + (cols - 1) * GX, height = PAD * 2 + rows * H + (rows - 1) * GY;
  const pos = {};
  for (const n of g.nodes) pos[n.id] = { x: PAD + n.column * (W + GX), y: PAD + n.row * (H + GY) };
  const maxTuples = Math.max(1, ...g.edges.map((e) => e.tuples || 0));
  const svg = s("svg", { class: "graph", id: "topology-graph", width, height, viewBox: `0 0 ${width} ${height}` },
    s("defs", {}, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 10, refY: 5, markerWidth: 10, markerHeight: 10, markerUnits: "userSpaceOnUse", orient: "auto-start-reverse" },
      s("path", { d: "M 0 0 L 10 5 L 0 10 z", fill: "#7d8794" }))));
  g.edges.forEach((e, i) => {
    const a = pos[e.source], b = pos[e.target];
    if (!a || !b) return;
    const width = 1 + 5 * Math.log1p(e.tuples || 0) / Math.log1p(maxTuples);
    let d, lx, ly;
    if (e.source === e.target) {
      d = `M ${a.x + W - 30} ${a.y} C ${a.x + W} ${a.y - 40}, ${a.x + W + 40} ${a.y + 10}, ${a.x + W} ${a.y + 20}`;
      lx = a.x + W + 5; ly = a.y - 12;
    } else {
      const x1 = a.x + W, y1 = a.y + H / 2 + (i % 3 - 1) * 6, x2 = b.x, y2 = b.y + H / 2;
      const back = x2 <= x1;
      d = back ? `M ${a.x + W / 2} ${a.y + H} C ${a.x + W / 2} ${a.y + H + 60}, ${b.x + W / 2} ${b.y + H + 60}, ${b.x + W / 2} ${b.y + H}`
        : `M ${x1} ${y1} C ${x1 + GX / 2} ${y1}, ${x2 - GX / 2} ${y2}, ${x2} ${y2}`;
      lx = back ? (a.x + b.x + W) / 2 : (x1 + x2) / 2; ly = back ? Math.max(a.y, b.y) + H + 40 : (y1 + y2) / 2 - 6;
    }
    const label = `${e.stream} [${e.grouping}${e.fields && e.fields.length ? ": " + e.fields.join(",") : ""}]`;
    svg.append(s("g", { class: "edge", "data-source": e.source, "data-target": e.target, "data-stream": e.stream, "data-grouping": e.grouping },
      s("title", {}, `${e.source} → ${e.target}: ${label}, ${fmt(e.tuples || 0)} tuples executed`),
      s("path", { d, "stroke-width": width.toFixed(1), "marker-end": "url(#arrow)" }),
      s("text", { x: lx, y: ly, "text-anchor": "middle" }, label)));
  });
  for (const n of g.nodes) {
    const p = pos[n.id];
    const cap = n.capacity === null || n.capacity === undefined ? "" : ` cap ${Number(n.capacity).toFixed(3)}`;
    const link = s("a", { href: `#/topology/${encodeURIComponent(name)}/component/${encodeURIComponent(n.id)}` },
      s("rect", { x: p.x, y: p.y, width: W, height: H, fill: n.kind === "spout" ? "#d7e6fb" : capColor(n.capacity) }),
      s("text", { x: p.x + 10, y: p.y + 20, "font-weight": "bold" }, n.id),
      s("text", { x: p.x + 10, y: p.y + 38 }, `${n.kind} ×${n.parallelism}${cap}`),
      s("text", { x: p.x + 10, y: p.y + 54 }, `emitted ${fmt(n.emitted || 0)}`));
    svg.append(s("g", { class: "node", "data-component": n.id, "data-kind": n.kind, "data-capacity": n.capacity }, link));
  }
  return svg;
}

function lineChart(id, title, series, unit) {
  // series: [{name, points: [[t, v], ...]}]
  const W = 420, H = 180, L = 48, B = 22, T = 8, R = 10;
  const all = series.flatMap((x) => x.points);
  const box = h("div", { class: "chart", id }, h("h3", {}, title));
  if (all.length === 0) {
    box.append(h("p", { class: "muted" }, "No samples yet (Nimbus samples every 10 s)."));
    return box;
  }
  const t0 = Math.min(...all.map((p) => p[0])), t1 = Math.max(...all.map((p) => p[0]), t0 + 1);
  const vmax = Math.max(...all.map((p) => p[1]), 1e-9) * 1.1;
  const x = (t) => L + (W - L - R) * (t - t0) / (t1 - t0), y = (v) => T + (H - T - B) * (1 - v / vmax);
  const svg = s("svg", { width: W, height: H, viewBox: `0 0 ${W} ${H}` },
    s("line", { x1: L, y1: H - B, x2: W - R, y2: H - B, stroke: "#ccd" }), s("line", { x1: L, y1: T, x2: L, y2: H - B, stroke: "#ccd" }),
    s("text", { x: 2, y: T + 8 }, `${vmax.toPrecision(3)} ${unit}`), s("text", { x: 2, y: H - B }, "0"),
    s("text", { x: L, y: H - 6 }, new Date(t0 * 1000).toLocaleTimeString()),
    s("text", { x: W - R - 60, y: H - 6 }, new Date(t1 * 1000).toLocaleTimeString()));
  const legend = h("div", { class: "legend" });
  series.forEach((ser, i) => {
    const color = COLORS[i % COLORS.length];
    const pts = ser.points.map(([t, v]) => `${x(t).toFixed(1)},${y(v).toFixed(1)}`).join(" ");
    svg.append(s("polyline", { points: pts, fill: "none", stroke: color, "stroke-width": 1.8, "data-series": ser.name }));
    for (const [t, v] of ser.points.slice(-1)) svg.append(s("circle", { cx: x(t).toFixed(1), cy: y(v).toFixed(1), r: 2.5, fill: color }));
    const tag = h("span", {}, ser.name);
    tag.style.setProperty("--c", color);
    legend.append(tag);
  });
  box.append(svg, legend);
  return box;
}

function charts(history, only) {
  const comps = only ? [only] : Object.keys(history.kinds || {}).sort();
  const res = history.resolution || 10;
  const pick = (c, f, scale) => ({ name: c, points: history.points.filter((p) => p.components[c]).map((p) => [p.time, p.components[c][f] * (scale || 1)]) });
  const kind = (c) => (history.kinds || {})[c] || "bolt";
  return h("div", { class: "charts" },
    lineChart("chart-throughput", `Throughput (tuples/s, ${res}s buckets)`, comps.map((c) => ({ name: c, points: pick(c, kind(c) === "spout" ? "emitted" : "executed").points.map(([t, v]) => [t, v / res]) })), "/s"),
    lineChart("chart-latency", "Latency (ms: complete for spouts, execute for bolts)", comps.map((c) => pick(c, kind(c) === "spout" ? "complete_latency_ms" : "execute_latency_ms")), "ms"),
    lineChart("chart-capacity", "Capacity", comps.filter((c) => kind(c) === "bolt").map((c) => pick(c, "capacity")), ""));
}

// The checkpoint spout's own metrics (exactly-once or stateful topologies; docs/ui.md)
function checkpointSection(info) {
  const m = ((info.components || {})["$checkpointspout"] || {}).metrics;
  if (!m || !m["checkpoint/lastCommittedTxid"]) return [];
  const g = (name, field) => (m[name] || {})[field];
  const row = {
    txid: String(g("checkpoint/lastCommittedTxid", "max")), since: g("checkpoint/secsSinceCommit", "max"),
    prepare: g("checkpoint/prepareMs", "p99_ms"), commit: g("checkpoint/commitMs", "p99_ms"),
    commits: g("checkpoint/commitMs", "count"), rollbacks: g("checkpoint/rollbacks", "count"),
  };
  return [h("h2", {}, "Checkpoints"),
    table("checkpoints", [["Last committed txid", "txid", "text"], ["Seconds since commit", "since"],
      ["Prepare p99 (ms)", "prepare"], ["Commit p99 (ms)", "commit"], ["Commits", "commits"], ["Rollbacks", "rollbacks"]], [row])];
}

function errorList(errors) {
  if (!errors.length) {
    return h("p", { class: "muted", id: "no-errors" },
      token() ? "No errors." : "No errors shown: errors and their tracebacks need the token.");
  }
  return h("div", { id: "errors" }, errors.map((e) => h("details", { class: "error" },
    h("summary", {}, `${new Date((e.errorTime || 0) * (e.errorTime > 1e11 ? 1 : 1000)).toLocaleString()} · ${e.component || ""} task ${e.task ?? ""} · ${(e.message || e.error || "").split("\n")[0]}`),
    h("pre", {}, e.error || e.traceback || ""))));
}

function autoscaleSection(info) {
  // topology.autoscale: the decisions, newest first, beside the throughput chart above
  const a = info.autoscale;
  if (!a) return [];
  const rows = (a.decisions || []).slice().reverse().map((d) => ({
    time: d.time,
    changes: Object.entries(d.changes || {}).map(([c, [o, n]]) => `${c} ${o}\u2192${n}`).join(", ") || "-",
    state: d.applied ? "applied" : d.mode === "recommend" ? "recommended" : "not applied",
    why: d.note || Object.entries(d.left || {}).map(([c, w]) => `${c}: ${w}`).join("; ") || d.reason,
  }));
  return [h("h2", {}, `Autoscale (${a.mode})`),
    rows.length ? table("autoscale", [["At (s)", "time"], ["Changes", "changes", "text"], ["State", "state", "text"],
      ["Why", "why", "wrap"]], rows) : h("p", { id: "autoscale" }, `No change decided in ${a.windows || 0} window(s).`)];
}

async function topologyView(name, params) {
  const window = params.get("window") || ":all-time";
  const topo = await get(`/topology/${encodeURIComponent(name)}?window=${encodeURIComponent(window)}`);
  const chartWindow = window === ":all-time" ? "600" : window;
  const [graph, history, info] = await Promise.all([
    get(`/topologies/${encodeURIComponent(topo.name)}/graph`),
    get(`/topologies/${encodeURIComponent(topo.name)}/history?window=${chartWindow}`),
    get(`/topologies/${encodeURIComponent(topo.name)}`)]);
  document.title = `squall: ${topo.name}`;
  const base = `#/topology/${encodeURIComponent(topo.name)}`;
  const compLink = (id) => h("a", { href: `${base}/component/${encodeURIComponent(id)}`, class: "component-link" }, id);
  const errors = (info.errors || []).slice().reverse().map((e) => ({ ...e, errorTime: e.time, error: e.traceback }));
  const out = [
    h("h1", {}, "Topology ", h("span", { id: "topology-name" }, topo.name), " ", statusCell(topo.status)),
    table("topology-info", [["Id", "id", "text"], ["Status", (t) => statusCell(t.status), "text"], ["Uptime", "uptime"],
      ["Workers", "workersTotal"], ["Tasks", "tasksTotal"], ["Version", "topologyVersion"],
      ["Message timeout (s)", "msgTimeout"], ["Master", () => (info.master || {}).state, "text"],
      ["Master restarts", () => info.restarts]], [topo]),
    actions(topo),
  ];
  if (info.upgrade) {
    const u = info.upgrade;
    out.push(h("h2", {}, "Gray upgrade"), table("upgrade", [["From version", "from"], ["To version", "to"],
      ["Upgraded workers", (r) => r.workers.join(", "), "text"], ["Progress", (r) => `${r.workers.length} of ${topo.workersTotal}`]], [u]));
  }
  if (info.rescale) {  // the last rescale (API.md, Rescaling)
    const r = info.rescale;
    out.push(h("h2", {}, "Last rescale"), table("rescale", [["Status", "status", "text"],
      ["How", (x) => (x.live ? "live" : "restart"), "text"],
      ["Components", (x) => Object.keys(x.components || {}).sort().map((c) => `${c} ${x.components[c][0]} \u2192 ${x.components[c][1]}`).join(", "), "text"],
      ["Key groups moved", "moved_key_groups"], ["Bytes moved", "moved_bytes"], ["Pause (ms)", "pause_ms"],
      ["Reason", (x) => x.reason || "", "wrap"]], [r]));
  }
  out.push(...checkpointSection(info));
  out.push(
    h("h2", {}, "Topology stats"),
    table("topology-stats", [["Window", "windowPretty", "text"], ["Emitted", "emitted"], ["Transferred", "transferred"],
      ["Complete latency (ms)", "completeLatency"], ["Acked", "acked"], ["Failed", "failed"]], topo.topologyStats),
    h("h2", {}, "Graph"),
    graphView(graph, topo.name),
    h("h2", {}, "Charts"),
    charts(history),
    ...autoscaleSection(info),
    h("h2", {}, "Spouts"), windowLinks(base, window),
    table("spouts", [["Id", (r) => compLink(r.spoutId), "text"], ["Tasks", "tasks"], ["Emitted", "emitted"],
      ["Transferred", "transferred"], ["Complete latency (ms)", "completeLatency"], ["Acked", "acked"], ["Failed", "failed"],
      ["Last error", (r) => r.lastError.split("\n")[0], "wrap"]], topo.spouts),
    h("h2", {}, "Bolts"),
    table("bolts", [["Id", (r) => compLink(r.boltId), "text"], ["Tasks", "tasks"], ["Emitted", "emitted"],
      ["Transferred", "transferred"], ["Capacity", (r) => h("span", { class: capClass(r.capacity) }, r.capacity)],
      ["Execute latency (ms)", "executeLatency"], ["Executed", "executed"], ["Process latency (ms)", "processLatency"],
      ["Acked", "acked"], ["Failed", "failed"], ["Last error", (r) => r.lastError.split("\n")[0], "wrap"]], topo.bolts),
    h("h2", {}, "Chains"),
    (topo.chains || []).length
      ? table("chains", [["Fused in one task (upstream first)", (r) => h("span", {}, ...r.map((c, i) => [i ? " \u2192 " : "", compLink(c)]).flat()), "text"]], topo.chains)
      : h("p", { id: "chains" }, "No bolt runs fused with its upstream (squall.chaining)."),
    h("h2", {}, "Workers"),
    table("workers", [["Worker", "worker"], ["Host", "host", "text"], ["Port", "port"], ["Pid", "pid"], ["State", "state", "text"],
      ["Uptime", "uptime"], ["Tasks", (w) => w.tasks.join(", "), "text"], ["Restarts", "restarts"], ["Version", "version"],
      ["Assigned Mem (MB)", "assignedMemOnHeap"], ["Assigned CPU (%)", "assignedCpu"],
      ["RSS (MB)", "memoryMb"], ["Mem limit (MB)", "memoryLimitMb"],
      ["Memory stops", "memoryStops"], ["Last memory stop", (w) => w.memoryStop || "", "wrap"],
      ["CPU (%)", "cpuPercent"], ["Log", (w) => h("a", { href: "#", class: "log-link", onclick: (e) => { e.preventDefault(); showLog(topo.name, w.worker); } }, "log"), "text"]],
    topo.workers),
    h("div", { id: "log-box" }),
    h("h2", {}, "Sampled tuples"),
    debugSection(topo.name, null, topo.debug, topo.samplingPct),
    h("h2", {}, "Errors"),
    errorList(errors),
    h("h2", {}, "Configuration"),
    table("configuration", [["Key", "key", "text"], ["Value", "value", "wrap"]],
      Object.keys(topo.configuration).sort().map((k) => ({ key: k, value: JSON.stringify(topo.configuration[k]) }))));
  return out;
}

function debugSection(topo, component, on, pct) {
  // Storm's event logger: sample a share of the tuples emitted, without a restart
  const base = component ? `/topology/${encodeURIComponent(topo)}/component/${encodeURIComponent(component)}` : `/topology/${encodeURIComponent(topo)}`;
  const act = (label, fn) => async () => {
    try { await fn(); flash(`${label}: done`); } catch (e) { flash(`${label}: ${e.message}`, true); }
    render(true);
  };
  const input = h("input", { id: "debug-pct", type: "number", min: "0.001", max: "100", step: "any", value: on ? pct : 10 });
  return h("div", { id: "debug" },
    h("p", { id: "debug-state" }, on ? `Sampling ${pct}% of the tuples ${component ? component : "every component"} emits.` : "Sampling is off."),
    h("div", { class: "actions" }, h("label", {}, "Percent ", input),
      h("button", { id: "debug-on", onclick: act("sampling", () => post(`${base}/debug/enable/${Number(input.value)}`)) }, "Sample tuples"),
      h("button", { id: "debug-off", onclick: act("sampling off", () => post(`${base}/debug/disable/0`)) }, "Stop sampling"),
      h("button", { id: "show-samples", onclick: () => showSamples(topo, component) }, "Show samples")),
    h("div", { id: "samples-box" }));
}

async function showSamples(name, component) {
  const box = document.getElementById("samples-box");
  samplesShown = [name, component];
  let t = token();
  if (!t) t = await askToken();
  if (!t) return;
  const query = component ? `&component=${encodeURIComponent(component)}` : "";
  const resp = await fetch(`${API}/topologies/${encodeURIComponent(name)}/samples?since=0${query}`, { headers: { Authorization: `Bearer ${t}` } });
  const body = await resp.json().catch(() => ({}));
  if (resp.status === 401 || resp.status === 403) sessionStorage.removeItem("squall.token");
  showTokenState();
  if (!resp.ok) { box.replaceChildren(h("p", { class: "error" }, body.error || resp.statusText)); return; }
  const rows = body.samples.slice(-200).reverse().map((s) => ({ ...s, when: new Date(s.time * 1000).toLocaleTimeString(), shown: JSON.stringify(s.values) }));
  box.replaceChildren(rows.length ? table("samples", [["Time", "when", "text"], ["Component", "component", "text"], ["Stream", "stream", "text"],
    ["Task", "task"], ["Worker", "worker"], ["Values", "shown", "wrap"]], rows) : h("p", { class: "muted", id: "no-samples" }, "No samples yet."));
}

async function showLog(name, worker) {
  const box = document.getElementById("log-box");
  let t = token();
  if (!t) t = await askToken();
  if (!t) return;
  const resp = await fetch(`${API}/topologies/${encodeURIComponent(name)}/logs?worker=${worker}`, { headers: { Authorization: `Bearer ${t}` } });
  const body = await resp.json().catch(() => ({}));
  if (resp.status === 401 || resp.status === 403) sessionStorage.removeItem("squall.token");
  showTokenState();
  box.replaceChildren(h("h3", {}, `Worker ${worker} log (last lines)`),
    h("pre", { class: "log", id: "worker-log" }, resp.ok ? body.text || "(nothing logged yet)" : body.error || resp.statusText));
}

// ---- component view ---------------------------------------------------------------------

async function componentView(name, component, params) {
  const window = params.get("window") || ":all-time";
  const c = await get(`/topology/${encodeURIComponent(name)}/component/${encodeURIComponent(component)}?window=${encodeURIComponent(window)}`);
  const chartWindow = window === ":all-time" ? "600" : window;
  const history = await get(`/topologies/${encodeURIComponent(c.name)}/history?window=${chartWindow}&component=${encodeURIComponent(component)}`);
  document.title = `squall: ${c.name} / ${c.id}`;
  const base = `#/topology/${encodeURIComponent(c.name)}/component/${encodeURIComponent(c.id)}`;
  const spout = c.componentType === "spout";
  const out = [
    h("h1", {}, h("a", { href: `#/topology/${encodeURIComponent(c.name)}` }, c.name), " / ", h("span", { id: "component-name" }, c.id)),
    table("component-info", [["Type", "componentType", "text"], ["Tasks", "tasks"], ["Executors", "executors"],
      ["Topology status", (r) => statusCell(r.topologyStatus), "text"]], [c]),
    // a chained component's figures, errors and stuck reports are its own code's; its chain beside them
    c.chain ? h("p", { id: "component-chain" }, "Runs fused in the chain ",
      ...c.chain.map((x, i) => [i ? " \u2192 " : "", x === c.id ? h("strong", {}, x)
        : h("a", { href: `#/topology/${encodeURIComponent(c.name)}/component/${encodeURIComponent(x)}`, class: "component-link" }, x)]).flat(),
      " (one task per link; squall.chaining).") : "",
    h("h2", {}, spout ? "Spout stats" : "Bolt stats"),
    spout ? table("component-stats", [["Window", "windowPretty", "text"], ["Emitted", "emitted"], ["Transferred", "transferred"],
      ["Complete latency (ms)", "completeLatency"], ["Acked", "acked"], ["Failed", "failed"]], c.spoutSummary)
      : table("component-stats", [["Window", "windowPretty", "text"], ["Emitted", "emitted"], ["Transferred", "transferred"],
        ["Executed", "executed"], ["Execute latency (ms)", "executeLatency"], ["Process latency (ms)", "processLatency"],
        ["Capacity", "capacity"], ["Acked", "acked"], ["Failed", "failed"]], c.boltStats),
    h("h2", {}, "Charts"), charts(history, c.id),
  ];
  if (!spout) {
    out.push(h("h2", {}, "Input stats"), table("input-stats", [["Component", "component", "text"], ["Stream", "stream", "text"],
      ["Grouping", "grouping", "text"], ["Executed", "executed"], ["Execute latency (ms)", "executeLatency"],
      ["Process latency (ms)", "processLatency"], ["Acked", "acked"], ["Failed", "failed"]], c.inputStats));
  }
  out.push(h("h2", {}, "Output stats"), table("output-stats", [["Stream", "stream", "text"], ["Emitted", "emitted"],
    ["Transferred", "transferred"]], c.outputStats));
  out.push(h("h2", {}, "Tasks"), windowLinks(base, window), table("executor-stats", spout ?
    [["Task", "task"], ["Host", "host", "text"], ["Port", "port"], ["Worker", "worker"], ["Uptime", "uptime"], ["Emitted", "emitted"],
      ["Transferred", "transferred"], ["Complete latency (ms)", "completeLatency"], ["Acked", "acked"], ["Failed", "failed"]]
    : [["Task", "task"], ["Host", "host", "text"], ["Port", "port"], ["Worker", "worker"], ["Uptime", "uptime"], ["Emitted", "emitted"],
      ["Transferred", "transferred"], ["Capacity", (r) => h("span", { class: capClass(r.capacity) }, r.capacity)], ["Executed", "executed"],
      ["Execute latency (ms)", "executeLatency"], ["Process latency (ms)", "processLatency"], ["Acked", "acked"], ["Failed", "failed"]],
  c.executorStats));
  if (c.metrics && Object.keys(c.metrics).length) {
    out.push(h("h2", {}, "Metrics"), table("user-metrics", [["Metric", "name", "text"], ["Value", "value", "wrap"]],
      Object.keys(c.metrics).sort().map((k) => ({ name: k, value: typeof c.metrics[k] === "object" ? JSON.stringify(c.metrics[k]) : c.metrics[k] }))));
  }
  out.push(h("h2", {}, "Sampled tuples"), debugSection(c.name, c.id, c.debug, c.samplingPct));
  out.push(h("h2", {}, "Errors"), errorList(c.componentErrors.map((e) => ({ ...e, component: c.id }))));
  return out;
}

// ---- start ------------------------------------------------------------------------------

window.addEventListener("hashchange", () => { document.getElementById("flash").replaceChildren(); render(false); });
window.addEventListener("DOMContentLoaded", () => {
  document.getElementById("token-button").addEventListener("click", () => askToken());
  showTokenState();
  render(false);
});
