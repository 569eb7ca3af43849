// hapticd dashboard: polls the service's own routes (same origin) and
// draws what they say. No framework, no build step.
"use strict";

const TRACE_SECONDS = 10;
const state = { devices: new Map(), eventsSince: 0, entries: [], families: [], charts: new Map() };
// Tests and curious users can look at what the page holds, errors included.
window.dashboard = state;
state.errors = [];
window.addEventListener("error", (e) => state.errors.push(String(e.message)));
window.addEventListener("unhandledrejection", (e) => state.errors.push(String(e.reason)));

// POLL_TIMEOUT_MS bounds each poll: a service that is hung (stopped, or
// wedged) accepts the connection and never answers, and a poll without a
// bound would wait for ever, the page showing the last state as live.
const POLL_TIMEOUT_MS = 2000;

async function getJSON(path) {
  const r = await fetch(path, { cache: "no-store", signal: AbortSignal.timeout(POLL_TIMEOUT_MS) });
  const body = await r.json();
  if (!r.ok || body.ok === false) throw new Error(body.error || r.status + " " + r.statusText);
  return "ok" in body && "data" in body ? body.data : body;
}

// tryJSON is getJSON for the polls: a poll nobody answered gives null (the
// device poll shows the connection) while a bug in what follows still
// surfaces as an error.
async function tryJSON(path) {
  try { return await getJSON(path); } catch (e) { return null; }
}

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v; else e.setAttribute(k, v);
  }
  for (const c of children) e.append(c instanceof Node ? c : document.createTextNode(String(c)));
  return e;
}

const fmt = (v, d = 3) => (typeof v === "number" ? v.toFixed(d) : "–");
const vec = (v, d) => (v ? `${fmt(v.x, d)}, ${fmt(v.y, d)}, ${fmt(v.z, d)}` : "–");

function setConn(ok, text) {
  const c = document.getElementById("conn");
  c.textContent = text;
  c.className = "badge " + (ok ? "ok" : "err");
}

// ---- devices -------------------------------------------------------------

// GRIP_TYPES are the names a grip's array goes by, under either naming:
// the card of a grip shows what a grip has, not an arm's position and force.
const GRIP_TYPES = new Set(["grip", "verse_grip", "wireless_verse_grip", "custom_verse_grip"]);

// isGrip tells a grip by its array's name, or, for a name given with
// --type-alias, by what it reports (an orientation and no cursor).
function isGrip(type, dev) {
  return GRIP_TYPES.has(type) || (!!dev?.state?.orientation && !dev?.state?.cursor_position);
}

// Rows by what they hold, each label with its unit.
const ARM_ROWS = [["status", "status"], ["position", "position (m)"], ["force", "force (N)"], ["effects", "effects in force (id, type, force N)"],
  ["loop p99", "loop p99"], ["overruns", "overruns"]];
const GRIP_ROWS = [["status", "status"], ["orientation", "orientation (quaternion w, x, y, z)"], ["angles", "yaw, pitch, roll (°)"],
  ["buttons", "buttons (pressed)"], ["hall", "hall level (0–1)"], ["battery", "battery (%)"], ["loop p99", "loop p99"], ["overruns", "overruns"]];

// productName is what a person calls the device ("Minverse"): its device
// type number names its family under either naming, where the array
// ("inverse3", "arm3") is the same for every arm. The array's name when the
// service does not say.
function productName(type, dev) {
  const n = dev?.config?.device_info?.device_type;
  return state.families.find((f) => f.device_type === n)?.product || type;
}

