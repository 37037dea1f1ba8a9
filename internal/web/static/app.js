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
let firstPosition = 0;
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

function setConn(state, text) {
  $("conn").dataset.state = state;
  $("conn").dataset.transport = mode;
  $("conn").textContent = text;
}

// api calls producer-api with the visitor's cookie (and the shop's join
// token); it returns the response and its JSON body.
async function api(path, init = {}) {
  const headers = Object.assign({}, init.headers || {});
  if (joinToken) headers["X-Waitq-Join-Token"] = joinToken;
  const r = await fetch(`${config.producerUrl}${path}`, Object.assign({}, init, { headers, credentials: "include" }));
  let body = {};
  try { body = await r.json(); } catch { /* an empty or non-JSON answer */ }
  return { r, body };
}

// join takes this browser's place in the event's line: an identity first
// (the cookie producer-api issues, unless the shop's join token names the
// account), then the event's challenge, solved, then the join. A join the
// event refuses for now (a drop not yet taking joins) waits and tries again
// by itself.
async function join() {
  if (joining) return;
  joining = true;
  $("join-error").textContent = "";
  $("join").hidden = true;
  show("joining");
  const ev = encodeURIComponent(eventId);
  try {
    if (!joinToken) {
      const id = await api("/v1/visitor", { method: "POST" });
      if (!id.r.ok) return failed(id.body);
    }
    const ch = await api(`/v1/events/${ev}/challenge`, { method: "POST" });
    if (!ch.r.ok) return failed(ch.body);
    // The visit's key goes with every try: a retry that lands after an
    // earlier try of the visit was admitted queues nobody again.
    const init = { method: "POST", headers: { "Idempotency-Key": visit() } };
    if (ch.body.required) {
      const solution = await solve(ch.body);
      init.headers["Content-Type"] = "application/json";
      init.body = JSON.stringify({ challenge: ch.body.challenge, solution });
    }
    const { r, body } = await api(`/v1/events/${ev}/queue`, init);
    if (r.status === 409 && body.error && body.error.code === "event_not_open") {
      await notOpen(eventId, body.error, r.headers.get("Retry-After"));
      return;
    }
    if (r.status !== 202) return failed(body, r.status);
    hideNotOpen();
    save({ event: eventId, user: body.userId, ticket: body.ticket, statusUrl: body.statusUrl, returnTo, joinToken });
    watch();
  } catch (e) {
    failed({ error: { message: "The waiting room cannot be reached. Please try again." } });
  } finally {
    joining = false;
    $("pow").hidden = true;
  }
}

// failed shows why a join did not go through, with a button to try again.
function failed(body, status) {
  $("join-error").textContent = body && body.error ? body.error.message : `Could not join (${status || "no answer"}).`;
  $("join").hidden = false;
}

// solve finds the challenge's solution in a Web Worker (pow-worker.js), the
// page staying responsive, with its progress shown and told to screen
// readers in a few steps.
function solve(ch) {
  return new Promise((resolve, reject) => {
    const w = new Worker("/static/pow-worker.js");
    let told = 0;
    $("pow").hidden = false;
    $("pow-progress").value = 0;
    $("pow-status").textContent = "Checking that you are a person: this takes a moment.";
    w.onmessage = ({ data }) => {
      if (data.type === "progress") {
        // The work is a lottery: tried/expected tries makes 1 - e^-x done.
        const pct = Math.min(99, Math.round(100 * (1 - Math.exp(-data.tried / data.expected))));
        $("pow-progress").value = pct;
        if (pct >= told + 25) {
          told = pct - (pct % 25);
          $("pow-status").textContent = `Checking that you are a person: ${told}% done.`;
        }
      } else if (data.type === "solved") {
        $("pow-progress").value = 100;
        $("pow-status").textContent = "Done: joining the line.";
        w.terminate();
        resolve(data.solution);
      } else {
        w.terminate();
        reject(new Error(data.message || "the challenge could not be solved"));
      }
    };
    w.onerror = (e) => { w.terminate(); reject(e); };
    w.postMessage({ challenge: ch.challenge });
  });
}

