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
// strings in console-i18n-{en,ko,ja}.js): ?lang=, else the browser's;
// every text it writes comes from those catalogs, figures and times in the
// language's formats; event ids, reason codes and the API's own messages
// are shown as they are (marked translate="no" where they stand alone).
// The admin token is kept in sessionStorage: for this tab only, never in
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

// said makes an element of text whose {slots} are filled from nodes (see
// fill), with a class when given.
function said(tag, text, nodes, cls) {
  const e = el(tag, undefined, cls);
  fill(e, text, nodes);
  return e;
}

// word is the word for code (a state, a phase, a reason…) under prefix in
// the console's language; code itself when the catalogs lack it.
function word(prefix, code) {
  const key = `${prefix}.${code}`;
  const w = i18n.t(key);
  return w === key ? code : w;
}

// raw marks e as a value shown as it is (an event id, a code): not text
// of the console's language.
function raw(e) {
  e.translate = false;
  return e;
}

// when shows unix ms t as a date and time in the console's language.
function when(t) {
  return new Date(t).toLocaleString(i18n.lang);
}

// ms says v ms: "120 ms", "10.0 s".
function ms(v) {
  return v >= 1000 ? i18n.t("c.u.s", { v: i18n.num(v / 1000, 1) }) : i18n.t("c.u.ms", { v: i18n.num(v) });
}

// age says how long ago d ms is, by this browser's clock.
function age(d) {
  if (d < 1000) return i18n.t("c.age.now");
  const [unit, per] = d < 60_000 ? ["s", 1000] : d < 3_600_000 ? ["min", 60_000] : d < 86_400_000 ? ["h", 3_600_000] : ["d", 86_400_000];
  return i18n.t(`c.age.${unit}`, { v: Math.floor(d / per) });
}

// count says n things (c.n.<thing>): "1 stop", "2 stops".
function count(n, thing) {
  return i18n.t(`c.n.${thing}`, { n });
}

// list joins texts as the language does.
function list(texts) {
  return texts.join(i18n.t("c.list.sep"));
}

function pct(v) {
  return i18n.t("c.u.pct", { v: i18n.num(100 * v, 1) });
}

// scheduleCell describes e's schedule: the opening, the pre-queue, the close.
function scheduleCell(e) {
  const td = el("td");
  if (!e.opensAt && !e.closesAt) {
    td.textContent = i18n.t("c.sched.none");
    return td;
  }
  const lines = [];
  if (e.opensAt) {
    lines.push(i18n.t("c.sched.opens", { at: when(e.opensAt) }));
    lines.push(e.prequeueSeconds ? i18n.t("c.sched.prequeue", { s: e.prequeueSeconds, at: when(e.opensAt - 1000 * e.prequeueSeconds) }) : i18n.t("c.sched.noPrequeue"));
  }
  lines.push(e.closesAt ? i18n.t("c.sched.closes", { at: when(e.closesAt) }) : i18n.t("c.sched.never"));
  for (const l of lines) td.appendChild(el("div", l));
  return td;
}

// drawCell shows e's draw: the pre-queue's size, the commitment, and from
// the opening the seed and a button that downloads the export for
// waitq-verify.
function drawCell(e) {
  const td = el("td");
  if (!e.draw) {
    td.textContent = i18n.t("c.draw.none");
    return td;
  }
  td.appendChild(el("div", i18n.t("c.draw.size", { v: e.draw.prequeueSize }), "prequeue-size"));
  td.appendChild(el("div", i18n.t("c.draw.commitment")));
  td.appendChild(el("code", e.draw.commitment, "hash commitment"));
  if (e.draw.seed) {
    td.appendChild(el("div", i18n.t("c.draw.seed")));
    td.appendChild(el("code", e.draw.seed, "hash seed"));
    const b = el("button", i18n.t("c.draw.export"), "secondary export");
    b.type = "button";
    b.addEventListener("click", () => exportDraw(e.eventId));
    td.appendChild(b);
  } else {
    td.appendChild(el("div", i18n.t("c.draw.later"), "muted"));
  }
  return td;
}

