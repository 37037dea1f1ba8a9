// waitq console: events with their live sizes, phase, draw, fairness,
// door and turns figures (away, called, lapsed, arrivals, no-shows); the chosen event's charts over time (charts.js) and fairness report (console-fairness.js); its page,
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
//
// Plain scripts sharing one global scope, this one loaded last: it holds
// the console's state, the events' table and the chosen event's view, and
// starts it; console-forms.js sends the changes, console-admission.js and
// console-guard.js draw the admission panels.
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
// waitq-verify; for a chain draw its chain (chainLines).
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
  if (e.draw.kind === "chain") chainLines(td, e);
  return td;
}

// chainLines adds a chain draw's source, its frozen entries and, between
// the freeze and the draw, the form that supplies its public value.
function chainLines(td, e) {
  const d = e.draw;
  td.appendChild(el("div", i18n.t("c.draw.chain", { source: d.publicSource.name, round: String(d.publicSource.round || d.publicSource.ref || "") })));
  if (d.entryRoot) {
    td.appendChild(el("div", i18n.t("c.draw.entries", { v: d.entryCount })));
    td.appendChild(el("code", d.entryRoot, "hash entry-root"));
  }
  if (d.drawnAt) {
    td.appendChild(el("div", d.publicValue ? i18n.t("c.draw.value", { v: d.publicValue }) : i18n.t("c.draw.missed")));
    return;
  }
  if (!d.entryRoot) return;
  const input = el("input", "", "public-value");
  input.setAttribute("aria-label", i18n.t("c.draw.valueLabel"));
  input.placeholder = i18n.t("c.draw.valueLabel");
  const b = el("button", i18n.t("c.draw.supply"), "secondary supply-value");
  b.type = "button";
  b.addEventListener("click", () => supplyPublicValue(e.eventId, input.value.trim()));
  td.append(input, b);
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

// turnsCell shows the turns of people away (away now, called now, lapsed
// ever) and, for an event with an arrival window, its arrivals and
// no-shows (docs/api.md).
function turnsCell(e) {
  const td = el("td", undefined, "turns");
  const t = e.turns, a = e.arrivals;
  if (t) td.append(el("div", i18n.t("c.turns.away", { away: i18n.num(t.away), called: i18n.num(t.called), lapsed: i18n.num(t.lapsedTotal) })));
  if (a) td.append(el("div", i18n.t("c.turns.arrivals", { arrived: i18n.num(a.arrivedTotal), noShows: i18n.num(a.noShowTotal) }), a.noShowTotal ? "no-shows" : ""));
  if (!t && !a) td.append(el("div", i18n.t("c.turns.none")));
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
      for (const v of [word("c.st", e.state), e.waiting, e.holders, e.capacity, e.admittedTotal, rateCell(e), word("c.ph", e.phase)]) {
        tr.appendChild(el("td", typeof v === "number" ? i18n.num(v) : v));
      }
      const door = el("td", undefined, "door");
      for (const line of doorText(e)) door.append(el("div", line));
      tr.append(scheduleCell(e), drawCell(e), fairnessCell(e), door, turnsCell(e));
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
  drawFairness(viewed);
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