function deviceCard(key, type, id, grip, name) {
  const facts = el("dl", { class: "facts" });
  const rows = {};
  for (const [key, label] of grip ? GRIP_ROWS : ARM_ROWS) {
    rows[key] = el("dd", { class: "v-" + key.split(" ")[0] });
    facts.append(el("dt", {}, label), rows[key]);
  }
  const plot = el("div", { class: "trace" });
  const title = el("h3", {}, name);
  const card = el("div", { class: "device" + (grip ? " grip" : " arm"), "data-device": key }, title, facts, plot);
  // A trace of what the device has: an arm's position (m); a grip's
  // orientation angles (°) and hall level (0–1, on its own axis).
  const d = { key, type, id, grip, card, title, rows, t: [], x: [], y: [], z: [], hall: [], chart: null };
  if (window.uPlot) {
    const opts = grip ? {
      scales: { x: { time: true }, deg: {}, level: { range: [0, 1] } },
      series: [{}, { label: "yaw (°)", stroke: "#c0392b", scale: "deg" }, { label: "pitch (°)", stroke: "#2f8f46", scale: "deg" },
        { label: "roll (°)", stroke: "#2a6fdb", scale: "deg" }, { label: "hall level", stroke: "#8e44ad", scale: "level" }],
      axes: [{}, { scale: "deg", size: 50, values: (u, vals) => vals.map((v) => v.toFixed(0) + "°") },
        { scale: "level", side: 1, size: 40, grid: { show: false }, values: (u, vals) => vals.map((v) => v.toFixed(1)) }],
    } : {
      scales: { x: { time: true } },
      series: [{}, { label: "x (m)", stroke: "#c0392b" }, { label: "y (m)", stroke: "#2f8f46" }, { label: "z (m)", stroke: "#2a6fdb" }],
      axes: [{}, { size: 60, values: (u, vals) => vals.map((v) => v.toFixed(3)) }],
    };
    d.chart = new uPlot({ width: 540, height: 170, legend: { show: true }, ...opts }, grip ? [[], [], [], [], []] : [[], [], [], []], plot);
  }
  return d;
}

// gripAngles turns a grip's orientation into yaw (about Z), pitch (about X)
// and roll (about Y) in degrees: the intrinsic Z-X-Y order the vendor's
// tutorials use, in the +X right, +Y forward, +Z up frame.
function gripAngles(q) {
  const { w, x, y, z } = q;
  const r12 = 2 * (x * y - w * z), r22 = 1 - 2 * (x * x + z * z);
  const r31 = 2 * (x * z - w * y), r32 = 2 * (y * z + w * x), r33 = 1 - 2 * (x * x + y * y);
  const deg = 180 / Math.PI;
  return [Math.atan2(-r12, r22) * deg, Math.asin(Math.max(-1, Math.min(1, r32))) * deg, Math.atan2(-r31, r33) * deg];
}

// trim keeps the last TRACE_SECONDS of a card's trace.
function trim(d, now, series) {
  while (d.t.length && d.t[0] < now - TRACE_SECONDS) { d.t.shift(); for (const s of series) s.shift(); }
}

function showGrip(d, s, now) {
  const o = s.orientation;
  d.rows["orientation"].textContent = o ? [o.w, o.x, o.y, o.z].map((v) => fmt(v, 3)).join(", ") : "–";
  const b = s.buttons || {};
  const pressed = ["a", "b", "c", "home"].filter((k) => b[k] === true);
  if (s.button === true && !pressed.length) pressed.push("button");
  d.rows["buttons"].textContent = pressed.length ? pressed.join(", ") : "none";
  d.rows["hall"].textContent = typeof s.hall === "number" ? fmt(s.hall, 2) : "–";
  d.rows["battery"].textContent = typeof s.battery_level === "number" ? fmt(s.battery_level * 100, 0) + " %" : "–";
  if (!o) { d.rows["angles"].textContent = "–"; return; }
  const [yaw, pitch, roll] = gripAngles(o);
  d.rows["angles"].textContent = [yaw, pitch, roll].map((v) => fmt(v, 1)).join(", ");
  d.t.push(now); d.x.push(yaw); d.y.push(pitch); d.z.push(roll); d.hall.push(typeof s.hall === "number" ? s.hall : null);
  trim(d, now, [d.x, d.y, d.z, d.hall]);
  d.chart?.setData([d.t, d.x, d.y, d.z, d.hall]);
}