// fairnessCell shows inversions (joins overtaken through consumer lag) and
// the ingest delay's quantiles (upper bounds of power-of-two buckets).
function fairnessCell(e) {
  const td = el("td");
  const f = e.fairness || { inversions: 0, ingestDelayMs: { count: 0, p50: 0, p99: 0 } };
  td.appendChild(el("div", i18n.t("c.fair.inversions", { v: f.inversions }), f.inversions ? "inversions error" : "inversions"));
  const d = f.ingestDelayMs;
  td.appendChild(el("div", d.count ? i18n.t("c.fair.delay", { p50: ms(d.p50), p99: ms(d.p99), v: d.count }) : i18n.t("c.fair.none"), "ingest-delay"));
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
      const tr = el("tr");
      tr.append(raw(el("td", e.eventId)));
      for (const v of [word("c.st", e.state), e.waiting, e.active, e.capacity, e.admittedTotal, rateCell(e), word("c.ph", e.phase)]) {
        tr.appendChild(el("td", typeof v === "number" ? i18n.num(v) : v));
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
  if (!e.adaptive) return e.admitPerMinute ? i18n.num(e.admitPerMinute) : i18n.t("c.rate.none");
  const c = e.control;
  return c && c.phase ? i18n.t("c.rate.adaptiveNow", { now: c.admitPerMinute, ceiling: e.admitPerMinute }) : i18n.t("c.rate.adaptive", { ceiling: e.admitPerMinute });
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
    return { ok: r.ok, body, message: r.ok ? "" : (body.error ? body.error.message : i18n.t("c.error", { status: r.status })) };
  } catch (e) {
    return { ok: false, message: i18n.t("c.unreachable") };
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
    const rate = body.adaptive ? i18n.t("c.cap.adaptiveRate", { v: body.admitPerMinute })
      : body.admitPerMinute ? i18n.t("c.cap.fixedRate", { v: body.admitPerMinute }) : i18n.t("c.cap.noRate");
    say($("cap-status"), i18n.t("c.cap.said", { event: ev, state: word("c.st", body.state), capacity: body.capacity, rate }));
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
      $("sch-status").textContent = body.error ? body.error.message : i18n.t("c.error", { status: r.status });
      return;
    }
    const from = body.opensAt - 1000 * (body.prequeueSeconds || 0);
    const commitment = el("code", body.draw ? body.draw.commitment : "–", "hash");
    commitment.id = "sch-commitment";
    $("sch-status").replaceChildren(
      el("span", i18n.t("c.sch.said", { event: ev, opens: when(body.opensAt), from: when(from), closes: body.closesAt ? i18n.t("c.sch.saidCloses", { closes: when(body.closesAt) }) : "" })),
      commitment);
  } catch (e) {
    $("sch-status").textContent = i18n.t("c.unreachable");
    return;
  }
  refresh();
}

