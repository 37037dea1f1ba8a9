// waitq console: events with their live sizes, phase, draw, fairness and
// door figures; the chosen event's charts over time (charts.js); its page,
// challenge and join tokens (settings.js); each event's admission (a fixed rate, or the adaptive
// controller's state, its recent changes and the health reporters) with the
// settings a guard needs to report; changes of capacity, admission rate and
// state (open, paused, closed); adaptive admission on, changed or off; and
// scheduling a ticket drop (opening, pre-queue, close); deleting an event.
// A change that pauses, resumes, closes, slows, schedules or deletes a sale
// asks for confirmation first, saying what will happen (settings.js). The
// console speaks the waiting room page's languages (i18n.js, its own
// strings in console-i18n.js): ?lang=, else the browser's. The admin
// token is kept in sessionStorage: for this tab only, never in
// localStorage.
"use strict";

const $ = (id) => document.getElementById(id);
let config = { producerUrl: "" };
let token = "";
let timer = null;
// events holds the latest listing by id, for the forms' defaults.
let events = new Map();

function api(path, init = {}) {
  init.headers = Object.assign({ Authorization: `Bearer ${token}` }, init.headers || {});
  return fetch(`${config.producerUrl}${path}`, init);
}

// el makes an element with text, and a class when given.
function el(tag, text, cls) {
  const e = document.createElement(tag);
  if (text !== undefined) e.textContent = text;
  if (cls) e.className = cls;
  return e;
}

// when shows unix ms t in local time.
function when(t) {
  return new Date(t).toLocaleString();
}

function ms(v) {
  return v >= 1000 ? `${(v / 1000).toFixed(1)} s` : `${v} ms`;
}

// clock shows unix ms t as a time of day, with the date when not today.
function clock(t) {
  const d = new Date(t);
  return d.toDateString() === new Date().toDateString() ? d.toLocaleTimeString() : d.toLocaleString();
}

// age says how long ago d ms is, by this browser's clock.
function age(d) {
  if (d < 1000) return "just now";
  if (d < 60_000) return `${Math.floor(d / 1000)} s ago`;
  if (d < 3_600_000) return `${Math.floor(d / 60_000)} min ago`;
  if (d < 86_400_000) return `${Math.floor(d / 3_600_000)} h ago`;
  return `${Math.floor(d / 86_400_000)} days ago`;
}

// count says n things: "1 stop", "2 stops".
function count(n, thing) {
  return `${n} ${thing}${n === 1 ? "" : "s"}`;
}

function pct(v) {
  return `${(100 * v).toFixed(1)} %`;
}

// scheduleCell describes e's schedule: the opening, the pre-queue, the close.
function scheduleCell(e) {
  const td = el("td");
  if (!e.opensAt && !e.closesAt) {
    td.textContent = "none";
    return td;
  }
  const lines = [];
  if (e.opensAt) {
    lines.push(`opens ${when(e.opensAt)}`);
    lines.push(e.prequeueSeconds ? `pre-queue ${e.prequeueSeconds} s, from ${when(e.opensAt - 1000 * e.prequeueSeconds)}` : "no pre-queue");
  }
  lines.push(e.closesAt ? `closes ${when(e.closesAt)}` : "never closes");
  for (const l of lines) td.appendChild(el("div", l));
  return td;
}

// drawCell shows e's draw: the pre-queue's size, the commitment, and from
// the opening the seed and a button that downloads the export for
// waitq-verify.
function drawCell(e) {
  const td = el("td");
  if (!e.draw) {
    td.textContent = "none";
    return td;
  }
  td.appendChild(el("div", `${e.draw.prequeueSize} in the pre-queue`, "prequeue-size"));
  td.appendChild(el("div", "commitment:"));
  td.appendChild(el("code", e.draw.commitment, "hash commitment"));
  if (e.draw.seed) {
    td.appendChild(el("div", "seed:"));
    td.appendChild(el("code", e.draw.seed, "hash seed"));
    const b = el("button", "Export the draw", "secondary export");
    b.type = "button";
    b.addEventListener("click", () => exportDraw(e.eventId));
    td.appendChild(b);
  } else {
    td.appendChild(el("div", "seed: revealed at the opening", "muted"));
  }
  return td;
}

