// The console's event settings beyond admission: the waiting room page's
// branding (page), the proof-of-work challenge, the join tokens' keys,
// the door's figures, and the confirmation a change that stops or slows
// a sale asks for. Join token secrets are never put in the page: the
// keys are listed by kid and algorithm, a new key's secret is cleared once
// saved, and the keys kept are sent back from what the admin API returned.
"use strict";

// confirmChange asks, in the console's dialog, whether to make a change
// that says what will happen; it resolves to true when confirmed.
function confirmChange(title, text, action) {
  const d = $("confirm");
  $("confirm-title").textContent = title;
  $("confirm-text").textContent = text;
  $("confirm-ok").textContent = action;
  return new Promise((resolve) => {
    d.returnValue = "";
    d.addEventListener("close", () => resolve(d.returnValue === "ok"), { once: true });
    d.showModal();
    $("confirm-cancel").focus();
  });
}

// risky returns the confirmation a change to event e asks for, or null:
// pausing, resuming or closing it, lowering its capacity or its rate. Each
// says what will happen, in the console's language.
function risky(e, change) {
  if (!e) return null;
  const ask = (what, vars) => [i18n.t(`c.ask.${what}.title`, vars), i18n.t(`c.ask.${what}.text`, vars), i18n.t(`c.ask.${what}.ok`, vars)];
  const vars = { event: e.eventId, waiting: e.waiting, holders: e.holders };
  if (change.state === "paused" && e.state !== "paused") return ask("pause", vars);
  if (change.state === "open" && e.state !== "open") {
    const capacity = change.capacity ?? e.capacity;
    return ask("resume", { ...vars, free: Math.max(0, Math.min(e.waiting, capacity - e.holders)) });
  }
  if (change.state === "closed" && e.state !== "closed") return ask("close", vars);
  if (change.capacity !== undefined && change.capacity < e.capacity) {
    return ask("capacity", { ...vars, from: e.capacity, to: change.capacity });
  }
  if (change.admitPerMinute !== undefined && e.admitPerMinute > 0 && (change.admitPerMinute === 0 ? false : change.admitPerMinute < e.admitPerMinute)) {
    return ask("rate", { ...vars, from: e.admitPerMinute, to: change.admitPerMinute });
  }
  return null;
}

// scheduleAsk is the confirmation of scheduling event id (e: its status,
// undefined for a new event) with change: when joins are refused, when it
// opens and its places are drawn, and when it closes.
function scheduleAsk(id, e, change) {
  const vars = {
    event: id, waiting: e ? e.waiting : 0, opens: i18n.time(change.opensAt),
    from: i18n.time(change.opensAt - 1000 * change.prequeueSeconds),
  };
  let text = i18n.t(e ? "c.ask.schedule.text" : "c.ask.schedule.new", vars);
  if (change.closesAt) text += i18n.t("c.ask.schedule.closes", { closes: i18n.time(change.closesAt) });
  return [i18n.t("c.ask.schedule.title", vars), text, i18n.t("c.ask.schedule.ok", vars)];
}

// deleteAsk is the confirmation of deleting event id (e: its status).
function deleteAsk(id, e) {
  const vars = { event: id, waiting: e ? e.waiting : 0 };
  return [i18n.t("c.ask.delete.title", vars), i18n.t("c.ask.delete.text", vars), i18n.t("c.ask.delete.ok", vars)];
}

// ---- The page's branding.

const pageFields = [["pg-title", "title"], ["pg-message", "message"], ["pg-logo", "logoUrl"], ["pg-accent", "accentColor"], ["pg-template", "template"], ["pg-locale", "locale"]];

// editPage fills the page form with event id's page.
function editPage(id) {
  const e = events.get(id);
  const p = (e && e.page) || {};
  $("pg-event").value = id;
  for (const [input, key] of pageFields) $(input).value = p[key] || "";
  say($("pg-status"), "");
}

async function savePage(event) {
  event.preventDefault();
  const ev = $("pg-event").value.trim();
  const page = {};
  for (const [input, key] of pageFields) if ($(input).value.trim() !== "") page[key] = $(input).value.trim();
  const { ok, body, message } = await putEvent(ev, { page: Object.keys(page).length ? page : null });
  say($("pg-status"), ok ? (body.page ? i18n.t("c.page.shows", { event: ev, title: body.page.title || ev }) : i18n.t("c.page.plain", { event: ev })) : message, !ok);
  refresh();
}

// ---- The proof-of-work challenge.

// editChallenge fills the challenge form with event id's policy.
function editChallenge(id) {
  const e = events.get(id);
  const c = (e && e.challenge) || { mode: "off" };
  $("ch-event").value = id;
  $("ch-mode").value = c.mode;
  $("ch-difficulty").value = c.difficulty || "";
  $("ch-min").value = c.minDifficulty || "";
  $("ch-max").value = c.maxDifficulty || "";
  $("ch-rate").value = c.joinsPerSecond || "";
  challengeModeChanged();
  say($("ch-status"), "");
}