function forceArrow(f) {
  // Top view of the force (x right, y up), scaled so 2 N reaches the edge.
  const s = 18 / 2, x = Math.max(-18, Math.min(18, (f?.x || 0) * s)), y = Math.max(-18, Math.min(18, (f?.y || 0) * s));
  return `<svg class="arrow" width="40" height="40" viewBox="-20 -20 40 40"><circle r="19" fill="none" stroke="#dde1e7"/>` +
    `<line x1="0" y1="0" x2="${x.toFixed(1)}" y2="${(-y).toFixed(1)}" stroke="#1d2430" stroke-width="2"/></svg>`;
}

// mark colours a readout good or bad, keeping its other classes.
function mark(e, good) {
  e.classList.toggle("status-ok", good);
  e.classList.toggle("status-bad", !good);
}

function statusText(st) {
  if (!st) return "–";
  const bad = Object.entries(st).filter(([k, v]) => v === false && k !== "in_use").map(([k]) => "not " + k);
  return bad.length ? bad.join(", ") : st.in_use ? "ready, in use" : "ready";
}

const compare = (a, b) => (a < b ? -1 : a > b ? 1 : 0);

// cardOrder is the one order of the cards, whatever order devices arrive,
// leave and come back in: arms before grips, then by the array's name and
// the device's id (the shorter first, so that decimal ids count up).
function cardOrder(a, b) {
  return (a.grip - b.grip) || compare(a.type, b.type) || (a.id.length - b.id.length) || compare(a.id, b.id);
}

// placeCards puts the cards in cardOrder, moving them only when one is out
// of place.
function placeCards(box) {
  const cards = [...state.devices.values()].sort(cardOrder).map((d) => d.card);
  if (cards.some((c, i) => box.children[i] !== c)) box.append(...cards);
}

async function pollDevices() {
  let inv;
  try {
    inv = await getJSON("/devices");
    setConn(true, "live");
  } catch (e) {
    setConn(false, "no answer: " + e.message);
    // What the cards show is from before: say so on each, rather than go
    // on showing a force and "ready" as if they were live.
    for (const d of state.devices.values()) {
      d.card.classList.add("stale");
      d.rows["status"].textContent = "no answer from hapticd (last known state below)";
      mark(d.rows["status"], false);
    }
    return;
  }
  const now = Date.now() / 1000;
  const box = document.getElementById("devices");
  const seen = new Set();
  for (const [type, list] of Object.entries(inv)) {
    if (!Array.isArray(list)) continue;
    for (const dev of list) {
      const key = type + "/" + dev.device_id;
      seen.add(key);
      const name = `${productName(type, dev)} ${dev.device_id}`;
      let d = state.devices.get(key);
      if (!d) {
        d = deviceCard(key, type, dev.device_id, isGrip(type, dev), name);
        state.devices.set(key, d);
        box.querySelector(".empty")?.remove();
        box.append(d.card); // placeCards puts it in its place
        fillDeviceChoices();
      }
      d.config = dev.config;
      d.card.classList.remove("stale");
      if (d.title.textContent !== name) { d.title.textContent = name; fillDeviceChoices(); }
      const s = dev.state || {};
      d.rows["status"].textContent = statusText(dev.status);
      mark(d.rows["status"], dev.status?.ready !== false);
      if (d.grip) {
        showGrip(d, s, now);
      } else if (s.cursor_position) {
        const p = s.cursor_position;
        d.rows["position"].textContent = vec(p, 4);
        d.t.push(now); d.x.push(p.x); d.y.push(p.y); d.z.push(p.z);
        trim(d, now, [d.x, d.y, d.z]);
        d.chart?.setData([d.t, d.x, d.y, d.z]);
        // Numbers only, so building the markup from them is safe.
        d.rows["force"].innerHTML = `${vec(s.current_cursor_force, 2)} ${forceArrow(s.current_cursor_force)}`;
        showEffects(d, type, s.effects);
      }
    }
  }
  for (const [key, d] of state.devices) {
    if (!seen.has(key)) { d.card.remove(); d.chart?.destroy(); state.devices.delete(key); fillDeviceChoices(); }
  }
  placeCards(box);
}