// fairnessCell shows inversions (joins overtaken through consumer lag) and
// the ingest delay's quantiles (upper bounds of power-of-two buckets).
function fairnessCell(e) {
  const td = el("td");
  const f = e.fairness || { inversions: 0, ingestDelayMs: { count: 0, p50: 0, p99: 0 } };
  td.appendChild(el("div", `${f.inversions} inversions`, f.inversions ? "inversions error" : "inversions"));
  const d = f.ingestDelayMs;
  td.appendChild(el("div", d.count ? `ingest delay p50 ≤ ${ms(d.p50)}, p99 ≤ ${ms(d.p99)} (${d.count} joins)` : "no joins ingested", "ingest-delay"));
  return td;
}

async function refresh() {
  try {
    const r = await api("/v1/admin/events");
    const body = await r.json();
    if (r.status !== 200) {
      $("admin-error").textContent = body.error ? body.error.message : i18n.t("c.error", { status: r.status });
      return;
    }
    $("admin-error").textContent = "";
    const rows = body.events.map((e) => {
      const tr = document.createElement("tr");
      for (const v of [e.eventId, e.state, e.waiting, e.active, e.capacity, e.admittedTotal, rateCell(e), e.phase]) {
        tr.appendChild(el("td", String(v)));
      }
      const door = el("td", undefined, "door");
      for (const line of doorText(e)) door.append(el("div", line));
      tr.append(scheduleCell(e), drawCell(e), fairnessCell(e), door);
      return tr;
    });
    $("events").querySelector("tbody").replaceChildren(...rows);
    events = new Map(body.events.map((e) => [e.eventId, e]));
    record(body.events, Date.now());
    renderAdmission(body.events);
    renderView(body.events);
    $("events").hidden = false;
    for (const id of ["event-view", "admission", "capacity-form", "page-form", "challenge-form", "jointoken-form", "adaptive-form", "schedule-form", "delete-form"]) $(id).hidden = false;
  } catch (e) {
    $("admin-error").textContent = i18n.t("c.unreachable");
  }
}

// rateCell is the events table's rate: the configured one, or an adaptive
// event's effective rate and ceiling.
function rateCell(e) {
  if (!e.adaptive) return e.admitPerMinute || "no limit";
  const c = e.control;
  return c && c.phase ? `${c.admitPerMinute} now, adaptive up to ${e.admitPerMinute}` : `adaptive up to ${e.admitPerMinute}`;
}

// putEvent sends an admin PUT of change to event ev and returns the answer:
// ok and the event's status, or the API's message.
async function putEvent(ev, change) {
  try {
    const r = await api(`/v1/admin/events/${encodeURIComponent(ev)}`, {
      method: "PUT", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(change),
    });
    const body = await r.json();
    return { ok: r.ok, body, message: r.ok ? "" : (body.error ? body.error.message : `Error ${r.status}`) };
  } catch (e) {
    return { ok: false, message: "producer-api cannot be reached." };
  }
}

// say shows msg in the status element out, marked as an error or not (the
// words say which, the colour only repeats it).
function say(out, msg, error) {
  out.textContent = msg;
  out.dataset.state = error ? "error" : "";
}

async function saveCapacity(event) {
  event.preventDefault();
  const ev = $("cap-event").value.trim();
  const change = {};
  if ($("cap-value").value !== "") change.capacity = Number($("cap-value").value);
  if ($("cap-rate").value !== "") change.admitPerMinute = Number($("cap-rate").value);
  if ($("cap-state").value !== "") change.state = $("cap-state").value;
  const ask = risky(events.get(ev), change);
  if (ask && !(await confirmChange(...ask))) {
    say($("cap-status"), i18n.t("c.cap.nothing", { event: ev }));
    return;
  }
  const { ok, body, message } = await putEvent(ev, change);
  if (ok) {
    const rate = body.adaptive ? `at most ${body.admitPerMinute} admissions a minute (adaptive)` : `${body.admitPerMinute || "no limit on"} admissions a minute`;
    say($("cap-status"), `${ev} is now ${body.state} with capacity ${body.capacity}, ${rate}.`);
  } else {
    say($("cap-status"), message, true);
  }
  refresh();
}

// localMs reads a datetime-local input as unix ms (the browser's time
// zone); NaN when empty or invalid.
function localMs(input) {
  return input.value === "" ? NaN : new Date(input.value).getTime();
}

