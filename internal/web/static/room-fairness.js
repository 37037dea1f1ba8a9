// The admitted person's own line of the event's fairness report (docs/api.md,
// "Fairness report"): when they joined, and how many who joined after them
// got in before them, counted at their admission (GET …/fairness/mine, as
// the visitor who joined). Shown under the turn; nothing when it cannot be
// read. A plain script sharing app.js's scope (api in room-join.js).
"use strict";

// showOwnOrder reads and shows the caller's own line in #own-order.
async function showOwnOrder() {
  const p = $("own-order");
  p.hidden = true;
  let res;
  try {
    res = await api(`/v1/events/${encodeURIComponent(eventId)}/fairness/mine`);
  } catch { return; }
  if (!res.r.ok) return;
  const o = res.body;
  const n = o.overtakenBy;
  const joined = o.drawnPlace ? i18n.t("order.drawn") : i18n.t("order.joined", { at: i18n.time(o.joinedAt) });
  p.textContent = `${joined} ${n ? i18n.t("order.overtaken", { n }) : i18n.t("order.none")}`;
  p.dataset.overtakenBy = String(n);
  p.hidden = false;
}