// exportDraw downloads the draw's export, the input of waitq-verify.
async function exportDraw(id) {
  const r = await api(`/v1/admin/events/${encodeURIComponent(id)}/draw`);
  const body = await r.json();
  if (!r.ok) {
    $("admin-error").textContent = body.error ? body.error.message : i18n.t("c.error", { status: r.status });
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

// reasonCode shows the code of a rate change's reason
// (queue.RateChange.Reason, the label /metrics counts) as it is, its words
// in the console's language as its title.
function reasonCode(code, tag = "span") {
  const e = raw(el(tag, code, "reason"));
  e.title = word("c.reason", code);
  return e;
}

// details word a change's detail in the console's language: the
// controller (adaptive.lua) writes it in English around its figures. A
// detail this page does not know is shown as the API wrote it.
const details = [
  [/^adaptive admission starts at (\d+) a minute$/, (m) => i18n.t("c.detail.start", { v: +m[1] })],
  [/^the bounds are now (\d+) to (\d+) a minute$/, (m) => i18n.t("c.detail.bounds", { floor: +m[1], ceiling: +m[2] })],
  [/^no health report yet$/, () => i18n.t("c.detail.noReport")],
  [/^no health report for (\d+) s$/, (m) => i18n.t("c.detail.noReportFor", { v: +m[1] })],
  [/^(.+); keeping the last rate$/, (m) => i18n.t("c.detail.keeping", { why: detailText(m[1]) })],
  [/^health reports again; admitting (\d+) a minute$/, (m) => i18n.t("c.detail.back", { v: +m[1] })],
  [/^([\d.]+)% of requests failed, over ([\d.]+)%$/, (m) => i18n.t("c.detail.errors", { v: pct(m[1] / 100), max: pct(m[2] / 100) })],
  [/^p95 (\d+) ms, over the target (\d+) ms$/, (m) => i18n.t("c.detail.latency", { v: ms(+m[1]), max: ms(+m[2]) })],
  [/^load ([\d.]+), over ([\d.]+)$/, (m) => i18n.t("c.detail.load", { v: i18n.num(+m[1], 2), max: i18n.num(+m[2], 2) })],
  [/^(.+); the rate was in use$/, (m) => i18n.t("c.detail.healthy", { figures: list(m[1].split(", ").map(detailText)) })],
  [/^p95 (\d+) ms$/, (m) => i18n.t("c.detail.p95", { v: ms(+m[1]) })],
  [/^([\d.]+)% errors$/, (m) => i18n.t("c.detail.errorShare", { v: pct(m[1] / 100) })],
  [/^load ([\d.]+)$/, (m) => i18n.t("c.detail.loadIs", { v: i18n.num(+m[1], 2) })],
  [/^no traffic measured$/, () => i18n.t("c.detail.noTraffic")],
];

function detailText(d) {
  for (const [re, words] of details) {
    const m = re.exec(d || "");
    if (m) return words(m);
  }
  return d;
}

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
    s.textContent = stale ? i18n.t("c.age.old", { age: age(d) }) : age(d);
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
  h.append(raw(el("span", `${id} `)), mode);
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
    col.append(el("p", e.admitPerMinute ? i18n.t("c.fixed.rate", { rate: e.admitPerMinute }) : i18n.t("c.fixed.none"), "fixed"));
    return col;
  }
  const a = e.adaptive;
  const c = e.control;
  const dl = el("dl", undefined, "facts");
  // fact adds a term (its key) and its description: text with its slots
  // filled from nodes.
  const fact = (term, text, nodes, cls) => {
    dl.append(el("dt", i18n.t(term)), said("dd", text, nodes, cls));
  };
  const ceiling = el("span", i18n.num(e.admitPerMinute), "ceiling");
  const floor = el("span", i18n.num(a.minAdmitPerMinute), "floor");
  if (!c || !c.phase) {
    col.append(el("p", i18n.t("c.ctl.notStarted", { start: a.startAdmitPerMinute }), "notice not-started"));
    fact("c.fact.bounds", i18n.t("c.ctl.bounds"), { floor, ceiling });
  } else {
    const effective = el("span", i18n.num(c.admitPerMinute), "effective");
    const resumes = c.admitPerMinute !== c.rate ? i18n.t("c.ctl.resumes", { rate: c.rate }) : "";
    fact("c.fact.rate", i18n.t("c.ctl.rate") + resumes, { effective, floor, ceiling }, "rate-now");
    fact("c.fact.phase", c.phase === "start" ? i18n.t("c.ctl.start")
      : i18n.t("c.ctl.steady", { inc: a.increasePerStep, factor: a.decreaseFactor }), {}, "phase");
  }
  fact("c.fact.signal", ...signalParts(e), "signal");
  if (c && c.signal) {
    const s = c.signal;
    const lines = [
      limit("p95", s.p95Ms, a.targetLatencyMs, (v) => ms(Math.round(v)), "target"),
      limit("errors", s.errorRate, a.maxErrorRate, pct, "max"),
      limit("load", s.load, a.maxLoad, (v) => i18n.num(v, 2), "max"),
    ];
    const over = [];
    if (s.requests !== undefined) over.push(count(s.requests, "request"));
    if (s.windowMs) over.push(i18n.t("c.ctl.window", { v: ms(s.windowMs) }));
    if (s.reporters) over.push(count(s.reporters, "reporter"));
    const dd = spans("dd", lines, "last-step");
    const time = i18n.time(c.signalAt);
    dd.append(el("div", over.length ? i18n.t("c.ctl.atOver", { time, list: list(over) }) : i18n.t("c.ctl.at", { time }), "muted"));
    dl.append(el("dt", i18n.t("c.fact.step")), dd);
  } else if (c && c.phase) {
    fact("c.fact.step", i18n.t("c.ctl.noStep"), {}, "last-step");
  }
  if (c && c.reason) {
    fact("c.fact.change", i18n.t("c.ctl.change", { detail: detailText(c.detail), time: i18n.time(c.changedAt) }),
      { reason: reasonCode(c.reason) }, "last-change");
  }
  if (c && c.phase) {
    fact("c.fact.counters", i18n.t("c.ctl.counters", {
      increases: count(c.increases, "increase"), decreases: count(c.decreases, "decrease"), stops: count(c.stops, "stop"),
    }), {}, "counters");
  }
  fact("c.fact.settings", settingsText(a), {}, "settings");
  col.append(dl);
  if (c && c.changes && c.changes.length) {
    const spark = sparkline(c.changes, e.admitPerMinute, a.minAdmitPerMinute);
    col.append(spark, changesTable(c.changes));
  }
  return col;
}