async function saveSchedule(event) {
  event.preventDefault();
  const ev = $("sch-event").value.trim();
  const opensAt = localMs($("sch-opens"));
  const closesAt = $("sch-closes").value === "" ? 0 : localMs($("sch-closes"));
  if (Number.isNaN(opensAt) || Number.isNaN(closesAt)) {
    $("sch-status").textContent = i18n.t("c.sch.bad");
    return;
  }
  const change = { opensAt, prequeueSeconds: Number($("sch-prequeue").value), closesAt };
  if ($("sch-capacity").value !== "") change.capacity = Number($("sch-capacity").value);
  if (!(await confirmChange(...scheduleAsk(ev, events.get(ev), change)))) {
    $("sch-status").textContent = i18n.t("c.sch.nothing", { event: ev });
    return;
  }
  try {
    const r = await api(`/v1/admin/events/${encodeURIComponent(ev)}`, {
      method: "PUT", headers: { "Content-Type": "application/json" },
      body: JSON.stringify(change),
    });
    const body = await r.json();
    if (!r.ok) {
      $("sch-status").textContent = body.error ? body.error.message : `Error ${r.status}`;
      return;
    }
    const from = body.opensAt - 1000 * (body.prequeueSeconds || 0);
    const commitment = el("code", body.draw ? body.draw.commitment : "–", "hash");
    commitment.id = "sch-commitment";
    $("sch-status").replaceChildren(
      el("span", `${ev} opens ${when(body.opensAt)}; its pre-queue takes joins from ${when(from)}${body.closesAt ? `; it closes ${when(body.closesAt)}` : ""}. The draw's commitment, to publish now: `),
      commitment);
  } catch (e) {
    $("sch-status").textContent = "producer-api cannot be reached.";
    return;
  }
  refresh();
}

// exportDraw downloads the draw's export, the input of waitq-verify.
async function exportDraw(id) {
  const r = await api(`/v1/admin/events/${encodeURIComponent(id)}/draw`);
  const body = await r.json();
  if (!r.ok) {
    $("admin-error").textContent = body.error ? body.error.message : `Error ${r.status}`;
    return;
  }
  const a = el("a");
  a.href = URL.createObjectURL(new Blob([JSON.stringify(body, null, 2)], { type: "application/json" }));
  a.download = `${id}-draw.json`;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 10000);
}

// ---- Admission: per event, the fixed rate or the adaptive controller, the
// health reporters, and the guard's settings.

// panels keeps each event's admission panel, so that a refresh rebuilds
// only what changed and the buttons, the open guard settings and the focus
// stay put.
const panels = new Map();

// Words for the reasons of a rate change (queue.RateChange.Reason).
const reasons = {
  start: "controller started",
  healthy: "increase: the shop is healthy",
  latency: "decrease: p95 latency over the target",
  errors: "decrease: error share over the limit",
  load: "decrease: load over the limit",
  no_signal: "no health report",
  signal_back: "health reports again",
  ceiling: "the floor or the ceiling moved",
};

// svg makes an SVG element with attributes.
function svg(tag, attrs) {
  const e = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  return e;
}

// spans makes a paragraph or cell of texts and elements.
function spans(tag, parts, cls) {
  const e = el(tag, undefined, cls);
  e.append(...parts.map((p) => (typeof p === "string" ? document.createTextNode(p) : p)));
  return e;
}

// since is a text saying how long ago unix ms t was, kept up to date by
// updateAges; with timeoutMs, it also says when that is too old for the
// controller.
function since(t, timeoutMs) {
  const s = el("span", "", "age");
  s.dataset.at = String(t);
  if (timeoutMs) s.dataset.timeout = String(timeoutMs);
  s.title = when(t);
  return s;
}

function updateAges() {
  const now = Date.now();
  for (const s of document.querySelectorAll("#admission-panels [data-at]")) {
    const d = now - Number(s.dataset.at);
    const stale = s.dataset.timeout && d > Number(s.dataset.timeout);
    s.textContent = age(d) + (stale ? " (too old to count)" : "");
  }
}

// renderAdmission keeps one panel per event, in the listing's order.
function renderAdmission(list) {
  const box = $("admission-panels");
  const ids = new Set(list.map((e) => e.eventId));
  for (const [id, p] of panels) {
    if (!ids.has(id)) {
      p.root.remove();
      panels.delete(id);
    }
  }
  list.forEach((e, i) => {
    let p = panels.get(e.eventId);
    if (!p) {
      p = makePanel(e.eventId);
      panels.set(e.eventId, p);
    }
    updatePanel(p, e);
    if (box.children[i] !== p.root) box.insertBefore(p.root, box.children[i] || null);
  });
  $("admission-empty").hidden = list.length > 0;
  updateAges();
}

