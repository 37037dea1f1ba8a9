// The console's charts of a sale as it happens. Opening an event loads
// its last 30 minutes from the admin API's series (a sample every 10
// seconds, kept by the gateways' slot monitors: GET
// /v1/admin/events/{id}/series), and every listing the console reads
// (every 2 s) adds the newest point, so the charts start with the last
// half hour and keep moving. They are small SVG line charts with no
// library: line length, admissions a minute, holders against capacity,
// the shop's p95 against the target (#charts); the shop's error share
// against its limit and the effective admission rate (#charts-shop).
// Each chart has a text alternative with its latest figures, in the
// console's language.
"use strict";

const historyMs = 30 * 60 * 1000;
// history holds each event's points, oldest first: {t, waiting, holders,
// capacity, admitted, perMinute, p95, target, rate, errors, maxErrors}.
const history = new Map();
// seriesAt is when each event's series was last loaded (unix ms).
const seriesAt = new Map();

// record adds a point of every event of listing list, read at t.
function record(list, t) {
  for (const e of list) {
    const h = history.get(e.eventId) || [];
    const health = (e.health || [])[0];
    const c = e.control;
    const sig = (key) => (c && c.signal && c.signal[key] != null ? c.signal[key] : (health && health[key] != null ? health[key] : null));
    h.push({
      t, waiting: e.waiting, holders: e.holders, capacity: e.capacity, admitted: e.admittedTotal,
      perMinute: admissionsAMinute(h, e.admittedTotal, t),
      p95: sig("p95Ms"), errors: sig("errorRate"),
      target: e.adaptive ? e.adaptive.targetLatencyMs : null,
      maxErrors: e.adaptive ? e.adaptive.maxErrorRate : null,
      rate: e.adaptive ? (c && c.phase ? c.admitPerMinute : null) : (e.admitPerMinute || null),
    });
    while (h.length && h[0].t < t - historyMs) h.shift();
    history.set(e.eventId, h);
  }
}

// admissionsAMinute is the admissions of the last minute up to a point of
// admitted at t, from the points h before it (the oldest within a minute;
// scaled to a minute when they span less).
function admissionsAMinute(h, admitted, t) {
  const from = h.find((s) => s.t >= t - 60000);
  if (!from || t - from.t < 1000) return null;
  return Math.max(0, Math.round((admitted - from.admitted) * 60000 / (t - from.t)));
}

// loadSeries reads event id's series and puts its samples before the
// points this tab read itself; fetch is the console's API call. It
// resolves once the history holds them (or the API refused: the tab's
// own points stay).
async function loadSeries(id, fetch) {
  if (!id) return;
  seriesAt.set(id, Date.now());
  let body;
  try {
    const r = await fetch(`/v1/admin/events/${encodeURIComponent(id)}/series`);
    if (!r.ok) return;
    body = await r.json();
  } catch { return; }
  const own = history.get(id) || [];
  const first = own.length ? own[0].t : Infinity;
  const past = body.samples.filter((s) => s.at < first).map((s) => ({
    t: s.at, waiting: s.waiting, holders: s.holders, capacity: s.capacity, admitted: s.admittedTotal,
    perMinute: s.admittedPerMinute == null ? null : Math.round(s.admittedPerMinute),
    p95: s.p95Ms ?? null, target: s.targetLatencyMs ?? null, errors: s.errorRate ?? null, maxErrors: s.maxErrorRate ?? null,
    rate: s.admitPerMinute ?? null, sampled: true,
  }));
  const merged = [...past, ...own.filter((p) => !p.sampled)];
  // The points read before the series came had no minute to look back on.
  merged.forEach((p, i) => {
    if (!p.sampled && p.perMinute == null) p.perMinute = admissionsAMinute(merged.slice(0, i), p.admitted, p.t);
  });
  history.set(id, merged);
}

// seriesDue reports whether event id's series is to be loaded again: never
// loaded, or five minutes ago (a tab in the background misses points).
function seriesDue(id) {
  return !seriesAt.has(id) || Date.now() - seriesAt.get(id) > 5 * 60 * 1000;
}

const count0 = (v) => i18n.num(Math.round(v));
const ms0 = (v) => `${i18n.num(Math.round(v))} ms`;
const pct1 = (v) => new Intl.NumberFormat(i18n.lang, { style: "percent", maximumFractionDigits: 1 }).format(v);