// notOpen explains a join refused because the drop's pre-queue has not
// started: when it starts and when the drop opens, with a countdown. The
// form stays as it is, to join again then. The pre-queue's start comes from
// the public event (exact), else from Retry-After (which a cross-origin page
// may not be allowed to read).
async function notOpen(ev, err, retryAfter) {
  let start = 0;
  let dropAt = err.opensAt || 0;
  let clock = 0; // the server's clock minus ours
  try {
    const r = await fetch(`${config.producerUrl}/v1/events/${encodeURIComponent(ev)}`);
    if (r.ok) {
      const e = await r.json();
      if (e.opensAt) dropAt = e.opensAt;
      if (e.opensAt) start = e.opensAt - 1000 * (e.prequeueSeconds || 0);
      if (e.serverTime) clock = e.serverTime - Date.now();
    }
  } catch { /* Retry-After below */ }
  if (!start && retryAfter && Number(retryAfter) >= 0) start = Date.now() + clock + 1000 * Number(retryAfter);
  $("not-open-text").textContent = "This drop does not take joins yet.";
  setTime($("drop-opens-at"), dropAt);
  setTime($("prequeue-opens-at"), start);
  $("prequeue-when").hidden = !start;
  $("not-open").hidden = false;
  clearInterval(notOpenTimer);
  const tickNotOpen = () => {
    const left = Math.ceil((start - Date.now() - clock) / 1000);
    if (left > 0) {
      $("prequeue-opens-in").textContent = formatSeconds(left);
      return;
    }
    clearInterval(notOpenTimer);
    $("not-open-text").textContent = "The pre-queue is open: joining now.";
    $("prequeue-when").hidden = true;
    join();
  };
  if (start) {
    tickNotOpen();
    notOpenTimer = setInterval(tickNotOpen, 1000);
  }
}

function hideNotOpen() {
  clearInterval(notOpenTimer);
  $("not-open").hidden = true;
}

// setTime shows unix ms t in local time on a <time> element, "–" for 0.
function setTime(el, t) {
  if (!t) {
    el.textContent = "–";
    el.removeAttribute("datetime");
    return;
  }
  const d = new Date(t);
  el.dateTime = d.toISOString();
  const today = d.toDateString() === new Date().toDateString();
  el.textContent = today ? d.toLocaleTimeString() : d.toLocaleString();
}

function watch() {
  const s = saved();
  if (!s) { join(); return; }
  show("line");
  hideNotOpen();
  $("line-event").textContent = s.event;
  if (mode === "ws") watchSocket(s);
  else if (mode === "sse") watchStream(s);
  else pollStatus();
}

// back is the query parameter of the shop's page that sent the person here
// (returnTo): the gateway sends them back to it on admission if it lies
// under the event's targetUrl.
function back(s) {
  return s.returnTo ? `&returnTo=${encodeURIComponent(s.returnTo)}` : "";
}

// eventPath is the gateway's path of route under the saved event, with the
// ticket.
function eventPath(s, route) {
  return `/v1/events/${encodeURIComponent(s.event)}/${route}?ticket=${encodeURIComponent(s.ticket)}${back(s)}`;
}

function watchSocket(s) {
  const url = `${location.protocol === "https:" ? "wss" : "ws"}://${location.host}${s.statusUrl}${back(s)}`;
  let opened = false;
  try {
    socket = new WebSocket(url);
  } catch {
    fallBack("sse", "No WebSocket here — trying server-sent events…");
    return;
  }
  setConn("connecting", retries ? "Reconnecting…" : "Connecting…");
  socket.onopen = () => { opened = worked.ws = true; retries = 0; setConn("open", "Connected — updates every few seconds."); };
  socket.onmessage = (m) => onFrame(JSON.parse(m.data));
  socket.onclose = (e) => {
    socket = null;
    if (finished) return;
    if (e.code === 4401 || e.code === 4404 || e.code === 4400) return refused(e.code === 4404);
    // Never opened in this page: something between here and the gateway
    // refuses WebSockets; server-sent events are plain HTTP.
    if (!opened && !worked.ws) return fallBack("sse", "The WebSocket could not open — trying server-sent events…");
    reconnect();
  };
}