// makePanel builds the parts of an event's panel that stay: the heading,
// the place of the live figures, the button to the adaptive form and the
// guard settings.
function makePanel(id) {
  const root = el("section", undefined, "admission-panel");
  root.dataset.event = id;
  const h = el("h3");
  h.id = `adm-${id}`;
  const mode = el("span", "", "badge mode");
  h.append(el("span", `${id} `), mode);
  root.setAttribute("aria-labelledby", h.id);
  const live = el("div", undefined, "live");
  const edit = el("button", "", "secondary edit-adaptive");
  edit.type = "button";
  const p = { id, root, mode, live, edit, event: null, sig: "", tokenSig: "" };
  edit.addEventListener("click", () => editAdaptive(p.event));
  p.guard = makeGuard(p);
  root.append(h, live, edit, p.guard.root);
  return p;
}

// updatePanel shows e in p, rebuilding the live figures when they changed.
function updatePanel(p, e) {
  p.event = e;
  p.mode.textContent = i18n.t(e.adaptive ? "c.mode.adaptive" : "c.mode.fixed");
  p.mode.dataset.mode = e.adaptive ? "adaptive" : "fixed";
  p.edit.textContent = i18n.t(e.adaptive ? "c.ad.edit" : "c.ad.on");
  const sig = JSON.stringify([e.adaptive, e.control, e.health, e.admitPerMinute, e.state]);
  if (sig !== p.sig) {
    p.sig = sig;
    const cols = el("div", undefined, "panel-cols");
    cols.append(rateColumn(e), reportersColumn(e));
    p.live.replaceChildren(cols);
  }
  updateGuard(p, e);
}

// rateColumn describes how e admits: its fixed rate or its controller.
function rateColumn(e) {
  const col = el("div", undefined, "rate-col");
  if (!e.adaptive) {
    col.append(el("p", e.admitPerMinute
      ? i18n.t("c.fixed.rate", { rate: String(e.admitPerMinute) })
      : i18n.t("c.fixed.none"), "fixed"));
    return col;
  }
  const a = e.adaptive;
  const c = e.control;
  const dl = el("dl", undefined, "facts");
  const fact = (term, parts, cls) => {
    dl.append(el("dt", term), spans("dd", parts, cls));
  };
  const ceiling = el("span", String(e.admitPerMinute), "ceiling");
  const floor = el("span", String(a.minAdmitPerMinute), "floor");
  if (!c || !c.phase) {
    col.append(el("p", `Controller not started yet: no admission step has run. The slot monitor (ws-gateway) starts it at ${a.startAdmitPerMinute} a minute.`, "notice not-started"));
    fact("Bounds", ["floor ", floor, ", ceiling ", ceiling, " a minute"]);
  } else {
    const parts = [el("span", String(c.admitPerMinute), "effective"), " a minute now; floor ", floor, ", ceiling ", ceiling];
    if (c.admitPerMinute !== c.rate) parts.push(`; the controller's rate ${c.rate} resumes when reports come back`);
    fact("Rate", parts, "rate-now");
    fact("Phase", [c.phase === "start"
      ? "start: the rate doubles while the shop is healthy"
      : `steady: +${a.increasePerStep} a step while healthy, ×${a.decreaseFactor} when over a limit`], "phase");
  }
  fact("Signal", signalParts(e), "signal");
  if (c && c.signal) {
    const s = c.signal;
    const lines = [
      limit("p95", s.p95Ms, a.targetLatencyMs, (v) => ms(Math.round(v)), "target"),
      limit("errors", s.errorRate, a.maxErrorRate, pct, "max"),
      limit("load", s.load, a.maxLoad, (v) => v.toFixed(2), "max"),
    ];
    const over = [];
    if (s.requests !== undefined) over.push(count(s.requests, "request"));
    if (s.windowMs) over.push(`a ${ms(s.windowMs)} window`);
    if (s.reporters) over.push(count(s.reporters, "reporter"));
    const dd = spans("dd", lines, "last-step");
    dd.append(el("div", `at ${clock(c.signalAt)}${over.length ? `, over ${over.join(", ")}` : ""}`, "muted"));
    dl.append(el("dt", "Last step"), dd);
  } else if (c && c.phase) {
    fact("Last step", ["no step has used a report yet"], "last-step");
  }
  if (c && c.reason) {
    const reason = el("span", c.reason, "reason");
    reason.title = reasons[c.reason] || "";
    fact("Last change", [reason, ` — ${c.detail}, at ${clock(c.changedAt)}`], "last-change");
  }
  if (c && c.phase) {
    fact("Counters", [`${count(c.increases, "increase")}, ${count(c.decreases, "decrease")}, ${count(c.stops, "stop")} for want of reports`], "counters");
  }
  fact("Settings", [settingsText(a)], "settings");
  col.append(dl);
  if (c && c.changes && c.changes.length) {
    const spark = sparkline(c.changes, e.admitPerMinute, a.minAdmitPerMinute);
    col.append(spark, changesTable(c.changes));
  }
  return col;
}