// The charts: where they go, their title's key, the series drawn (key of
// a point, a class, the key of its name), and how a value reads.
const chartKinds = [
  { id: "waiting", box: "charts", title: "c.chart.waiting", series: [["waiting", "s1", "c.s.waiting"]], unit: count0 },
  { id: "admissions", box: "charts", title: "c.chart.admissions", series: [["perMinute", "s1", "c.s.perMinute"], ["rate", "bound", "c.s.rate"]], unit: count0 },
  { id: "holders", box: "charts", title: "c.chart.holders", series: [["holders", "s1", "c.s.holders"], ["capacity", "bound", "c.s.capacity"]], unit: count0 },
  { id: "p95", box: "charts", title: "c.chart.p95", series: [["p95", "s1", "c.s.p95"], ["target", "bound", "c.s.target"]], unit: ms0 },
  { id: "errors", box: "charts-shop", title: "c.chart.errors", series: [["errors", "s1", "c.s.errors"], ["maxErrors", "bound", "c.s.maxErrors"]], unit: pct1, top: 0.01 },
  { id: "rate", box: "charts-shop", title: "c.chart.rate", series: [["rate", "s1", "c.s.effective"]], unit: count0 },
];

// drawCharts draws the charts of event id (one figure per kind, made once
// in its box and redrawn in place).
function drawCharts(id) {
  const h = history.get(id) || [];
  for (const k of chartKinds) {
    const box = document.getElementById(k.box);
    box.dataset.event = id || "";
    let fig = box.querySelector(`figure[data-chart="${k.id}"]`);
    if (!fig) {
      fig = el("figure", undefined, "chart");
      fig.dataset.chart = k.id;
      const cap = el("figcaption");
      cap.id = `chart-${k.id}-title`;
      fig.append(cap, el("div", "", "chart-plot"), el("p", "", "chart-now muted"));
      box.append(fig);
    }
    fig.querySelector("figcaption").textContent = i18n.t(k.title);
    drawChart(fig, k, h);
  }
}

// drawChart draws points h of kind k in fig: a line per series, from 0 to
// a little above the highest value, the time axis the points' span, the
// bounds dashed; the latest values in words below, and as the image's
// label.
function drawChart(fig, k, h) {
  const W = 320, H = 120, pad = 4;
  const t0 = h.length ? h[0].t : 0, t1 = h.length ? h[h.length - 1].t : 1;
  let top = k.top || 1;
  for (const s of h) for (const [key] of k.series) if (s[key] != null) top = Math.max(top, s[key]);
  top *= 1.15;
  const x = (t) => (t1 > t0 ? (W * (t - t0)) / (t1 - t0) : W).toFixed(1);
  const y = (v) => (H - pad - ((H - 2 * pad) * v) / top).toFixed(1);
  const now = h[h.length - 1] || {};
  const title = i18n.t(k.title);
  const figures = k.series.filter(([key]) => now[key] != null).map(([key, , name]) => `${i18n.t(name)} ${k.unit(now[key])}`).join(", ");
  const span = h.length > 1 ? spanText((t1 - t0) / 1000) : "";
  const label = i18n.t("c.chart.label", {
    title, now: figures ? i18n.t("c.chart.now", { figures }) : i18n.t("c.chart.none"),
    span: span ? i18n.t("c.chart.span", { span }) : "",
  });
  const s = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": label, preserveAspectRatio: "none", class: "chart-svg" });
  const t = svg("title");
  t.textContent = label;
  s.append(t, svg("line", { x1: 0, x2: W, y1: H - pad, y2: H - pad, class: "axis" }));
  for (const [key, cls] of k.series) {
    const have = h.filter((p) => p[key] != null);
    if (have.length > 1) s.append(svg("polyline", { points: have.map((p) => `${x(p.t)},${y(p[key])}`).join(" "), class: cls }));
    // The latest value, marked: a single point is a dot.
    const last = have[have.length - 1];
    if (last) s.append(svg("circle", { cx: Math.min(W - 3, Number(x(last.t))), cy: y(last[key]), r: 3, class: `${cls} dot` }));
  }
  fig.dataset.points = String(h.length);
  fig.dataset.sampled = String(h.filter((p) => p.sampled).length);
  fig.dataset.now = JSON.stringify(Object.fromEntries(k.series.map(([key]) => [key, now[key] ?? null])));
  fig.querySelector(".chart-plot").replaceChildren(s);
  const scale = fig.querySelector(".chart-now");
  scale.textContent = i18n.t("c.chart.caption", {
    now: figures ? i18n.t("c.chart.captionNow", { figures }) : i18n.t("c.chart.captionNone"),
    top: k.unit(top / 1.15), span: span ? i18n.t("c.chart.captionSpan", { span }) : "",
  });
  scale.setAttribute("aria-hidden", "true"); // the image's label says it
}

// spanText says a span of s seconds as a chart's words need it: to the
// second under a minute, to the minute above.
function spanText(s) {
  return s < 60 ? i18n.duration(s) : i18n.t("dur.min", { m: Math.round(s / 60) });
}
