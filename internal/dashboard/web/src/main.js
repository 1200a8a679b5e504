
// The live page's script, bundled with uPlot by scripts/build-dashboard
// into ../dist/app.js (committed, embedded with go:embed).
import {TimeChart, CurveChart, blue, vermillion, green} from "./charts.js";
import "./style.css";

// Everything shown is set with textContent: nothing from the run is ever HTML.
const classNames = ["ok", "4xx", "5xx", "timeout", "failed"];
const frames = [];
let token = "", ended = false, lastId = 0;
const $ = id => document.getElementById(id);
const fmt = (v, d) => (v === undefined || v === null || !isFinite(v)) ? "–" : v.toLocaleString("en-US", {maximumFractionDigits: d, minimumFractionDigits: d});
function cell(tr, text, tag) { const c = document.createElement(tag || "td"); c.textContent = text; tr.appendChild(c); }

// The charts are made on the first frame (uPlot needs the page laid out).
let charts = null;
function makeCharts() {
  charts = {
    rps: new TimeChart($("c-rps"), "requests/s", [{label: "requests/s", color: blue}]),
    lat: new TimeChart($("c-lat"), "ms", [{label: "p50 ms", color: blue}, {label: "p95 ms", color: vermillion}, {label: "p99 ms", color: green}]),
    vus: new TimeChart($("c-vus"), "VUs", [{label: "VUs", color: blue}]),
    cpu: new TimeChart($("c-cpu"), "% of one core", [{label: "server", color: blue}, {label: "loadlab", color: vermillion}]),
    mem: new TimeChart($("c-mem"), "MiB", [{label: "server RSS MiB", color: blue}]),
  };
}

// series are the frames' times and, for each getter, its values.
function series(...gets) { return [frames.map(f => f.t), ...gets.map(g => frames.map(f => { const v = g(f); return v === undefined ? null : v; }))]; }
function draw() {
  const f = frames[frames.length - 1];
  if (!f) return;
  // The headline says which window its figures are over: during the load,
  // the newest second; at the end of a run, the whole run (its
  // percentiles, and the mean rate over the seconds it ran); at the end of
  // a capacity search, the step of its answer (else its last), over that
  // step's measured window, its warmup left out: the same figures as its
  // row in the steps' table.
  let rps = f.rps, p = f.p, window = "this second";
  const answered = ended && search && !experiment ? headlineStep() : null;
  if (answered) {
    rps = answered.throughput_per_s; p = answered.p;
    window = "step " + answered.index + " (" + answered.unit + "), after its warmup";
  } else if (ended) {
    const ran = frames.filter(x => x.running && x.rps > 0);
    rps = ran.length ? ran.reduce((a, x) => a + x.rps, 0) / ran.length : 0;
    p = f.pall;
    window = "whole run";
  }
  for (const id of ["p50", "p95", "p99"]) $(id).nextElementSibling.textContent = id + " ms, " + window;
  $("rps").nextElementSibling.textContent = "requests/s, " + window;
  $("rps").textContent = fmt(rps, 0);
  $("p50").textContent = fmt(p[0], 2); $("p95").textContent = fmt(p[1], 2); $("p99").textContent = fmt(p[2], 2);
  $("requests").textContent = fmt(f.requests, 0); $("errors").textContent = fmt(f.errors, 0);
  $("vus").textContent = fmt(f.vus, 0); $("dropped").textContent = fmt(f.dropped, 0); $("late").textContent = fmt(f.late, 0);
  $("checks").textContent = fmt(f.checks[0], 0) + " / " + fmt(f.checks[1], 0);
  // A run without checks (quick mode) shows none, rather than "0 / 0".
  $("checks").parentElement.hidden = !(f.checks[0] + f.checks[1] > 0);
  const ct = $("classes"), head = document.createElement("tr"), row = document.createElement("tr");
  for (let c = 0; c < classNames.length; c++) { cell(head, classNames[c], "th"); cell(row, fmt(f.classes[c], 0)); }
  ct.tHead.replaceChildren(head); ct.tBodies[0].replaceChildren(row);
  const rows = [];
  for (const s of f.steps || []) {
    const tr = document.createElement("tr");
    cell(tr, s.name); cell(tr, fmt(s.rps, 0));
    for (const v of s.p) cell(tr, fmt(v, 2));
    for (const v of s.pall) cell(tr, fmt(v, 2));
    for (const v of s.classes) cell(tr, fmt(v, 0));
    cell(tr, fmt(s.checks[0], 0)); cell(tr, fmt(s.checks[1], 0));
    rows.push(tr);
  }
  $("steps").tBodies[0].replaceChildren(...rows);
  if (!charts) makeCharts();
  charts.rps.set(series(f => f.rps));
  const lat = i => f => f.rps > 0 ? f.p[i] : null; // no line through seconds without a request
  charts.lat.set(series(lat(0), lat(1), lat(2)));
  charts.vus.set(series(f => f.vus));
  charts.cpu.set(series(f => f.server ? f.server_cpu : null, f => f.own_cpu));
  const mib = 1 << 20;
  // Without a server measured (quick mode against a process loadlab cannot
  // see) the memory chart would be empty: it is left out until there is one.
  const mem = $("c-mem").parentElement, hadMem = !mem.hidden;
  mem.hidden = !frames.some(x => x.server);
  if (!mem.hidden && !hadMem) charts.mem.resize();
  charts.mem.set(series(f => f.server ? f.server_rss / mib : null),
    f.quota ? [{value: f.quota / mib, label: "memory_quota " + fmt(f.quota / mib, 0) + " MiB", color: vermillion}] : []);
  $("status").textContent = (ended ? "ended" : f.running ? "running" : "waiting") +
    (f.runs > 1 ? ", run " + f.runs : "") + ", " + fmt(f.t, 0) + " s";
}