// signalParts says whether e's controller has its signal: lost (and what
// that does), or the age of the newest report.
function signalParts(e) {
  const c = e.control;
  const health = e.health || [];
  if (c && c.signalLost) {
    const what = e.adaptive.onSignalLoss === "keep" ? "keeping the last rate" : "admission stopped";
    const parts = [el("strong", "lost", "lost"), `: ${what}`];
    if (health.length) parts.push("; newest report ", since(health[0].at));
    else parts.push("; no health report yet");
    return parts;
  }
  if (!health.length) return ["no health report yet"];
  return ["newest report ", since(health[0].at, 1000 * e.adaptive.signalTimeoutSeconds)];
}

// limit shows one figure of the last step against its limit, saying in
// words whether it was over.
function limit(name, v, max, fmt, word) {
  if (v === undefined || v === null) return el("div", `${name}: not reported`, "muted");
  const over = v > max;
  const d = el("div");
  d.append(`${name} ${fmt(v)} (${word} ${fmt(max)}): `, el("strong", over ? "over" : "within", over ? "over" : "within"));
  return d;
}

function settingsText(a) {
  return `target p95 ${ms(a.targetLatencyMs)}, errors at most ${pct(a.maxErrorRate)}, load at most ${a.maxLoad}, ` +
    `start ${a.startAdmitPerMinute} a minute, +${a.increasePerStep} / ×${a.decreaseFactor} a step of ${ms(a.stepMs)}, ` +
    `settle at most ${a.maxSettleSeconds} s, signal lost after ${a.signalTimeoutSeconds} s: ${a.onSignalLoss}`;
}

// sparkline draws the effective rate over the changes (newest first), as
// steps, oldest on the left, from 0 to a little above the highest rate,
// with the ceiling and the floor dashed when they are in that range; a
// caption gives the scale in words.
function sparkline(changes, ceiling, floor) {
  const steps = [...changes].reverse();
  const values = [steps[0].from, ...steps.map((c) => c.to)];
  const lo = Math.min(...values), hi = Math.max(...values);
  const W = 240, H = 48, pad = 3;
  const top = Math.max(hi, floor, 1) * 1.15;
  const y = (v) => (H - pad - (H - 2 * pad) * v / top).toFixed(1);
  const w = W / values.length;
  let d = `M0,${y(values[0])}`;
  values.forEach((v, i) => {
    d += ` V${y(v)} H${((i + 1) * w).toFixed(1)}`;
  });
  const label = `Effective rate over the last ${count(changes.length, "change")}: from ${values[0]} to ${values[values.length - 1]} a minute, lowest ${lo}, highest ${hi}; ceiling ${ceiling}, floor ${floor}.`;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "sparkline", role: "img", "aria-label": label, preserveAspectRatio: "none" });
  const title = svg("title");
  title.textContent = label;
  s.append(title);
  for (const b of [ceiling, floor]) {
    if (b > 0 && b <= top) s.append(svg("line", { x1: 0, x2: W, y1: y(b), y2: y(b), class: "bound" }));
  }
  s.append(svg("path", { d, class: "rate" }));
  const scale = el("div", `Effective rate, oldest change on the left: 0 to ${hi} a minute${ceiling <= top ? ", ceiling dashed" : ""}${floor > 0 ? ", floor dashed" : ""}.`, "muted spark-scale");
  scale.setAttribute("aria-hidden", "true"); // the image's label says it
  return spans("figure", [s, scale], "spark");
}