// watchStream reads the gateway's stream route. The browser reconnects a
// stream that breaks by itself (after the stream's retry:), sending the id
// of the admission it received so that it is not sent again.
function watchStream(s) {
  if (typeof EventSource !== "function") {
    fallBack("poll", "No server-sent events in this browser — checking your place every few seconds.");
    return;
  }
  let opened = false;
  source = new EventSource(eventPath(s, "stream"));
  setConn("connecting", "Connecting (server-sent events)…");
  source.onopen = () => { opened = worked.sse = true; retries = 0; setConn("open", "Connected (server-sent events) — updates every few seconds."); };
  for (const type of ["status", "admitted", "error"]) source.addEventListener(type, (m) => onFrame(JSON.parse(m.data)));
  source.onerror = () => {
    if (finished) return;
    if (opened && source.readyState === EventSource.CONNECTING) {
      setConn("reconnecting", "Connection lost — reconnecting. You keep your place.");
      return;
    }
    source.close();
    source = null;
    if (!worked.sse) return fallBack("poll", "Server-sent events could not open either — checking your place every few seconds.");
    checkPlace(s);
  };
}

// checkPlace asks the status route once why a stream that worked was
// refused (an EventSource cannot tell): a place the gateway does not know
// ends watching, anything else reconnects.
async function checkPlace(s) {
  try {
    const r = await fetch(eventPath(s, "status"), { cache: "no-store" });
    if (refusedBy(r)) return;
  } catch { /* the network: reconnect below */ }
  reconnect();
}

// pollStatus asks the status route for the place every pollEvery. A poll
// that cannot reach the gateway at all is a network failure, not a proxy:
// the page starts over from the WebSocket, backing off.
async function pollStatus() {
  pollTimer = null;
  const s = saved();
  if (!s || finished || mode !== "poll") return;
  let r;
  try {
    r = await fetch(eventPath(s, "status"), { cache: "no-store" });
  } catch {
    mode = "ws";
    reconnect();
    return;
  }
  if (finished || mode !== "poll") return;
  if (refusedBy(r)) return;
  let delay = pollEvery;
  if (r.ok) {
    retries = 0;
    setConn("polling", "No live connection — checking your place every few seconds.");
    onFrame(await r.json());
  } else {
    delay = Math.max(pollEvery, 1000 * Number(r.headers.get("Retry-After") || 0));
    setConn("reconnecting", "The waiting room is busy — checking again shortly. You keep your place.");
  }
  if (!finished && mode === "poll") pollTimer = setTimeout(pollStatus, delay);
}

// fallBack moves to the next way of hearing of the place, saying so.
function fallBack(next, text) {
  mode = next;
  retries = 0;
  setConn("fallback", text);
  setTimeout(watch, 300); // long enough to read the step
}

function reconnect() {
  const delay = Math.min(30000, 500 * 2 ** retries++) * (0.5 + Math.random() / 2);
  setConn("reconnecting", `Connection lost — reconnecting in ${Math.ceil(delay / 1000)} s. You keep your place.`);
  setTimeout(watch, delay);
}

// refused ends watching a place the gateway does not know: the event is
// gone, or the ticket no longer verifies (then the page joins again: the
// same identity keeps its place).
function refused(unknownEvent) {
  save(null);
  show("joining");
  if (unknownEvent) {
    $("join-error").textContent = "This event does not exist.";
    return;
  }
  join();
}

// refusedBy ends watching when the gateway's answer r says it does not know
// the place (the HTTP statuses of close codes 4400, 4401, 4404).
function refusedBy(r) {
  if (r.status !== 400 && r.status !== 401 && r.status !== 404) return false;
  refused(r.status === 404);
  return true;
}