let pending = false;
function redraw() { if (!pending) { pending = true; requestAnimationFrame(() => { pending = false; draw(); }); } }

// live shows warnings as they arise, until the run's own at its end.
const liveWarnings = new Map();
function live(f) {
  if (ended) return;
  const warn = (code, text) => liveWarnings.set(code, text);
  if (f.cores && f.own_cpu > 90 * f.cores) warn("generator_saturated", "so far: loadlab used " + fmt(f.own_cpu / f.cores, 0) + "% of the " + f.cores + " CPUs it may use (over 90%): part of the latency is its own queueing");
  if (f.dropped > 0) warn("dropped", "so far: " + fmt(f.dropped, 0) + " arrivals were dropped: every VU was busy when they were due");
  if (f.late > 0) warn("late", "so far: " + fmt(f.late, 0) + " requests went out late");
  if (f.quota && f.server && f.server_rss > f.quota) warn("memory_quota", "so far: the server's RSS (" + fmt(f.server_rss / 1048576, 0) + " MiB) is over its memory_quota (" + fmt(f.quota / 1048576, 0) + " MiB)");
  const w = $("warnings"); w.replaceChildren();
  for (const text of liveWarnings.values()) { const d = document.createElement("div"); d.className = "warn"; d.textContent = text; w.appendChild(d); }
}

function onEnd(e) {
  ended = true;
  const box = $("end");
  box.replaceChildren();
  const what = experiment ? "experiment" : search ? "search" : "run";
  box.appendChild(document.createTextNode(e.interrupted ? "The " + what + " was interrupted. " : "The " + what + " has ended. "));
  if (e.error) box.appendChild(document.createTextNode(e.error + " "));
  if (e.report) {
    const a = document.createElement("a");
    a.href = e.report + (token ? "?token=" + encodeURIComponent(token) : "");
    a.textContent = "Open the report";
    a.id = "report";
    box.appendChild(a);
  }
  box.hidden = false;
  const w = $("warnings"); w.replaceChildren();
  for (const m of e.warnings || []) { const d = document.createElement("div"); d.className = "warn"; d.textContent = m; w.appendChild(d); }
}