// showEffects lists the effects an arm renders. The frame says how many
// (state.effects); their ids, types and forces come from the effects
// route, asked only while there are some and one ask at a time.
async function showEffects(d, type, fx) {
  const row = d.rows["effects"];
  if (!fx || !fx.count) {
    row.replaceChildren("none");
    return;
  }
  if (d.effectsAsking) return;
  d.effectsAsking = true;
  try {
    const v = await tryJSON(`/${type}/${encodeURIComponent(d.id)}/effects`);
    if (!v) return;
    const list = el("ul", { class: "effects" });
    for (const e of v.effects) {
      // Text nodes only: ids are the client's strings.
      list.append(el("li", { "data-effect": e.id }, `${e.id} ${e.type} ${vec(e.rendered_force, 2)}`));
    }
    // Whose they are: a session of this service, or (on a lab's node) a
    // session of the gateway that forwarded them.
    const g = v.gateway;
    const owner = el("div", { class: "effects-owner" },
      g ? `by session ${g.session_id} of gateway ${g.id} (${g.address})` : `by session ${v.session_id}`);
    row.replaceChildren(...(v.effects.length ? [owner, list] : ["none"]));
  } finally {
    d.effectsAsking = false;
  }
}

async function pollStats() {
  const st = await tryJSON("/stats");
  if (!st) return;
  for (const ds of st.devices) {
    const d = state.devices.get(ds.device_type + "/" + ds.device_id);
    if (!d) continue;
    const late = ds.loop.period_us_p99 > 1.5 * ds.loop.target_us;
    d.rows["loop p99"].textContent = `${fmt(ds.loop.period_us_p99 / 1000, 3)} ms (target ${fmt(ds.loop.target_us / 1000, 3)} ms)`;
    mark(d.rows["loop p99"], !late);
    d.rows["overruns"].textContent = `${ds.loop.overruns} of ${ds.loop.ticks} ticks`;
  }
}

// ---- hardware ports ------------------------------------------------------

// pollPorts shows why a plugged-in device may have no card: each port the
// hardware scan saw, a failed one with its reason, fix hint and next try.
async function pollPorts() {
  const p = await tryJSON("/ports");
  if (!p) return;
  document.getElementById("ports-note").textContent = p.watching ? "" :
    "No hardware watched: no --hw-port, no --emulate-arms, and the USB scan is off.";
  const rows = p.ports.map((port) => el("tr", { "data-port": port.path, class: "port-" + port.outcome },
    el("td", {}, port.path, port.product ? el("div", { class: "note" }, port.product) : ""),
    el("td", { class: "outcome" }, port.outcome + (port.failures > 1 ? ` (${port.failures} in a row)` : "")),
    el("td", {}, port.device_id ? `${port.device_type} ${port.device_id}` : port.reason || "–",
      port.hint ? el("div", { class: "note" }, port.hint) : ""),
    el("td", {}, port.retry_at ? new Date(port.retry_at).toLocaleTimeString() : "–")));
  if (p.watching && !rows.length) rows.push(el("tr", {}, el("td", { colspan: 4, class: "empty" }, "No port found yet.")));
  document.querySelector("#ports tbody").replaceChildren(...rows);
}

// ---- sessions ------------------------------------------------------------

let closedAvailable = true;

async function pollSessions() {
  const data = await tryJSON("/sessions");
  if (data) {
    const body = document.querySelector("#sessions tbody");
    body.replaceChildren(...data.sessions.map((s) => el("tr", { "data-session": s.session_id },
      el("td", {}, "#" + s.session_id), el("td", {}, s.profile?.name || "–"), el("td", {}, s.api_version),
      el("td", {}, s.remote), el("td", {}, s.controls.map((c) => c.device_type + " " + c.device_id).join(", ") || "–"),
      el("td", {}, new Date(s.connected_at).toLocaleTimeString()))));
    if (!data.sessions.length) body.append(el("tr", {}, el("td", { colspan: 6, class: "empty" }, "No session connected.")));
    // The config form offers the connected sessions by id.
    document.getElementById("cfg-sessions").replaceChildren(...data.sessions.map((s) =>
      el("option", { value: "#" + s.session_id }, s.profile?.name || s.remote)));
  }
  if (closedAvailable) await pollClosed();
}

