// waitq waiting room: join over HTTP, then watch the line over WebSocket.
// When the WebSocket cannot open at all (a proxy that refuses the upgrade),
// the page falls back to server-sent events on the gateway's stream route,
// and when those cannot open either (or the browser has no EventSource),
// to polling the status route; the connection line says which is in use.
// Nobody types an id: the page joins by itself, as the visitor identity
// producer-api issues in a cookie (or as the account of the join token the
// shop's link carries, ?joinToken=), solving the event's proof-of-work
// challenge first in a Web Worker when the event asks for one. The ticket is
// kept in localStorage per event, so a refresh, a second tab or a browser
// reopened keeps the same place; reconnects back off exponentially. For a ticket drop it
// counts down to the opening in the pre-queue, shows the draw's commitment
// (and the seed after the opening) and the place the draw gave.
//
// The page speaks the language of ?lang=, else the browser's, else the
// event's page locale (i18n.js), shows the event's branding (brand.js),
// and tells screen readers of the place in a polite live region at most
// every announceEvery, at once when it is the person's turn.
//
// Plain scripts sharing one global scope, this one loaded last: it holds
// the page's state and starts it; room-join.js joins, room-watch.js hears
// of the place, room-frames.js shows it, room-call.js calls the
// turn and keeps the mail form, room-fairness.js tells an admitted person
// how many who joined after them got in first, room-receipt.js shows and
// checks a chain draw's receipt.
"use strict";

const $ = (id) => document.getElementById(id);
let config = { producerUrl: "", defaultEvent: "demo" };
let socket = null;
let source = null; // the EventSource, in mode "sse"
let pollTimer = null;
// mode is how the page hears of its place: "ws", then "sse", then "poll",
// each tried when the one before cannot open.
let mode = "ws";
const worked = { ws: false, sse: false }; // opened once in this page: not blocked, only broken
let tokenRetried = false; // admitted while polling: the live ways were tried once more for the token
const pollEvery = 5000;
let retries = 0;
let expiresAt = 0;
let countdown = null;
let finished = false;
// A drop: the opening (server unix ms), the server's clock minus ours, the
// ticker of the countdown, and which draw reads were made (readDraw).
let opensAt = 0;
let skew = 0;
let opening = null;
const drawRead = { prequeue: false, opened: 0, seed: false, busy: false };
let returnTo = "";
let notOpenTimer = null;
// The event this page is for (?event=), and the shop's join token for it
// (?joinToken=), if any.
let eventId = "";
let joinToken = "";
let joining = false;
// The line as this page saw it move: when and where the first waiting
// status came, for the estimate's second opinion (etaText).
const seen = { at: 0, position: 0 };
// Announcements: a position at most every announceEvery, the turn at once.
const announceEvery = 30000;
const announcer = { at: 0, pending: "" };

// The place is kept per event in localStorage: every tab of this browser
// shares it, and it outlives the tab.
function storeKey() { return `waitq:${eventId}`; }

// visit returns this browser's visit of the event: one key for every try
// of a join until the place ends (finish), kept with the place.
function visit() {
  const key = `waitq-visit:${eventId}`;
  let v = localStorage.getItem(key);
  if (!v) {
    const b = new Uint8Array(16);
    crypto.getRandomValues(b);
    v = Array.from(b, (x) => x.toString(16).padStart(2, "0")).join("");
    localStorage.setItem(key, v);
  }
  return v;
}

function saved() {
  try {
    const s = JSON.parse(localStorage.getItem(storeKey()) || "null");
    return s && s.event === eventId ? s : null;
  } catch { return null; }
}

function save(v) {
  if (v) localStorage.setItem(storeKey(), JSON.stringify(v)); else localStorage.removeItem(storeKey());
}

function show(section) {
  for (const id of ["joining", "line", "admitted", "released"]) $(id).hidden = id !== section;
}

function setConn(state, key, vars) {
  $("conn").dataset.state = state;
  $("conn").dataset.transport = mode;
  $("conn").textContent = i18n.t(key, vars);
}

// announce tells screen readers text through the polite live region: at
// once when now, else at most every announceEvery (the latest text wins).
function announce(text, now) {
  if (now) announcer.at = 0;
  announcer.pending = text;
  flushAnnouncement();
}

function flushAnnouncement() {
  const text = announcer.pending;
  if (!text || Date.now() - announcer.at < announceEvery) return;
  announcer.pending = "";
  if ($("announce").textContent === text) return;
  announcer.at = Date.now();
  $("announce").textContent = text;
}

