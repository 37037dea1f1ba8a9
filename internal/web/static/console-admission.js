// The console's admission panels (admin.js holds the console's state and
// starts it): per event, the fixed rate or the adaptive controller with
// its recent changes, and the health reporters (the guard's settings:
// console-guard.js).
"use strict";

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