// An experiment: its runs in the order they ran, each point's figures as
// its runs end, and the ETA, counted down between runs.
let etaAt = 0, etaNext = "", experiment = false, lastEnded = 0;
function capacityText(v, by) { return by === "vus" ? fmt(v, 0) + " VUs" : fmt(v, 1) + "/s"; }
function onRun(r) {
  experiment = true;
  $("experiment").hidden = false;
  const tr = document.createElement("tr");
  cell(tr, r.run + " of " + r.runs); cell(tr, r.point);
  cell(tr, fmt(r.rps, 0)); for (const v of r.p) cell(tr, fmt(v, 2));
  cell(tr, fmt(100 * r.error_rate, 2) + "%" + (r.interrupted ? " (interrupted)" : ""));
  if (r.capacity_by) { $("runs-capacity").hidden = false; cell(tr, capacityText(r.capacity, r.capacity_by)); }
  $("runs").tBodies[0].appendChild(tr);
  ranNow.set(r.run, r);
  lastEnded = r.run;
  if (r.run < r.runs) {
    etaAt = Date.now() + 1000 * r.eta_s;
    etaNext = "run " + (r.run + 1) + " of " + r.runs + " next";
  } else etaAt = 0, etaNext = "";
  showETA();
  drawPlan();
}
// The run going now, as the experiment started it.
let going = null;
function onRunStart(r) {
  experiment = true; going = r;
  $("experiment").hidden = false;
  showETA();
  drawPlan();
}
// The planned order (the schedule event, before the first run): each run
// done with its figures (now, or before a resume), the one going, the rest
// to come.
let plan = null;
const ranNow = new Map(); // run number: its run event
function onSchedule(s) {
  experiment = true; plan = s;
  $("experiment").hidden = false;
  drawPlan();
}
function drawPlan() {
  if (!plan) return;
  const rows = [];
  let done = 0, before = 0, toCome = 0;
  for (const s of plan.runs) {
    const r = ranNow.get(s.run) || (s.done ? s : null);
    let state;
    if (r && r.interrupted) state = "interrupted", toCome++;
    else if (r) { state = ranNow.has(s.run) ? "done" : "done before (resumed)"; done++; if (!ranNow.has(s.run)) before++; }
    else if (!ended && going && going.run === s.run) state = "running", toCome++;
    else state = ended ? "not run" : "to come", toCome++;
    const tr = document.createElement("tr");
    tr.className = state === "running" ? "going" : state === "to come" ? "to-come" : "";
    cell(tr, String(s.run)); cell(tr, s.point); cell(tr, "#" + s.rep); cell(tr, state);
    if (r) { cell(tr, fmt(r.rps, 0)); for (const v of r.p) cell(tr, fmt(v, 2)); cell(tr, fmt(100 * r.error_rate, 2) + "%"); }
    else for (let i = 0; i < 5; i++) cell(tr, "");
    rows.push(tr);
  }
  $("plan").tBodies[0].replaceChildren(...rows);
  $("plan-summary").textContent = done + " of " + plan.runs.length + " runs done" + (before ? " (" + before + " before the resume)" : "") +
    (toCome ? ", " + toCome + (ended ? " not run" : " to come") : "") + "; the order is shuffled with the experiment's seed, each round every point once";
}
function showETA() {
  if (!experiment) return;
  if (ended || !etaNext && (!going || going.run === lastEnded)) { $("eta").textContent = "every run has ended"; return; }
  const now = going && going.run !== lastEnded ? "run " + going.run + " of " + going.runs + " going, at " + going.point : etaNext;
  if (!etaNext) { $("eta").textContent = now + "; the ETA comes when a run has ended"; return; }
  const left = Math.max(0, (etaAt - Date.now()) / 1000);
  $("eta").textContent = now + "; about " + (left >= 90 ? fmt(left / 60, 1) + " min" : fmt(left, 0) + " s") + " to go at this pace (the time per run ended so far, times the runs left)";
}
// A figure with its interval: "12.3 [11.9, 12.8]", or "12.3 ±∞".
function withInterval(f, d, scale) {
  const k = scale || 1;
  return fmt(f.median * k, d) + (f.bounded ? " [" + fmt(f.lo * k, d) + ", " + fmt(f.hi * k, d) + "]" : " ±∞");
}
const points = new Map();
function onPoint(pt) {
  points.set(pt.point, pt);
  const rows = [];
  for (const p of points.values()) {
    const tr = document.createElement("tr");
    cell(tr, p.point); cell(tr, String(p.runs));
    cell(tr, withInterval(p.rps, 0));
    for (const q of p.p) cell(tr, withInterval(q, 2));
    cell(tr, withInterval(p.error_rate, 2, 100) + " %");
    if (p.capacity) { $("points-capacity").hidden = false; cell(tr, withInterval(p.capacity, 1) + (p.capacity_by === "vus" ? " VUs" : "/s")); }
    rows.push(tr);
  }
  $("points").tBodies[0].replaceChildren(...rows);
}