// pollClosed shows the recent closes, where the service keeps them
// (GET /sessions/closed); without the route the table says so, once.
async function pollClosed() {
  let body;
  try {
    const r = await fetch("/sessions/closed", { cache: "no-store", signal: AbortSignal.timeout(POLL_TIMEOUT_MS) });
    if (r.status === 404) {
      closedAvailable = false;
      document.getElementById("closed-note").textContent = "This service does not keep recent closes (no /sessions/closed).";
      return;
    }
    body = await r.json();
  } catch (e) {
    return; // try again next poll
  }
  const list = Array.isArray(body.data?.closed) ? body.data.closed : [];
  // Oldest first on the wire; the newest twenty, newest first, here.
  document.querySelector("#closed tbody").replaceChildren(...list.slice(-20).reverse().map((s) => el("tr", { "data-session": s.session_id },
    el("td", {}, "#" + s.session_id), el("td", {}, s.profile?.name || "–"), el("td", {}, s.api_version || "–"),
    el("td", {}, s.closed_at ? new Date(s.closed_at).toLocaleTimeString() : "–"),
    el("td", {}, s.reason || "–"))));
}

// ---- configuration -------------------------------------------------------

function fillDeviceChoices() {
  const sel = document.getElementById("cfg-device");
  const was = sel.value;
  sel.replaceChildren(...[...state.devices.keys()].sort().map((k) => el("option", { value: k }, state.devices.get(k).title.textContent)));
  if ([...state.devices.keys()].includes(was)) sel.value = was;
  fillEntryChoices();
}

function fillEntryChoices() {
  const sel = document.getElementById("cfg-entry");
  const was = sel.value;
  // A grip has only the entries that act without force output.
  const grip = state.devices.get(document.getElementById("cfg-device").value)?.grip;
  const entries = state.entries.filter((e) => !grip || e.grip);
  sel.replaceChildren(...entries.map((e) => el("option", { value: e.path }, e.path + (e.session_scoped ? " (per session)" : ""))));
  if (entries.some((e) => e.path === was)) sel.value = was;
  sessionField();
}

function currentEntry() {
  return state.entries.find((e) => e.path === document.getElementById("cfg-entry").value);
}

function sessionField() {
  document.getElementById("cfg-session-label").hidden = !currentEntry()?.session_scoped;
}

function entryURL() {
  const [type, id] = document.getElementById("cfg-device").value.split("/");
  const e = currentEntry();
  let url = `/${type}/${encodeURIComponent(id)}/config/${e.path}`;
  const sess = document.getElementById("cfg-session").value.trim();
  if (e.session_scoped && sess) url += "?session=" + encodeURIComponent(sess);
  return url;
}

function showResult(ok, text) {
  const out = document.getElementById("cfg-result");
  out.textContent = text;
  out.className = ok ? "ok" : "err";
}

// cfgCall sends one request and shows the service's own answer: the value
// now in force, or its error message and code. Only the latest request's
// answer is shown: changing the device and then the entry sends two reads,
// and the first one's answer may arrive last.
let cfgSeq = 0;
async function cfgCall(method, body) {
  if (!currentEntry()) return;
  const seq = ++cfgSeq;
  let r, doc;
  try {
    r = await fetch(entryURL(), { method, body, cache: "no-store" });
    doc = await r.json();
  } catch (e) {
    if (seq === cfgSeq) showResult(false, "no answer: " + e.message);
    return;
  }
  if (seq !== cfgSeq) return;
  if (doc.ok) {
    document.getElementById("cfg-value").value = JSON.stringify(doc.data, null, 1);
    showResult(true, method === "GET" ? "read" : "saved: " + JSON.stringify(doc.data));
  } else {
    showResult(false, `${doc.error} (${doc.code}, HTTP ${r.status})`);
  }
}

function setupConfig() {
  document.getElementById("cfg-device").addEventListener("change", () => { fillEntryChoices(); cfgCall("GET"); });
  document.getElementById("cfg-entry").addEventListener("change", () => { sessionField(); cfgCall("GET"); });
  document.getElementById("cfg-load").addEventListener("click", () => cfgCall("GET"));
  document.getElementById("cfg-reset").addEventListener("click", () => cfgCall("DELETE"));
  document.getElementById("cfg").addEventListener("submit", (ev) => { ev.preventDefault(); cfgCall("POST", document.getElementById("cfg-value").value); });
}