function changesTable(changes) {
  const t = el("table", undefined, "changes");
  t.append(el("caption", "Recent rate changes, newest first"));
  const head = el("tr");
  for (const h of ["Time", "Rate a minute", "Reason", "Detail"]) {
    const th = el("th", h);
    th.scope = "col";
    head.append(th);
  }
  t.append(spans("thead", [head]));
  const body = el("tbody");
  for (const c of changes) {
    const tr = el("tr");
    const at = el("td", clock(c.at));
    at.title = when(c.at);
    const reason = el("td", c.reason);
    reason.title = reasons[c.reason] || "";
    tr.append(at, el("td", `${c.from} → ${c.to}`), reason, el("td", c.detail));
    body.append(tr);
  }
  t.append(body);
  return spans("div", [t], "table-scroll");
}

// reportersColumn lists every reporter's latest report, for every event.
function reportersColumn(e) {
  const col = el("div", undefined, "reporters-col");
  const health = e.health || [];
  if (!health.length) {
    col.append(el("p", i18n.t("c.reports.none"), "muted no-reports"));
    return col;
  }
  const timeout = e.adaptive ? 1000 * e.adaptive.signalTimeoutSeconds : 0;
  const t = el("table", undefined, "reporters");
  t.append(el("caption", i18n.t("c.reports.caption")));
  const head = el("tr");
  for (const h of ["reporter", "received", "window", "requests", "p95", "errors", "load"].map((k) => i18n.t(`c.reports.${k}`))) {
    const th = el("th", h);
    th.scope = "col";
    head.append(th);
  }
  t.append(spans("thead", [head]));
  const body = el("tbody");
  const fig = (v, fmt) => (v === undefined || v === null ? "–" : fmt(v));
  for (const r of health) {
    const tr = el("tr");
    tr.dataset.reporter = r.reporter || "default";
    tr.append(el("td", r.reporter || "default"), spans("td", [since(r.at, timeout)]),
      el("td", r.windowMs ? ms(r.windowMs) : "instant"), el("td", fig(r.requests, String)),
      el("td", fig(r.p95Ms, (v) => ms(Math.round(v)))), el("td", fig(r.errorRate, pct)),
      el("td", fig(r.load, (v) => v.toFixed(2))));
    body.append(tr);
  }
  t.append(body);
  col.append(spans("div", [t], "table-scroll"));
  return col;
}

// makeGuard builds an event's guard settings: its report token and the
// variables waitq-guard needs to report the shop's health, with copy
// buttons and the token's replacement.
function makeGuard(p) {
  const root = el("details", undefined, "guard");
  root.append(el("summary", i18n.t("c.guard.summary")));
  root.append(el("p", "A guard (or the shop itself) posts health reports with the event's report token instead of the admin token. Keep it secret.", "muted"));
  const tokenCode = el("code", "", "hash report-token");
  tokenCode.id = `token-${p.id}`;
  const tokenLabel = el("div", "Report token:");
  const env = el("pre", "", "guard-env");
  env.id = `guard-env-${p.id}`;
  const envLabel = el("div", "waitq-guard settings (WAITQ_HEALTH_URL as this page reaches producer-api; give the address the guard reaches it at if that differs):");
  const status = el("p", "", "guard-status");
  status.setAttribute("role", "status");
  const button = (text, cls, fn) => {
    const b = el("button", text, `secondary ${cls}`);
    b.type = "button";
    b.addEventListener("click", fn);
    return b;
  };
  const copyToken = button("Copy the token", "copy-token", () => copy(tokenCode, status));
  const copyEnv = button("Copy the settings", "copy-settings", () => copy(env, status));
  const rotate = button("Replace the report token", "rotate-token", () => rotateToken(p.id, status));
  root.append(tokenLabel, tokenCode, copyToken, envLabel, env, spans("div", [copyEnv, " ", rotate], "buttons"), status);
  return { root, tokenCode, env, status };
}

function updateGuard(p, e) {
  const url = config.producerUrl || location.origin;
  const sig = `${e.reportToken}\n${url}`;
  if (sig === p.tokenSig) return;
  p.tokenSig = sig;
  p.guard.tokenCode.textContent = e.reportToken || "";
  p.guard.env.textContent = `WAITQ_EVENT_ID=${e.eventId}\nWAITQ_HEALTH_URL=${url}\nWAITQ_HEALTH_TOKEN=${e.reportToken || ""}`;
}