// stopWatching closes whatever the page listens on.
function stopWatching(reason) {
  if (socket) socket.close(1000, reason);
  if (source) source.close();
  clearTimeout(pollTimer);
  socket = source = pollTimer = null;
}

// admittedWhilePolling: a poll says the slot is held, but only a live
// connection carries the entry token. The live ways are tried once more
// (a fresh connection is sent the admission); if they fail again, the page
// says what is missing.
function admittedWhilePolling() {
  if (!tokenRetried) {
    tokenRetried = true;
    mode = "ws";
    clearTimeout(pollTimer);
    pollTimer = null;
    setConn("connecting", "It is your turn — connecting to fetch your entry token…");
    watch();
    return;
  }
  $("state-text").textContent = "It is your turn, but the entry token comes only over a live connection (WebSocket or server-sent events), which this network blocks. Your slot is held for you: try another network.";
}

function onFrame(f) {
  if (f.type === "status") {
    prequeue(f);
    if (f.drawnPlace) {
      $("drawn").hidden = false;
      $("drawn-place").textContent = String(f.drawnPlace);
      readDraw("opened");
    }
    if (f.state === "waiting") {
      if (!firstPosition || f.position > firstPosition) firstPosition = f.position;
      $("state-text").textContent = f.position === 1 ? "You are next!" : "You are in line.";
      $("position").textContent = String(f.position);
      $("total").textContent = String(f.total);
      $("eta").textContent = f.etaSeconds == null ? "unknown" : formatSeconds(f.etaSeconds);
      $("progress").value = firstPosition > 1 ? Math.round(100 * (firstPosition - f.position) / (firstPosition - 1)) : 100;
    } else if (f.state === "prequeue") {
      $("gathered").textContent = f.total === 1 ? "1 person is here" : `${f.total} people are here`;
    } else if (f.state === "pending") {
      $("state-text").textContent = "Taking your place in line…";
    } else if (f.state === "admitted" && mode === "poll" && $("admitted").hidden) {
      admittedWhilePolling();
    } else if (f.state === "rebuilding") {
      $("state-text").textContent = "Your place is safe; the line is being restored. One moment…";
    } else if (f.state === "expired" || f.state === "not_queued") {
      if (!$("admitted").hidden || f.state === "expired") return finish();
      $("state-text").textContent = "You are not in line any more.";
    }
  } else if (f.type === "admitted") {
    stopOpening();
    show("admitted");
    if (f.redirectUrl) return goToShop(f);
    $("token").value = f.entryToken;
    expiresAt = f.expiresAt;
    tick();
    clearInterval(countdown);
    countdown = setInterval(tick, 1000);
  } else if (f.type === "error") {
    $("join-error").textContent = f.message;
  }
}

// prequeue shows or hides the pre-queue's countdown for status frame f: in
// the pre-queue a user has no position, only the time to the opening.
function prequeue(f) {
  const on = f.state === "prequeue";
  $("prequeue").hidden = !on;
  for (const id of ["place-line", "eta-line", "progress-box"]) $(id).hidden = on;
  if (!on) {
    stopOpening();
    return;
  }
  opensAt = f.opensAt || f.ts + 1000 * (f.opensInSeconds || 0);
  skew = f.ts ? f.ts - Date.now() : 0;
  setTime($("opens-at"), opensAt);
  if (!opening) {
    opening = setInterval(tickOpening, 1000);
  }
  tickOpening();
  readDraw("prequeue");
}

function tickOpening() {
  const left = Math.ceil((opensAt - Date.now() - skew) / 1000);
  $("opens-in").textContent = left > 0 ? formatSeconds(left) : "a moment";
  // The live region is announced on every change: set it only when it changes.
  const state = left > 0 ? "You are in the pre-queue." : "Opening: the order is being drawn…";
  if ($("state-text").textContent !== state) $("state-text").textContent = state;
}

function stopOpening() {
  clearInterval(opening);
  opening = null;
}