// ---- events --------------------------------------------------------------

// EVENTS_PAGE is how many events one ask takes; a poll asks again until it
// has caught up (at most EVENTS_PAGES times), or a burst, or a background
// tab the browser polls once a minute, would leave the list further behind
// at every poll until the ring dropped what it had not shown.
const EVENTS_PAGE = 200, EVENTS_PAGES = 20;

// noteEvents puts a line of the page's own among the events: what the list
// lacks, and why.
function noteEvents(list, name, text, attrs) {
  list.prepend(el("li", { class: "warning", "data-name": name, ...attrs },
    el("span", { class: "time" }, new Date().toLocaleTimeString() + " "), el("b", {}, name), " ", text));
}

async function pollEvents() {
  const list = document.getElementById("events");
  for (let page = 0; page < EVENTS_PAGES; page++) {
    const data = await tryJSON(`/events?since=${state.eventsSince}&limit=${EVENTS_PAGE}`);
    if (!data) return;
    // The last seq shown was an earlier run's: the service answers from
    // its new run's first event and says so.
    if (data.restarted) {
      noteEvents(list, "service-restarted", "hapticd restarted: the events above are its new run's");
    }
    if (data.missed > 0) {
      noteEvents(list, "events-missed", `${data.missed} events not shown: the service's ring (--event-ring) no longer held them`,
        { "data-missed": data.missed });
    }
    for (const e of data.events) {
      list.prepend(el("li", { class: e.level, "data-name": e.name, "data-seq": e.seq },
        el("span", { class: "time" }, new Date(e.time).toLocaleTimeString() + " "), el("b", {}, e.name), " ", e.message));
    }
    // Where to resume: within this run even when it has published nothing
    // yet, or a restart would be noted at every poll.
    state.eventsSince = data.next_seq - 1;
    while (list.children.length > 300) list.lastElementChild.remove();
    if (data.events.length < EVENTS_PAGE) return;
  }
}

// ---- migration report ----------------------------------------------------

async function pollMigration() {
  const u = await tryJSON("/deprecations");
  if (!u) return;
  document.getElementById("mig-since").textContent = new Date(u.since).toLocaleString();
  const row = (kind, name, t, repl) => el("tr", {}, el("td", {}, kind), el("td", {}, name), el("td", {}, t.count),
    el("td", {}, t.last_seen ? new Date(t.last_seen).toLocaleTimeString() : "–"), el("td", {}, repl || "–"));
  const rows = [
    ...u.routes.map((r) => row("route", r.name, r, r.replacement)),
    ...u.commands.map((c) => row("command", c.name, c, c.replacement)),
    ...u.legacy_api.routes.map((r) => row("3.0 route", r.route, r, "the same route without /3.0")),
  ];
  if (u.legacy_api.sessions.count) rows.push(row("3.0 sessions", `${u.legacy_api.open_sessions} open`, u.legacy_api.sessions, "a 3.x client"));
  if (!rows.length) rows.push(el("tr", {}, el("td", { colspan: 5, class: "empty" }, "Nothing deprecated used since start.")));
  document.querySelector("#migration tbody").replaceChildren(...rows);
}

// ---- start ---------------------------------------------------------------

function every(ms, fn) {
  let busy = false;
  const tick = async () => { if (busy) return; busy = true; try { await fn(); } finally { busy = false; } };
  tick();
  setInterval(tick, ms);
}

async function start() {
  setupConfig();
  try {
    const v = await getJSON("/version");
    document.getElementById("version").textContent = `${v.hapticd_version} · API ${v.version}`;
  } catch (e) { /* shown by the device poll */ }
  try { state.entries = await getJSON("/ui/entries.json"); } catch (e) { state.entries = []; }
  try { state.families = await getJSON("/ui/families.json"); } catch (e) { state.families = []; }
  every(100, pollDevices);
  every(1000, pollStats);
  every(1000, pollSessions);
  every(1000, pollPorts);
  every(1000, pollEvents);
  every(3000, pollMigration);
}

start();