// copy puts the text of element src on the clipboard; where the browser
// does not allow it (a page on plain http) it selects the text for the
// person to copy.
async function copy(src, status) {
  const text = src.textContent;
  try {
    await navigator.clipboard.writeText(text);
    say(status, "Copied.");
    return;
  } catch { /* no clipboard API here: select it */ }
  const range = document.createRange();
  range.selectNodeContents(src);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  let done = false;
  try { done = document.execCommand("copy"); } catch { /* selected at least */ }
  say(status, done ? "Copied." : "Selected: press Ctrl+C (⌘C) to copy.");
}

// newReportToken returns 32 random bytes in base64url, as producer-api
// makes them.
function newReportToken() {
  const b = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function rotateToken(id, status) {
  if (!confirm(`Replace the report token of ${id}? Reports with the current token are refused from now on, until the guards get the new one.`)) return;
  const { ok, message } = await putEvent(id, { reportToken: newReportToken() });
  say(status, ok ? "The report token was replaced: give the guards the new one." : message, !ok);
  refresh();
}

// ---- The adaptive form.

// The adaptive form's optional settings: input id, field of the API.
const adaptiveFields = [
  ["ad-max-error", "maxErrorRate"], ["ad-max-load", "maxLoad"], ["ad-min", "minAdmitPerMinute"],
  ["ad-start", "startAdmitPerMinute"], ["ad-increase", "increasePerStep"], ["ad-decrease", "decreaseFactor"],
  ["ad-step", "stepMs"], ["ad-settle", "maxSettleSeconds"], ["ad-timeout", "signalTimeoutSeconds"],
];

// adaptivePlaceholders shows the start and increase defaults for the
// ceiling the form would leave the event with.
function adaptivePlaceholders() {
  const known = events.get($("ad-event").value.trim());
  const ceiling = $("ad-ceiling").value !== "" ? Number($("ad-ceiling").value) : (known ? known.admitPerMinute : 0);
  const floor = Number($("ad-min").value || 0);
  $("ad-start").placeholder = ceiling > 0 ? `${Math.max(floor, Math.ceil(ceiling / 10))} (a tenth of the ceiling)` : "a tenth of the ceiling";
  $("ad-increase").placeholder = ceiling > 0 ? `${Math.max(1, Math.ceil(ceiling / 50))} (a fiftieth of the ceiling)` : "a fiftieth of the ceiling";
}

// editAdaptive fills the adaptive form with e's settings and moves there.
function editAdaptive(e) {
  const a = e.adaptive || {};
  $("ad-event").value = e.eventId;
  $("ad-ceiling").value = e.admitPerMinute || "";
  $("ad-target").value = a.targetLatencyMs || "";
  for (const [id, key] of adaptiveFields) $(id).value = e.adaptive ? a[key] : "";
  $("ad-loss").value = a.onSignalLoss || "";
  say($("ad-status"), "");
  adaptivePlaceholders();
  $("adaptive-form").scrollIntoView({ block: "start" });
  $(e.admitPerMinute ? "ad-target" : "ad-ceiling").focus();
}

async function saveAdaptive(event) {
  event.preventDefault();
  const ev = $("ad-event").value.trim();
  const a = { targetLatencyMs: Number($("ad-target").value) };
  for (const [id, key] of adaptiveFields) {
    if ($(id).value !== "") a[key] = Number($(id).value);
  }
  if ($("ad-loss").value !== "") a.onSignalLoss = $("ad-loss").value;
  const change = { adaptive: a };
  if ($("ad-ceiling").value !== "") change.admitPerMinute = Number($("ad-ceiling").value);
  const { ok, body, message } = await putEvent(ev, change);
  if (ok) {
    const s = body.adaptive;
    say($("ad-status"), `${ev} admits adaptively: target p95 ${s.targetLatencyMs} ms, between ${s.minAdmitPerMinute} and ${body.admitPerMinute} a minute, starting at ${s.startAdmitPerMinute}.`);
  } else {
    say($("ad-status"), message, true);
  }
  refresh();
}

async function adaptiveOff() {
  if (!$("ad-event").reportValidity()) return;
  const ev = $("ad-event").value.trim();
  const { ok, body, message } = await putEvent(ev, { adaptive: null });
  say($("ad-status"), ok ? `${ev} admits at a fixed rate again: ${body.admitPerMinute ? `${body.admitPerMinute} a minute` : "no rate limit"}.` : message, !ok);
  refresh();
}

// viewed is the event whose charts and settings the console shows.
let viewed = "";

// renderView keeps the event chooser in step with the listing and draws
// the chosen event's charts and door.
function renderView(list) {
  const select = $("view-event");
  const ids = list.map((e) => e.eventId);
  if (select.options.length !== ids.length || ids.some((id, i) => select.options[i].value !== id)) {
    select.replaceChildren(...ids.map((id) => {
      const o = el("option", id);
      o.value = id;
      return o;
    }));
  }
  if (!ids.includes(viewed) && ids.length) view(ids[0]);
  select.value = viewed;
  const e = events.get(viewed);
  $("view-door").textContent = e ? i18n.t("c.door", { text: doorText(e).join("; ") }) : "";
  drawCharts(viewed);
  if (viewed && seriesDue(viewed)) loadSeries(viewed, api).then(() => drawCharts(viewed));
}

// view shows event id's charts (its last half hour loaded from the
// series) and puts it in the settings forms.
function view(id) {
  viewed = id;
  $("view-event").value = id;
  editPage(id);
  editChallenge(id);
  editJoinToken(id);
  $("del-event").value = id;
  drawCharts(id);
  loadSeries(id, api).then(() => { if (viewed === id) drawCharts(id); });
}

// deleteEvent deletes the form's event once confirmed.
async function deleteEvent(event) {
  event.preventDefault();
  const ev = $("del-event").value.trim();
  if (!(await confirmChange(...deleteAsk(ev, events.get(ev))))) {
    say($("del-status"), i18n.t("c.del.nothing", { event: ev }));
    return;
  }
  try {
    const r = await api(`/v1/admin/events/${encodeURIComponent(ev)}`, { method: "DELETE" });
    if (r.ok) {
      say($("del-status"), i18n.t("c.del.done", { event: ev }));
    } else {
      const body = await r.json();
      say($("del-status"), body.error ? body.error.message : i18n.t("c.error", { status: r.status }), true);
    }
  } catch {
    say($("del-status"), i18n.t("c.unreachable"), true);
  }
  refresh();
}

// speak sets the console's language (?lang=, else the browser's) and
// writes its static texts and the language switch.
function speak() {
  i18n.choose([new URLSearchParams(location.search).get("lang"), ...(navigator.languages || [navigator.language])]);
  i18n.apply();
  const select = $("lang");
  select.replaceChildren(...i18n.languages.map((l) => {
    const o = el("option", catalogs[l]["lang.name"]);
    o.value = l;
    o.lang = l;
    return o;
  }));
  select.value = i18n.lang;
  $("lang-form").addEventListener("submit", (ev) => {
    ev.preventDefault();
    const p = new URLSearchParams(location.search);
    p.set("lang", $("lang").value);
    location.assign(`${location.pathname}?${p}`);
  });
}

// signIn starts refreshing with the admin token, kept for this tab.
function signIn(t) {
  token = t;
  sessionStorage.setItem("waitq:admin-token", t);
  refresh();
  clearInterval(timer);
  timer = setInterval(refresh, 2000);
}

async function start() {
  speak();
  // The forms are taken over at once (a submit before would reload the page
  // with the token in its address); signing in waits for the settings.
  const configured = (async () => {
    try { config = Object.assign(config, await (await fetch("/config.json")).json()); } catch { /* defaults */ }
  })();
  $("auth").addEventListener("submit", async (e) => {
    e.preventDefault();
    await configured;
    signIn($("admin-token").value);
  });
  $("view-event").addEventListener("change", () => view($("view-event").value));
  for (const [id, load] of [["pg-event", editPage], ["ch-event", editChallenge], ["jt-event", editJoinToken]]) {
    $(id).addEventListener("change", () => { if (events.has($(id).value.trim())) load($(id).value.trim()); });
  }
  $("page-form").addEventListener("submit", savePage);
  $("challenge-form").addEventListener("submit", saveChallenge);
  $("ch-mode").addEventListener("change", challengeModeChanged);
  $("jointoken-form").addEventListener("submit", saveJoinToken);
  const kept = sessionStorage.getItem("waitq:admin-token");
  if (kept) configured.then(() => signIn(kept));
  $("capacity-form").addEventListener("submit", saveCapacity);
  $("adaptive-form").addEventListener("submit", saveAdaptive);
  $("ad-off").addEventListener("click", adaptiveOff);
  $("ad-event").addEventListener("input", adaptivePlaceholders);
  $("ad-ceiling").addEventListener("input", adaptivePlaceholders);
  $("schedule-form").addEventListener("submit", saveSchedule);
  $("delete-form").addEventListener("submit", deleteEvent);
}

start();