// signalParts says whether e's controller has its signal: lost (and what
// that does), or the age of the newest report; a text and its nodes.
function signalParts(e) {
  const c = e.control;
  const health = e.health || [];
  if (c && c.signalLost) {
    const what = i18n.t(e.adaptive.onSignalLoss === "keep" ? "c.sig.kept" : "c.sig.stopped");
    const lost = el("strong", i18n.t("c.sig.lost"), "lost");
    if (health.length) return [i18n.t("c.sig.lostNewest", { what }), { lost, age: since(health[0].at) }];
    return [i18n.t("c.sig.lostNone", { what }), { lost }];
  }
  if (!health.length) return [i18n.t("c.sig.none"), {}];
  return [i18n.t("c.sig.newest"), { age: since(health[0].at, 1000 * e.adaptive.signalTimeoutSeconds) }];
}

// limit shows one figure (c.lim.<name>) of the last step against its
// limit (c.lim.<bound>), saying in words whether it was over.
function limit(name, v, max, fmt, bound) {
  const n = i18n.t(`c.lim.${name}`);
  if (v === undefined || v === null) return el("div", i18n.t("c.lim.none", { name: n }), "muted");
  const over = v > max;
  const verdict = el("strong", i18n.t(over ? "c.lim.over" : "c.lim.within"), over ? "over" : "within");
  return said("div", i18n.t("c.lim.line", { name: n, v: fmt(v), word: i18n.t(`c.lim.${bound}`), max: fmt(max) }), { verdict });
}

function settingsText(a) {
  return i18n.t("c.ctl.settings", {
    target: ms(a.targetLatencyMs), errors: pct(a.maxErrorRate), load: i18n.num(a.maxLoad), start: a.startAdmitPerMinute,
    inc: a.increasePerStep, factor: a.decreaseFactor, step: ms(a.stepMs), settle: i18n.t("c.u.s", { v: a.maxSettleSeconds }),
    timeout: i18n.t("c.u.s", { v: a.signalTimeoutSeconds }), loss: word("c.loss", a.onSignalLoss),
  });
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
  const label = i18n.t("c.spark.label", { changes: count(changes.length, "change"), from: values[0], to: values[values.length - 1], lo, hi, ceiling, floor });
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, class: "sparkline", role: "img", "aria-label": label, preserveAspectRatio: "none" });
  const title = svg("title");
  title.textContent = label;
  s.append(title);
  for (const b of [ceiling, floor]) {
    if (b > 0 && b <= top) s.append(svg("line", { x1: 0, x2: W, y1: y(b), y2: y(b), class: "bound" }));
  }
  s.append(svg("path", { d, class: "rate" }));
  const bounds = (ceiling <= top ? i18n.t("c.spark.ceiling") : "") + (floor > 0 ? i18n.t("c.spark.floor") : "");
  const scale = el("div", i18n.t("c.spark.scale", { hi, bounds }), "muted spark-scale");
  scale.setAttribute("aria-hidden", "true"); // the image's label says it
  return spans("figure", [s, scale], "spark");
}

