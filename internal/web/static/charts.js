// The console's charts of a sale as it happens: every listing the console
// reads (every 2 s) is a sample of each event, kept in this tab for the
// last 30 minutes, and the chosen event's samples are drawn as small SVG
// line charts with no library: line length, admissions a minute, holders
// against capacity, and the shop's p95 against the target. Each chart has
// a text alternative with its latest figures.
"use strict";

const historyMs = 30 * 60 * 1000;
// history holds each event's samples, oldest first: {t, waiting, active,
// capacity, admitted, perMinute, p95, target, rate}.
const history = new Map();

// record adds a sample of every event of listing list, taken at t.
function record(list, t) {
  for (const e of list) {
    const h = history.get(e.eventId) || [];
    const health = (e.health || [])[0];
    const c = e.control;
    h.push({
      t, waiting: e.waiting, active: e.active, capacity: e.capacity, admitted: e.admittedTotal,
      perMinute: admissionsAMinute(h, e.admittedTotal, t),
      p95: c && c.signal && c.signal.p95Ms != null ? c.signal.p95Ms : (health && health.p95Ms != null ? health.p95Ms : null),
      target: e.adaptive ? e.adaptive.targetLatencyMs : null,
      rate: e.adaptive && c && c.phase ? c.admitPerMinute : (e.admitPerMinute || null),
    });
    while (h.length && h[0].t < t - historyMs) h.shift();
    history.set(e.eventId, h);
  }
}

// admissionsAMinute is the admissions of the last minute up to a sample
// of admitted at t, from the samples h before it (the oldest within a
// minute; scaled to a minute while the tab has watched less).
function admissionsAMinute(h, admitted, t) {
  const from = h.find((s) => s.t >= t - 60000);
  if (!from || t - from.t < 1000) return null;
  return Math.max(0, Math.round((admitted - from.admitted) * 60000 / (t - from.t)));
}

// The charts: a title, the series drawn (key of a sample, a class, a
// name), and how a value reads.
const chartKinds = [
  { id: "waiting", title: "Line length", series: [["waiting", "s1", "people waiting"]], unit: (v) => `${v}` },
  { id: "admissions", title: "Admissions a minute", series: [["perMinute", "s1", "admitted in the last minute"], ["rate", "bound", "rate limit"]], unit: (v) => `${v}` },
  { id: "holders", title: "Holders against capacity", series: [["active", "s1", "holding a slot"], ["capacity", "bound", "capacity"]], unit: (v) => `${v}` },
  { id: "p95", title: "Shop's p95 against the target", series: [["p95", "s1", "p95"], ["target", "bound", "target"]], unit: (v) => `${Math.round(v)} ms` },
];

// drawCharts draws the charts of event id into box (one figure per kind,
// made once and redrawn in place).
function drawCharts(box, id) {
  const h = history.get(id) || [];
  box.dataset.event = id || "";
  for (const k of chartKinds) {
    let fig = box.querySelector(`figure[data-chart="${k.id}"]`);
    if (!fig) {
      fig = el("figure", undefined, "chart");
      fig.dataset.chart = k.id;
      const cap = el("figcaption", k.title);
      cap.id = `chart-${k.id}-title`;
      fig.append(cap, el("div", "", "chart-plot"), el("p", "", "chart-now muted"));
      box.append(fig);
    }
    drawChart(fig, k, h);
  }
}

// drawChart draws samples h of kind k in fig: a line per series, from 0 to
// a little above the highest value, the time axis the samples' span, the
// bounds dashed; the latest values in words below, and as the image's
// label.
function drawChart(fig, k, h) {
  const W = 320, H = 120, pad = 4;
  const t0 = h.length ? h[0].t : 0, t1 = h.length ? h[h.length - 1].t : 1;
  let top = 1;
  for (const s of h) for (const [key] of k.series) if (s[key] != null) top = Math.max(top, s[key]);
  top *= 1.15;
  const x = (t) => (t1 > t0 ? (W * (t - t0)) / (t1 - t0) : W).toFixed(1);
  const y = (v) => (H - pad - ((H - 2 * pad) * v) / top).toFixed(1);
  const now = h[h.length - 1] || {};
  const words = k.series.filter(([key]) => now[key] != null).map(([key, , name]) => `${name} ${k.unit(now[key])}`);
  const span = h.length > 1 ? age(t1 - t0).replace(" ago", "") : "";
  const label = `${k.title}: ${words.length ? `now ${words.join(", ")}` : "no figures yet"}${span ? `; over the last ${span}` : ""}.`;
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label, preserveAspectRatio: "none", class: "chart-svg" });
  const title = svg("title");
  title.textContent = label;
  s.append(title, svg("line", { x1: 0, x2: W, y1: H - pad, y2: H - pad, class: "axis" }));
  for (const [key, cls] of k.series) {
    const have = h.filter((p) => p[key] != null);
    if (have.length > 1) s.append(svg("polyline", { points: have.map((p) => `${x(p.t)},${y(p[key])}`).join(" "), class: cls }));
    // The latest value, marked: a single sample is a dot.
    const last = have[have.length - 1];
    if (last) s.append(svg("circle", { cx: Math.min(W - 3, Number(x(last.t))), cy: y(last[key]), r: 3, class: `${cls} dot` }));
  }
  fig.dataset.points = String(h.length);
  fig.dataset.now = JSON.stringify(Object.fromEntries(k.series.map(([key]) => [key, now[key] ?? null])));
  fig.querySelector(".chart-plot").replaceChildren(s);
  const scale = fig.querySelector(".chart-now");
  scale.textContent = `${words.length ? `Now: ${words.join(", ")}` : "No figures yet"}; 0 to ${k.unit(Math.round(top / 1.15))}${span ? `, the last ${span}` : ""}.`;
  scale.setAttribute("aria-hidden", "true"); // the image's label says it
}
