// The console's forms (admin.js holds the console's state and starts it):
// the admin PUT they send, capacity, rate and state, a drop's schedule, the
// draw's export, and adaptive admission on, changed or off.
"use strict";

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

// supplyPublicValue supplies a chain draw's public value (hex): the draw
// is made with it, once.
async function supplyPublicValue(id, value) {
  const r = await api(`/v1/admin/events/${encodeURIComponent(id)}/draw/public-value`, { method: "PUT", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ value }) });
  if (!r.ok) {
    const body = await r.json().catch(() => ({}));
    $("admin-error").textContent = body.error ? body.error.message : i18n.t("c.error", { status: r.status });
    return;
  }
  $("admin-error").textContent = "";
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