// texts writes the page's own texts in its language: the static ones
// (data-i18n) and those with elements in their slots.
function texts() {
  i18n.apply();
  document.title = brand.tabTitle();
  const slots = {
    "line-title": ["line.title", { event: $("line-event") }],
    "place-line": ["place", { position: $("position"), total: $("total") }],
    "eta-line": ["eta", { eta: $("eta") }],
    "drawn": ["drawn", { place: $("drawn-place") }],
    "prequeue-when": ["notOpen.when", { at: $("prequeue-opens-at").parentNode, in: $("prequeue-opens-in") }],
    "not-open-drop": ["notOpen.drop", { at: $("drop-opens-at").parentNode }],
    "opens-in-line": ["prequeue.opensIn", { in: $("opens-in") }],
    "opens-at-line": ["prequeue.at", { at: $("opens-at") }],
    "updated": ["updated", { time: $("updated-at") }],
    "expires-line": ["admitted.expires", { countdown: $("countdown") }],
    "admitted-next": ["admitted.next", { until: $("admitted-until").parentNode }],
    "redirect": ["admitted.redirect", { link: $("go-shop") }],
    "verify-hint": ["draw.hint", { cmd: $("verify-cmd"), verifier: $("verify-tool") }],
  };
  for (const [id, [key, nodes]] of Object.entries(slots)) fill($(id), i18n.t(key, {}), nodes);
  $("line-event").textContent = brand.title(eventId);
  $("state-text").textContent = i18n.t("state.waitingForPlace");
  $("draw-explain").textContent = i18n.t("draw.explain");
  $("eta").textContent = i18n.t("eta.unknown");
  $("released").textContent = i18n.t("released");
  const select = $("lang");
  select.replaceChildren(...i18n.languages.map((l) => {
    const o = document.createElement("option");
    o.value = l;
    o.lang = l;
    o.textContent = catalogs[l]["lang.name"];
    return o;
  }));
  select.value = i18n.lang;
}

// phaseNotice says when the sale is paused or closed (the line does not
// move, or takes nobody new); read at the start and every minute.
function phaseNotice(e) {
  const key = e && { paused: "phase.paused", closed: "phase.closed" }[e.phase];
  $("phase-notice").hidden = !key;
  if (key) $("phase-notice").textContent = i18n.t(key);
}

// notifications offers to notify the person of their turn while the tab
// is hidden, where the browser can.
function notifications() {
  if (!("Notification" in window) || Notification.permission === "denied") return;
  $("notify-box").hidden = false;
  const said = () => {
    const p = Notification.permission;
    $("notify").hidden = p !== "default";
    $("notify-status").textContent = p === "granted" ? i18n.t("notify.on") : p === "denied" ? i18n.t("notify.blocked") : "";
  };
  said();
  $("notify").addEventListener("click", async () => {
    try { await Notification.requestPermission(); } catch { /* an old browser */ }
    said();
  });
}

async function start() {
  try { config = Object.assign(config, await (await fetch("/config.json")).json()); } catch { /* defaults */ }
  const params = new URLSearchParams(location.search);
  eventId = params.get("event") || config.defaultEvent;
  returnTo = params.get("returnTo") || "";
  joinToken = params.get("joinToken") || "";
  const resume = params.get("resume") || "";
  if (resume) {
    // Used once, here: a reload must not ask again.
    params.delete("resume");
    history.replaceState(null, "", `${location.pathname}?${params}`);
  }
  if (joinToken) {
    // The token is kept with the place, not in the address bar.
    params.delete("joinToken");
    history.replaceState(null, "", `${location.pathname}?${params}`);
  }
  const e = await readEvent(eventId);
  const page = (e && e.page) || {};
  i18n.choose([params.get("lang"), ...(navigator.languages || [navigator.language]), page.locale]);
  brand.show(page, eventId);
  texts();
  phaseNotice(e);
  notifications();
  startCalls();
  setInterval(async () => { if (!finished) phaseNotice(await readEvent(eventId)); }, 60000);
  setInterval(flushAnnouncement, 5000);
  // The language applies as it is chosen (the form's button is for pages
  // without scripts), keeping the rest of the address.
  $("lang").addEventListener("change", () => {
    const p = new URLSearchParams(location.search);
    p.set("lang", $("lang").value);
    location.assign(`${location.pathname}?${p}`);
  });
  $("join").addEventListener("click", join);
  $("receipt-check").addEventListener("click", checkReceipt);
  // Another tab of this browser joined or ended: follow it.
  window.addEventListener("storage", (ev) => {
    if (ev.key === storeKey() && saved() && !$("joining").hidden && !joining) watch();
  });
  $("leave").addEventListener("click", () => { send("leave"); finish(); $("released").textContent = i18n.t("left"); });
  $("done").addEventListener("click", () => { send("release"); setTimeout(finish, 200); });
  startResume();
  const s = saved();
  if (s && s.joinToken && !joinToken) joinToken = s.joinToken;
  if (resume && !(await resumeHere(resume))) return;
  watch();
}

start();