function changesTable(changes) {
  const t = el("table", undefined, "changes");
  t.append(el("caption", i18n.t("c.changes.caption")));
  const head = el("tr");
  for (const h of ["time", "rate", "reason", "detail"].map((k) => i18n.t(`c.changes.${k}`))) {
    const th = el("th", h);
    th.scope = "col";
    head.append(th);
  }
  t.append(spans("thead", [head]));
  const body = el("tbody");
  for (const c of changes) {
    const tr = el("tr");
    const at = el("td", i18n.time(c.at));
    at.title = when(c.at);
    tr.append(at, el("td", `${i18n.num(c.from)} → ${i18n.num(c.to)}`), reasonCode(c.reason, "td"), el("td", detailText(c.detail)));
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
    const name = r.reporter ? raw(el("td", r.reporter)) : el("td", i18n.t("c.reports.default"));
    tr.append(name, spans("td", [since(r.at, timeout)]),
      el("td", r.windowMs ? ms(r.windowMs) : i18n.t("c.reports.instant")), el("td", fig(r.requests, (v) => i18n.num(v))),
      el("td", fig(r.p95Ms, (v) => ms(Math.round(v)))), el("td", fig(r.errorRate, pct)),
      el("td", fig(r.load, (v) => i18n.num(v, 2))));
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
  root.append(el("p", i18n.t("c.guard.help"), "muted"));
  const tokenCode = el("code", "", "hash report-token");
  tokenCode.id = `token-${p.id}`;
  const tokenLabel = el("div", i18n.t("c.guard.token"));
  const env = el("pre", "", "guard-env");
  env.id = `guard-env-${p.id}`;
  const envLabel = el("div", i18n.t("c.guard.env"));
  const status = el("p", "", "guard-status");
  status.setAttribute("role", "status");
  const button = (text, cls, fn) => {
    const b = el("button", text, `secondary ${cls}`);
    b.type = "button";
    b.addEventListener("click", fn);
    return b;
  };
  const copyToken = button(i18n.t("c.guard.copyToken"), "copy-token", () => copy(tokenCode, status));
  const copyEnv = button(i18n.t("c.guard.copyEnv"), "copy-settings", () => copy(env, status));
  const rotate = button(i18n.t("c.guard.rotate"), "rotate-token", () => rotateToken(p.id, status));
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
    say(status, i18n.t("c.guard.copied"));
    return;
  } catch { /* no clipboard API here: select it */ }
  const range = document.createRange();
  range.selectNodeContents(src);
  const sel = window.getSelection();
  sel.removeAllRanges();
  sel.addRange(range);
  let done = false;
  try { done = document.execCommand("copy"); } catch { /* selected at least */ }
  say(status, i18n.t(done ? "c.guard.copied" : "c.guard.selected"));
}

// newReportToken returns 32 random bytes in base64url, as producer-api
// makes them.
function newReportToken() {
  const b = crypto.getRandomValues(new Uint8Array(32));
  return btoa(String.fromCharCode(...b)).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

async function rotateToken(id, status) {
  if (!confirm(i18n.t("c.guard.ask", { event: id }))) return;
  const { ok, message } = await putEvent(id, { reportToken: newReportToken() });
  say(status, ok ? i18n.t("c.guard.rotated") : message, !ok);
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
  $("ad-start").placeholder = ceiling > 0 ? i18n.t("c.ad.tenthN", { v: Math.max(floor, Math.ceil(ceiling / 10)) }) : i18n.t("c.ad.tenth");
  $("ad-increase").placeholder = ceiling > 0 ? i18n.t("c.ad.fiftiethN", { v: Math.max(1, Math.ceil(ceiling / 50)) }) : i18n.t("c.ad.fiftieth");
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
    say($("ad-status"), i18n.t("c.ad.said", { event: ev, target: s.targetLatencyMs, floor: s.minAdmitPerMinute, ceiling: body.admitPerMinute, start: s.startAdmitPerMinute }));
  } else {
    say($("ad-status"), message, true);
  }
  refresh();
}

async function adaptiveOff() {
  if (!$("ad-event").reportValidity()) return;
  const ev = $("ad-event").value.trim();
  const { ok, body, message } = await putEvent(ev, { adaptive: null });
  const rate = ok && body.admitPerMinute ? i18n.t("c.u.perMinute", { v: body.admitPerMinute }) : i18n.t("c.ad.noLimit");
  say($("ad-status"), ok ? i18n.t("c.ad.saidOff", { event: ev, rate }) : message, !ok);
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
      const o = raw(el("option", id));
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
    const o = raw(el("option", catalogs[l]["lang.name"]));
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
