// waitq console: the chosen event's fairness report (docs/api.md,
// "Fairness report"): how far admission order strayed from join order
// (inverted pairs and the normalised Kendall tau distance), the late joins
// overtaken, the time in line and the ingest delay, the turns lost and,
// for a drop, its draw. The report is public and cached for 2 seconds by
// producer-api, so reading it at each refresh costs the store nothing more.
// A plain script sharing admin.js's scope (el, ms, i18n, config).
"use strict";

// fairnessShown is the event whose report the panel shows.
let fairnessShown = "";

// drawFairness reads event id's report and shows it in #fair-report.
async function drawFairness(id) {
  const box = $("fair-report");
  if (!id) {
    box.replaceChildren();
    return;
  }
  if (fairnessShown !== id) box.replaceChildren(el("p", i18n.t("c.fr.loading"), "muted"));
  fairnessShown = id;
  let r;
  try {
    const res = await fetch(`${config.producerUrl}/v1/events/${encodeURIComponent(id)}/fairness`);
    r = await res.json();
    if (!res.ok) throw new Error(r.error ? r.error.message : String(res.status));
  } catch (e) {
    if (fairnessShown === id) box.replaceChildren(el("p", i18n.t("c.fr.error", { msg: e.message }), "error"));
    return;
  }
  if (fairnessShown === id) box.replaceChildren(...fairnessLines(r));
}

// fairnessLines are the report's lines, one fact each.
function fairnessLines(r) {
  const o = r.order, w = r.timeInLineMs, d = r.ingestDelayMs;
  const tau = o.kendallTau ? i18n.num(o.kendallTau, 6) : i18n.num(0);
  const lines = [
    el("div", i18n.t(`c.fr.kind.${r.kind}`), "fr-kind"),
    el("div", i18n.t("c.fr.order", { pairs: i18n.num(o.inversions), admissions: i18n.num(o.admissions), tau }), o.inversions ? "fr-order warn" : "fr-order"),
  ];
  if (!o.exact) lines.push(el("div", i18n.t("c.fr.lowerBound"), "muted"));
  lines.push(el("div", i18n.t("c.fr.overtaken", { v: i18n.num(o.overtakenJoins) }), "fr-overtaken"));
  lines.push(el("div", w.count ? i18n.t("c.fr.wait", { p50: ms(w.p50), p90: ms(w.p90), v: i18n.num(w.count) }) : i18n.t("c.fr.noWait"), "fr-wait"));
  lines.push(el("div", d.count ? i18n.t("c.fair.delay", { p50: ms(d.p50), p99: ms(d.p99), v: d.count }) : i18n.t("c.fair.none"), "fr-delay"));
  lines.push(el("div", i18n.t("c.fr.turns", { admitted: i18n.num(r.admittedTotal), lapsed: i18n.num(r.lapsedTotal), arrived: i18n.num(r.arrivedTotal), noShows: i18n.num(r.noShowTotal) }), "fr-turns"));
  if (r.draw) {
    const key = r.draw.seed ? (r.draw.verified ? "c.fr.drawVerified" : "c.fr.drawMismatch") : "c.fr.drawSealed";
    lines.push(el("div", i18n.t(key, { v: i18n.num(r.draw.prequeueSize) }), r.draw.seed && !r.draw.verified ? "fr-draw error" : "fr-draw"));
  }
  lines.push(el("p", i18n.t("c.fr.context"), "muted"));
  return lines;
}