// A capacity search: its steps by index, drawn as the rate-vs-latency curve.
let search = null, searchEnded = false;
const searchSteps = new Map();
function onSearch(s) {
  // An experiment's runs may each be a search: the page shows the newest.
  searchSteps.clear(); searchEnded = false; searchAnswer = null;
  if (experiment || frames.length && frames[frames.length - 1].runs > 1) s = Object.assign({}, s, {name: s.name + ", run " + (frames.length ? frames[frames.length - 1].runs : 1)});
  search = s; $("search").hidden = false; $("search-plan").textContent = s.name + " · SLO " + s.slo.join(", ") + (s.plan ? " · " + s.plan : ""); drawSearch(); }
function onSearchStep(st) { searchSteps.set(st.index, st); drawSearch(); }
// headlineStep is the finished step the search's answer is (the last that
// held at that level), else its last finished step; null if none.
function headlineStep() {
  const done = [...searchSteps.values()].filter(s => s.done).sort((a, b) => a.index - b.index);
  const at = searchAnswer && searchAnswer.answer > 0 ? done.filter(s => s.holds && s.level === searchAnswer.answer) : [];
  return at.length ? at[at.length - 1] : done.length ? done[done.length - 1] : null;
}
let searchAnswer = null;
function onSearchEnd(e) {
  searchEnded = true; searchAnswer = e;
  const box = $("search-answer");
  box.replaceChildren(document.createTextNode(e.headline + (e.note ? " (" + e.note + ")" : "") + " "));
  if (e.report) {
    const a = document.createElement("a");
    a.href = e.report + (token ? "?token=" + encodeURIComponent(token) : "");
    a.textContent = "Open the capacity report";
    a.id = "search-report";
    box.appendChild(a);
  }
  box.hidden = false;
  drawSearch();
}
function drawSearch() {
  if (!search) return;
  const all = [...searchSteps.values()].sort((a, b) => a.index - b.index);
  const done = all.filter(s => s.done), last = all[all.length - 1];
  const max = last ? last.max_steps : search.max_steps;
  $("search-progress").textContent = searchEnded ? done.length + (done.length === 1 ? " step" : " steps") : last ? "step " + last.index + " of at most " + max : "–";
  $("search-now").textContent = searchEnded ? "the search is done" : last && !last.done ? last.phase + " at " + last.unit + ", running" : last ? "step " + last.index + " " + (last.holds ? "held" : "broke") : "steps";
  const rows = [];
  for (const s of all) {
    const tr = document.createElement("tr");
    cell(tr, String(s.index)); cell(tr, s.phase); cell(tr, s.unit);
    if (!s.done) { cell(tr, "…"); for (let i = 0; i < 5; i++) cell(tr, ""); cell(tr, "running"); rows.push(tr); continue; }
    cell(tr, fmt(s.throughput_per_s, 1));
    for (const v of s.p) cell(tr, fmt(v, 2));
    cell(tr, fmt(100 * s.error_rate, 2) + "%"); cell(tr, fmt(s.duration_s, 0));
    cell(tr, (s.holds ? "held" : "broke" + (s.clause ? ": " + s.clause : "")) + (s.kept ? " (kept)" : ""));
    tr.className = s.holds ? "held" : "broke";
    rows.push(tr);
  }
  $("search-steps").tBodies[0].replaceChildren(...rows);
  if (!curve) curve = new CurveChart($("c-cap"), search.by === "vus" ? "VUs" : "offered /s");
  const colors = {50: blue, 95: vermillion, 99: green};
  curve.set([...done].sort((a, b) => a.level - b.level),
    (search.lines || []).map(l => ({value: l.ms, label: l.clause, color: colors[l.quantile] || vermillion})),
    last && !last.done ? last.level : null);
}
let curve = null;