// challengeModeChanged shows the fields of the mode chosen.
function challengeModeChanged() {
  const mode = $("ch-mode").value;
  $("ch-fixed").hidden = mode !== "fixed";
  $("ch-adaptive").hidden = mode !== "adaptive";
}

async function saveChallenge(event) {
  event.preventDefault();
  const ev = $("ch-event").value.trim();
  const mode = $("ch-mode").value;
  let policy = null;
  if (mode === "fixed") policy = { mode, difficulty: Number($("ch-difficulty").value) };
  if (mode === "adaptive") {
    policy = { mode, minDifficulty: Number($("ch-min").value), maxDifficulty: Number($("ch-max").value) };
    if ($("ch-rate").value !== "") policy.joinsPerSecond = Number($("ch-rate").value);
  }
  const { ok, message } = await putEvent(ev, { challenge: policy });
  const text = !policy ? i18n.t("c.ch.saidOff", { event: ev }) : mode === "fixed" ? i18n.t("c.ch.saidFixed", { event: ev, bits: policy.difficulty })
    : i18n.t("c.ch.saidAdaptive", { event: ev, min: policy.minDifficulty, max: policy.maxDifficulty });
  say($("ch-status"), ok ? text : message, !ok);
  refresh();
}

// ---- Join tokens.

// jtKeys are the keys of the event in the join token form, as the admin
// API returned them (secrets in this script only) less those removed.
let jtKeys = [];

// editJoinToken fills the join token form with event id's policy.
function editJoinToken(id) {
  const e = events.get(id);
  const p = (e && e.joinToken) || { required: false, keys: [] };
  $("jt-event").value = id;
  $("jt-required").checked = !!p.required;
  jtKeys = (p.keys || []).map((k) => Object.assign({}, k));
  $("jt-kid").value = "";
  $("jt-material").value = "";
  listKeys();
  say($("jt-status"), "");
}

// listKeys lists the form's keys by kid and algorithm, each with a button
// that removes it (on saving).
function listKeys() {
  const items = jtKeys.map((k, i) => {
    const li = el("li", undefined, "jt-key");
    li.dataset.kid = k.kid;
    const b = el("button", i18n.t("c.jt.remove"), "secondary small-inline");
    b.type = "button";
    b.setAttribute("aria-label", i18n.t("c.jt.removeKey", { kid: k.kid }));
    b.addEventListener("click", () => { jtKeys.splice(i, 1); listKeys(); });
    li.append(raw(el("code", k.kid)), ` · ${k.alg} `, b);
    return li;
  });
  $("jt-keys").replaceChildren(...items);
  $("jt-none").hidden = items.length > 0;
}

async function saveJoinToken(event) {
  event.preventDefault();
  const ev = $("jt-event").value.trim();
  const keys = jtKeys.slice();
  const kid = $("jt-kid").value.trim(), material = $("jt-material").value.trim(), alg = $("jt-alg").value;
  if (kid || material) keys.push(alg === "HS256" ? { kid, alg, secret: material } : { kid, alg, publicKey: material });
  const policy = keys.length || $("jt-required").checked ? { required: $("jt-required").checked, keys } : null;
  const { ok, body, message } = await putEvent(ev, { joinToken: policy });
  if (ok) {
    $("jt-material").value = ""; // never kept in the page
    $("jt-kid").value = "";
    events.set(ev, body);
    editJoinToken(ev);
    const n = body.joinToken ? body.joinToken.keys.length : 0;
    const keys = i18n.t("c.door.keys", { n });
    say($("jt-status"), i18n.t(body.joinToken && body.joinToken.required ? "c.jt.saidRequired" : "c.jt.saidOptional", { event: ev, keys }));
  } else {
    say($("jt-status"), message, true);
  }
  refresh();
}

// doorText says what came through e's door: challenges issued, solved and
// refused, the join rate and the difficulty in force.
function doorText(e) {
  const d = e.door || {};
  const mode = e.challenge && e.challenge.mode !== "off" ? i18n.t("c.door.mode", { mode: word("c.chmode", e.challenge.mode), bits: d.difficulty || 0 }) : i18n.t("c.door.none");
  const keys = i18n.t("c.door.keys", { n: (e.joinToken && e.joinToken.keys || []).length });
  const tokens = e.joinToken ? i18n.t(e.joinToken.required ? "c.door.invite" : "c.door.optional", { keys }) : i18n.t("c.door.noTokens");
  return [mode, i18n.t("c.door.counts", { issued: d.challengesIssued || 0, solved: d.challengesSolved || 0, refused: d.challengesRefused || 0 }),
    i18n.t("c.door.rate", { rate: i18n.num(d.joinsPerSecond || 0, 1) }), tokens];
}