// readDraw reads the event's draw from producer-api: once on entering the
// pre-queue (the commitment), and after the opening until it shows the seed
// (at most three reads, one per status frame: the services' clocks may
// differ by a moment).
async function readDraw(when) {
  if (drawRead.busy || (when === "prequeue" ? drawRead.prequeue : (drawRead.seed || drawRead.opened >= 3))) return;
  const s = saved();
  if (!s) return;
  if (when === "prequeue") drawRead.prequeue = true; else drawRead.opened++;
  drawRead.busy = true;
  try {
    const r = await fetch(`${config.producerUrl}/v1/events/${encodeURIComponent(s.event)}`);
    const e = await r.json();
    if (!r.ok || !e.draw) return;
    $("commitment").textContent = e.draw.commitment;
    $("draw").hidden = false;
    if (e.draw.seed) {
      drawRead.seed = true;
      $("seed").textContent = e.draw.seed;
      $("seed-line").hidden = false;
      $("draw-explain").textContent = `The order was drawn at random among the ${e.draw.prequeueSize} people in the pre-queue at the opening.`;
    }
  } catch { /* the draw is shown on the next read, if any */ } finally {
    drawRead.busy = false;
  }
}

function tick() {
  const left = Math.max(0, Math.round((expiresAt - Date.now()) / 1000));
  $("countdown").textContent = formatSeconds(left);
  if (left === 0) finish();
}

function formatSeconds(s) {
  if (s >= 86400) return `${Math.floor(s / 86400)} d ${Math.floor(s % 86400 / 3600)} h`;
  if (s >= 3600) return `${Math.floor(s / 3600)} h ${Math.floor(s % 3600 / 60)} min`;
  return s >= 60 ? `${Math.floor(s / 60)} min ${s % 60} s` : `${s} s`;
}

// goToShop sends an admitted person on to the shop with their entry token
// (the frame's redirectUrl: the event's targetUrl, or the page they came
// from); the shop keeps them in through its cookie from there.
function goToShop(f) {
  $("token-box").hidden = true;
  $("redirect").hidden = false;
  $("go-shop").href = f.redirectUrl;
  finished = true;
  save(null);
  stopWatching("admitted");
  location.assign(f.redirectUrl);
}

function finish() {
  finished = true;
  clearInterval(countdown);
  stopOpening();
  save(null);
  localStorage.removeItem(`waitq-visit:${eventId}`); // a next join is a new visit
  stopWatching("done");
  show("released");
}

// send asks to leave the line or release the slot: over the WebSocket, or
// without one over HTTP (a leave through producer-api as the join, a
// release with the entry token).
function send(type) {
  if (socket && socket.readyState === 1) {
    socket.send(JSON.stringify({ type }));
    return;
  }
  const s = saved();
  if (!s) return;
  const ev = encodeURIComponent(s.event);
  if (type === "leave") {
    api(`/v1/events/${ev}/queue`, { method: "DELETE" }).catch(() => {});
  } else if ($("token").value) {
    fetch(`/v1/events/${ev}/release`, {
      method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify({ token: $("token").value }),
    }).catch(() => {});
  }
}

async function start() {
  try { config = Object.assign(config, await (await fetch("/config.json")).json()); } catch { /* defaults */ }
  const params = new URLSearchParams(location.search);
  eventId = params.get("event") || config.defaultEvent;
  returnTo = params.get("returnTo") || "";
  joinToken = params.get("joinToken") || "";
  if (joinToken) {
    // The token is kept with the place, not in the address bar.
    params.delete("joinToken");
    history.replaceState(null, "", `${location.pathname}?${params}`);
  }
  $("join").addEventListener("click", join);
  // Another tab of this browser joined or ended: follow it.
  window.addEventListener("storage", (e) => {
    if (e.key === storeKey() && saved() && !$("joining").hidden && !joining) watch();
  });
  $("leave").addEventListener("click", () => { send("leave"); finish(); $("released").textContent = "You left the line."; });
  $("done").addEventListener("click", () => { send("release"); setTimeout(finish, 200); });
  const s = saved();
  if (s && s.joinToken && !joinToken) joinToken = s.joinToken;
  watch();
}

start();