function connect() {
  const es = new EventSource("/events" + (token ? "?token=" + encodeURIComponent(token) : ""));
  es.addEventListener("frame", m => {
    const id = Number(m.lastEventId);
    if (id <= lastId) return;
    lastId = id;
    const f = JSON.parse(m.data);
    // Only the newest frame's steps are shown: drop the older ones', and past
    // an hour of frames thin the older half, so a tab left open stays small.
    if (frames.length) delete frames[frames.length - 1].steps;
    frames.push(f);
    if (frames.length > 3600) {
      const half = frames.length >> 1;
      const kept = frames.filter((_, i) => i >= half || i % 2 === 0);
      frames.length = 0; frames.push(...kept);
    }
    live(f);
    showETA();
    redraw();
  });
  es.addEventListener("run", m => {
    const id = Number(m.lastEventId);
    if (id <= lastId) return;
    lastId = id;
    onRun(JSON.parse(m.data));
  });
  for (const [name, fn] of [["search", onSearch], ["search-step", onSearchStep], ["search-end", onSearchEnd], ["point", onPoint], ["run-start", onRunStart], ["schedule", onSchedule]]) {
    es.addEventListener(name, m => {
      const id = Number(m.lastEventId);
      if (id <= lastId) return;
      lastId = id;
      fn(JSON.parse(m.data));
    });
  }
  es.addEventListener("end", m => {
    lastId = Number(m.lastEventId);
    onEnd(JSON.parse(m.data)); showETA(); drawPlan(); redraw(); es.close();
  });
  es.onerror = () => {
    if (ended) return;
    if (es.readyState === EventSource.CLOSED) {
      $("status").textContent = "loadlab has stopped serving this page";
    } else {
      $("status").textContent = "reconnecting…";
    }
  };
  es.onopen = () => { if (frames.length) redraw(); else $("status").textContent = "connected"; };
}

async function start() {
  const q = new URLSearchParams(location.hash.slice(1));
  token = q.get("token") || sessionStorage.getItem("loadlab-token") || "";
  for (;;) {
    const r = await fetch("/events?probe=1" + (token ? "&token=" + encodeURIComponent(token) : ""), {method: "HEAD"});
    if (r.status !== 401) break;
    token = prompt("The token loadlab printed in its terminal:") || "";
  }
  if (token) sessionStorage.setItem("loadlab-token", token);
  connect();
}
window.addEventListener("resize", () => {
  if (charts) for (const c of Object.values(charts)) c.resize();
  if (curve) curve.resize();
});
// For the browser tests: the seq of each frame the page holds.
window.loadlab = Object.freeze({frameSeqs: () => frames.map(f => f.seq)});
start();
